"""The preview's schedulability check (preview/schedulability.py) through `make preview`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.common.resource_types import HELM_RELEASE
from oke_gpu_rdma.drivers.gpu_operator_operands import (
    device_plugin_gaps,
    operand_placements,
    operand_problems,
)
from preview.mock_runtime import ROOT
from preview.schedulability import PLACEMENT_FILE, check_run, pod_placements
from stack_config.drivers.gpu_operator_plan import stack_operator_values
from stack_config.loading import load_stack
from stack_config.scheduling.placement_plan import controllers
from stack_config.scheduling.pool_nodes import planned_pools
from tests.preview.test_cli import run_cli
from tests.support import EXAMPLE_REGION, Run, as_stack_file, raw_config, without_remediation


def write_stack(folder: Path, name: str, raw: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(as_stack_file(raw)))
    return folder


def test_a_pod_no_pool_admits_fails_the_preview_naming_the_pod_the_pools_and_why(tmp_path: Path) -> None:
    raw = without_remediation(raw_config("full"))
    # A label that overrides the pool label: the NCCL workers select gpu-b4-b by it and find no node.
    raw["nodePools"][1]["labels"] = {"oke-gpu-rdma/node-pool": "training"}
    raw["workloads"] = {"acceptanceJobs": {"enabled": True, "nodePool": "gpu-b4-b"}}
    result = run_cli("relabel", write_stack(tmp_path / "stacks", "relabel", raw), tmp_path / "rendered")
    assert result.returncode == 1
    mismatch = "nodeSelector oke-gpu-rdma/node-pool=gpu-b4-b does not match its labels"
    assert result.stderr == (
        f"error: {tmp_path / 'stacks'}/Pulumi.relabel.yaml: pods that no node pool admits (they would stay Pending and "
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
    raw = without_remediation(raw_config("full"))
    raw["workloads"] = {"acceptanceJobs": {"enabled": True}}
    resources = run_stack("full", raw).resources
    verdict = check_run(resources, load_stack(raw, "full", EXAMPLE_REGION))
    assert (verdict.problems, verdict.notes) == ((), ())
    where = dict(verdict.placements)
    assert where["Deployment kube-system/coredns (OKE cluster add-on)"] == ("system",)
    assert where["MPIJob rdma-dranet/nccl-all-reduce Launcher"] == ("gpu-b4-a", "gpu-b4-b", "system")
    assert where["MPIJob rdma-dranet/nccl-all-reduce Worker"] == ("gpu-b4-a",)
    assert where["DaemonSet dranet (chart dranet)"] == ("gpu-b4-a", "gpu-b4-b")
    assert where["DaemonSet rail-health/rail-health-bm-gpu-b4-8"] == ("gpu-b4-a", "gpu-b4-b")
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
            "Pod nvidia-cuda-validator (chart gpu-operator, release gpu-operator)",
            # The chart's hook Jobs: the CRD upgrade before every `helm upgrade`, NFD's prune after uninstall.
            "Job gpu-operator-upgrade-crd (pre-upgrade hook) (chart gpu-operator, release gpu-operator)",
            "Job nfd-prune (post-delete hook) (chart gpu-operator, release gpu-operator)",
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
            # The rail health agent (health.rails), on the DRANET pools only.
            "DaemonSet rail-health/rail-health-bm-gpu-b4-8",
            "Deployment mpi-operator/mpi-operator",
            "MPIJob rdma-dranet/nccl-all-reduce Launcher",
            "MPIJob rdma-dranet/nccl-all-reduce Worker",
            "Deployment kube-system/coredns (OKE cluster add-on)",
            *(f"{name} {KPS}" for name in KPS_CONTROLLERS),
            f"DaemonSet kube-prometheus-stack-prometheus-node-exporter {KPS}",
            # The one-off Job that makes Grafana's admin Secret, on the system pool (components/monitoring/monitoring_stack.py).
            "Job monitoring/grafana-admin-secret",
        ]
    )
    assert where["Job monitoring/grafana-admin-secret"] == ("system",)
    # monitoring.enabled: kube-prometheus-stack's controllers on the system pool, its node exporter everywhere
    # (it tolerates every NoSchedule taint, the GPU taint and the health taints among them).
    for name in KPS_CONTROLLERS:
        assert where[f"{name} {KPS}"] == ("system",)
    assert where[f"DaemonSet kube-prometheus-stack-prometheus-node-exporter {KPS}"] == (
        "gpu-b4-a",
        "gpu-b4-b",
        "system",
    )


KPS = "(chart kube-prometheus-stack, release kube-prometheus-stack)"
KPS_CONTROLLERS = (
    "Deployment kube-prometheus-stack-operator",
    "Job kube-prometheus-stack-admission-create (pre-install hook)",
    "StatefulSet prometheus-kube-prometheus-stack-prometheus",
    "StatefulSet alertmanager-kube-prometheus-stack-alertmanager",
    "Deployment kube-prometheus-stack-grafana",
    "Deployment kube-prometheus-stack-kube-state-metrics",
)


def test_the_scheduled_checks_jobs_are_placed_from_their_stored_specs(run_stack: Callable[..., Run]) -> None:
    """The MPIJobs the fabric check's controller creates later are in its ConfigMap; their pods are placed as
    declared ones are, with the classes of the claim templates they name."""
    resources = run_stack("full").resources
    verdict = check_run(resources, load_stack(raw_config("full"), "full", EXAMPLE_REGION))
    assert verdict.problems == ()
    where = dict(verdict.placements)
    stored = "rdma-dranet/{} (ConfigMap fabric-check)"
    # The workers select the jobs' pool (the first DRANET pool) and claim its devices; with Kueue the launcher
    # selects the system pool, as the queued gate's does (the full example checks NCCL nightly, not the rails).
    assert f"MPIJob {stored.format('rail.json')} Worker" not in where
    assert where[f"MPIJob {stored.format('nccl.json')} Worker"] == ("gpu-b4-a",)
    assert where[f"MPIJob {stored.format('nccl.json')} Launcher"] == ("system",)
    assert where["CronJob rdma-dranet/fabric-check"] == ("gpu-b4-a", "gpu-b4-b", "system")


def test_the_committed_full_rendering_shows_a_pool_for_every_pod() -> None:
    document = yaml.safe_load((ROOT / "rendered" / "full" / PLACEMENT_FILE).read_text())
    assert "notChecked" not in document
    pools = {entry["pod"]: entry["pools"] for entry in document["pods"]}
    assert all(pools.values()), pools
    assert pools["Deployment kube-system/coredns (OKE cluster add-on)"] == ["system"]
    assert pools["Deployment gpu-operator (chart gpu-operator, release gpu-operator)"] == ["system"]


def test_the_programs_controllers_are_placed_as_the_run_declares_them(run_stack: Callable[..., Run]) -> None:
    """The program's early check (stack_config/scheduling/placement_plan.py) reads chart defaults; the preview reads the
    values the run declared. Both must see the same placement for every controller."""
    for stack, changes in (("full", {"acceptanceJobs": {"enabled": True}}), ("sriov", {})):
        raw = without_remediation(raw_config(stack))
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
    # They share one reason, said once with the pods below it.
    (note,) = verdict.notes
    head, *pods = note.splitlines()
    assert head.startswith(
        "7 pods fit no node pool of the stack: gpu-b4-vf: taint nvidia.com/gpu=present:NoSchedule"
    )
    assert pods == [f"- {pod}" for pod in controllers_elsewhere]
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
    from tests.components.sriov.test_network_operator import mixed

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
    from oke_gpu_rdma.scheduling.pod_admission import PoolNodes, rejections
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


def _mixed_fleet(operator: bool = True) -> dict[str, Any]:
    """The full example's DRANET pools, an rdma: none H100 pool and an A10 inference pool (issue 19)."""
    raw = raw_config("full")
    b4 = raw["nodePools"][0]
    raw["nodePools"] += [
        {**b4, "name": "gpu-h100", "shape": "BM.GPU.H100.8", "rdma": "none"},
        {**b4, "name": "infer-a10", "shape": "VM.GPU.A10.1", "count": 3, "rdma": "none"},
    ]
    if not operator:
        raw["gpuOperator"] = {"enabled": False}
    return raw


@pytest.mark.parametrize(
    "stack, raw",
    [
        ("dev", raw_config("dev")),
        ("full", raw_config("full")),
        ("sriov", raw_config("sriov")),
        ("fleet", _mixed_fleet()),
        ("fleet", _mixed_fleet(operator=False)),
    ],
    ids=["dev", "full", "sriov", "mixed", "mixed-existing-operator"],
)
def test_no_gpu_pool_has_an_operand_pod_that_fails_or_is_stuck(
    run_stack: Callable[..., Run], stack: str, raw: dict[str, Any]
) -> None:
    """Issue 22 item 1: every GPU Operator operand is Ready on every GPU pool of the examples and of a mixed
    fleet, and every pool whose pods ask for nvidia.com/gpu has a device plugin."""
    resources = run_stack(stack, raw).resources
    loaded = load_stack(raw, stack, EXAMPLE_REGION)
    verdict = check_run(resources, loaded)
    assert verdict.problems == ()
    pools = planned_pools(loaded.config)
    operator = [
        r.inputs["values"]
        for r in resources
        if r.type == HELM_RELEASE and r.inputs["chart"] == "gpu-operator"
    ]
    values = operator[0] if operator else stack_operator_values(loaded.config)
    assert operand_problems(values, pools) == []
    plugins = [p for p in pod_placements(resources) if p.provides_resources]
    plugins += [p for _, p in operand_placements(values, "")]
    assert device_plugin_gaps(pools, plugins) == []
    # The validator runs on every GPU pool: it is never switched off on a node.
    where = dict(verdict.placements)
    (validator,) = [pools for name, pools in where.items() if "nvidia-operator-validator" in name]
    assert set(validator) == {p.name for p in loaded.config.node_pools}


def test_the_operator_device_plugin_left_on_next_to_dra_pools_fails_the_check(
    run_stack: Callable[..., Run],
) -> None:
    """The configuration issue 22 found: DRA pools labelled device-plugin=false, the ClusterPolicy's device
    plugin on: the validator crash-loops on every DRA node."""
    raw = raw_config("full")
    resources = run_stack("full", raw).resources
    release = next(r for r in resources if r.type == HELM_RELEASE and r.inputs["chart"] == "gpu-operator")
    release.inputs["values"] = {**release.inputs["values"], "devicePlugin": {"enabled": True}}
    problems = check_run(resources, load_stack(raw, "full", EXAMPLE_REGION)).problems
    assert [p.split(" crash-loops")[0] for p in problems] == [
        f"DaemonSet nvidia-operator-validator (chart gpu-operator, release gpu-operator) on pool {pool}"
        for pool in ("gpu-b4-a", "gpu-b4-b")
    ]


def test_a_mixed_fleet_installs_the_device_plugin_chart_for_its_rail_less_pools(
    run_stack: Callable[..., Run],
) -> None:
    resources = run_stack("fleet", _mixed_fleet()).resources
    releases = {r.inputs["chart"]: r for r in resources if r.type == HELM_RELEASE}
    assert releases["gpu-operator"].inputs["values"]["devicePlugin"] == {"enabled": False}
    plugin = releases["nvidia-device-plugin"]
    assert plugin.inputs["version"] == "0.19.3" and plugin.inputs["namespace"] == "nvidia-device-plugin"
    assert plugin.inputs["repositoryOpts"]["repo"] == "https://nvidia.github.io/k8s-device-plugin"
    where = dict(check_run(resources, load_stack(_mixed_fleet(), "fleet", EXAMPLE_REGION)).placements)
    assert where["DaemonSet nvidia-device-plugin (chart nvidia-device-plugin)"] == ("gpu-h100", "infer-a10")
    # The full example has DRA pools only: no device plugin chart.
    full = run_stack("full", raw_config("full")).resources
    assert not [r for r in full if r.type == HELM_RELEASE and r.inputs["chart"] == "nvidia-device-plugin"]


def test_an_existing_cluster_is_told_which_operator_setting_it_needs(tmp_path: Path) -> None:
    result = run_cli("dev", rendered=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (
        "GPU Operator: this cluster's own operator must have these settings (docs/gpu-operator-and-scheduling.md):\n"
        "  the cluster's GPU Operator (not managed by this stack, gpuOperator.enabled: false) needs its device "
        "plugin off: Helm value devicePlugin.enabled=false"
    ) in result.stdout
