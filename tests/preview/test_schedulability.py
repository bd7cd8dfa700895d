"""The preview's schedulability check (preview/schedulability.py) through `make preview`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from preview.mock_runtime import ROOT
from preview.schedulability import PLACEMENT_FILE, check_run, pod_placements
from stack_config.loading import load_stack
from stack_config.placement_plan import controllers
from tests.preview.test_cli import run_cli
from tests.support import EXAMPLE_REGION, Run, as_stack_file, raw_config


def write_stack(folder: Path, name: str, raw: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(as_stack_file(raw)))
    return folder


def test_a_pod_no_pool_admits_fails_the_preview_naming_the_pod_the_pools_and_why(tmp_path: Path) -> None:
    raw = raw_config("full")
    # A label that overrides the pool label: the NCCL workers select gpu-b4-b by it and find no node.
    raw["nodePools"][1]["labels"] = {"oke-gpu-rdma/node-pool": "training"}
    raw["workloads"] = {"acceptanceJobs": {"enabled": True, "nodePool": "gpu-b4-b"}}
    result = run_cli("relabel", write_stack(tmp_path / "stacks", "relabel", raw), tmp_path / "rendered")
    assert result.returncode == 1
    mismatch = "nodeSelector oke-gpu-rdma/node-pool=gpu-b4-b does not match its labels"
    assert result.stderr == (
        "error: stacks/Pulumi.relabel.yaml: pods that no node pool admits (they would stay Pending and "
        "`pulumi up` would time out waiting for them):\n"
        f"  MPIJob rdma-dranet/nccl-all-reduce Worker fits no node pool of the stack: gpu-b4-a: {mismatch}; "
        f"gpu-b4-b: {mismatch}; system: {mismatch}\n"
    )
    assert "Traceback" not in result.stdout + result.stderr
    assert not (tmp_path / "rendered" / "relabel").exists()


def test_an_existing_cluster_says_which_pools_the_check_could_not_see(tmp_path: Path) -> None:
    result = run_cli("dev", rendered=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (
        "Schedulability: not checked for pods that may run on pools outside this stack:\n"
        "  Deployment kube-system/coredns (OKE cluster add-on) fits no node pool of the stack: gpu-b4: taint "
        "nvidia.com/gpu=present:NoSchedule is not tolerated; it may run on the node pools of cluster "
        "ocid1.cluster.oc1.iad.aaaaaaaaexampleclustergpurdma that this stack does not declare, which the check "
        "cannot see\n"
    ) in result.stdout


def test_every_pod_of_the_full_stack_finds_a_pool(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("full")
    raw["workloads"] = {"acceptanceJobs": {"enabled": True}}
    resources = run_stack("full", raw).resources
    verdict = check_run(resources, load_stack(raw, "full", EXAMPLE_REGION))
    assert (verdict.problems, verdict.notes) == ((), ())
    where = dict(verdict.placements)
    assert where["Deployment kube-system/coredns (OKE cluster add-on)"] == ("system",)
    assert where["MPIJob rdma-dranet/nccl-all-reduce Launcher"] == ("gpu-b4-a", "gpu-b4-b", "system")
    assert where["MPIJob rdma-dranet/nccl-all-reduce Worker"] == ("gpu-b4-a",)
    assert where["DaemonSet dranet (chart dranet)"] == ("gpu-b4-a", "gpu-b4-b")
    assert where["DaemonSet nvidia-operator-validator (chart gpu-operator, release gpu-operator)"] == (
        "gpu-b4-a",
        "gpu-b4-b",
    )
    assert sorted(p.name for p in pod_placements(resources)) == sorted(
        [
            "Deployment gpu-operator (chart gpu-operator, release gpu-operator)",
            "Deployment nfd-master (chart gpu-operator, release gpu-operator)",
            "Deployment nfd-gc (chart gpu-operator, release gpu-operator)",
            "DaemonSet nfd-worker (chart gpu-operator, release gpu-operator)",
            # The operands the operator creates with the stack's values (devicePlugin.enabled false: every pool
            # is DRA-served), each placed by its nvidia.com/gpu.deploy.<operand> label.
            *(
                f"DaemonSet {name} (chart gpu-operator, release gpu-operator)"
                for name in (
                    "nvidia-container-toolkit-daemonset",
                    "nvidia-operator-validator",
                    "nvidia-dcgm-exporter",
                    "gpu-feature-discovery",
                    "nvidia-mig-manager",
                )
            ),
            "DaemonSet dranet (chart dranet)",
            "DaemonSet dra-driver-nvidia-gpu-kubelet-plugin (chart dra-driver-nvidia-gpu)",
            "Deployment mpi-operator/mpi-operator",
            "MPIJob rdma-dranet/nccl-all-reduce Launcher",
            "MPIJob rdma-dranet/nccl-all-reduce Worker",
            "Deployment kube-system/coredns (OKE cluster add-on)",
        ]
    )


def test_the_committed_full_rendering_shows_a_pool_for_every_pod() -> None:
    document = yaml.safe_load((ROOT / "rendered" / "full" / PLACEMENT_FILE).read_text())
    assert "notChecked" not in document
    pools = {entry["pod"]: entry["pools"] for entry in document["pods"]}
    assert all(pools.values()), pools
    assert pools["Deployment kube-system/coredns (OKE cluster add-on)"] == ["system"]
    assert pools["Deployment gpu-operator (chart gpu-operator, release gpu-operator)"] == ["system"]


def test_the_programs_controllers_are_placed_as_the_run_declares_them(run_stack: Callable[..., Run]) -> None:
    """The program's early check (stack_config/placement_plan.py) reads chart defaults; the preview reads the
    values the run declared. Both must see the same placement for every controller."""
    for stack, changes in (("full", {"acceptanceJobs": {"enabled": True}}), ("sriov", {})):
        raw = raw_config(stack)
        raw.setdefault("workloads", {}).update(changes)
        declared = {p.name: p for p in pod_placements(run_stack(stack, raw).resources)}
        planned = controllers(load_stack(raw, stack, EXAMPLE_REGION).config)
        assert planned
        for pod in planned:
            assert declared[pod.name] == pod, pod.name
