"""tools/build_pack.py: a pack that installs and runs alone, as `pulumi policy publish` uploads it.

The end-to-end test copies nothing from the repository but the built pack: it builds it into an
empty folder, gives it a fresh virtualenv from its own requirements.txt (as the CLI does for a
published pack), starts it as the CLI does and checks that its answers over gRPC are the in-repo
pack's, on resources that trip every policy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import oke_rdma_policies  # the pack's package, in policies/ (on pytest's pythonpath)
import pytest
from google.protobuf import empty_pb2
from pulumi.runtime.proto import analyzer_pb2_grpc

from preview.mock_runtime import ROOT
from preview.policy_check import analyze_resources
from tests.policies.policy_helpers import (
    PACK_CONFIG,
    SUPPLIED_SHAPE,
    over_grpc,
    started_pack,
    tripping_every_policy,
)
from tests.strict_yaml import load_file
from tools import build_pack
from tools.build_pack import BuildError, build, pack_requirements


def _clean_env() -> dict[str, str]:
    # Nothing of this repository may reach the pack but what was built into it.
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def install(pack: Path) -> subprocess.CompletedProcess[str]:
    """A venv in the pack and `pip install -r requirements.txt` into it, through uv when make installed it.

    The CLI runs pip; uv reads the same requirements file and, with the cache `make` filled, takes
    seconds instead of pip's half a minute (and the venv then needs no pip of its own).
    """
    uv = Path(sys.executable).with_name("uv")
    env = _clean_env()
    if uv.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", "venv"], cwd=pack, env=env, check=True)
        command = [
            str(uv),
            "pip",
            "install",
            "--quiet",
            "--python",
            "venv/bin/python",
            "-r",
            "requirements.txt",
        ]
    else:
        subprocess.run([sys.executable, "-m", "venv", "venv"], cwd=pack, env=env, check=True)
        command = ["venv/bin/python", "-m", "pip", "install", "--quiet", "-r", "requirements.txt"]
    return subprocess.run(command, cwd=pack, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built pack alone in an empty folder, with the virtualenv the CLI would give it."""
    pack = tmp_path_factory.mktemp("published") / "oke-gpu-rdma"
    build(pack, version="1.2.3")
    result = install(pack)
    assert result.returncode == 0, f"installing requirements.txt failed in the built pack:\n{result.stderr}"
    return pack


@pytest.fixture(scope="module")
def analyzer(published: Path) -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    """The published pack started as the CLI starts it (see tests/policies/test_pack_process.py)."""
    with started_pack(published / "venv" / "bin" / "python", published, env=_clean_env()) as stub:
        yield stub


def test_the_pack_imports_its_vendored_library(published: Path) -> None:
    where = subprocess.run(
        ["venv/bin/python", "-c", "import oke_gpu_rdma; print(oke_gpu_rdma.__file__)"],
        cwd=published,
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(where.stdout.strip()).resolve() == (published / "oke_gpu_rdma" / "__init__.py").resolve()


def test_published_pack_describes_itself_like_the_in_repo_pack(
    analyzer: analyzer_pb2_grpc.AnalyzerStub,
) -> None:
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info == oke_rdma_policies.servicer().GetAnalyzerInfo(empty_pb2.Empty(), None)


def test_published_pack_finds_what_the_in_repo_pack_finds(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    resources = tripping_every_policy()
    expected = sorted(
        (f.policy, f.level, f.urn, f.description, f.message)
        for f in analyze_resources(resources, PACK_CONFIG)
    )
    dra_policies = {r.name for r in oke_rdma_policies.RULES if not r.name.startswith("sriov-")}
    sriov = {"sriov-rdma-qos", "sriov-network-references", "sriov-rail-root-devices"}
    assert {key[0] for key in expected} >= dra_policies | sriov
    assert any(f"'0000:01:00.0' is not a rail PF of {SUPPLIED_SHAPE}" in key[4] for key in expected)
    assert over_grpc(analyzer, resources) == expected


# --- the build itself ---------------------------------------------------------------------------


def source_tree(root: Path) -> Path:
    """A copy of what the build reads, to change freely."""
    root.mkdir()
    for name in ("pyproject.toml", "requirements.txt"):
        shutil.copy(ROOT / name, root / name)
    skip = shutil.ignore_patterns("venv", "__pycache__")
    shutil.copytree(ROOT / "policies", root / "policies", ignore=skip)
    shutil.copytree(ROOT / "oke_gpu_rdma", root / "oke_gpu_rdma", ignore=skip)
    return root


def test_requirements_are_the_pack_pins_then_the_library_dependencies_at_the_program_pins() -> None:
    pins = {line.split("==")[0]: line for line in (ROOT / "requirements.txt").read_text().splitlines()}
    assert pack_requirements() == [
        "pulumi==3.272.0",
        "pulumi-policy==1.21.0",
        pins["cel-expr-python"],
        pins["protobuf"],
        pins["pydantic"],
        pins["pyyaml"],
    ]


def test_new_modules_package_data_come_along_and_venvs_caches_do_not(tmp_path: Path) -> None:
    root = source_tree(tmp_path / "src")
    (root / "oke_gpu_rdma" / "nodes" / "shapes" / "BM.GPU.NEW.8.yaml").write_text("evidence: unverified\n")
    (root / "policies" / "oke_rdma_policies" / "rules" / "new_policy.py").write_text("")
    for junk in ("policies/venv/bin/python", "policies/oke_rdma_policies/__pycache__/x.pyc"):
        (root / junk).parent.mkdir(parents=True, exist_ok=True)
        (root / junk).write_text("")
    built = build(tmp_path / "pack", root, "1.2.3")
    files = {p.relative_to(built.out).as_posix() for p in built.out.rglob("*") if p.is_file()}
    assert {
        "PulumiPolicy.yaml",
        "__main__.py",
        "requirements.txt",
        ".gitignore",
        "oke_gpu_rdma/py.typed",
        "oke_gpu_rdma/nodes/shapes/BM.GPU.B4.8.yaml",  # the shape catalog's files
        "oke_gpu_rdma/nodes/shapes/BM.GPU.NEW.8.yaml",
        "oke_rdma_policies/rules/new_policy.py",
    } <= files
    assert not any(f.startswith("venv/") or "__pycache__" in f for f in files)
    assert not [
        line for line in (built.out / "requirements.txt").read_text().splitlines() if line.startswith("-")
    ]
    assert "venv/" in (built.out / ".gitignore").read_text().splitlines()


def test_rebuilding_replaces_the_previous_pack(tmp_path: Path) -> None:
    build(tmp_path / "pack", version="1.2.3")
    (tmp_path / "pack" / "stale.py").write_text("")
    build(tmp_path / "pack", version="1.2.3")
    assert not (tmp_path / "pack" / "stale.py").exists()


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("requirements.txt", "pyyaml==6.0.3\n", ""), "requirements.txt pins no version of pyyaml"),
        (
            ("requirements.txt", "cel-expr-python==0.1.3", "cel-expr-python==0.2.0"),
            "requirements.txt pins cel-expr-python==0.2.0, outside pyproject.toml's",
        ),
        (
            ("policies/requirements.txt", "-e ..", "-e ../elsewhere"),
            "only the domain library (-e ..) can be vendored",
        ),
        (
            ("policies/requirements.txt", "pulumi==3.272.0", "pulumi==3.272.0\npyyaml==6.0.2"),
            "policies/requirements.txt has pyyaml==6.0.2 but requirements.txt pins pyyaml==6.0.3",
        ),
    ],
)
def test_requirements_that_cannot_be_pinned_are_one_line_errors(
    tmp_path: Path, change: tuple[str, str, str], expected: str
) -> None:
    root = source_tree(tmp_path / "src")
    name, old, new = change
    text = (root / name).read_text()
    assert old in text
    (root / name).write_text(text.replace(old, new))
    with pytest.raises(BuildError) as raised:
        build(tmp_path / "pack", root, "1.2.3")
    assert expected in str(raised.value) and "\n" not in str(raised.value)
    assert not (tmp_path / "pack").exists()


def test_cli_refuses_a_folder_that_is_not_a_pack(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    assert build_pack.main(["--out", str(tmp_path), "--version", "1.2.3"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err and len(err.splitlines()) == 1
    assert err.startswith("error: cannot build the policy pack: ") and "is not a built policy pack" in err
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_cli_says_how_to_publish(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert build_pack.main(["--out", str(tmp_path / "pack"), "--version", "1.2.3"]) == 0
    out = capsys.readouterr().out
    assert "oke_gpu_rdma/ vendored" in out and "pulumi policy publish" in out


def _tagged_repository(tmp_path: Path, tag: str | None) -> Path:
    """A git repository holding this one's pack sources, HEAD tagged `tag` (None: untagged)."""
    root = tmp_path / "repo"
    shutil.copytree(
        ROOT / "policies", root / "policies", ignore=shutil.ignore_patterns("venv", "__pycache__")
    )
    shutil.copytree(
        ROOT / "oke_gpu_rdma", root / "oke_gpu_rdma", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in ("pyproject.toml", "requirements.txt"):
        shutil.copy(ROOT / name, root / name)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(root)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "pack"], check=True)
    if tag is not None:
        subprocess.run([*git, "tag", tag], check=True)
    return root


def test_the_built_pack_carries_the_release_tags_version(tmp_path: Path) -> None:
    root = _tagged_repository(tmp_path, "v2.4.1")
    built = build(tmp_path / "pack", root)
    assert built.version == "2.4.1"
    manifest = load_file(tmp_path / "pack" / "PulumiPolicy.yaml")
    assert manifest["version"] == "2.4.1" and manifest["runtime"]["name"] == "python"
    # The source keeps its working-tree version; only the built pack is versioned.
    assert load_file(root / "policies" / "PulumiPolicy.yaml")["version"] == "0.0.0-dev"


def test_an_untagged_head_or_a_bad_version_is_one_line(tmp_path: Path) -> None:
    root = _tagged_repository(tmp_path, None)
    with pytest.raises(
        BuildError, match=r"^HEAD carries no release tag vX.Y.Z.*make pack PACK_VERSION=1.2.0\)$"
    ):
        build(tmp_path / "pack", root)
    with pytest.raises(BuildError, match=r"^--version: '1.2' is not a semantic version X.Y.Z"):
        build(tmp_path / "pack", root, "1.2")
    assert not (tmp_path / "pack").exists()
