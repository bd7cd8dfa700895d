"""The NVIDIA GPU DRA driver chart's workloads as its templates and values render them at the pinned
version (oke_gpu_rdma/drivers/nvidia_gpu.py)."""

from __future__ import annotations

from oke_gpu_rdma.drivers import nvidia_gpu
from oke_gpu_rdma.scheduling.pod_admission import PodPlacement

GPU = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def by_name(pods: list[PodPlacement]) -> dict[str, PodPlacement]:
    return {p.name.split(" (")[0]: p for p in pods}


def test_gpu_dra_driver_defaults() -> None:
    pods = by_name(nvidia_gpu.workloads("dra-driver-nvidia-gpu", {}))
    kubelet = pods["DaemonSet dra-driver-nvidia-gpu-kubelet-plugin"]
    assert kubelet.tolerations == (GPU,)
    assert kubelet.affinity == nvidia_gpu.DEFAULT_KUBELET_AFFINITY
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
    pods = by_name(nvidia_gpu.workloads("dra-driver-nvidia-gpu", values))
    assert list(pods) == ["DaemonSet dra-driver-nvidia-gpu-kubelet-plugin"]
    webhook = by_name(nvidia_gpu.workloads("d", {**values, "webhook": {"enabled": True}}))[
        "Deployment d-webhook"
    ]
    assert webhook.tolerations == ({"key": "CriticalAddonsOnly", "operator": "Exists"},)
    assert webhook.priority_class == "system-cluster-critical"
