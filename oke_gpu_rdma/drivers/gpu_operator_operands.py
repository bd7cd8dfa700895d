"""What the NVIDIA GPU Operator does on a node, as data: which operand DaemonSets it creates, the labels that
place them, and what each operand pod waits for before it is Ready.

Everything here is read from NVIDIA/gpu-operator at tag v26.3.3 (the chart version this project pins,
drivers/gpu_operator_chart.py DEFAULT_VERSION; its chart's own pods are placed there):

- `controllers/state_manager.go` `labelGPUNodes` (l. 521-622): a node with any of NFD's
  `feature.node.kubernetes.io/pci-10de.present`, `pci-0302_10de.present`, `pci-0300_10de.present` = "true"
  (`gpuNodeLabels`, l. 115-119) gets `nvidia.com/gpu.present=true` and, for the `container` workload
  (sandbox workloads off), every `nvidia.com/gpu.deploy.<operand>` label of `gpuStateLabels` (l. 88-97) set to
  "true" -- unless the node already has that label, whose value is kept (`addGPUStateLabels`, l. 411-429:
  "If a required state label already exists on the node, honor the current value"). MIG-capable GPUs also
  get `nvidia.com/gpu.deploy.mig-manager=true` (`hasMIGCapableGPU`, l. 286-306: GFD's `nvidia.com/mig.capable`,
  else a product name containing h100, a100 or a30). `nvidia.com/gpu.deploy.operands=false` removes them all
  (`hasOperandsDisabled`, `updateGPUStateLabels`, l. 317-324, 396-409).
- `controllers/state_manager.go` `isStateEnabled` (l. 1100-1148): which operand states the ClusterPolicy turns
  on; `controllers/object_controls.go` `DaemonSet` (l. 4621-4640) deletes the DaemonSet of a disabled state.
  The chart writes each switch into the ClusterPolicy from its values (`deployments/gpu-operator/templates/
  clusterpolicy.yaml`: `driver.enabled` l. 162, `toolkit.enabled` l. 450, `devicePlugin.enabled` l. 479,
  `dcgm.enabled` l. 513, `dcgmExporter.enabled` l. 542, ...); defaults in `deployments/gpu-operator/values.yaml`.
- `assets/state-*/..._daemonset.yaml`: each operand's nodeSelector (its deploy label), its default toleration
  (`nvidia.com/gpu` Exists NoSchedule), `priorityClassName: system-node-critical`, and its init containers.
  `controllers/object_controls.go` `applyCommonDaemonsetConfig` (l. 812-835) replaces the tolerations and
  priority class with the ClusterPolicy's `daemonsets.tolerations` / `daemonsets.priorityClassName`.
- The operator validator (`assets/state-operator-validation/0500_daemonset.yaml`, init containers
  driver-validation, toolkit-validation, cuda-validation, plugin-validation; `cmd/nvidia-validator/main.go`):
  toolkit-validation writes `/run/nvidia/validations/toolkit-ready` (`Toolkit.validate`, l. 1132-1158), which the
  device plugin, GPU feature discovery, DCGM, the DCGM exporter, the MPS control daemon and the MIG manager
  wait for in their own toolkit-validation init container (`until [ -f .../toolkit-ready ]`). plugin-validation
  (`Plugin.validate` / `validateGPUResource`, l. 1160-1202, 1435-1455) polls the node's capacity for
  `nvidia.com/gpu` (or a MIG resource) 30 times, 5 s apart (l. 195-197), then fails, and the pod restarts it
  for ever. `object_controls.go` `TransformValidatorComponent` (l. 2472-2476) removes that init container only
  when `devicePlugin.enabled` is false in the ClusterPolicy; no per-node setting removes it (NVIDIA/gpu-operator
  issue #2550).

So on a node whose GPUs the NVIDIA DRA driver serves (no device plugin there, hence no `nvidia.com/gpu`
capacity) the validator is Ready only with the ClusterPolicy's device plugin off; the validator itself must stay
on (its toolkit-ready gates the other operands). Pools that take GPUs from a device plugin then need one placed
apart from the operator (NVIDIA's device plugin chart, drivers/device_plugin.py):
:func:`device_plugin_in_operator` says which.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from oke_gpu_rdma.common.chart_placement import get
from oke_gpu_rdma.drivers import attributes
from oke_gpu_rdma.nodes import labels
from oke_gpu_rdma.scheduling.pod_admission import PodPlacement, PoolNodes, rejections

OPERATOR_SOURCE: Final = "NVIDIA/gpu-operator v26.3.3"

# controllers/state_manager.go l. 115-119 (gpuNodeLabels): any one of these marks a GPU node.
NFD_GPU_LABELS: Final = (
    labels.NFD_NVIDIA_PCI_LABEL,
    "feature.node.kubernetes.io/pci-0302_10de.present",
    "feature.node.kubernetes.io/pci-0300_10de.present",
)
DEPLOY_LABEL_PREFIX: Final = "nvidia.com/gpu.deploy."
OPERANDS_LABEL: Final = f"{DEPLOY_LABEL_PREFIX}operands"
MIG_MANAGER_LABEL: Final = f"{DEPLOY_LABEL_PREFIX}mig-manager"
MIG_CAPABLE_LABEL: Final = "nvidia.com/mig.capable"
MPS_CAPABLE_LABEL: Final = "nvidia.com/mps.capable"
# cmd/nvidia-validator/main.go l. 195-197: plugin-validation's wait for nvidia.com/gpu capacity.
PLUGIN_VALIDATION_WAIT: Final = "30 x 5 s"
TOOLKIT_READY: Final = "/run/nvidia/validations/toolkit-ready"
# The operands' default tolerations (values.yaml l. 41-44 daemonsets.tolerations, as in every asset).
OPERAND_DEFAULT_TOLERATIONS: Final[tuple[Mapping[str, Any], ...]] = (
    {"key": attributes.NVIDIA_GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"},
)
# The priority class of every operand (assets/state-*/ daemonsets; values.yaml daemonsets.priorityClassName).
OPERAND_PRIORITY_CLASS: Final = "system-node-critical"


@dataclass(frozen=True)
class Operand:
    """One operand DaemonSet the operator creates (assets/<state>/ of the operator image)."""

    daemonset: str
    component: str
    """The operand's part of its deploy label, `nvidia.com/gpu.deploy.<component>`."""
    enabled_value: str | None
    """The chart value that switches its state on (None: always on, state_manager.go isStateEnabled)."""
    enabled_default: bool
    source: str
    """The asset with its nodeSelector (file:line)."""
    waits_for_toolkit_ready: bool
    """Its toolkit-validation init container waits for the validator's toolkit-ready file."""
    extra_selector: Mapping[str, str] = field(default_factory=dict)
    kind: str = "DaemonSet"

    @property
    def deploy_label(self) -> str:
        return f"{DEPLOY_LABEL_PREFIX}{self.component}"


def _operand(
    daemonset: str,
    component: str,
    enabled_value: str | None,
    enabled_default: bool,
    source: str,
    waits: bool,
    extra: Mapping[str, str] | None = None,
) -> Operand:
    return Operand(daemonset, component, enabled_value, enabled_default, source, waits, dict(extra or {}))


# The container-workload operands (sandbox workloads stay off: values.yaml sandboxWorkloads.enabled false, so
# isStateEnabled turns every sandbox/vGPU/kata/cc state off). Defaults: deployments/gpu-operator/values.yaml
# (driver.enabled l. 119, toolkit.enabled l. 211, devicePlugin.enabled l. 223, dcgm.enabled l. 270,
# dcgmExporter.enabled l. 281, gfd.enabled l. 340, migManager.enabled l. 351, nodeStatusExporter.enabled l. 414).
DRIVER = _operand(
    "nvidia-driver-daemonset",
    "driver",
    "driver.enabled",
    True,
    "assets/state-driver/0500_daemonset.yaml:27",
    False,
)
TOOLKIT = _operand(
    "nvidia-container-toolkit-daemonset",
    "container-toolkit",
    "toolkit.enabled",
    True,
    "assets/state-container-toolkit/0500_daemonset.yaml:19",
    False,
)
VALIDATOR = _operand(
    "nvidia-operator-validator",
    "operator-validator",
    None,
    True,
    "assets/state-operator-validation/0500_daemonset.yaml:20",
    False,
)
# The pod cuda-validation creates on the validator's node (cmd/nvidia-validator/main.go CUDA.runWorkload,
# l. 1552-1625: WITH_WORKLOAD defaults to true, l. 287-293; nodeName is the validator's node and its
# tolerations are the validator DaemonSet's; validator/manifests/cuda-workload-validation.yaml asks for no
# resource, its GPUs come from the toolkit's CDI spec). One per node the validator runs on.
CUDA_VALIDATOR = Operand(
    "nvidia-cuda-validator",
    "operator-validator",
    None,
    True,
    "validator/manifests/cuda-workload-validation.yaml",
    False,
    kind="Pod",
)
DEVICE_PLUGIN = _operand(
    "nvidia-device-plugin-daemonset",
    "device-plugin",
    "devicePlugin.enabled",
    True,
    "assets/state-device-plugin/0500_daemonset.yaml:19",
    True,
)
MPS_CONTROL_DAEMON = _operand(
    "nvidia-device-plugin-mps-control-daemon",
    "device-plugin",
    "devicePlugin.enabled",
    True,
    "assets/state-mps-control-daemon/0400_daemonset.yaml:19",
    True,
    {MPS_CAPABLE_LABEL: "true"},
)
DCGM = _operand("nvidia-dcgm", "dcgm", "dcgm.enabled", False, "assets/state-dcgm/0400_dcgm.yml:19", True)
DCGM_EXPORTER = _operand(
    "nvidia-dcgm-exporter",
    "dcgm-exporter",
    "dcgmExporter.enabled",
    True,
    "assets/state-dcgm-exporter/0800_daemonset.yaml:19",
    True,
)
GPU_FEATURE_DISCOVERY = _operand(
    "gpu-feature-discovery",
    "gpu-feature-discovery",
    "gfd.enabled",
    True,
    "assets/gpu-feature-discovery/0500_daemonset.yaml:20",
    True,
)
MIG_MANAGER = _operand(
    "nvidia-mig-manager",
    "mig-manager",
    "migManager.enabled",
    True,
    "assets/state-mig-manager/0600_daemonset.yaml:17",
    True,
)
NODE_STATUS_EXPORTER = _operand(
    "nvidia-node-status-exporter",
    "node-status-exporter",
    "nodeStatusExporter.enabled",
    False,
    "assets/state-node-status-exporter/0700_daemonset.yaml:19",
    False,
)
OPERANDS: Final = (
    DRIVER,
    TOOLKIT,
    VALIDATOR,
    CUDA_VALIDATOR,
    DEVICE_PLUGIN,
    MPS_CONTROL_DAEMON,
    DCGM,
    DCGM_EXPORTER,
    GPU_FEATURE_DISCOVERY,
    MIG_MANAGER,
    NODE_STATUS_EXPORTER,
)
# gpuStateLabels["container"] (state_manager.go l. 89-97): the deploy labels set on every GPU node.
CONTAINER_STATE_COMPONENTS: Final = (
    "driver",
    "gpu-feature-discovery",
    "container-toolkit",
    "device-plugin",
    "dcgm",
    "dcgm-exporter",
    "node-status-exporter",
    "operator-validator",
)
# hasMIGCapableGPU's product fallback on GFD's nvidia.com/gpu.product (state_manager.go l. 296-303).
MIG_CAPABLE_PRODUCTS: Final = ("h100", "a100", "a30")


def enabled(operand: Operand, values: Mapping[str, Any]) -> bool:
    """Whether the ClusterPolicy the chart renders from ``values`` turns the operand's state on."""
    if operand.enabled_value is None:
        return True
    value = get(values, operand.enabled_value)
    return operand.enabled_default if value is None else value is True


def device_plugin_in_operator(values: Mapping[str, Any]) -> bool:
    """The ClusterPolicy's devicePlugin.enabled, which also keeps the validator's plugin-validation."""
    return enabled(DEVICE_PLUGIN, values)


def is_gpu_node(node_labels: Mapping[str, str]) -> bool:
    """hasGPULabels (state_manager.go l. 264-274)."""
    return any(node_labels.get(key) == "true" for key in NFD_GPU_LABELS)


def mig_capable(node_labels: Mapping[str, str], gpu_product: str) -> bool:
    """hasMIGCapableGPU: GFD's mig.capable label when the node has it, else the product name."""
    if MIG_CAPABLE_LABEL in node_labels:
        return node_labels[MIG_CAPABLE_LABEL] == "true"
    return any(name in gpu_product.lower() for name in MIG_CAPABLE_PRODUCTS)


def operator_node_labels(node_labels: Mapping[str, str], gpu_product: str = "") -> dict[str, str]:
    """The node's labels once the operator has labelled it (labelGPUNodes for the container workload)."""
    found = dict(node_labels)
    if not is_gpu_node(found):
        return found
    found[labels.GPU_PRESENT_LABEL] = labels.GPU_PRESENT
    if found.get(OPERANDS_LABEL) == "false":
        for component in (*CONTAINER_STATE_COMPONENTS, "mig-manager"):
            found.pop(f"{DEPLOY_LABEL_PREFIX}{component}", None)
        return found
    for component in CONTAINER_STATE_COMPONENTS:
        found.setdefault(f"{DEPLOY_LABEL_PREFIX}{component}", "true")
    if mig_capable(found, gpu_product):
        found.setdefault(MIG_MANAGER_LABEL, "true")
    return found


def operand_tolerations(values: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """daemonsets.tolerations (values.yaml l. 41-44 default: nvidia.com/gpu Exists NoSchedule)."""
    value = get(values, "daemonsets.tolerations")
    if isinstance(value, list) and value:
        return tuple(value)
    return OPERAND_DEFAULT_TOLERATIONS


def operand_priority_class(values: Mapping[str, Any]) -> str:
    value = get(values, "daemonsets.priorityClassName")
    return value if isinstance(value, str) and value else OPERAND_PRIORITY_CLASS


def operand_placement(operand: Operand, values: Mapping[str, Any], where: str) -> PodPlacement:
    return PodPlacement(
        f"{operand.kind} {operand.daemonset} {where}",
        node_selector={operand.deploy_label: "true", **operand.extra_selector},
        tolerations=operand_tolerations(values),
        # The cuda validator's pod is bound to each node the validator runs on: placed as a DaemonSet's would be.
        daemonset=True,
        priority_class=operand_priority_class(values) if operand.kind == "DaemonSet" else None,
        may_select_none=True,
        provides_resources=(
            frozenset({attributes.NVIDIA_GPU_RESOURCE}) if operand is DEVICE_PLUGIN else frozenset()
        ),
    )


def operand_placements(values: Mapping[str, Any], where: str) -> list[tuple[Operand, PodPlacement]]:
    """The operand DaemonSets the operator creates for ``values``, each with its placement."""
    return [(o, operand_placement(o, values, where)) for o in OPERANDS if enabled(o, values)]


def _runs(pod: PodPlacement, pool: PoolNodes) -> bool:
    return not rejections(pod, pool)


def operand_problems(
    values: Mapping[str, Any],
    pools: Sequence[PoolNodes],
    device_plugins: Sequence[PodPlacement] = (),
    where: str = "",
) -> list[str]:
    """Operand pods that would never be Ready on a GPU pool, one line each naming the pool and the reason.

    ``pools`` carry the labels the operator sets (:func:`operator_node_labels`); ``device_plugins`` are device
    plugins other than the operator's (placements that provide `nvidia.com/gpu`).
    """
    problems: list[str] = []
    placed = operand_placements(values, where)
    plugin_validation = device_plugin_in_operator(values)
    plugins = [p for _, p in placed if p.provides_resources] + [
        p for p in device_plugins if attributes.NVIDIA_GPU_RESOURCE in p.provides_resources
    ]
    for pool in pools:
        if not is_gpu_node(pool.labels):
            continue
        running = {o.daemonset: p for o, p in placed if _runs(p, pool)}
        validator = running.get(VALIDATOR.daemonset)
        toolkit_there = TOOLKIT.daemonset in running or not enabled(TOOLKIT, values)
        toolkit_ready = validator is not None and toolkit_there
        if validator is not None and not toolkit_there:
            problems.append(
                f"{validator.name} on pool {pool.name}: its toolkit-validation init container never passes: the "
                f"container toolkit does not run there ({TOOLKIT.source})"
            )
        if validator is not None and plugin_validation and not any(_runs(p, pool) for p in plugins):
            problems.append(
                f"{validator.name} on pool {pool.name} crash-loops: its plugin-validation init container waits "
                f"{PLUGIN_VALIDATION_WAIT} for {attributes.NVIDIA_GPU_RESOURCE} capacity, which no device plugin "
                "offers there (cmd/nvidia-validator/main.go validateGPUResource); the ClusterPolicy removes that "
                "container only with devicePlugin.enabled=false (controllers/object_controls.go "
                "TransformValidatorComponent)"
            )
        if toolkit_ready:
            continue
        why = (
            "the operator validator does not run there"
            if validator is None
            else "the validator's toolkit-validation never passes there"
        )
        for operand, pod in placed:
            if operand.waits_for_toolkit_ready and operand.daemonset in running:
                problems.append(
                    f"{pod.name} on pool {pool.name} stays in its toolkit-validation init container: it waits "
                    f"for {TOOLKIT_READY}, which only the validator writes, and {why} ({operand.source})"
                )
    return problems


def device_plugin_gaps(pools: Sequence[PoolNodes], device_plugins: Sequence[PodPlacement]) -> list[str]:
    """Pools whose pods ask for `nvidia.com/gpu` (the pool offers it by its labels) where no device plugin runs."""
    plugins = [p for p in device_plugins if attributes.NVIDIA_GPU_RESOURCE in p.provides_resources]
    return [
        f"pool {pool.name}: its pods ask for {attributes.NVIDIA_GPU_RESOURCE}, but no device plugin runs there"
        + (f" (device plugins: {', '.join(p.name for p in plugins)})" if plugins else "")
        for pool in pools
        if attributes.NVIDIA_GPU_RESOURCE in pool.extended_resources
        and not any(_runs(p, pool) for p in plugins)
    ]
