"""The preview's schedulability check (preview/schedulability.py) through `make preview`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from oke_gpu_rdma import resource_types
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
    assert sorted(p.name for p in pod_placements(resources)) == sorted(
        [
            "Deployment gpu-operator (chart gpu-operator, release gpu-operator)",
            "Deployment nfd-master (chart gpu-operator, release gpu-operator)",
            "Deployment nfd-gc (chart gpu-operator, release gpu-operator)",
            "DaemonSet nfd-worker (chart gpu-operator, release gpu-operator)",
            "DaemonSets of the GPU operands (container toolkit, device plugin, GPU feature discovery) "
            "(chart gpu-operator, release gpu-operator)",
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


SRIOV_CHART = "(chart network-operator, release network-operator)"
FROM_CONFIG = "(SR-IOV Network Operator, from SriovOperatorConfig default)"
FROM_NCP = "(Network Operator, from NicClusterPolicy nic-cluster-policy)"


def test_every_pod_of_the_sriov_stack_and_its_operators_finds_a_pool(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("sriov")
    resources = run_stack("sriov", raw).resources
    verdict = check_run(resources, load_stack(raw, "sriov", EXAMPLE_REGION))
    assert verdict.problems == ()
    where = dict(verdict.placements)
    # The node agents of the VFs run on the SR-IOV pool: the config daemon's chart selector (legacy OS label,
    # mofed.wait=false set by the operator on nodes with a Mellanox NIC), the device plugin's label set by the
    # node policy controller, and the NicClusterPolicy's DaemonSets kept on the SR-IOV nodes.
    for agent in (
        f"DaemonSet sriov-network-config-daemon {FROM_CONFIG}",
        f"DaemonSet sriov-device-plugin {FROM_CONFIG}",
        f"DaemonSet kube-multus-ds {FROM_NCP}",
        f"DaemonSet cni-plugins-ds {FROM_NCP}",
        f"DaemonSet nv-ipam-node {FROM_NCP}",
        f"Deployment nv-ipam-controller {FROM_NCP}",
    ):
        assert where[agent] == ("gpu-b4-vf",), agent
    # The operators' Deployments and the hook Jobs tolerate no GPU taint: they run on the existing cluster's
    # other pools, which the check names as unseen.
    controllers_elsewhere = [
        f"Deployment network-operator {SRIOV_CHART}",
        f"Job network-operator-keep-ncp (pre-install/pre-upgrade hook) {SRIOV_CHART}",
        f"Job network-operator-upgrade-crd (pre-install/pre-upgrade hook) {SRIOV_CHART}",
        f"Deployment network-operator-sriov-network-operator {SRIOV_CHART}",
        f"Job network-operator-sriov-network-operator-pre-delete-hook (pre-delete hook) {SRIOV_CHART}",
        "Deployment mpi-operator/mpi-operator",
        "Deployment kube-system/coredns (OKE cluster add-on)",
    ]
    assert [note.split(" fits no node pool")[0] for note in verdict.notes] == controllers_elsewhere
    assert all(where[name] == () for name in controllers_elsewhere)


def test_an_sriov_pool_with_another_taint_still_gets_every_node_agent(run_stack: Callable[..., Run]) -> None:
    """The NicClusterPolicy's DaemonSets tolerate only nvidia.com/gpu of their own; the policy must tolerate
    the SR-IOV pool's other taints, or Multus, the CNI plugins and nv-ipam-node skip its nodes."""
    raw = raw_config("sriov")
    raw["nodePools"][0]["taints"] = [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "training", "effect": "NoSchedule"},
    ]
    run = run_stack("sriov", raw)
    (policy,) = run.of_type(resource_types.NIC_CLUSTER_POLICY)
    assert policy.inputs["spec"]["tolerations"] == [
        {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}
    ]
    verdict = check_run(run.resources, load_stack(raw, "sriov", EXAMPLE_REGION))
    assert verdict.problems == ()
    assert dict(verdict.placements)[f"DaemonSet kube-multus-ds {FROM_NCP}"] == ("gpu-b4-vf",)


def test_a_policy_that_does_not_tolerate_the_pools_taint_is_reported(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("sriov")
    raw["nodePools"][0]["taints"] = [{"key": "dedicated", "value": "training", "effect": "NoSchedule"}]
    run = run_stack("sriov", raw)
    (policy,) = run.of_type(resource_types.NIC_CLUSTER_POLICY)
    del policy.inputs["spec"]["tolerations"]  # the policy as the program declared it before the fix
    verdict = check_run(run.resources, load_stack(raw, "sriov", EXAMPLE_REGION))
    skipped = "selects pool(s) gpu-b4-vf but gets no pod there: gpu-b4-vf: taint dedicated=training:NoSchedule is not tolerated"
    assert verdict.problems == (
        f"DaemonSet kube-multus-ds {FROM_NCP} {skipped}",
        f"DaemonSet cni-plugins-ds {FROM_NCP} {skipped}",
        f"DaemonSet nv-ipam-node {FROM_NCP} {skipped}",
        "SR-IOV pool gpu-b4-vf gets no pod of DaemonSet kube-multus-ds, cni-plugins-ds, nv-ipam-node: its VF pods "
        "would not get their rails",
    )


def test_in_a_mixed_stack_the_policys_daemonsets_need_only_the_sriov_pools_taints(
    run_stack: Callable[..., Run],
) -> None:
    from tests.components.test_network_operator import mixed

    raw = mixed(raw_config("sriov"))
    # A DRANET pool with a taint the NicClusterPolicy does not tolerate: its DaemonSets stay off that pool by
    # the policy's node affinity, so no DaemonSet there is skipped for the taint.
    raw["nodePools"][0]["taints"] = [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "team", "value": "a", "effect": "NoSchedule"},
    ]
    verdict = check_run(run_stack("sriov", raw).resources, load_stack(raw, "sriov", EXAMPLE_REGION))
    assert verdict.problems == ()
    where = dict(verdict.placements)
    assert raw["nodePools"][0]["name"] == "gpu-b4"
    assert where[f"DaemonSet kube-multus-ds {FROM_NCP}"] == ("gpu-b4-vf",)
    assert where[f"DaemonSet sriov-device-plugin {FROM_CONFIG}"] == ("gpu-b4-vf",)
    # The chart's configDaemonNodeSelector lists every node with a Mellanox NIC, and the config daemon
    # tolerates every taint: it runs on the DRANET pool too (with no node policy there, it configures nothing).
    assert where[f"DaemonSet sriov-network-config-daemon {FROM_CONFIG}"] == ("gpu-b4", "gpu-b4-vf")


def test_the_charts_nfd_worker_tolerates_the_sriov_pools_taints(run_stack: Callable[..., Run]) -> None:
    """NFD labels the Mellanox NICs the config daemon's selector depends on: with the chart's own NFD, its
    worker must run on every SR-IOV node."""
    raw = raw_config("sriov")
    raw["networkOperator"]["deployNfd"] = True
    raw["nodePools"][0]["taints"] = [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "training", "effect": "NoSchedule"},
    ]
    verdict = check_run(run_stack("sriov", raw).resources, load_stack(raw, "sriov", EXAMPLE_REGION))
    assert verdict.problems == ()
    worker = f"DaemonSet network-operator-node-feature-discovery-worker {SRIOV_CHART}"
    assert dict(verdict.placements)[worker] == ("gpu-b4-vf",)


def test_first_available_subrequests_are_read_as_the_pack_reads_them() -> None:
    """A request with `firstAvailable` needs one of its subrequests' classes on the node: the preview reads
    the subrequests with the pack's reader (oke_gpu_rdma.claims.spec.request_classes), v1beta1 included."""
    from oke_gpu_rdma.scheduling import PoolNodes, rejections
    from tests.policies.policy_helpers import k8s

    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpus", "namespace": "ml"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "firstAvailable": [
                                {"name": "big", "deviceClassName": "gpu-h100.nvidia.com"},
                                {"name": "any", "deviceClassName": "gpu.nvidia.com"},
                            ],
                        },
                        {"name": "rail", "exactly": {"deviceClassName": "dra.net"}},
                    ]
                }
            }
        },
    }
    beta = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceClaim",
        "metadata": {"name": "nic", "namespace": "ml"},
        "spec": {"devices": {"requests": [{"name": "nic", "deviceClassName": "dra.net"}]}},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": {
            "containers": [{"name": "c"}],
            "resourceClaims": [
                {"name": "g", "resourceClaimTemplateName": "gpus"},
                {"name": "n", "resourceClaimName": "nic"},
            ],
        },
    }
    (placement,) = pod_placements([k8s(template), k8s(beta), k8s(pod)])
    assert placement.device_classes == frozenset({"dra.net"})
    assert placement.device_class_choices == (frozenset({"gpu-h100.nvidia.com", "gpu.nvidia.com"}),)
    cpu = PoolNodes("system", {}, device_classes=frozenset({"dra.net"}))
    assert rejections(placement, cpu) == [
        "no DRA driver serves any of device classes gpu-h100.nvidia.com, gpu.nvidia.com there"
    ]
    gpu = PoolNodes("gpu", {}, device_classes=frozenset({"dra.net", "gpu.nvidia.com"}))
    assert rejections(placement, gpu) == []
