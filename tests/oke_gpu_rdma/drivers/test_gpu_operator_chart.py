"""The GPU Operator chart's workloads as its templates and values render them at the pinned version
(oke_gpu_rdma/drivers/gpu_operator_chart.py)."""

from __future__ import annotations

from oke_gpu_rdma.drivers import gpu_operator_chart
from oke_gpu_rdma.scheduling.pod_admission import PodPlacement

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
    pods = by_name(gpu_operator_chart.workloads("gpu-operator", {}))
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
    assert "Job gpu-operator-cleanup-crd" in by_name(
        gpu_operator_chart.workloads("g", {"operator": {"cleanupCRD": True}})
    )


def test_gpu_operator_operands_are_placed_by_their_deploy_labels() -> None:
    pods = by_name(gpu_operator_chart.workloads("gpu-operator", {"driver": {"enabled": False}}))
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
    assert "DaemonSet nfd-worker" not in by_name(
        gpu_operator_chart.workloads("gpu-operator", {"nfd": {"enabled": False}})
    )
