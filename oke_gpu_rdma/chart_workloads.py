"""Where the pods of the charts and manifests this project installs go: placement as data.

For each chart, the workloads it renders that matter for scheduling, with the values paths that place
them and the chart's defaults where the values set nothing. The schedulability check
(:mod:`oke_gpu_rdma.scheduling`) reads a release's values through these, so a value the project sets
and a default it relies on are judged the same way. Sources (chart values.yaml and templates):

- NVIDIA/gpu-operator `deployments/gpu-operator/values.yaml`: `operator.tolerations` (control-plane taints
  only), `operator.nodeSelector` {}; `daemonsets.tolerations` (default `nvidia.com/gpu` Exists NoSchedule)
  for every operand DaemonSet, which the operator schedules on nodes with an NVIDIA PCI device (NFD's
  `feature.node.kubernetes.io/pci-10de.present`, from which it sets `nvidia.com/gpu.deploy.*`);
  `node-feature-discovery.worker.tolerations` (control-plane and `nvidia.com/gpu` Exists NoSchedule);
  NFD's master and gc Deployments keep the subchart's control-plane tolerations.
- kubernetes-sigs/dranet `deployments/helm/dranet/values.yaml`: one DaemonSet, `nodeSelector`, `affinity`,
  `tolerations` (default: Exists NoSchedule).
- kubernetes-sigs/dra-driver-nvidia-gpu `deployments/helm/dra-driver-nvidia-gpu`: the kubelet plugin
  DaemonSet (`kubeletPlugin.nodeSelector`, `.affinity` (default: charts.NVIDIA_GPU_DEFAULT_KUBELET_AFFINITY),
  `.tolerations` (default none)); the controller Deployment only with `resources.computeDomains.enabled`.
- Mellanox/network-operator `deployment/network-operator`: its Deployments, hook Jobs and the SR-IOV
  Network Operator's DaemonSets, in oke_gpu_rdma/network_operator_workloads.py.
- kubeflow/mpi-operator `deploy/v2beta1/mpi-operator.yaml`: the operator Deployment, placed as its release's
  facts say (oke_gpu_rdma/mpi_operator.py).
- CoreDNS, an OKE cluster add-on: tolerates `CriticalAddonsOnly` only, on Linux nodes
  (kubernetes/kubernetes `cluster/addons/dns/coredns/coredns.yaml.base`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from . import attributes, charts, labels, network_operator_workloads
from .scheduling import PodPlacement

CONTROL_PLANE_TOLERATIONS: Final[tuple[Mapping[str, Any], ...]] = (
    {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {
        "key": "node-role.kubernetes.io/control-plane",
        "operator": "Equal",
        "value": "",
        "effect": "NoSchedule",
    },
)
GPU_TAINT_TOLERATION: Final[Mapping[str, Any]] = {
    "key": attributes.NVIDIA_GPU_RESOURCE,
    "operator": "Exists",
    "effect": "NoSchedule",
}
GPU_OPERATOR_DEFAULT_DAEMONSET_TOLERATIONS: Final = (GPU_TAINT_TOLERATION,)
NFD_WORKER_DEFAULT_TOLERATIONS: Final = (*CONTROL_PLANE_TOLERATIONS, GPU_TAINT_TOLERATION)
DRANET_DEFAULT_TOLERATIONS: Final[tuple[Mapping[str, Any], ...]] = (
    {"operator": "Exists", "effect": "NoSchedule"},
)


def _get(values: Mapping[str, Any], path: str) -> Any:
    node: Any = values
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def _tolerations(
    values: Mapping[str, Any], path: str, default: tuple[Mapping[str, Any], ...]
) -> tuple[Any, ...]:
    value = _get(values, path)
    return tuple(value) if isinstance(value, list) else default


def _mapping(
    values: Mapping[str, Any], path: str, default: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    value = _get(values, path)
    return dict(value) if isinstance(value, Mapping) and value else dict(default or {})


def _operator_deployment(what: str, values: Mapping[str, Any]) -> PodPlacement:
    """An operator chart's own Deployment, placed by its `operator.nodeSelector` and
    `operator.tolerations` values (the GPU Operator's and the Network Operator's charts spell them alike)."""
    return PodPlacement(
        what,
        node_selector=_mapping(values, "operator.nodeSelector"),
        tolerations=_tolerations(values, "operator.tolerations", CONTROL_PLANE_TOLERATIONS),
    )


def gpu_operator(release: str, values: Mapping[str, Any]) -> list[PodPlacement]:
    where = f"(chart {charts.GPU_OPERATOR_CHART_NAME}, release {release})"
    return [
        _operator_deployment(f"Deployment gpu-operator {where}", values),
        PodPlacement(f"Deployment nfd-master {where}", tolerations=CONTROL_PLANE_TOLERATIONS),
        PodPlacement(f"Deployment nfd-gc {where}", tolerations=CONTROL_PLANE_TOLERATIONS),
        PodPlacement(
            f"DaemonSet nfd-worker {where}",
            tolerations=_tolerations(
                values, charts.NFD_WORKER_TOLERATIONS_VALUE, NFD_WORKER_DEFAULT_TOLERATIONS
            ),
            daemonset=True,
        ),
        PodPlacement(
            f"DaemonSets of the GPU operands (container toolkit, device plugin, GPU feature discovery) {where}",
            node_selector={labels.NFD_NVIDIA_PCI_LABEL: "true"},
            tolerations=_tolerations(
                values, "daemonsets.tolerations", GPU_OPERATOR_DEFAULT_DAEMONSET_TOLERATIONS
            ),
            daemonset=True,
        ),
    ]


def dranet(release: str, values: Mapping[str, Any]) -> list[PodPlacement]:
    return [
        PodPlacement(
            f"DaemonSet {release} (chart {charts.DRANET_CHART_NAME})",
            node_selector=_mapping(values, "nodeSelector"),
            affinity=_mapping(values, "affinity"),
            tolerations=_tolerations(values, "tolerations", DRANET_DEFAULT_TOLERATIONS),
            daemonset=True,
            provides_device_classes=frozenset({attributes.DRANET_DEVICE_CLASS}),
        )
    ]


def nvidia_gpu_driver(release: str, values: Mapping[str, Any]) -> list[PodPlacement]:
    where = f"(chart {charts.NVIDIA_GPU_CHART_NAME})"
    found = [
        PodPlacement(
            f"DaemonSet {release}-kubelet-plugin {where}",
            node_selector=_mapping(values, "kubeletPlugin.nodeSelector"),
            affinity=_mapping(values, "kubeletPlugin.affinity", charts.NVIDIA_GPU_DEFAULT_KUBELET_AFFINITY),
            tolerations=_tolerations(values, "kubeletPlugin.tolerations", ()),
            daemonset=True,
            provides_device_classes=frozenset({attributes.NVIDIA_GPU_DEVICE_CLASS}),
        )
    ]
    if _get(values, "resources.computeDomains.enabled") is True:
        found.append(
            PodPlacement(
                f"Deployment {release}-controller {where}",
                node_selector=_mapping(values, "controller.nodeSelector"),
                affinity=_mapping(values, "controller.affinity"),
                tolerations=_tolerations(values, "controller.tolerations", ()),
            )
        )
    return found


def network_operator(release: str, values: Mapping[str, Any]) -> list[PodPlacement]:
    """The chart's workloads and the SR-IOV Network Operator's (oke_gpu_rdma/network_operator_workloads.py)."""
    return network_operator_workloads.release_workloads(release, values)


CHART_WORKLOADS: Final = {
    charts.GPU_OPERATOR_CHART_NAME: gpu_operator,
    charts.DRANET_CHART: dranet,
    charts.DRANET_CHART_NAME: dranet,
    **{name: nvidia_gpu_driver for name in charts.NVIDIA_GPU_CHART_NAMES},
    charts.NVIDIA_GPU_CHART: nvidia_gpu_driver,
    charts.NETWORK_OPERATOR_CHART_NAME: network_operator,
}


def release_workloads(chart: str, release: str, values: Mapping[str, Any]) -> list[PodPlacement]:
    """The placements of a release's workloads (none for a chart this module does not know)."""
    reader = CHART_WORKLOADS.get(chart)
    return reader(release, values) if reader is not None else []


# kubernetes/kubernetes cluster/addons/dns/coredns/coredns.yaml.base: the Deployment tolerates only
# CriticalAddonsOnly, selects kubernetes.io/os linux and runs at system-cluster-critical.
COREDNS_TOLERATIONS: Final = ({"key": "CriticalAddonsOnly", "operator": "Exists"},)
COREDNS: Final = PodPlacement(
    "Deployment kube-system/coredns (OKE cluster add-on)",
    node_selector={network_operator_workloads.OS_LABEL: network_operator_workloads.LINUX},
    tolerations=COREDNS_TOLERATIONS,
    priority_class="system-cluster-critical",
)
