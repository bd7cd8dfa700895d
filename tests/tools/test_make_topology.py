"""`make topology`: the command prints a shapeTopologies entry a stack takes as it is; bad dumps are one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from preview.cli import preview
from tests.fixtures import FIXTURES
from tests.support import Run, as_stack_file, raw_config
from tools.make_topology import main

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
DUMP = FIXTURES / "resourceslices" / "b4-two-nodes.yaml"
UNVERIFIED = "BM.GPU.A100-v2.8"


def printed_entry(capsys, *args: str) -> dict:
    assert main([str(DUMP), *args]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# ResourceSlices of nodes 10.140.64.11, 10.140.64.12 in b4-two-nodes.yaml")
    entry = yaml.safe_load(out)
    assert list(entry) == ["BM.GPU.B4.8"]
    return entry


def templates(run) -> dict[str, dict]:
    return {r.name: r.inputs for r in run.of_type(TEMPLATE)}


def test_a_stack_using_the_output_renders_the_catalog_templates_and_previews_clean(
    capsys, run_stack, tmp_path
):
    raw = raw_config("dev")
    from_catalog = templates(run_stack("dev", raw))
    # The fixture's nodes are B4.8, whose verified file a stack cannot override (issue 28): the entry
    # stands for a shape without a verified file, as onboarding one is (the same layout, so the same templates).
    entry = printed_entry(capsys)["BM.GPU.B4.8"]
    raw["nodePools"][0]["shape"] = UNVERIFIED
    stack = as_stack_file({**raw, "shapeTopologies": {UNVERIFIED: entry}})
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(stack))
    result = preview("dev", [tmp_path])  # the program, then the policy pack on what it declared
    assert result.findings == []
    assert (
        result.pack_config["gpu-rail-claims-aligned"]["shapeTopologies"][UNVERIFIED]["evidence"]
        == "from-cluster"
    )
    from_cluster = templates(Run(result.run))
    assert sorted(from_cluster) == [
        "claim-templates-rdma-dranet-aligned-4gpu-8rails",
        "claim-templates-rdma-dranet-aligned-8gpu-16rails",
        "claim-templates-rdma-dranet-all-rails",
    ]
    assert from_cluster == from_catalog


def test_a_dump_lacking_gpu_slices_is_one_line_and_exit_1(tmp_path, capsys):
    document = yaml.safe_load(DUMP.read_text())
    document["items"] = [i for i in document["items"] if i["spec"]["driver"] != "gpu.nvidia.com"]
    dump = tmp_path / "slices.yaml"
    dump.write_text(yaml.safe_dump(document))
    assert main([str(dump), "--node", "10.140.64.12"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "error: slices.yaml: node 10.140.64.12: missing GPU driver slices (driver gpu.nvidia.com: is the "
        "NVIDIA DRA driver's kubelet plugin running there?)\n"
    )


def test_a_missing_file_says_how_to_write_it(tmp_path, capsys):
    assert main([str(tmp_path / "none.yaml")]) == 1
    assert capsys.readouterr().err == (
        f"error: SLICES={tmp_path / 'none.yaml'}: cannot read it (No such file or directory); write it with "
        f"`kubectl get resourceslices -o yaml > {tmp_path / 'none.yaml'}`\n"
    )


def test_make_topology_runs_the_command():
    done = subprocess.run(
        ["make", "-s", "topology", f"SLICES={DUMP}", "NODE=10.140.64.11", f"PYTHON={sys.executable}"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    entry = yaml.safe_load(done.stdout)["BM.GPU.B4.8"]
    assert (
        entry["source"]
        == "ResourceSlices of node 10.140.64.11 in b4-two-nodes.yaml (gpu.nvidia.com, dra.net)"
    )
    assert [r["name"] for r in entry["roots"]] == ["pci0000:00", "pci0000:3e", "pci0000:7d", "pci0000:ba"]


def test_nodes_dump_gives_the_shape_when_the_slices_do_not(tmp_path, capsys):
    document = yaml.safe_load(DUMP.read_text())
    for item in document["items"]:
        for device in item["spec"]["devices"]:
            device["attributes"].pop("oke.dra.net/shape", None)
    slices, nodes = tmp_path / "slices.yaml", tmp_path / "nodes.yaml"
    slices.write_text(yaml.safe_dump(document))
    nodes.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [
                    {
                        "kind": "Node",
                        "metadata": {
                            "name": n,
                            "labels": {"node.kubernetes.io/instance-type": "BM.GPU.B4.8"},
                        },
                    }
                    for n in ("10.140.64.11", "10.140.64.12")
                ],
            }
        )
    )
    assert main([str(slices), "--nodes", str(nodes)]) == 0
    assert list(yaml.safe_load(capsys.readouterr().out)) == ["BM.GPU.B4.8"]
    assert main([str(slices), "--nodes", str(tmp_path / "none.yaml")]) == 1
    assert capsys.readouterr().err.startswith(f"error: NODES={tmp_path / 'none.yaml'}: cannot read it")


GB200_DUMP = FIXTURES / "resourceslices" / "gb200-v3.4-published.yaml"
GB200 = "BM.GPU.GB200-v3.4"


def test_the_published_gb200_slices_print_the_entry_the_shape_file_holds(capsys):
    assert main([str(GB200_DUMP), "--shape", GB200]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)[GB200]
    assert printed.pop("evidence") == "from-cluster"
    assert printed.pop("source") == (
        "ResourceSlices of node 10.140.65.248 in gb200-v3.4-published.yaml (gpu.nvidia.com, dra.net)"
    )
    shape_file = yaml.safe_load((ROOT / "oke_gpu_rdma" / "nodes" / "shapes" / f"{GB200}.yaml").read_text())
    assert (shape_file.pop("evidence"), shape_file.pop("note") != "") == ("verified", True)
    assert "kubernetes-sigs/dranet@" in shape_file.pop("source")
    # Vendor figures no slice publishes: the shape file's alone, each with its source in a comment there.
    assert (shape_file.pop("multiNodeNvlinkGBps"), shape_file.pop("railGbps")) == (900, 400)
    assert printed == shape_file


def test_make_topology_runs_on_the_published_gb200_slices():
    done = subprocess.run(
        ["make", "-s", "topology", f"SLICES={GB200_DUMP}", f"SHAPE={GB200}", f"PYTHON={sys.executable}"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    roots = yaml.safe_load(done.stdout)[GB200]["roots"]
    assert [(r["name"], r["numaNode"], r.get("numaFrom")) for r in roots if r["gpus"]] == [
        ("pci0008:00", 0, "pciDomain"),
        ("pci0009:00", 0, "pciDomain"),
        ("pci0018:00", 1, "pciDomain"),
        ("pci0019:00", 1, "pciDomain"),
    ]
