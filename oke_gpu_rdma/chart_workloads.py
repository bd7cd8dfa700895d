"""Where the pods of the charts and manifests this project installs go: placement as data.

For each chart, the workloads it renders that matter for scheduling, with the values paths that place
them and the chart's defaults where the values set nothing. The schedulability check
(:mod:`oke_gpu_rdma.scheduling`) reads a release's values through these, so a value the project sets
and a default it relies on are judged the same way. Sources (chart values.yaml and templates):

- NVIDIA/gpu-operator v26.3.3 `deployments/gpu-operator`: the operator Deployment (templates/operator.yaml
  l. 33-35 priorityClassName, l. 81-92 nodeSelector, affinity, tolerations; values.yaml l. 75
  `operator.priorityClassName` system-node-critical, l. 83-87 `operator.tolerations` (the control-plane taint
  only), l. 90-98 a preferred control-plane affinity). Its node-feature-discovery subchart (0.18.3, condition
  `nfd.enabled`, Chart.yaml l. 20-24): master Deployment (charts/node-feature-discovery/values.yaml l. 122-126
  control-plane toleration, l. 135-143 preferred affinity; templates/master.yaml l. 153-163), worker DaemonSet
  (gpu-operator values.yaml l. 560-567 control-plane and `nvidia.com/gpu` tolerations; templates/worker.yaml
  l. 180-190), gc Deployment (values.yaml l. 588 `gc.tolerations: []`, l. 548 `gc.enable`; templates/nfd-gc.yaml
  l. 108-118); all three take `node-feature-discovery.priorityClassName` (gpu-operator values.yaml l. 548:
  system-node-critical). Hook Jobs: gpu-operator-upgrade-crd (pre-upgrade), gpu-operator-cleanup-crd
  (pre-delete, off by default), NFD's prune (post-delete). The operand DaemonSets the operator creates:
  :mod:`oke_gpu_rdma.gpu_operator`.
- kubernetes-sigs/dranet `deployments/helm/dranet/values.yaml`: one DaemonSet, `nodeSelector`, `affinity`,
  `tolerations` (default: Exists NoSchedule).
- kubernetes-sigs/dra-driver-nvidia-gpu `deployments/helm/dra-driver-nvidia-gpu` (chart 0.5.0-dev at commit
  95932046, the newest the snapshot has: it has no v0.5.1 tag): the kubelet plugin DaemonSet whenever GPUs or
  compute domains are on (templates/kubeletplugin.yaml l. 15, l. 410-421; values.yaml l. 282 priority
  system-node-critical, l. 289-293 `nvidia.com/gpu` Exists NoSchedule toleration, l. 319-352 the affinity
  charts.NVIDIA_GPU_DEFAULT_KUBELET_AFFINITY); the controller Deployment only with
  `resources.computeDomains.enabled` (default true, values.yaml l. 83; templates/controller.yaml l. 15, l. 122-133;
  values.yaml l. 237 priority, l. 241-249 control-plane, master and CriticalAddonsOnly tolerations, l. 255-270
  a preferred control-plane affinity); the webhook Deployment only with `webhook.enabled` (default false,
  l. 173; l. 177 priority system-cluster-critical, l. 185-187 CriticalAddonsOnly).
- NVIDIA/k8s-device-plugin v0.19.3 `deployments/helm/nvidia-device-plugin` (charts.DEVICE_PLUGIN_CHART_NAME): the
  device plugin DaemonSet and the MPS control daemon DaemonSet, both with `devicePlugin.enabled` (default true,
  values.yaml l. 103-104); values.yaml l. 63-93 nodeSelector, affinity (NFD's pci-10de, an NVIDIA CPU vendor, or
  gpu.present), tolerations (CriticalAddonsOnly, `nvidia.com/gpu` Exists NoSchedule), l. 99 priority
  system-node-critical; the MPS daemon adds `nvidia.com/mps.capable: "true"` to its nodeSelector
  (templates/daemonset-mps-control-daemon.yml l. 204-209).
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

from . import attributes, charts, network_operator_workloads
from . import gpu_operator as operator_facts
from .scheduling import SYSTEM_PRIORITY_CLASSES, PodPlacement

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
CRITICAL_ADDONS_TOLERATION: Final[Mapping[str, Any]] = {"key": "CriticalAddonsOnly", "operator": "Exists"}
# gpu-operator values.yaml l. 83-87 (operator.tolerations) and the NFD subchart's master.tolerations
# (l. 122-126): the control-plane taint alone.
CONTROL_PLANE_ONLY_TOLERATIONS: Final[tuple[Mapping[str, Any], ...]] = (CONTROL_PLANE_TOLERATIONS[1],)
NFD_WORKER_DEFAULT_TOLERATIONS: Final = (CONTROL_PLANE_TOLERATIONS[1], GPU_TAINT_TOLERATION)
SYSTEM_NODE_CRITICAL: Final = "system-node-critical"
SYSTEM_CLUSTER_CRITICAL: Final = "system-cluster-critical"
assert {SYSTEM_NODE_CRITICAL, SYSTEM_CLUSTER_CRITICAL} == SYSTEM_PRIORITY_CLASSES


def _preferred(key: str, operator: str, values: list[str] | None = None, weight: int = 1) -> dict[str, Any]:
    expression: dict[str, Any] = {"key": key, "operator": operator}
    if values is not None:
        expression["values"] = values
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": weight, "preference": {"matchExpressions": [expression]}}
            ]
        }
    }


# gpu-operator values.yaml l. 90-98 and the NFD subchart's master.affinity (l. 135-143).
CONTROL_PLANE_PREFERRED_AFFINITY: Final = _preferred("node-role.kubernetes.io/control-plane", "In", [""])
# dra-driver-nvidia-gpu values.yaml l. 241-249 and l. 255-270 (the podAntiAffinity, preferred too, is left out:
# it never keeps the pod off a node).
NVIDIA_GPU_CONTROLLER_TOLERATIONS: Final[tuple[Mapping[str, Any], ...]] = (
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"},
    CRITICAL_ADDONS_TOLERATION,
)
NVIDIA_GPU_CONTROLLER_AFFINITY: Final = _preferred(
    "node-role.kubernetes.io/control-plane", "Exists", weight=100
)
NVIDIA_GPU_KUBELET_TOLERATIONS: Final = (GPU_TAINT_TOLERATION,)
# nvidia-device-plugin values.yaml l. 86-93.
DEVICE_PLUGIN_DEFAULT_TOLERATIONS: Final = (CRITICAL_ADDONS_TOLERATION, GPU_TAINT_TOLERATION)
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


def _string(values: Mapping[str, Any], path: str, default: str | None) -> str | None:
    value = _get(values, path)
    return value if isinstance(value, str) and value else default


def _switch(values: Mapping[str, Any], path: str, default: bool) -> bool:
    value = _get(values, path)
    return default if value is None else value is True


def _operator_deployment(what: str, values: Mapping[str, Any]) -> PodPlacement:
    """An operator chart's own Deployment, placed by its `operator.nodeSelector` and
    `operator.tolerations` values (the GPU Operator's and the Network Operator's charts spell them alike)."""
    return PodPlacement(
        what,
        node_selector=_mapping(values, "operator.nodeSelector"),
        tolerations=_tolerations(values, "operator.tolerations", CONTROL_PLANE_TOLERATIONS),
    )


def gpu_operator(release: str, values: Mapping[str, Any]) -> list[PodPlacement]:
    """The operator Deployment, NFD's master, worker and gc, and the operand DaemonSets the operator creates."""
    where = f"(chart {charts.GPU_OPERATOR_CHART_NAME}, release {release})"
    nfd = "node-feature-discovery"
    nfd_priority = _string(values, f"{nfd}.priorityClassName", SYSTEM_NODE_CRITICAL)
    found = [
        PodPlacement(
            f"Deployment gpu-operator {where}",
            node_selector=_mapping(values, "operator.nodeSelector"),
            affinity=_mapping(values, "operator.affinity", CONTROL_PLANE_PREFERRED_AFFINITY),
            tolerations=_tolerations(values, "operator.tolerations", CONTROL_PLANE_ONLY_TOLERATIONS),
            priority_class=_string(values, "operator.priorityClassName", SYSTEM_NODE_CRITICAL),
        )
    ]
    if _switch(values, "nfd.enabled", True):
        if _switch(values, f"{nfd}.master.enable", True):
            found.append(
                PodPlacement(
                    f"Deployment nfd-master {where}",
                    node_selector=_mapping(values, f"{nfd}.master.nodeSelector"),
                    affinity=_mapping(values, f"{nfd}.master.affinity", CONTROL_PLANE_PREFERRED_AFFINITY),
                    tolerations=_tolerations(
                        values, f"{nfd}.master.tolerations", CONTROL_PLANE_ONLY_TOLERATIONS
                    ),
                    priority_class=nfd_priority,
                )
            )
        if _switch(values, f"{nfd}.gc.enable", True):
            found.append(
                PodPlacement(
                    f"Deployment nfd-gc {where}",
                    node_selector=_mapping(values, f"{nfd}.gc.nodeSelector"),
                    affinity=_mapping(values, f"{nfd}.gc.affinity"),
                    tolerations=_tolerations(values, f"{nfd}.gc.tolerations", ()),
                    priority_class=nfd_priority,
                )
            )
        if _switch(values, f"{nfd}.worker.enable", True):
            found.append(
                PodPlacement(
                    f"DaemonSet nfd-worker {where}",
                    node_selector=_mapping(values, f"{nfd}.worker.nodeSelector"),
                    affinity=_mapping(values, f"{nfd}.worker.affinity"),
                    tolerations=_tolerations(
                        values, charts.NFD_WORKER_TOLERATIONS_VALUE, NFD_WORKER_DEFAULT_TOLERATIONS
                    ),
                    daemonset=True,
                    priority_class=nfd_priority,
                )
            )
        # The subchart's post-delete hook Job, placed as the master (templates/post-delete-job.yaml l. 1,
        # l. 85-96; postDeleteCleanup defaults to true, charts/node-feature-discovery/values.yaml l. 18).
        if _switch(values, f"{nfd}.postDeleteCleanup", True):
            found.append(
                PodPlacement(
                    f"Job nfd-prune (post-delete hook) {where}",
                    node_selector=_mapping(values, f"{nfd}.master.nodeSelector"),
                    affinity=_mapping(values, f"{nfd}.master.affinity", CONTROL_PLANE_PREFERRED_AFFINITY),
                    tolerations=_tolerations(
                        values, f"{nfd}.master.tolerations", CONTROL_PLANE_ONLY_TOLERATIONS
                    ),
                )
            )
    # The CRD hook Jobs tolerate what the operator tolerates and set no selector (templates/upgrade_crd.yaml
    # l. 1, l. 52-81, operator.upgradeCRD default true, values.yaml l. 82; templates/cleanup_crd.yaml l. 1-31,
    # operator.cleanupCRD default false, l. 79): a pre-upgrade hook that finds no node stalls `helm upgrade`.
    hooks = (
        ("upgradeCRD", True, "upgrade-crd (pre-upgrade hook)"),
        ("cleanupCRD", False, "cleanup-crd (pre-delete hook)"),
    )
    for switch, default, job in hooks:
        if _switch(values, f"operator.{switch}", default):
            found.append(
                PodPlacement(
                    f"Job gpu-operator-{job} {where}",
                    tolerations=_tolerations(values, "operator.tolerations", CONTROL_PLANE_ONLY_TOLERATIONS),
                )
            )
    found += [pod for _, pod in operator_facts.operand_placements(values, where)]
    return found


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
    gpus = _switch(values, "resources.gpus.enabled", True)
    compute_domains = _switch(values, "resources.computeDomains.enabled", True)
    found: list[PodPlacement] = []
    if gpus or compute_domains:
        found.append(
            PodPlacement(
                f"DaemonSet {release}-kubelet-plugin {where}",
                node_selector=_mapping(values, "kubeletPlugin.nodeSelector"),
                affinity=_mapping(
                    values, "kubeletPlugin.affinity", charts.NVIDIA_GPU_DEFAULT_KUBELET_AFFINITY
                ),
                tolerations=_tolerations(values, "kubeletPlugin.tolerations", NVIDIA_GPU_KUBELET_TOLERATIONS),
                daemonset=True,
                provides_device_classes=(
                    frozenset({attributes.NVIDIA_GPU_DEVICE_CLASS}) if gpus else frozenset()
                ),
                priority_class=_string(values, "kubeletPlugin.priorityClassName", SYSTEM_NODE_CRITICAL),
            )
        )
    if compute_domains:
        found.append(
            PodPlacement(
                f"Deployment {release}-controller {where}",
                node_selector=_mapping(values, "controller.nodeSelector"),
                affinity=_mapping(values, "controller.affinity", NVIDIA_GPU_CONTROLLER_AFFINITY),
                tolerations=_tolerations(values, "controller.tolerations", NVIDIA_GPU_CONTROLLER_TOLERATIONS),
                priority_class=_string(values, "controller.priorityClassName", SYSTEM_NODE_CRITICAL),
            )
        )
    if _switch(values, "webhook.enabled", False):
        found.append(
            PodPlacement(
                f"Deployment {release}-webhook {where}",
                node_selector=_mapping(values, "webhook.nodeSelector"),
                affinity=_mapping(values, "webhook.affinity"),
                tolerations=_tolerations(values, "webhook.tolerations", (CRITICAL_ADDONS_TOLERATION,)),
                priority_class=_string(values, "webhook.priorityClassName", SYSTEM_CLUSTER_CRITICAL),
            )
        )
    return found


def nvidia_device_plugin(release: str, values: Mapping[str, Any]) -> list[PodPlacement]:
    """NVIDIA's device plugin chart: the plugin (which offers `nvidia.com/gpu`) and its MPS control daemon."""
    if not _switch(values, "devicePlugin.enabled", True):
        return []
    where = f"(chart {charts.DEVICE_PLUGIN_CHART_NAME})"
    selector = _mapping(values, "nodeSelector")
    affinity = _mapping(values, "affinity", charts.DEVICE_PLUGIN_DEFAULT_AFFINITY)
    tolerations = _tolerations(values, "tolerations", DEVICE_PLUGIN_DEFAULT_TOLERATIONS)
    priority = _string(values, "priorityClassName", SYSTEM_NODE_CRITICAL)
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
            node_selector={operator_facts.MPS_CAPABLE_LABEL: "true", **selector},
            affinity=affinity,
            tolerations=tolerations,
            daemonset=True,
            priority_class=priority,
            # GFD sets nvidia.com/mps.capable=true only where a device plugin config shares GPUs with MPS.
            may_select_none=True,
        ),
    ]


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
    charts.DEVICE_PLUGIN_CHART_NAME: nvidia_device_plugin,
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
