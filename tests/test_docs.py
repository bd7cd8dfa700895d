"""What the documentation (README.md, docs/) tells a reader to open or run exists and is accepted.

These check what a reader acts on, not the prose: every link leads to a file and a heading that exist,
every repository path a page names exists, every `make` command names a target and variables the
Makefile has, every `python -m` command a module and options its parser takes, every `cp` a source that
exists. Every page is short enough to read through, and the reference tables are one line a cell. The
reference pages' currency is tests/tools/test_gen_docs.py's.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
# Issue 39's bar for a page: one topic, read through in one go; a longer topic is split into pages.
PAGE_MAX_BYTES = 10_000
# A reference table's cell: a name, a type, a default or a one-phrase summary (tools/gen_docs.py CELL_MAX).
CELL_MAX_CHARS = 100
# Folders whose paths a page names as they are in the repository; rendered/ and stacks/ are named
# for a user's own stack (rendered/prod/), which a fresh clone does not have. A path in another
# repository is cited as owner/repo:path; the virtualenvs (venv/) are made by `make`.
REPO_FOLDERS = (
    "components",
    "stack_config",
    "preview",
    "oke_gpu_rdma",
    "policies",
    "provider",
    "tools",
    "tests",
    "examples",
    "benchmarks",
    "docs",
    ".github",
)
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
SHELL_FENCE = re.compile(r"^```(?:sh|bash)\n(.*?)^```", re.S | re.M)
INLINE_CODE = re.compile(r"`([^`\n]+)`")


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in paths]


def _prose(text: str) -> str:
    """The page without its code blocks and inline code (where brackets are not links)."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lowercase, markup and punctuation but - and _ dropped."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@functools.cache
def _anchors(page: Path) -> set[str]:
    anchors: set[str] = set()
    for line in FENCE.sub("", page.read_text()).splitlines():
        if match := re.match(r"^#{1,6} (.+)$", line):
            slug = _slug(match.group(1))
            n, unique = 0, slug
            while unique in anchors:
                n += 1
                unique = f"{slug}-{n}"
            anchors.add(unique)
    return anchors


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_every_page_is_under_the_size_of_one_topic(page: Path) -> None:
    assert page.stat().st_size < PAGE_MAX_BYTES, f"{page.stat().st_size} bytes: split it by topic"


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row (an escaped pipe is inside a cell)."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


REFERENCE = sorted((ROOT / "docs" / "reference").rglob("*.md"))


@pytest.mark.parametrize("page", REFERENCE, ids=_ids(REFERENCE))
def test_every_reference_table_cell_is_one_short_line(page: Path) -> None:
    """A table row is one line, so a cell is; the long text (details, examples) goes below the table."""
    long = [
        cell
        for line in FENCE.sub("", page.read_text()).splitlines()
        if line.startswith("|")
        for cell in _cells(line)
        if len(cell) > CELL_MAX_CHARS or "<br" in cell
    ]
    assert long == []


def test_the_cells_of_a_row_are_split_at_its_unescaped_pipes() -> None:
    assert _cells("| `a` | `x` \\| `y` | text |") == ["`a`", "`x` \\| `y`", "text"]


def test_every_page_under_docs_is_reachable_from_the_readme() -> None:
    reached: set[Path] = set()
    todo = [ROOT / "README.md"]
    while todo:
        page = todo.pop()
        for target in _links(page):
            path = (page.parent / target.split("#")[0]).resolve()
            if path.suffix == ".md" and path.is_file() and path not in reached:
                reached.add(path)
                todo.append(path)
    assert sorted(_ids([p for p in PAGES if p not in reached and p.name != "README.md"])) == []


def _links(page: Path) -> Iterator[str]:
    for target in re.findall(r"\]\(([^)\s]+)\)", _prose(page.read_text())):
        if not re.match(r"^[a-z]+:", target):
            yield target


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_every_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    broken = []
    for target in _links(page):
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        if not path.exists() or (anchor and path.suffix == ".md" and anchor not in _anchors(path)):
            broken.append(target)
    assert broken == []


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_every_repository_path_a_page_names_exists(page: Path) -> None:
    # A link's target is relative to its page; the link test checks it.
    text = re.sub(r"\]\([^)\s]+\)", "]", page.read_text())
    named = {
        path.rstrip(".,;:")
        for path in re.findall(r"(?<![\w/.<:-])\.?[\w-]+/[\w./-]*", text)
        if path.split("/")[0] in REPO_FOLDERS and "*" not in path and "venv" not in path.split("/")
    }
    assert sorted(p for p in named if not (ROOT / p).exists()) == []


def _commands(page: Path) -> Iterator[str]:
    """The commands a page shows: each line of its shell blocks, and inline code that is a command."""
    text = page.read_text()
    for block in SHELL_FENCE.findall(text):
        for line in block.splitlines():
            command = re.split(r"\s+#", line, maxsplit=1)[0].strip()
            if command:
                yield command
    for span in INLINE_CODE.findall(text):
        if re.match(r"^(make \S|python3? -m \S|python3? \S+\.py\b)", span):
            yield span


OTHER_TOOLS = ("git", "kubectl", "venv/bin/pip", "python3")
COMMANDS = sorted({(str(p.relative_to(ROOT)), c) for p in PAGES for c in _commands(p)})


@functools.cache
def _makefile() -> tuple[set[str], set[str]]:
    text = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][\w-]*):", text, re.M))
    variables = set(re.findall(r"\$\((\w+)\)", text)) | set(re.findall(r"^(\w+) \?=", text, re.M))
    return targets, variables


@functools.cache
def _help(module: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(("page", "command"), COMMANDS)
def test_every_command_a_page_shows_is_one_the_repository_accepts(page: str, command: str) -> None:
    words = re.sub(r"<[^>]*>", "PLACEHOLDER", command).split()
    if words[0] == "make":
        targets, variables = _makefile()
        args = [w for w in words[1:] if w != "-s" and not w.startswith("[")]
        assert [a for a in args if "=" not in a and a not in targets] == []
        assert [a for a in args if "=" in a and a.split("=")[0] not in variables] == []
    elif words[0] in ("python", "python3") and words[1] == "-m":
        module = words[2]
        if module in ("venv", "pip"):
            return
        assert importlib.util.find_spec(module) is not None, module
        options = re.findall(r"(?<![\w-])--[\w-]+", " ".join(words[3:]))
        assert [o for o in options if o not in _help(module)] == []
    elif words[0] in ("python", "python3"):
        assert (ROOT / words[1]).is_file()
    elif words[0] == "cp":
        source, target = words[1], words[2]
        assert (ROOT / source).is_file()
        assert (ROOT / target).parent.is_dir()
    elif words[0] == "cd":
        assert words[1].startswith("$") or (ROOT / words[1]).is_dir()
    elif words[0] == "pulumi":
        # No CLI here: what it is pointed at in this repository must exist.
        for option in ("--policy-pack", "--config-file"):
            if option in words:
                assert (ROOT / words[words.index(option) + 1]).is_dir()
    else:
        # A command of another tool (git, kubectl, a virtualenv's pip) is shown for a machine of the user's.
        assert words[0] in OTHER_TOOLS, command


# -- the job examples (issue 34 item 7) ----------------------------------------------------------------------------
# Kueue's integration of each job kind (its framework name; pkg/controller/jobs/<kind>/*_controller.go at v0.19.2
# registers it under this name) and whether the stack runs the kind's operator: batch Jobs are kube-controller-
# manager's, MPIJobs the MPI operator's (components/health/acceptance_jobs.py MpiOperator).
KIND_FRAMEWORKS = {
    ("batch/v1", "Job"): "batch/job",
    ("kubeflow.org/v2beta1", "MPIJob"): "kubeflow.org/mpijob",
    ("kubeflow.org/v1", "PyTorchJob"): "kubeflow.org/pytorchjob",
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): "jobset.x-k8s.io/jobset",
}
OPERATOR_INSTALLED = {"batch/job", "kubeflow.org/mpijob"}


def _job_examples() -> Iterator[tuple[str, dict[str, object]]]:
    import yaml

    for page in PAGES:
        for block in re.findall(r"```yaml\n(.*?)```", page.read_text(), re.S):
            doc = yaml.safe_load(block)
            if isinstance(doc, dict) and "kueue.x-k8s.io/queue-name" in str(doc.get("metadata")):
                yield page.relative_to(ROOT).as_posix(), doc


def _templates(doc: dict[str, object]) -> Iterator[tuple[int, dict[str, object]]]:
    """(pods at once, pod template) of each replica spec of a job example."""
    spec = doc.get("spec")
    assert isinstance(spec, dict)
    for key in ("mpiReplicaSpecs", "pytorchReplicaSpecs"):
        for replica in (spec.get(key) or {}).values():
            yield int(replica.get("replicas", 1)), replica["template"]
    if "template" in spec:
        yield int(spec.get("parallelism", 1)), spec["template"]


def test_the_job_examples_are_kinds_kueue_queues_here_with_levels_every_tenancy_has() -> None:
    """Each queued job a page shows is of a kind whose integration the stack's Kueue configuration has and whose
    operator the stack installs; a multi-pod pod set never requires the local block, which a tenancy without
    rdmaTopologyData gives each host alone (oke_gpu_rdma/nodes/scripts/rdma-topology-labels.sh), so such a job would
    never be admitted there."""
    from oke_gpu_rdma.nodes.labels import RDMA_LOCAL_BLOCK_LABEL
    from oke_gpu_rdma.scheduling import kueue_chart as kueue

    frameworks = kueue.read_manager_config(kueue.values([]))["integrations"]["frameworks"]
    examples = list(_job_examples())
    assert examples, "no queued job example found"
    for page, doc in examples:
        framework = KIND_FRAMEWORKS.get((str(doc["apiVersion"]), str(doc["kind"])))
        assert framework in frameworks and framework in OPERATOR_INSTALLED, (
            f"{page}: a {doc['kind']} example; the stack queues what it has an operator for: "
            f"{', '.join(sorted(OPERATOR_INSTALLED))}"
        )
        for pods, template in _templates(doc):
            annotations = (template.get("metadata") or {}).get("annotations") or {}
            required = annotations.get("kueue.x-k8s.io/podset-required-topology")
            assert not (pods > 1 and required == RDMA_LOCAL_BLOCK_LABEL), (
                f"{page}: {pods} pods required in one local block: never admitted without rdmaTopologyData"
            )
