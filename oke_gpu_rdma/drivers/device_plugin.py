"""NVIDIA's device plugin chart (NVIDIA/k8s-device-plugin deployments/helm/nvidia-device-plugin), for the pools
that take GPUs from a device plugin when the GPU Operator's own is off (oke_gpu_rdma/drivers/gpu_operator_operands.py says why):
its reference, the values its templates read, and where its pods go. 0.19.3 is the device plugin the pinned
operator deploys (gpu-operator v26.3.3 values.yaml devicePlugin.version v0.19.3); the repository is the one the
chart's README adds (`helm repo add nvdp`).

Placement (v0.19.3): the device plugin DaemonSet and the MPS control daemon DaemonSet, both with
`devicePlugin.enabled` (default true, values.yaml l. 103-104); values.yaml l. 63-93 nodeSelector, affinity (NFD's
pci-10de, an NVIDIA CPU vendor, or gpu.present), tolerations (CriticalAddonsOnly, `nvidia.com/gpu` Exists
NoSchedule), l. 99 priority system-node-critical; the MPS daemon adds `nvidia.com/mps.capable: "true"` to its
nodeSelector (templates/daemonset-mps-control-daemon.yml l. 204-209).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from oke_gpu_rdma.common import chart_placement as values_of
from oke_gpu_rdma.common.release_facts import ReleaseFacts
from oke_gpu_rdma.drivers import attributes
from oke_gpu_rdma.drivers import gpu_operator_operands as operands
from oke_gpu_rdma.nodes import labels
from oke_gpu_rdma.scheduling.pod_admission import PodPlacement

CHART_NAME: Final = "nvidia-device-plugin"
REPO: Final = "https://nvidia.github.io/k8s-device-plugin"
DEFAULT_VERSION: Final = "0.19.3"
RELEASE: Final = CHART_NAME
NAMESPACE: Final = CHART_NAME
# Its default affinity (values.yaml l. 64-85): NFD's pci-10de label, an NVIDIA CPU vendor, or gpu.present.
DEFAULT_AFFINITY: Final[dict[str, Any]] = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                values_of.required_term(labels.NFD_NVIDIA_PCI_LABEL, "true"),
                values_of.required_term("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA"),
                values_of.required_term(labels.GPU_PRESENT_LABEL, labels.GPU_PRESENT),
            ]
        }
    }
}
# values.yaml l. 86-93.
DEFAULT_TOLERATIONS: Final = (values_of.CRITICAL_ADDONS_TOLERATION, values_of.GPU_TAINT_TOLERATION)
# The image: templates/_helpers.tpl l. 83-86 `nvidia-device-plugin.fullimage` writes
# `<image.repository>:<image.tag>` (values.yaml l. 49-53: repository nvcr.io/nvidia/k8s-device-plugin, tag
# default v<appVersion>), so a tag of `v0.19.3@sha256:...` pins the digest and keeps the tag.
IMAGE: Final = f"nvcr.io/nvidia/k8s-device-plugin:v{DEFAULT_VERSION}"
IMAGE_TAG_VALUE: Final = "image.tag"
# Values its templates read (templates/daemonset-device-plugin.yml at v0.19.3: priorityClassName l. 42-43,
# runtimeClassName l. 45-46, migStrategy l. 137-139, deviceListStrategy l. 149-151, cdi.nvidiaHookPath
# l. 165-167, nodeSelector l. 259-261, affinity l. 263-265, tolerations l. 267-269).
VALUE_PATHS: Final = frozenset(
    {
        IMAGE_TAG_VALUE,
        "priorityClassName",
        "runtimeClassName",
        "migStrategy",
        "deviceListStrategy",
        "cdi.nvidiaHookPath",
        "nodeSelector.*",
        "affinity.*",
        "tolerations",
    }
)


def workloads(release: str, values: Mapping[str, Any]) -> list[PodPlacement]:
    """NVIDIA's device plugin chart: the plugin (which offers `nvidia.com/gpu`) and its MPS control daemon."""
    if not values_of.switch(values, "devicePlugin.enabled", True):
        return []
    where = f"(chart {CHART_NAME})"
    selector = values_of.mapping(values, "nodeSelector")
    affinity = values_of.mapping(values, "affinity", DEFAULT_AFFINITY)
    tolerations = values_of.tolerations(values, "tolerations", DEFAULT_TOLERATIONS)
    priority = values_of.string(values, "priorityClassName", values_of.SYSTEM_NODE_CRITICAL)
    return [
        PodPlacement(
            f"DaemonSet {release} {where}",
            node_selector=selector,
            affinity=affinity,
            tolerations=tolerations,
            daemonset=True,
            provides_resources=frozenset({attributes.NVIDIA_GPU_RESOURCE}),
            priority_class=priority,
        ),
        PodPlacement(
            f"DaemonSet {release}-mps-control-daemon {where}",
            node_selector={operands.MPS_CAPABLE_LABEL: "true", **selector},
            affinity=affinity,
            tolerations=tolerations,
            daemonset=True,
            priority_class=priority,
            # GFD sets nvidia.com/mps.capable=true only where a device plugin config shares GPUs with MPS.
            may_select_none=True,
        ),
    ]


FACTS: Final = ReleaseFacts(
    title="NVIDIA's device plugin",
    chart_name=CHART_NAME,
    chart=CHART_NAME,
    repository=REPO,
    default_version=DEFAULT_VERSION,
    release=RELEASE,
    namespace=NAMESPACE,
    value_paths=VALUE_PATHS,
    workloads=workloads,
)
