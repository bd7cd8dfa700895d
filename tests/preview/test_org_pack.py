"""preview/org_pack.py (`make org-pack`): an organisation's pack, started as the CLI starts it, on the committed
rendered stacks; what it prints and its exit codes, the pack config's layers, and every error as one line.

One started example pack (examples/org-policy-pack/) serves the module: starting a pack costs about a
second here (its Python and the policies' imports), and Configure replaces the whole config on each run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from pulumi.runtime.proto import analyzer_pb2

from preview.org_pack import (
    PROJECT_PACK_PYTHON,
    ConfigLayer,
    PackSession,
    check,
    initial_layer,
    main,
    merged_config,
    read_pack,
    run,
    stack_layer,
    started,
)
from preview.policy_check import analyze_resources, reconciled_config
from preview.rendered_stack import read_rendered

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "org-policy-pack"
EXAMPLE_CONFIG = EXAMPLE / "pack-config.json"
POOL = "gpu-b4-nodes: oci:ContainerEngine/nodePool:NodePool"
COST_CENTRE = "acme-gpu-pool-cost-centre"
DESCRIPTION = "    GPU node pools carry the cost-centre node label that chargeback reads."
NO_LABEL = (
    "    node pool gpu-b4 (BM.GPU.B4.8) has no node label acme.example.com/cost-centre: its GPU hours are charged "
    "to no one; set it in the stack file: nodePools[].labels: {acme.example.com/cost-centre: <cost centre>}"
)


@pytest.fixture(scope="module")
def session() -> Iterator[PackSession]:
    if not PROJECT_PACK_PYTHON.exists():
        pytest.fail(f"{PROJECT_PACK_PYTHON} is missing: run make test (it builds policies/venv)")
    # This project's pack virtualenv, named: the header is the same whether or not the example has a venv/.
    pack = read_pack(EXAMPLE, PROJECT_PACK_PYTHON)
    with started(pack, "oke-gpu-rdma", "dev") as serving:
        yield serving


def header(stack: str = "dev", *configs: str) -> list[str]:
    count = len(read_rendered(stack).resources)
    layers = ", then ".join([f"rendered/{stack}/policy-pack-config.json", *configs])
    return [
        f"Policy pack acme-platform v1.0.0 (examples/org-policy-pack/, run by policies/venv/bin/python) "
        f"on rendered/{stack}/: {count} resources",
        f"Pack config: {layers}",
        "",
    ]


def write(path: Path, config: object) -> Path:
    path.write_text(json.dumps(config))
    return path


def test_the_example_config_makes_the_missing_cost_centre_mandatory_on_dev(
    session: PackSession, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(EXAMPLE, "dev", EXAMPLE_CONFIG, session=session) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        *header("dev", "examples/org-policy-pack/pack-config.json"),
        "Policy Violations:",
        f"    [mandatory]  acme-platform v1.0.0  {COST_CENTRE} ({POOL})",
        DESCRIPTION,
        NO_LABEL,
    ]
    assert err == "error: mandatory policy violations (above)\n"


def test_without_a_config_the_organisations_policy_keeps_its_advisory_level(
    session: PackSession, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(EXAMPLE, "dev", session=session) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        *header("dev"),
        "Policy Violations:",
        f"    [advisory]  acme-platform v1.0.0  {COST_CENTRE} ({POOL})",
        DESCRIPTION,
        NO_LABEL,
    ]
    assert err == ""


@pytest.mark.parametrize(
    ("config", "code"),
    [
        ({COST_CENTRE: "disabled"}, 0),
        ({"all": "mandatory"}, 1),  # `all` over the pack's own levels
        ({"all": "mandatory", COST_CENTRE: "advisory"}, 0),  # a policy's own entry over `all`
    ],
)
def test_levels_in_the_config_decide_the_exit_code(
    session: PackSession, capsys: pytest.CaptureFixture[str], tmp_path: Path, config: object, code: int
) -> None:
    assert run(EXAMPLE, "dev", write(tmp_path / "config.json", config), session=session) == code
    out = capsys.readouterr().out.splitlines()
    findings = [line for line in out if line.startswith("    [")]
    if config == {COST_CENTRE: "disabled"}:
        assert findings == [] and out[-1] == "Policies: acme-platform reported nothing."
    else:
        level = "mandatory" if code else "advisory"
        assert findings == [f"    [{level}]  acme-platform v1.0.0  {COST_CENTRE} ({POOL})"]


def test_the_policys_settings_judge_a_labelled_pool(
    session: PackSession, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The dev rendering with the label set (as `nodePools[].labels` writes it): its value against allowedValues."""
    rendered = tmp_path / "rendered"
    shutil.copytree(ROOT / "rendered" / "dev", rendered / "dev")
    record = rendered / "dev" / "resources" / "oci-containerengine-nodepool.gpu-b4-nodes.yaml"
    document = yaml.safe_load(record.read_text())
    document["inputs"]["initialNodeLabels"].append(
        {"key": "acme.example.com/cost-centre", "value": "CC-9999"}
    )
    record.write_text(yaml.safe_dump(document))
    assert run(EXAMPLE, "dev", EXAMPLE_CONFIG, rendered=rendered, session=session) == 1
    assert capsys.readouterr().out.splitlines()[-3:] == [
        f"    [mandatory]  acme-platform v1.0.0  {COST_CENTRE} ({POOL})",
        DESCRIPTION,
        "    node pool gpu-b4 (BM.GPU.B4.8) has acme.example.com/cost-centre=CC-9999, which is not a cost centre "
        "of the pack config (allowedValues: CC-1001, CC-2040)",
    ]
    allowed = write(tmp_path / "allowed.json", {COST_CENTRE: {"allowedValues": ["CC-9999"]}})
    assert run(EXAMPLE, "dev", allowed, rendered=rendered, session=session) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "Policies: acme-platform reported nothing."


def test_this_projects_policies_judge_as_the_shipped_pack_under_the_stacks_config_and_the_organisations(
    session: PackSession, tmp_path: Path
) -> None:
    """The organisation's config overrides the stack's section (the dev stack allows its DRANET image unpinned):
    the same verdicts, word for word, as this project's pack in-process on the same resources and config."""
    stack = read_rendered("dev")
    given = {"images-pinned-by-digest": {"allowUnpinned": []}}
    found = check(session, stack, ConfigLayer("given.json", given)).findings
    expected = analyze_resources(stack.resources, {**stack.pack_config, **given})
    assert [(f.policy, f.level, f.resource) for f in found if f.policy != COST_CENTRE] == [
        ("images-pinned-by-digest", "mandatory", "dranet-release: kubernetes:helm.sh/v3:Release")
    ]
    assert [(f.policy, f.level, f.urn, f.message) for f in found if f.policy != COST_CENTRE] == [
        (f.policy, f.level, f.urn, f.message) for f in expected
    ]


@pytest.mark.parametrize("stack", ["full", "sriov", "gb200", "fleet"])
def test_the_other_rendered_stacks_pass_this_projects_policies(session: PackSession, stack: str) -> None:
    found = check(session, read_rendered(stack), None).findings
    assert {f.policy for f in found} <= {COST_CENTRE}
    assert {f.level for f in found} == {"advisory"}  # every GPU pool of these stacks lacks the label


DEV_CONFIG = read_rendered("dev").pack_config


@pytest.mark.parametrize(
    ("earlier", "later"),
    [
        (DEV_CONFIG, {COST_CENTRE: {"allowedValues": ["CC-1001"]}}),
        (
            {
                "images-pinned-by-digest": "disabled",
                "dranet-child-range": {"enforcementLevel": "advisory", "ocaRdmaNetwork": "10.0.0.0/8"},
            },
            {"all": "mandatory"},  # applied before the file's entries: the earlier levels must go
        ),
        ({"all": "advisory", COST_CENTRE: "mandatory"}, {COST_CENTRE: {"labelKey": "acme.example.com/team"}}),
        ({COST_CENTRE: {"labelKey": "acme.example.com/team"}}, {COST_CENTRE: "disabled"}),
    ],
)
def test_the_written_config_reconciles_as_its_layers_do(
    session: PackSession, earlier: dict, later: dict
) -> None:
    """One file for `pulumi preview --policy-pack-config`, which the CLI reconciles as the command did both layers."""
    info = session.info
    initial = initial_layer(info).entries
    assert reconciled_config(info, [initial, merged_config([earlier, later])]) == reconciled_config(
        info, [initial, earlier, later]
    )


def test_write_config_writes_the_stacks_and_the_given_config_as_one_file(
    session: PackSession, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "merged.json"
    assert run(EXAMPLE, "dev", EXAMPLE_CONFIG, session=session, write_config=out) == 1
    assert json.loads(out.read_text()) == {**DEV_CONFIG, **json.loads(EXAMPLE_CONFIG.read_text())}
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"Wrote {out}: the same config for the CLI, pulumi preview --policy-pack examples/org-policy-pack "
        f"--policy-pack-config {out}"
    )


def test_the_stacks_sections_for_policies_the_pack_leaves_out_are_skipped(session: PackSession) -> None:
    info = analyzer_pb2.AnalyzerInfo(name="subset")
    info.policies.extend(p for p in session.info.policies if p.name in (COST_CENTRE, "dranet-child-range"))
    layer, skipped = stack_layer(read_rendered("dev"), info)
    assert set(layer.entries) == {"dranet-child-range"}
    assert skipped == sorted(set(DEV_CONFIG) - {"dranet-child-range"}) != []


# --- errors: one line each, exit 2 ---------------------------------------------------------------------


def error_of(capsys: pytest.CaptureFixture[str], code: int) -> str:
    assert code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    return err.removeprefix("error: ").rstrip("\n")


def test_a_folder_without_pulumipolicy_yaml(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert error_of(capsys, main(["--pack", str(tmp_path)])) == (
        f"--pack {tmp_path} (PACK=) has no PulumiPolicy.yaml: give the folder of a Python policy pack "
        "(`pulumi policy new python` makes one; examples/org-policy-pack/ is one)"
    )
    assert error_of(capsys, main(["--pack", str(tmp_path / "nope")])) == (
        f"--pack {tmp_path / 'nope'} (PACK=): no such folder; give the folder of your PulumiPolicy.yaml"
    )
    (tmp_path / "PulumiPolicy.yaml").write_text("runtime: nodejs\n")
    assert error_of(capsys, main(["--pack", str(tmp_path)])) == (
        f"{tmp_path}/PulumiPolicy.yaml: runtime 'nodejs': only Python packs run offline here "
        "(runtime: python, or runtime: {name: python, options: {virtualenv: venv}})"
    )


def test_a_stack_never_rendered(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    args = ["--pack", str(EXAMPLE), "--stack", "prod", "--rendered", str(tmp_path)]
    assert error_of(capsys, main(args)) == (
        f"--stack prod (STACK=): {tmp_path}/prod/ does not exist; run make preview STACK=prod to render it "
        "(rendered stacks: dev)"
    )
    assert error_of(capsys, main([*args[:3], "dev", *args[4:]])) == (
        f"--stack dev (STACK=): {tmp_path}/dev/ has no resources/ records; run make preview STACK=dev to render it again"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"all": ', "not JSON: Expecting value at line 1 column 9; fix the file's syntax"),
        ('["mandatory"]', 'holds ["mandatory"]: the file is one object, policy name -> level or settings'),
        (
            '{"all": "strict"}',
            "all: 'strict' is not an enforcement level; use one of advisory, mandatory, remediate, disabled",
        ),
        (
            '{"acme-gpu-pool-cost-centre": {"enforcementLevel": "warn"}}',
            "acme-gpu-pool-cost-centre.enforcementLevel: 'warn' is not an enforcement level; "
            "use one of advisory, mandatory, remediate, disabled",
        ),
        (
            '{"acme-gpu-pool-cost-centre": 3}',
            'acme-gpu-pool-cost-centre: 3 is neither a level nor an object; write "acme-gpu-pool-cost-centre": '
            '"mandatory" or "acme-gpu-pool-cost-centre": {"enforcementLevel": "mandatory", ...settings}',
        ),
    ],
)
def test_a_config_the_cli_refuses(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, problem: str
) -> None:
    config = tmp_path / "config.json"
    config.write_text(text)
    code = main(["--pack", str(EXAMPLE), "--config", str(config)])
    sep = " " if problem.startswith("holds") else ": "
    assert error_of(capsys, code) == f"--config {config} (PACK_CONFIG=){sep}{problem}"
    assert error_of(capsys, main(["--pack", str(EXAMPLE), "--config", str(tmp_path / "none.json")])) == (
        f"--config {tmp_path / 'none.json'} (PACK_CONFIG=): no such file; give the JSON file you pass "
        "`pulumi preview --policy-pack-config`"
    )


def test_a_config_the_pack_refuses(
    session: PackSession, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A policy name the pack lacks (the CLI would forward it silently) and a value its schema refuses."""
    typo = write(tmp_path / "typo.json", {"acme-gpu-pool-cost-center": "mandatory"})
    assert error_of(capsys, run(EXAMPLE, "dev", typo, session=session)) == (
        f"--config {typo} (PACK_CONFIG=): acme-gpu-pool-cost-center: no policy of pack acme-platform has this name "
        "(did you mean acme-gpu-pool-cost-centre?); pulumi preview would ignore the section silently"
    )
    wrong = write(tmp_path / "wrong.json", {COST_CENTRE: {"allowedValues": "CC-1001"}})
    assert error_of(capsys, run(EXAMPLE, "dev", wrong, session=session)) == (
        f"--config {wrong} (PACK_CONFIG=): acme-gpu-pool-cost-centre.allowedValues: 'CC-1001' is not of type "
        "'array'; give it a value its schema takes (type array)"
    )
    ours = write(tmp_path / "ours.json", {"dranet-child-range": {"ocaRdmaNetwork": 10}})
    assert error_of(capsys, run(EXAMPLE, "dev", ours, session=session)) == (
        f"--config {ours} (PACK_CONFIG=): dranet-child-range.ocaRdmaNetwork: 10 is not of type 'string'; "
        "give it a value its schema takes (type string)"
    )


def test_a_pack_whose_own_virtualenv_lacks_the_policies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Its own venv (PulumiPolicy.yaml's) runs it, as the CLI's: without oke_rdma_policies copied in, it cannot start."""
    for name in ("PulumiPolicy.yaml", "__main__.py"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec {PROJECT_PACK_PYTHON} "$@"\n')
    python.chmod(0o755)
    assert read_pack(tmp_path).python == python and not read_pack(tmp_path).borrowed
    assert error_of(capsys, main(["--pack", str(tmp_path)])) == (
        f"the pack in {tmp_path}/ exited (1) before it served: ModuleNotFoundError: No module named "
        f"'oke_rdma_policies'; install what it imports into {tmp_path}/venv/, and copy oke_rdma_policies/ and "
        "oke_gpu_rdma/ from `make pack`'s output next to its __main__.py (to see all it prints: "
        f"cd {tmp_path} && {python} -u -m pulumi.policy 127.0.0.1:1 .)"
    )


RAISING_PACK = """\
from pulumi_policy import PolicyPack, ResourceValidationPolicy


def validate(args, report_violation):
    if args.resource_type == "oci:ContainerEngine/nodePool:NodePool":
        raise ValueError("no cost centre table")


PolicyPack(name="broken", policies=[ResourceValidationPolicy(name="broken", description="d", validate=validate)])
"""


def test_a_pack_without_a_virtualenv_and_a_policy_that_raises(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "PulumiPolicy.yaml").write_text("runtime: python\n")
    (tmp_path / "__main__.py").write_text(RAISING_PACK)
    pack = read_pack(tmp_path)
    assert pack.borrowed and pack.note == (
        "its PulumiPolicy.yaml names no virtualenv: running it with policies/venv/bin/python and policies/ on "
        "PYTHONPATH (this project's pack virtualenv and policies)"
    )
    urn = next(r.urn for r in read_rendered("dev").resources if r.name == "gpu-b4-nodes")
    assert error_of(capsys, main(["--pack", str(tmp_path)])) == (
        f"the pack in {tmp_path}/ failed Analyze of {urn}: Exception calling application: no cost centre table"
        "; a policy raised there: fix it (call its validate under pytest for the traceback; pulumi preview fails "
        "the same way)"
    )


def test_the_command_line() -> None:
    """`python -m preview.org_pack`, as `make org-pack` runs it: a process of its own that starts the pack."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "preview.org_pack",
            "--pack",
            "examples/org-policy-pack",
            "--config",
            str(EXAMPLE_CONFIG),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[-3:] == [
        f"    [mandatory]  acme-platform v1.0.0  {COST_CENTRE} ({POOL})",
        DESCRIPTION,
        NO_LABEL,
    ]
    assert done.stderr == "error: mandatory policy violations (above)\n"
