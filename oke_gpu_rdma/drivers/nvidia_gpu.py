"""The NVIDIA GPU DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu, formerly NVIDIA/k8s-dra-driver-gpu): its
chart, the values it reads, where its pods go, the driver it runs, its DeviceClass, the attributes it
publishes and the slice it publishes on a node.

Sources: deployments/helm/dra-driver-nvidia-gpu (chart 0.5.0-dev at commit 95932046, the newest the snapshot
has: it has no v0.5.1 tag; values.yaml and the templates cited below), `cmd/gpu-kubelet-plugin/deviceinfo.go`
and the DeviceClass its chart creates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from oke_gpu_rdma.common import chart_placement as values_of
from oke_gpu_rdma.common.release_facts import DriverFacts, NodeSlices, ReleaseFacts
from oke_gpu_rdma.drivers import attributes
from oke_gpu_rdma.drivers.resource_slices import AttributeValue, Device, ResourceSlice, Version
from oke_gpu_rdma.nodes import labels
from oke_gpu_rdma.nodes.topology import Topology
from oke_gpu_rdma.scheduling.pod_admission import PodPlacement

CHART_NAME: Final = "dra-driver-nvidia-gpu"
CHART: Final = f"oci://registry.k8s.io/dra-driver-nvidia/charts/{CHART_NAME}"
DEFAULT_VERSION: Final = "0.5.1"
RELEASE: Final = CHART_NAME
NAMESPACE: Final = CHART_NAME
# The chart's name now and under its earlier names: the policy pack recognises an installation by any of them.
CHART_NAMES: Final = (CHART_NAME, "nvidia-dra-driver-gpu", "k8s-dra-driver-gpu")

# The chart's default kubeletPlugin.affinity (values.yaml): a node with NFD's NVIDIA PCI labels, NFD's NVIDIA
# CPU vendor, or the GPU Operator's gpu.present; the kubelet plugin template renders it whenever the values set
# no other affinity.
KUBELET_AFFINITY_VALUE: Final = "kubeletPlugin.affinity"
KUBELET_NODE_SELECTOR_VALUE: Final = "kubeletPlugin.nodeSelector"
DEFAULT_KUBELET_AFFINITY: Final[dict[str, Any]] = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                values_of.required_term(labels.NFD_NVIDIA_PCI_LABEL, "true"),
                values_of.required_term("feature.node.kubernetes.io/pci-0302_10de.present", "true"),
                values_of.required_term("feature.node.kubernetes.io/pci-0300_10de.present", "true"),
                values_of.required_term("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA"),
                values_of.required_term(labels.GPU_PRESENT_LABEL, labels.GPU_PRESENT),
            ]
        }
    }
}

# The values seed 000 sets; the templates read each one: kubeletplugin.yaml l. 15 resources.*.enabled, l. 63
# nvidiaDriverRoot, l. 410-421 kubeletPlugin.nodeSelector/affinity/tolerations, controller.yaml l. 15 and
# l. 122-133, validation.yaml l. 33 gpuResourcesEnabledOverride.
VALUE_PATHS: Final = frozenset(
    {
        "nvidiaDriverRoot",
        "gpuResourcesEnabledOverride",
        "resources.gpus.enabled",
        "resources.computeDomains.enabled",
        "kubeletPlugin.nodeSelector.*",
        "kubeletPlugin.tolerations",
        "kubeletPlugin.affinity.*",
        "controller.nodeSelector.*",
        "controller.tolerations",
        "controller.affinity.*",
        "image.repository",
        "image.tag",
        "featureGates.NVMLDeviceHealthCheck",
        # The ComputeDomain release (oke_gpu_rdma/drivers/compute_domains.py): _helpers.tpl l. 4-6 name (the DaemonSet,
        # Deployment, ClusterRoles and admission policy are named by it); values.yaml resources.computeDomains.imex
        # .mode, read by templates/rbac-compute-domain-daemon.yaml l. 1 (whatever computeDomains.enabled says) and
        # validateIMEXConfig (only with computeDomains on).
        "nameOverride",
        "resources.computeDomains.imex.mode",
    }
)

# The second release of the same chart that serves ComputeDomains alone (GPUs off), on the multi-node NVLink
# pools: its own name, so none of the chart's named objects meets the GPU release's. The chart names the IMEX
# daemons' ClusterRole, ServiceAccount and binding `compute-domain-daemon-*` in every release that is not in
# hostManaged IMEX mode, even one with compute domains off (templates/rbac-compute-domain-daemon.yaml l. 1-40), and
# Helm refuses to adopt another release's object: the GPU release, whose compute domains are off so no template
# validates or reads the mode (kubeletplugin.yaml l. 16-17, controller.yaml l. 15), says hostManaged and renders
# none of them; the ComputeDomain release (driverManaged, the default) owns them.
COMPUTE_DOMAIN_RELEASE: Final = "dra-driver-nvidia-compute-domain"
IMEX_MODE_VALUE: Final = "resources.computeDomains.imex.mode"
# Where its metrics are served (values.yaml controller.metrics.httpEndpoint ":8080", kubeletPlugin.metrics
# .computeDomainHttpEndpoint ":8081", path /metrics; the pods declare no port and run on the pod network) and the
# label its pods carry (_helpers.tpl selectorLabels: `<name>-component: <controller | kubelet-plugin>`).
CONTROLLER_METRICS_PORT: Final = 8080
COMPUTE_DOMAIN_PLUGIN_METRICS_PORT: Final = 8081
COMPONENT_LABEL: Final = f"{COMPUTE_DOMAIN_RELEASE}-component"
IMEX_MODE_WITHOUT_DAEMONS: Final = "hostManaged"


# Where the facts of this module were read (the snapshot named in the docstring).
REPOSITORY: Final = f"kubernetes-sigs/{CHART_NAME}"
SOURCE_COMMIT: Final = "95932046683719c43b6a0dd9613c2e5aad5d6703"
CHART_PATH: Final = f"deployments/helm/{CHART_NAME}"
# The ComputeDomain driver and its DeviceClasses (templates/deviceclass-compute-domain-default-channel.yaml and
# deviceclass-compute-domain-daemon.yaml; oke_gpu_rdma/drivers/compute_domains.py says what they serve).
COMPUTE_DOMAIN_DRIVER: Final = "compute-domain.nvidia.com"
COMPUTE_DOMAIN_CHANNEL_CLASS: Final = "compute-domain-default-channel.nvidia.com"
COMPUTE_DOMAIN_DAEMON_CLASS: Final = "compute-domain-daemon.nvidia.com"
COMPUTE_DOMAIN_CLASSES: Final = frozenset({COMPUTE_DOMAIN_CHANNEL_CLASS, COMPUTE_DOMAIN_DAEMON_CLASS})

# The driver name, as it appears in ResourceSlice.spec.driver and in `device.driver`, and its DeviceClass.
DRIVER: Final = "gpu.nvidia.com"
DEVICE_CLASS: Final = "gpu.nvidia.com"
CLASS_SELECTOR: Final = (
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
)

# GPU health from NVML (item "GPU health to device taints"). Source: kubernetes-sigs/dra-driver-nvidia-gpu at
# commit 95932046 (the snapshot's newest; it has no v0.5.1 tag, the version the stack pins), read there:
# - pkg/featuregates/featuregates.go l. 60-61 and l. 152-158: gate NVMLDeviceHealthCheck, alpha, off by
#   default; l. 262-271: refused together with DynamicMIG or PassthroughSupport (the stack sets neither).
# - cmd/gpu-kubelet-plugin/driver.go l. 157: the kubelet plugin starts its NVML event monitor only with it.
# - values.yaml l. 109-121 `featureGates: {}`; templates/kubeletplugin.yaml l. 169-171 and l. 312-314 pass
#   every entry as FEATURE_GATES=<name>=<value>,... to the plugin's containers.
# - site/content/docs/guides/gpu-health-checking.md: the feature since v0.4.0; it needs the Kubernetes gate
#   DRADeviceTaints (beta and on by default from 1.36), without which the API server drops the taints the
#   driver writes into its ResourceSlices; taints persist until the kubelet plugin restarts.
HEALTH_FEATURE_GATE: Final = "NVMLDeviceHealthCheck"
HEALTH_FEATURE_GATE_VALUE: Final = f"featureGates.{HEALTH_FEATURE_GATE}"
HEALTH_SINCE_VERSION: Final = "0.4.0"
# cmd/gpu-kubelet-plugin/device_health.go l. 35-39 (the keys) and l. 68-96 healthEventToTaint (the effects):
# a fatal XID -> gpu.nvidia.com/xid=<xid>:NoSchedule, a non-fatal one (l. 421-428: XIDs 13, 31, 43, 45, 68,
# 109 are application errors) -> effect None; a lost GPU -> gpu.nvidia.com/gpu-lost:NoSchedule; a GPU NVML
# cannot watch -> gpu.nvidia.com/unmonitored:None. The driver never writes NoExecute: a pod already holding
# the GPU keeps running; new claims do not get it.
TAINT_KEY_XID: Final = f"{DRIVER}/xid"
TAINT_KEY_GPU_LOST: Final = f"{DRIVER}/gpu-lost"
TAINT_KEY_UNMONITORED: Final = f"{DRIVER}/unmonitored"
HEALTH_TAINT_EFFECTS: Final[dict[str, tuple[str, ...]]] = {
    TAINT_KEY_XID: ("NoSchedule", "None"),
    TAINT_KEY_GPU_LOST: ("NoSchedule",),
    TAINT_KEY_UNMONITORED: ("None",),
}
HEALTH_TAINT_KEYS: Final = tuple(HEALTH_TAINT_EFFECTS)

# The driver's attributes: published without a domain, so CEL sees them under gpu.nvidia.com.
GPU_TYPE: Final = "type"
GPU_UUID: Final = "uuid"
GPU_PRODUCT_NAME: Final = "productName"
GPU_BRAND: Final = "brand"
GPU_ARCHITECTURE: Final = "architecture"
GPU_CUDA_COMPUTE_CAPABILITY: Final = "cudaComputeCapability"
GPU_DRIVER_VERSION: Final = "driverVersion"
GPU_CUDA_DRIVER_VERSION: Final = "cudaDriverVersion"
GPU_MEMORY_CAPACITY: Final = "memory"

# values.yaml l. 241-249 and l. 255-270 (the podAntiAffinity, preferred too, is left out: it never keeps the
# pod off a node).
CONTROLLER_TOLERATIONS: Final[tuple[Mapping[str, Any], ...]] = (
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"},
    values_of.CRITICAL_ADDONS_TOLERATION,
)
CONTROLLER_AFFINITY: Final = values_of.preferred(
    "node-role.kubernetes.io/control-plane", "Exists", weight=100
)
KUBELET_TOLERATIONS: Final = (values_of.GPU_TAINT_TOLERATION,)


def workloads(release: str, values: Mapping[str, Any]) -> list[PodPlacement]:
    """The kubelet plugin DaemonSet whenever GPUs or compute domains are on (templates/kubeletplugin.yaml l. 15,
    l. 410-421; values.yaml l. 282 priority system-node-critical, l. 289-293 `nvidia.com/gpu` Exists NoSchedule
    toleration, l. 319-352 the affinity DEFAULT_KUBELET_AFFINITY); the controller Deployment only with
    `resources.computeDomains.enabled` (default true, values.yaml l. 83; templates/controller.yaml l. 15,
    l. 122-133; values.yaml l. 237 priority, l. 241-249 control-plane, master and CriticalAddonsOnly tolerations,
    l. 255-270 a preferred control-plane affinity); the webhook Deployment only with `webhook.enabled` (default
    false, l. 173; l. 177 priority system-cluster-critical, l. 185-187 CriticalAddonsOnly)."""
    where = f"(chart {CHART_NAME})"
    gpus = values_of.switch(values, "resources.gpus.enabled", True)
    compute_domains = values_of.switch(values, "resources.computeDomains.enabled", True)
    found: list[PodPlacement] = []
    if gpus or compute_domains:
        found.append(
            PodPlacement(
                f"DaemonSet {release}-kubelet-plugin {where}",
                node_selector=values_of.mapping(values, "kubeletPlugin.nodeSelector"),
                affinity=values_of.mapping(values, "kubeletPlugin.affinity", DEFAULT_KUBELET_AFFINITY),
                tolerations=values_of.tolerations(values, "kubeletPlugin.tolerations", KUBELET_TOLERATIONS),
                daemonset=True,
                provides_device_classes=(frozenset({DEVICE_CLASS}) if gpus else frozenset())
                | (COMPUTE_DOMAIN_CLASSES if compute_domains else frozenset()),
                priority_class=values_of.string(
                    values, "kubeletPlugin.priorityClassName", values_of.SYSTEM_NODE_CRITICAL
                ),
            )
        )
    if compute_domains:
        found.append(
            PodPlacement(
                f"Deployment {release}-controller {where}",
                node_selector=values_of.mapping(values, "controller.nodeSelector"),
                affinity=values_of.mapping(values, "controller.affinity", CONTROLLER_AFFINITY),
                tolerations=values_of.tolerations(values, "controller.tolerations", CONTROLLER_TOLERATIONS),
                priority_class=values_of.string(
                    values, "controller.priorityClassName", values_of.SYSTEM_NODE_CRITICAL
                ),
            )
        )
    if values_of.switch(values, "webhook.enabled", False):
        found.append(
            PodPlacement(
                f"Deployment {release}-webhook {where}",
                node_selector=values_of.mapping(values, "webhook.nodeSelector"),
                affinity=values_of.mapping(values, "webhook.affinity"),
                tolerations=values_of.tolerations(
                    values, "webhook.tolerations", (values_of.CRITICAL_ADDONS_TOLERATION,)
                ),
                priority_class=values_of.string(
                    values, "webhook.priorityClassName", values_of.SYSTEM_CLUSTER_CRITICAL
                ),
            )
        )
    return found


# GB200: architecture and cudaComputeCapability as the driver publishes them on a live BM.GPU.GB200-v3.4
# node (kubernetes-sigs/dranet examples/oci_oke_examples/BM.GPU.GB200-v3.4/resourceslice-gpu.yaml).
_GPU_FAMILIES = {
    "A100": ("Ampere", "8.0.0"),
    "H100": ("Hopper", "9.0.0"),
    "H200": ("Hopper", "9.0.0"),
    "GB200": ("Blackwell", "10.0.0"),
}


def nvidia_gpu_slice(
    topology: Topology,
    node_name: str,
    driver_version: str = "550.0.0",
    cuda_driver_version: str = "12.4.0",
) -> ResourceSlice:
    """The slice the NVIDIA DRA driver 0.5.1 publishes: full GPUs ``gpu-0`` .. ``gpu-7`` in the driver's own
    order, with the attributes above, ``resource.kubernetes.io/pciBusID`` and ``resource.kubernetes.io/pcieRoot``,
    and the capacity ``memory``. UUIDs and driver versions are placeholders."""
    family = next((v for k, v in _GPU_FAMILIES.items() if k in topology.gpu_product), ("unknown", "0.0.0"))
    devices: list[Device] = []
    for gpu in topology.gpus_in_driver_order:
        attrs: dict[str, AttributeValue] = {
            GPU_TYPE: "gpu",
            GPU_UUID: f"GPU-{node_name}-{gpu.driver_name}",
            GPU_PRODUCT_NAME: topology.gpu_product,
            GPU_BRAND: "Nvidia",
            GPU_ARCHITECTURE: family[0],
            GPU_CUDA_COMPUTE_CAPABILITY: Version(family[1]),
            GPU_DRIVER_VERSION: Version(driver_version),
            GPU_CUDA_DRIVER_VERSION: Version(cuda_driver_version),
            attributes.PCI_BUS_ID: gpu.pci_bus_id,
            attributes.PCIE_ROOT: gpu.root,
        }
        capacity = {GPU_MEMORY_CAPACITY: topology.gpu_memory_bytes}
        devices.append(Device(DRIVER, node_name, gpu.driver_name, attrs, capacity, "gpu", gpu.label))
    return ResourceSlice(DRIVER, node_name, node_name, tuple(devices))


def _publishes(topology: Topology, node_name: str, settings: NodeSlices) -> ResourceSlice:
    return nvidia_gpu_slice(topology, node_name)


FACTS: Final = ReleaseFacts(
    title="the NVIDIA GPU DRA driver",
    chart_name=CHART_NAME,
    chart=CHART,
    repository=None,
    default_version=DEFAULT_VERSION,
    release=RELEASE,
    namespace=NAMESPACE,
    value_paths=VALUE_PATHS,
    workloads=workloads,
    chart_names=CHART_NAMES,
    drivers=(
        DriverFacts(
            DRIVER,
            "gpus",
            {DEVICE_CLASS: (CLASS_SELECTOR,)},
            _publishes,
            KUBELET_NODE_SELECTOR_VALUE,
            KUBELET_AFFINITY_VALUE,
        ),
    ),
)
