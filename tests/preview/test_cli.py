"""`make preview`: the offline preview's tree, its rendered manifests and its error path (preview/cli.py)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from oke_gpu_rdma.common.pack_settings import NamedCidr, PackConfig
from preview import base_rendering, cli, rendering
from preview.mock_runtime import ROOT, RecordedResource
from preview.plan import change_plan
from preview.stacks import EXAMPLES, stack_names
from stack_config.model import StackConfig
from stack_config.pack_config import policy_pack_config
from tests.support import Run, as_stack_file, raw_config


def run_cli(
    stack: str,
    stacks_dir: Path | None = EXAMPLES,
    rendered: Path | None = None,
    *extra: str,
    fresh: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run the preview with `make preview`'s arguments: in this interpreter (its imports already paid, a second
    a run less), or with ``fresh`` in a new one exactly as `make preview` starts it.

    Stacks come from ``stacks_dir``, the examples unless told otherwise, never from stacks/: a stack
    of the user's (any name, a broken file) cannot fail a test. None: the CLI's own lookup.
    """
    args = ["--stack", stack, *extra]
    if rendered is not None:
        args += ["--rendered", str(rendered)]
    if stacks_dir is not None:
        args += ["--stacks-dir", str(stacks_dir)]
    if fresh:
        command = [sys.executable, "-m", "preview", *args]
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(args)
        except SystemExit as exit_:  # argparse's refusals
            status = exit_.code if isinstance(exit_.code, int) else 2
    return subprocess.CompletedProcess(["preview", *args], status, out.getvalue(), err.getvalue())


def test_dev_preview_shows_the_compute_cluster_and_its_b4_pool(tmp_path: Path) -> None:
    result = run_cli("dev", EXAMPLES, tmp_path, "--show-sames", fresh=True)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("Previewing update (dev) offline: Pulumi mock runtime, nothing was sent to a cloud")
    lines = out.splitlines()
    pool_line = next(i for i, line in enumerate(lines) if "oke-gpu-rdma:index:RdmaGpuNodePool" in line)
    assert lines[pool_line].rstrip().endswith("gpu-b4")
    # The compute cluster and the node pool hang under the pool component.
    assert "├─ oci:Core/computeCluster:ComputeCluster" in lines[pool_line + 1]
    assert lines[pool_line + 1].rstrip().endswith("gpu-b4-compute-cluster")
    assert "└─ oci:ContainerEngine/nodePool:NodePool" in lines[pool_line + 2]
    # Against the committed rendering at HEAD: the counts as `pulumi preview` prints them.
    assert lines[lines.index("Resources:") + 1].startswith("    ")
    assert "Traceback" not in result.stderr


def test_full_stack_preview_works(tmp_path: Path) -> None:
    result = run_cli("full", EXAMPLES, tmp_path, "--show-sames", fresh=True)
    assert result.returncode == 0, result.stderr
    assert "oci:ContainerEngine/cluster:Cluster" in result.stdout
    # The two GPU pools and the system pool.
    assert result.stdout.count("oci:ContainerEngine/nodePool:NodePool") == 3


def test_count_matches_the_registrations(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev")
    report = cli.format_report(run.run)
    assert f"+ {len(run.resources)} to create" in report
    assert len(cli.tree_lines(run.resources)) == len(run.resources)


def test_bad_config_exits_1_with_the_message_and_no_traceback(tmp_path: Path) -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["count"] = 0
    raw["dranet"] = {"childRange": "10.208.0.0/31"}
    (tmp_path / "Pulumi.bad.yaml").write_text(yaml.safe_dump(as_stack_file(raw)))
    result = run_cli("bad", stacks_dir=tmp_path, rendered=tmp_path / "rendered", fresh=True)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "error: invalid stack config:",
        f"  {tmp_path}/Pulumi.bad.yaml: nodePools[0].count = 0: must be at least 1",
        f"  {tmp_path}/Pulumi.bad.yaml: dranet.childRange = '10.208.0.0/31': has prefix /31; DRANET accepts "
        "child ranges from /8 to /30",
    ]
    assert not (tmp_path / "rendered").exists()


def test_unknown_stack_names_the_known_ones(tmp_path: Path) -> None:
    # The user's stacks (a temporary folder here: the test never depends on what stacks/ holds) and
    # the examples, sorted together; a user stack sorting first is listed first.
    (tmp_path / "Pulumi.alpha.yaml").write_text("config: [not: valid\n")
    with pytest.raises(cli.PreviewError) as raised:
        cli.stack_file("nope", [tmp_path, EXAMPLES])
    assert str(raised.value) == (
        f"no stack file {tmp_path}/Pulumi.nope.yaml or examples/Pulumi.nope.yaml; stacks: alpha, dev, fleet, full, gb200, sriov"
    )


def test_make_preview_of_an_unknown_stack_exits_1_naming_the_examples() -> None:
    result = run_cli("nope", stacks_dir=None, fresh=True)
    assert result.returncode == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    prefix = "error: no stack file stacks/Pulumi.nope.yaml or examples/Pulumi.nope.yaml; stacks: "
    assert line.startswith(prefix)
    # Whatever stacks/ holds, the list is sorted and holds every example.
    listed = line.removeprefix(prefix).split(", ")
    assert listed == sorted(listed) and set(stack_names(EXAMPLES)) <= set(listed)


def test_manifest_field_order_is_stable() -> None:
    resource = RecordedResource(
        urn="urn:x",
        type="kubernetes:core/v1:Namespace",
        name="ns",
        custom=True,
        parent="",
        inputs={"spec": {"b": 1, "a": 2}, "metadata": {"name": "rdma", "labels": {"z": "1", "a": "2"}}},
        struct=None,  # type: ignore[arg-type]
        id="rdma",
    )
    document = rendering.manifest(resource)
    assert list(document) == ["apiVersion", "kind", "metadata", "spec"]
    assert document["apiVersion"] == "v1" and document["kind"] == "Namespace"
    assert list(document["metadata"]["labels"]) == ["a", "z"]
    assert list(rendering.manifests([resource])) == ["namespace._cluster.rdma.yaml"]


def test_preview_runs_the_policy_pack_and_writes_its_config(tmp_path: Path) -> None:
    result = run_cli("dev", rendered=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Policies: the oke-gpu-rdma pack reported nothing." in result.stdout
    written = json.loads((tmp_path / "dev" / "policy-pack-config.json").read_text())
    assert written["dranet-child-range"]["workerSubnetCidrs"] == ["10.140.64.0/19"]
    assert {"name": "pods CIDR (cluster.existing.podsCidr)", "cidr": "10.240.0.0/12"} in written[
        "dranet-child-range"
    ]["existingCidrs"]


def _with_peered_network(config: StackConfig) -> PackConfig:
    """The pack config plus a range the stack config has no key for (a peered network) that the default child
    range overlaps."""
    pack = policy_pack_config(config)
    peered = NamedCidr(name="peered VCN", cidr="10.208.0.0/16")  # type: ignore[arg-type]
    child = pack.child_range.model_copy(update={"existing_cidrs": (*pack.child_range.existing_cidrs, peered)})
    return pack.model_copy(update={"child_range": child})


def test_mandatory_violation_fails_the_preview(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "policy_pack_config", _with_peered_network)
    assert cli.main(["--stack", "dev", "--stacks-dir", str(EXAMPLES), "--rendered", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert "Policy Violations:" in out
    assert "[mandatory]" in out and "dranet-child-range" in out
    assert "10.208.0.0/12" in out and "peered VCN" in out
    assert "error: preview failed: mandatory policy violations (above)" in err


def test_a_refused_preview_leaves_the_rendering_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rendered/<stack>/ a review diffs stays the last one that passed, file for file, when a preview fails
    after the run (here a mandatory violation; a protected replacement and a schema refusal go the same way)."""
    args = ["--stack", "dev", "--stacks-dir", str(EXAMPLES), "--rendered", str(tmp_path)]
    assert cli.main(args) == 0
    before = {p: p.read_bytes() for p in (tmp_path / "dev").rglob("*") if p.is_file()}
    (tmp_path / "dev" / "placement.yaml").write_text("# the last one that passed\n")
    before[tmp_path / "dev" / "placement.yaml"] = b"# the last one that passed\n"
    capsys.readouterr()
    monkeypatch.setattr(cli, "policy_pack_config", _with_peered_network)
    assert cli.main(args) == 1
    out, err = capsys.readouterr()
    assert f"Not rendered: {tmp_path / 'dev'}/ is left as it was, because the preview failed (below)" in out
    assert err.splitlines()[-1] == "error: preview failed: mandatory policy violations (above)"
    assert {p: p.read_bytes() for p in (tmp_path / "dev").rglob("*") if p.is_file()} == before


# Issue 2's list of bad inputs: each gives its message through `make preview`, exit 1, no traceback.
BAD_CONFIGS = {
    "unknown shape": (
        ("nodePools", 0, "shape"),
        "BM.GPU.X9.8",
        "nodePools[0].shape = 'BM.GPU.X9.8': is not a known",
    ),
    "count below 1": (
        ("nodePools", 0, "count"),
        0,
        "nodePools[0].count = 0: must be at least 1",
    ),
    "malformed CIDR": (
        ("network", "existing", "workerSubnet", "cidr"),
        "10.140.64/19",
        "is not an IPv4 CIDR",
    ),
    "unmasked CIDR": (("network", "existing", "vcnCidrs", 0), "10.140.0.1/16", "did you mean 10.140.0.0/16?"),
    "child prefix": (
        ("dranet", "childRange"),
        "8.0.0.0/6",
        "dranet.childRange = '8.0.0.0/6': has prefix /6",
    ),
    "k8s version": (
        ("cluster", "existing", "kubernetesVersion"),
        "1.34",
        "is not a Kubernetes version of the form",
    ),
    "no compartment": (("compartmentId",), None, "compartmentId is missing; it is required"),
    "no AD": (
        ("nodePools", 0, "availabilityDomain"),
        None,
        "availabilityDomain is required when the stack creates",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_config_through_make_preview(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, value, expected = BAD_CONFIGS[case]
    raw = raw_config("dev")
    raw.setdefault("dranet", {})
    node: Any = raw
    for key in path[:-1]:
        node = node[key]
    if value is None:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    (tmp_path / "Pulumi.bad.yaml").write_text(yaml.safe_dump(as_stack_file(raw)))
    code = cli.main(["--stack", "bad", "--stacks-dir", str(tmp_path), "--rendered", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 1
    assert out == "" and "Traceback" not in err
    lines = err.splitlines()
    assert lines[0] == "error: invalid stack config:"
    assert len(lines) == 2 and lines[1].startswith(f"  {tmp_path}/Pulumi.bad.yaml: ")
    assert expected in lines[1]
    assert not (tmp_path / "out").exists()


def test_stack_file_whose_config_is_not_a_mapping(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "Pulumi.odd.yaml").write_text("config: [1, 2]\n")
    assert cli.main(["--stack", "odd", "--stacks-dir", str(tmp_path), "--rendered", str(tmp_path / "o")]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert (
        err
        == f"error: {tmp_path}/Pulumi.odd.yaml: must be a mapping with a `config:` mapping of keys to values\n"
    )


def own_stack() -> dict[str, Any]:
    """An example copied under your own name, with your own region (eu-frankfurt-1), OCIDs and pools."""
    raw = raw_config("dev")
    raw["homeRegion"] = "eu-frankfurt-1"
    raw["compartmentId"] = "ocid1.compartment.oc1..aaaaaaaamyowncompartment"
    existing = raw["network"]["existing"]
    existing["vcnId"] = "ocid1.vcn.oc1.eu-frankfurt-1.aaaaaaaamyownvcn"
    existing["vcnCidrs"] = ["10.50.0.0/16"]
    existing["workerSubnet"] = {"id": "ocid1.subnet.oc1.fra.aaaaaaaamyownworkers", "cidr": "10.50.32.0/20"}
    raw["cluster"]["existing"]["id"] = "ocid1.cluster.oc1.eu-frankfurt-1.aaaaaaaamyowncluster"
    raw["cluster"]["existing"]["kubernetesVersion"] = "v1.35.0"
    raw["nodePools"] = [
        {
            "name": "train",
            "count": 4,
            "availabilityDomain": "Uocm:EU-FRANKFURT-1-AD-3",
            "imageId": "ocid1.image.oc1.eu-frankfurt-1.aaaaaaaamyownimage",
        }
    ]
    raw["dranet"] = {"childRange": "10.192.0.0/14"}
    return raw


def test_a_stack_of_your_own_previews_cleanly(tmp_path: Path) -> None:
    # As the README says: an example copied under your own name, with your own region, OCIDs and pools.
    raw = own_stack()
    (tmp_path / "Pulumi.prod.yaml").write_text(yaml.safe_dump(as_stack_file(raw, region="eu-frankfurt-1")))
    result = run_cli("prod", stacks_dir=tmp_path, rendered=tmp_path / "rendered")
    assert result.returncode == 0, result.stderr
    assert "Previewing update (prod) offline" in result.stdout
    assert (tmp_path / "rendered" / "prod" / "policy-pack-config.json").is_file()


def test_a_misspelt_region_is_one_line_naming_it(tmp_path: Path) -> None:
    # A stack of your own that sorts before the examples, its OCIDs in Frankfurt, its oci:region misspelt.
    (tmp_path / "Pulumi.alpha.yaml").write_text(
        yaml.safe_dump(as_stack_file(own_stack(), region="eu-frankfrut-1"))
    )
    result = run_cli("alpha", stacks_dir=tmp_path, rendered=tmp_path / "rendered")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stderr.splitlines() == [
        "error: invalid stack config:",
        f"  {tmp_path}/Pulumi.alpha.yaml: oci:region = 'eu-frankfrut-1': is not a known OCI region identifier; did you "
        "mean eu-frankfurt-1? (regions are named like us-ashburn-1: oci iam region list)",
    ]
    assert not (tmp_path / "rendered").exists()


@pytest.mark.parametrize("stack", stack_names(EXAMPLES))
def test_unchanged_program_plans_no_changes_and_rendered_is_current(stack: str, tmp_path: Path) -> None:
    # What a clean checkout's `make preview` prints; the rendering must be byte for byte rendered/<stack>/.
    committed = ROOT / "rendered" / stack
    result = run_cli(stack, EXAMPLES, tmp_path, "--base-dir", str(committed))
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[out.index(f"Plan against {committed}:") + 1] == "  no changes"
    assert "GPU nodes:" not in out
    resources = out.index("Resources:")
    assert out[resources + 1].endswith(" unchanged") and len(out[resources + 1].split()) == 2
    written = {str(p.relative_to(tmp_path / stack)) for p in (tmp_path / stack).rglob("*") if p.is_file()}
    current = {str(p.relative_to(committed)) for p in committed.rglob("*") if p.is_file()}
    assert written == current, "rendered/ is not current: run make render"
    for path in written:
        assert (tmp_path / stack / path).read_text() == (committed / path).read_text(), path


def test_gpu_node_impact_comes_first_and_goes_to_the_summary(tmp_path: Path) -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["imageId"] = "ocid1.image.oc1.iad.aaaaaaaaexamplenewimage"
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(as_stack_file(raw)))
    summary = tmp_path / "summary.md"
    result = run_cli(
        "dev",
        tmp_path,
        tmp_path / "out",
        "--base-dir",
        str(ROOT / "rendered" / "dev"),
        "--summary",
        str(summary),
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    impact = [
        "  ! gpu-b4: 2 BM.GPU.B4.8 nodes cycled (surge 0, unavailable 1, cycleModes unset: INSTANCE_REPLACE): "
        "node image (nodeSourceDetails.imageId)",
        "  ! gpu-b4: Oracle's documents disagree whether bare-metal nodes cycle by instance replacement (the "
        'cycling guide: "You cannot cycle nodes with bare metal shapes"; the API takes it), the nodes may keep '
        "the old spec; BOOT_VOLUME_REPLACE is documented for bare metal",
    ]
    assert out[1:5] == ["", "GPU nodes:", *impact]
    assert out.index(impact[-1]) < next(i for i, line in enumerate(out) if line.lstrip().startswith("Type"))
    pool_row = next(
        line for line in out if line.rstrip().endswith("update [diff: ~nodeSourceDetails.imageId]")
    )
    assert pool_row.startswith(" ~      └─ oci:ContainerEngine/nodePool:NodePool")
    assert (
        "  ~ oci:ContainerEngine/nodePool:NodePool gpu-b4-nodes update [diff: ~nodeSourceDetails.imageId]"
        in out
    )
    assert out[out.index("Resources:") + 1 :][:2] == ["    ~ 1 to update", "    1 change. 23 unchanged"]
    text = summary.read_text()
    assert text.startswith("### Change plan: `dev`\n\n```text\n! gpu-b4: 2 BM.GPU.B4.8 nodes cycled")
    assert "gpu-b4-nodes update [diff: ~nodeSourceDetails.imageId]" in text
    # What neither the plan nor the pack sees is named, in the report and in the summary.
    not_shown = (
        "Not shown: the objects Helm renders from the charts of dranet-release, gpu-dra-driver-release at "
        "apply time (the plan shows each release's chart, version and values)"
    )
    assert not_shown in out and f"{not_shown}\n" in text
    # Every manifest against the stack's Kubernetes schemas.
    assert (
        "Schemas: 8 manifest(s) valid against the Kubernetes v1.36.0 OpenAPI schemas (strict; "
        "kubernetes-validate 1.37.0, the newest it ships not newer than the stack's v1.36.4)"
    ) in out


def test_a_protected_replacement_fails_the_preview_as_pulumi_preview_does(tmp_path: Path) -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["availabilityDomain"] = "Uocm:US-ASHBURN-AD-2"
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(as_stack_file(raw)))
    base = ["--base-dir", str(ROOT / "rendered" / "dev")]
    result = run_cli("dev", tmp_path, tmp_path / "out", *base)
    assert result.returncode == 1
    assert "error: unable to replace resource" in result.stdout
    assert result.stderr.strip().splitlines()[-1] == (
        "error: preview failed: protected resources would be replaced or deleted: "
        "gpu-b4-compute-cluster, gpu-b4-nodes (set `oke-gpu-rdma:protect: {gpuPools: false}` in the stack "
        "file to allow it)"
    )
    assert "Not rendered: " in result.stdout and not (tmp_path / "out").exists()
    # Unprotecting the GPU pools in the same change makes it a replacement the apply carries out.
    raw["protect"] = {"gpuPools": False}
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(as_stack_file(raw)))
    result = run_cli("dev", tmp_path, tmp_path / "out", *base)
    assert result.returncode == 0, result.stderr
    assert "    +-2 to replace" in result.stdout.splitlines()


def test_a_fleet_of_two_dranet_shapes_previews_clean_with_per_shape_templates(tmp_path: Path) -> None:
    """Issue 19 items 1 and 3: B4.8 pools, an A100 pool with a supplied topology (1 GPU and 2 rails per root)
    and the CPU system pool. Each shape gets templates from its own topology, named by shape, and the pack
    judges each where it can be allocated: the preview is clean, policies included."""
    a100 = "BM.GPU.A100-v2.8"
    raw = raw_config("full")
    raw["nodePools"].append({**raw["nodePools"][0], "name": "gpu-a100", "shape": a100})
    raw["shapeTopologies"] = {
        a100: {
            "roots": [
                {
                    "name": f"pci0000:{i:02x}",
                    "numaNode": i // 4,
                    "gpus": [f"0000:{16 + i:02x}:00.0"],
                    "rails": [
                        {"name": f"rdma{2 * i + r}", "pciAddress": f"0000:{64 + i:02x}:00.{r}"}
                        for r in range(2)
                    ],
                }
                for i in range(8)
            ]
        }
    }
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    (stacks / "Pulumi.mixed.yaml").write_text(yaml.safe_dump(as_stack_file(raw)))
    result = run_cli("mixed", stacks, tmp_path / "out")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Policies: the oke-gpu-rdma pack reported nothing." in result.stdout
    manifests = tmp_path / "out" / "mixed" / "manifests"
    names = sorted(p.name for p in manifests.glob("resourceclaimtemplate.*"))
    # Per shape, and the first shape's under the one-shape names too (issue 23 item 4: pinned to it).
    assert names == sorted(
        f"resourceclaimtemplate.rdma-dranet.{t}{s}.yaml"
        for t in ("aligned-8gpu-16rails", "aligned-4gpu-8rails", "all-rails")
        for s in ("-bm-gpu-b4-8", "-bm-gpu-a100-v2-8", "")
    )


def _mixed_fleet() -> dict[str, Any]:
    """Issue 19's first acceptance stack: the full example's B4.8 pools (DRANET), an H100 pool and an A10
    inference pool that DRANET does not select (rdma: none), and the CPU system pool."""
    raw = raw_config("full")
    b4 = raw["nodePools"][0]
    raw["nodePools"] += [
        {**b4, "name": "gpu-h100", "shape": "BM.GPU.H100.8", "rdma": "none"},
        {**b4, "name": "infer-a10", "shape": "VM.GPU.A10.1", "count": 3, "rdma": "none"},
    ]
    return raw


def test_a_mixed_fleet_with_pools_dranet_does_not_select_previews_clean(tmp_path: Path) -> None:
    """Issue 19 acceptance: B4.8 pools, an H100 pool DRANET does not select, an A10 inference pool and the CPU
    system pool preview clean, policies included, with the B4.8 templates aligned (named by shape). The
    rail-less pools get no compute cluster, take their GPUs from the device plugin and no DRA driver selects
    them."""
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    (stacks / "Pulumi.mixed.yaml").write_text(yaml.safe_dump(as_stack_file(_mixed_fleet())))
    result = run_cli("mixed", stacks, tmp_path / "out")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Policies: the oke-gpu-rdma pack reported nothing." in result.stdout
    manifests = tmp_path / "out" / "mixed" / "manifests"
    names = sorted(p.name for p in manifests.glob("resourceclaimtemplate.*"))
    # One shape DRANET selects: the templates keep their plain names, each from the B4.8 topology.
    assert names == sorted(
        f"resourceclaimtemplate.rdma-dranet.{t}.yaml"
        for t in ("aligned-8gpu-16rails", "aligned-4gpu-8rails", "all-rails")
    )
    aligned = yaml.safe_load(
        (manifests / "resourceclaimtemplate.rdma-dranet.aligned-4gpu-8rails.yaml").read_text()
    )
    constraints = aligned["spec"]["spec"]["devices"]["constraints"]
    assert [c["matchAttribute"] for c in constraints] == ["resource.kubernetes.io/pcieRoot"] * 2
    assert (
        "gpu-h100-compute-cluster" not in result.stdout and "infer-a10-compute-cluster" not in result.stdout
    )
    assert "gpu-b4-a-compute-cluster" in result.stdout


def test_giving_dranet_a_pool_of_a_shape_without_topology_is_refused_with_how_to_supply_one(
    tmp_path: Path,
) -> None:
    """Issue 19 acceptance: the H100 pool of the mixed fleet switched to rdma: dranet with no shapeTopologies
    entry for BM.GPU.H100.8 is refused, with the message saying how to supply one: issue 23's onboarding path,
    the key to set, `make topology` and where its entry goes."""
    raw = _mixed_fleet()
    raw["nodePools"][2]["rdma"] = "dranet"
    (tmp_path / "Pulumi.mixed.yaml").write_text(yaml.safe_dump(as_stack_file(raw)))
    result = run_cli("mixed", tmp_path, tmp_path / "rendered")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stderr.splitlines() == [
        "error: invalid stack config:",
        f"  {tmp_path}/Pulumi.mixed.yaml: nodePools[2].shape = 'BM.GPU.H100.8': BM.GPU.H100.8 has no GPU/NIC topology "
        "to build and judge claim templates on (the catalog lists it unverified: 16 x 200 Gb/s rails (8 dual-port ConnectX-7), a GPU and a NIC per PCIe switch, 2 NUMA nodes; PCIe roots not published); onboard it: set nodePools[2].onboarding: true "
        "(DRANET and the GPU DRA driver run on the pool, its shape gets no claim templates, the other pools keep "
        "theirs) and pulumi up; then `kubectl get resourceslices -o yaml > slices.yaml`, `kubectl get nodes -o yaml "
        "> nodes.yaml`, `make topology SLICES=slices.yaml NODES=nodes.yaml SHAPE=BM.GPU.H100.8`, paste the entry it "
        "prints (shapeTopologies.BM.GPU.H100.8) under oke-gpu-rdma:shapeTopologies and remove "
        "nodePools[2].onboarding (docs/onboarding-a-shape.md)",
    ]


def test_an_onboarding_h100_pool_next_to_b4_pools_previews_with_the_b4_templates_alone(
    tmp_path: Path,
) -> None:
    """Issue 23 acceptance: the H100 pool of the mixed fleet onboarding (rdma: dranet, onboarding: true)
    previews, policies included: the pack names the pool as not judged (advisory) instead of blocking, and the
    rendered claim templates are exactly those of the fleet without it."""
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "Pulumi.mixed.yaml").write_text(yaml.safe_dump(as_stack_file(_mixed_fleet())))
    assert run_cli("mixed", plain, tmp_path / "before").returncode == 0
    raw = _mixed_fleet()
    raw["nodePools"][2] |= {"rdma": "dranet", "onboarding": True}
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    (stacks / "Pulumi.mixed.yaml").write_text(yaml.safe_dump(as_stack_file(raw)))
    result = run_cli("mixed", stacks, tmp_path / "out")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[mandatory]" not in result.stdout
    assert (
        "not checked: node pool gpu-h100-nodes: BM.GPU.H100.8 is onboarding (stack config nodePools[].onboarding, "
        "pack config gpu-rail-claims-aligned.onboardingShapes), so claims that can land there are not judged on it "
        "until its topology is supplied (stack config shapeTopologies.BM.GPU.H100.8); pods that must get aligned "
        "GPUs and rails select the pools whose shape has templates"
    ) in result.stdout

    def templates(out: Path) -> dict[str, str]:
        return {p.name: p.read_text() for p in (out / "mixed" / "manifests").glob("resourceclaimtemplate.*")}

    assert templates(tmp_path / "out") == templates(tmp_path / "before")
    assert len(templates(tmp_path / "out")) == 3
    # The schedulability check, on the charts' own pod templates: both drivers' DaemonSets admit the H100 pool.
    placement = yaml.safe_load((tmp_path / "out" / "mixed" / "placement.yaml").read_text())
    pools = {p["pod"]: p["pools"] for p in placement["pods"]}
    assert pools["DaemonSet dranet (chart dranet)"] == ["gpu-b4-a", "gpu-b4-b", "gpu-h100"]
    assert pools["DaemonSet dra-driver-nvidia-gpu-kubelet-plugin (chart dra-driver-nvidia-gpu)"] == [
        "gpu-b4-a",
        "gpu-b4-b",
        "gpu-h100",
    ]


@pytest.mark.parametrize(
    ("key", "line"),
    [
        (
            "oke-gpu-rmda:dranet",
            "oke-gpu-rmda:dranet is in namespace 'oke-gpu-rmda', which nothing of this stack reads (the program reads "
            "oke-gpu-rdma:, the OCI provider oci:, the engine pulumi:); did you mean oke-gpu-rdma:dranet?",
        ),
        (
            "oci:regoin",
            "oci:regoin is not a setting of the OCI provider (pulumi-oci's provider arguments: oci:region, oci:auth, "
            "oci:configFileProfile, ...); did you mean oci:region?",
        ),
    ],
)
def test_a_key_nothing_reads_fails_the_preview_in_one_line(tmp_path: Path, key: str, line: str) -> None:
    document = as_stack_file(raw_config("dev"))
    document["config"][key] = {"enabled": False} if key.endswith("dranet") else "us-phoenix-1"
    (tmp_path / "Pulumi.typo.yaml").write_text(yaml.safe_dump(document))
    result = run_cli("typo", stacks_dir=tmp_path, rendered=tmp_path / "out")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == f"error: invalid stack config:\n  {tmp_path}/Pulumi.typo.yaml: {line}\n"
    assert not (tmp_path / "out").exists()


def test_a_base_that_names_no_commit_fails_before_the_run(tmp_path: Path) -> None:
    result = run_cli("dev", EXAMPLES, tmp_path / "out", "--base", "no-such-branch")
    assert result.returncode == 1
    assert result.stderr == (
        "error: --base no-such-branch (BASE=no-such-branch) names no commit of this repository; pass a branch, tag "
        "or commit (default HEAD; git branch -a lists them)\n"
    )
    assert not (tmp_path / "out").exists()


def test_a_secret_of_the_program_is_named_not_judged(tmp_path: Path) -> None:
    document = as_stack_file(raw_config("dev"))
    document["config"]["oke-gpu-rdma:compartmentId"] = {"secure": "v1:Y2lwaGVydGV4dA=="}
    (tmp_path / "Pulumi.sec.yaml").write_text(yaml.safe_dump(document))
    result = run_cli("sec", stacks_dir=tmp_path, rendered=tmp_path / "out")
    assert result.returncode == 1
    assert result.stderr == (
        f"error: invalid stack config:\n  {tmp_path}/Pulumi.sec.yaml: oke-gpu-rdma:compartmentId is a secret (secure:) "
        "the offline preview cannot decrypt, so it cannot judge the value; keep this setting in plain text (a "
        "compartment or subnet OCID is no secret), or check the stack with pulumi preview\n"
    )


def test_a_duplicate_key_fails_the_preview_naming_both_lines(tmp_path: Path) -> None:
    text = (EXAMPLES / "Pulumi.dev.yaml").read_text() + "  oci:region: us-phoenix-1\n"
    (tmp_path / "Pulumi.twice.yaml").write_text(text)
    result = run_cli("twice", stacks_dir=tmp_path, rendered=tmp_path / "out")
    assert result.returncode == 1
    first = next(i for i, line in enumerate(text.splitlines(), 1) if "oci:region" in line)
    last = len(text.splitlines())
    assert result.stderr == (
        f"error: {tmp_path}/Pulumi.twice.yaml: is not a valid stack file: line {last}, column 3: the key 'oci:region' "
        f"is given twice in one mapping (lines {first} and {last}); keep one\n"
    )


def _unchanged_plan(stack: str) -> Any:
    """The plan of a stack whose rendering is its committed one (no change)."""
    files = base_rendering.from_folder(ROOT / "rendered" / stack).files
    assert files is not None
    return change_plan.build(change_plan.parse(files), change_plan.parse(files), "x")


# The B4.8 flavor is the second (the system flavor comes first); its quotas: cpu, memory, pods, GPUs, rails.
QUOTAS = ", ".join(f"~spec.resourceGroups[0].flavors[1].resources[{i}].nominalQuota" for i in range(5))
MPI_MANIFEST = (
    "https://raw.githubusercontent.com/kubeflow/mpi-operator/c983759cfa87fd32ed5711804021ea47eb8d712c/deploy/v2beta1/"
    "mpi-operator.yaml"
)


def test_a_size_change_prints_the_changed_resource_the_gpu_line_and_the_counts(tmp_path: Path) -> None:
    raw = raw_config("full")
    raw["nodePools"][0]["count"] = 4
    (tmp_path / "Pulumi.full.yaml").write_text(yaml.safe_dump(as_stack_file(raw)))
    summary = tmp_path / "summary.md"
    cli.append_summary(summary, "dev", _unchanged_plan("dev"))
    base = ["--base-dir", str(ROOT / "rendered" / "full"), "--summary", str(summary)]
    result = run_cli("full", tmp_path, tmp_path / "out", *base)
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    pad = " " * 59  # to the widest resource name of the full stack
    assert out[: out.index("Outputs:")] == [
        "Previewing update (full) offline: Pulumi mock runtime, nothing was sent to a cloud",
        "",
        "GPU nodes:",
        "  ! gpu-b4-a: 2 => 4 BM.GPU.B4.8 nodes: 2 added",
        "",
        "     Type" + " " * 79 + "Name",
        "     pulumi:pulumi:Stack" + " " * 64 + "oke-gpu-rdma-full",
        "     ├─ oke-gpu-rdma:index:RdmaGpuNodePool" + " " * 46 + "gpu-b4-a",
        " ~   │  └─ oci:ContainerEngine/nodePool:NodePool"
        + " " * 40
        + "gpu-b4-a-nodes"
        + pad[14:]
        + "update [diff: ~nodeConfigDetails.size]",
        # The ClusterQueue's quotas follow the pool's size (the full example schedules through Kueue).
        "     └─ oke-gpu-rdma:index:Kueue" + " " * 56 + "kueue",
        " ~      └─ kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
        + " " * 31
        + "kueue-clusterqueue-rdma-gpus"
        + " " * 31
        + f"update [diff: {QUOTAS}]",
        "     (144 other unchanged resources not shown: --show-sames, or make preview SHOW_SAMES=1, lists them)",
        "",
        f"Plan against {ROOT / 'rendered' / 'full'}:",
        "  ~ oci:ContainerEngine/nodePool:NodePool gpu-b4-a-nodes update [diff: ~nodeConfigDetails.size]",
        "      ~ nodeConfigDetails.size: 2 => 4",
        f"  ~ kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue kueue-clusterqueue-rdma-gpus update [diff: {QUOTAS}]",
        '      ~ spec.resourceGroups[0].flavors[1].resources[0].nominalQuota: "512" => "768"',
        '      ~ spec.resourceGroups[0].flavors[1].resources[1].nominalQuota: "8192Gi" => "12288Gi"',
        '      ~ spec.resourceGroups[0].flavors[1].resources[2].nominalQuota: "440" => "660"',
        '      ~ spec.resourceGroups[0].flavors[1].resources[3].nominalQuota: "32" => "48"',
        '      ~ spec.resourceGroups[0].flavors[1].resources[4].nominalQuota: "64" => "96"',
        "Not shown: the objects Helm renders from the charts of dranet-release, gpu-dra-driver-release, "
        "gpu-operator-release, kueue-release, monitoring-release at apply time (the plan shows each release's chart, "
        "version and values)",
        "Not shown: the objects of the manifests that ConfigFile acceptance-mpi-operator-manifest "
        f"({MPI_MANIFEST}) fetches at apply time (the plan shows the manifest's URL, pinned to a commit)",
        "",
    ]
    resources = out.index("Resources:")
    assert out[resources : resources + 3] == [
        "Resources:",
        "    ~ 2 to update",
        "    2 changes. 147 unchanged",
    ]
    # No unchanged resource of the 107 is in the tree.
    assert not any(line.rstrip().endswith(("gpu-b4-b-nodes", "network-vcn", "oke-cluster")) for line in out)
    # The CI summary of a change to one stack among unchanged ones: one section, one closing line.
    cli.append_summary(summary, "sriov", _unchanged_plan("sriov"))
    text = summary.read_text()
    assert text.count("### Change plan") == 1
    assert text.startswith(
        "### Change plan: `full`\n\n```text\n! gpu-b4-a: 2 => 4 BM.GPU.B4.8 nodes: 2 added\n"
    )
    assert text.endswith("```\n\n**No changes:** `dev`, `sriov`\n")


def test_show_sames_lists_every_resource(tmp_path: Path) -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["count"] = 3
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(as_stack_file(raw)))
    base = ["--base-dir", str(ROOT / "rendered" / "dev"), "--show-sames"]
    result = run_cli("dev", tmp_path, tmp_path / "out", *base)
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    tree = out[out.index(next(line for line in out if line.lstrip().startswith("Type"))) + 1 :]
    rows = tree[: tree.index("")]
    assert len(rows) == 24 and not any("not shown" in row for row in rows)
    assert [row for row in rows if row.startswith(" ~ ")] == [
        " ~   │  └─ oci:ContainerEngine/nodePool:NodePool"
        + " " * 16
        + "gpu-b4-nodes"
        + " " * 38
        + "update [diff: ~nodeConfigDetails.size]"
    ]


def test_a_summary_of_stacks_without_changes_is_one_line(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("Earlier step's notes\n")
    for stack in stack_names(EXAMPLES):
        cli.append_summary(summary, stack, _unchanged_plan(stack))
    assert (
        summary.read_text()
        == "Earlier step's notes\n**No changes:** `dev`, `fleet`, `full`, `gb200`, `sriov`\n"
    )
