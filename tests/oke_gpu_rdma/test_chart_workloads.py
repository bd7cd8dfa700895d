"""The charts' workloads as their templates and values render them at the pinned versions
(oke_gpu_rdma/chart_workloads.py)."""

from __future__ import annotations

from oke_gpu_rdma import charts
from oke_gpu_rdma.chart_workloads import gpu_operator, nvidia_device_plugin, nvidia_gpu_driver
from oke_gpu_rdma.scheduling import NodeTaint, PodPlacement, PoolNodes, check

CONTROL_PLANE = {
    "key": "node-role.kubernetes.io/control-plane",
    "operator": "Equal",
    "value": "",
    "effect": "NoSchedule",
}
GPU = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def by_name(pods: list[PodPlacement]) -> dict[str, PodPlacement]:
    return {p.name.split(" (")[0]: p for p in pods}


def test_gpu_operator_deployments_keep_their_chart_placement() -> None:
    pods = by_name(gpu_operator("gpu-operator", {}))
    operator = pods["Deployment gpu-operator"]
    assert operator.tolerations == (CONTROL_PLANE,)  # values.yaml operator.tolerations: control-plane only
    assert operator.priority_class == "system-node-critical"
    assert "preferredDuringSchedulingIgnoredDuringExecution" in operator.affinity["nodeAffinity"]
    assert pods["Deployment nfd-master"].tolerations == (CONTROL_PLANE,)
    assert pods["Deployment nfd-gc"].tolerations == ()  # the subchart's gc.tolerations: []
    assert pods["DaemonSet nfd-worker"].tolerations == (CONTROL_PLANE, GPU)
    # Every Deployment and DaemonSet is system-node-critical; the hook Jobs and the cuda validator's pod set none.
    assert {p.priority_class for n, p in pods.items() if n.split()[0] in ("Deployment", "DaemonSet")} == {
        "system-node-critical"
    }
    assert pods["Pod nvidia-cuda-validator"].priority_class is None
    # Hook Jobs: the CRD upgrade on every `helm upgrade` (operator.upgradeCRD true), NFD's prune on uninstall.
    assert pods["Job gpu-operator-upgrade-crd"].tolerations == (CONTROL_PLANE,)
    assert pods["Job nfd-prune"].tolerations == (CONTROL_PLANE,)
    assert "Job gpu-operator-cleanup-crd" not in pods
    assert "Job gpu-operator-cleanup-crd" in by_name(gpu_operator("g", {"operator": {"cleanupCRD": True}}))


def test_gpu_operator_operands_are_placed_by_their_deploy_labels() -> None:
    pods = by_name(gpu_operator("gpu-operator", {"driver": {"enabled": False}}))
    for name, component in (
        ("nvidia-container-toolkit-daemonset", "container-toolkit"),
        ("nvidia-operator-validator", "operator-validator"),
        ("nvidia-device-plugin-daemonset", "device-plugin"),
        ("nvidia-dcgm-exporter", "dcgm-exporter"),
        ("gpu-feature-discovery", "gpu-feature-discovery"),
        ("nvidia-mig-manager", "mig-manager"),
    ):
        pod = pods[f"DaemonSet {name}"]
        assert pod.node_selector == {f"nvidia.com/gpu.deploy.{component}": "true"}, name
        assert pod.daemonset and pod.tolerations == (GPU,)
    assert "DaemonSet nvidia-driver-daemonset" not in pods and "DaemonSet nvidia-dcgm" not in pods
    assert pods["DaemonSet nvidia-device-plugin-daemonset"].provides_resources == {"nvidia.com/gpu"}
    assert "DaemonSet nfd-worker" not in by_name(gpu_operator("gpu-operator", {"nfd": {"enabled": False}}))


def test_gpu_dra_driver_defaults() -> None:
    pods = by_name(nvidia_gpu_driver("dra-driver-nvidia-gpu", {}))
    kubelet = pods["DaemonSet dra-driver-nvidia-gpu-kubelet-plugin"]
    assert kubelet.tolerations == (GPU,)
    assert kubelet.affinity == charts.NVIDIA_GPU_DEFAULT_KUBELET_AFFINITY
    assert kubelet.priority_class == "system-node-critical"
    # Compute domains are on by default (values.yaml resources.computeDomains.enabled: true): the controller
    # renders, tolerating the control plane and CriticalAddonsOnly, preferring control-plane nodes.
    controller = pods["Deployment dra-driver-nvidia-gpu-controller"]
    assert [t["key"] for t in controller.tolerations] == [
        "node-role.kubernetes.io/control-plane",
        "node-role.kubernetes.io/master",
        "CriticalAddonsOnly",
    ]
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in controller.affinity["nodeAffinity"]
    assert "Deployment dra-driver-nvidia-gpu-webhook" not in pods


def test_gpu_dra_driver_as_the_stack_sets_it() -> None:
    values = {"resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}}}
    pods = by_name(nvidia_gpu_driver("dra-driver-nvidia-gpu", values))
    assert list(pods) == ["DaemonSet dra-driver-nvidia-gpu-kubelet-plugin"]
    webhook = by_name(nvidia_gpu_driver("d", {**values, "webhook": {"enabled": True}}))[
        "Deployment d-webhook"
    ]
    assert webhook.tolerations == ({"key": "CriticalAddonsOnly", "operator": "Exists"},)
    assert webhook.priority_class == "system-cluster-critical"


def test_device_plugin_chart_offers_gpus_where_it_runs() -> None:
    plugin, mps = nvidia_device_plugin("nvidia-device-plugin", {"nodeSelector": {"a": "b"}})
    assert plugin.provides_resources == {"nvidia.com/gpu"} and plugin.node_selector == {"a": "b"}
    assert plugin.tolerations == ({"key": "CriticalAddonsOnly", "operator": "Exists"}, GPU)
    assert mps.node_selector == {"nvidia.com/mps.capable": "true", "a": "b"} and mps.may_select_none
    assert nvidia_device_plugin("p", {"devicePlugin": {"enabled": False}}) == []


def test_a_priority_class_the_cluster_lacks_is_refused() -> None:
    pool = PoolNodes(
        "system", {"oke-gpu-rdma/node-pool": "system"}, (NodeTaint("x", "", "PreferNoSchedule"),)
    )
    ok = PodPlacement("Deployment a", priority_class="system-cluster-critical")
    missing = PodPlacement("Deployment b", priority_class="high")
    verdict = check([ok, missing], [pool])
    assert verdict.problems == (
        "Deployment b: the API server refuses its pods: priorityClassName high names no PriorityClass of the "
        "cluster (known: system-cluster-critical, system-node-critical)",
    )
    assert check([missing], [pool], priority_classes=frozenset({"high"})).problems == ()
