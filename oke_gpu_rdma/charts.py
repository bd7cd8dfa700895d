"""The Helm charts this project installs: where they live, their default versions, and the values
keys each documents. The components emit only documented keys (the dranet chart's values schema
forbids unknown ones, so a misspelt key fails `helm install`); the policy pack finds the charts by
these references.
"""

from __future__ import annotations

from typing import Any, Final

from oke_gpu_rdma import labels

DRANET_CHART_NAME: Final = "dranet"
DRANET_CHART: Final = f"oci://registry.k8s.io/networking/charts/{DRANET_CHART_NAME}"
DRANET_RELEASE: Final = DRANET_CHART_NAME
# The DRANET image and the command in it carry the chart's name too.
DRANET_BINARY: Final = DRANET_CHART_NAME
DRANET_DEFAULT_VERSION: Final = "v1.5.0"
DRANET_NAMESPACE: Final = "kube-system"

NVIDIA_GPU_CHART_NAME: Final = "dra-driver-nvidia-gpu"
NVIDIA_GPU_CHART: Final = f"oci://registry.k8s.io/dra-driver-nvidia/charts/{NVIDIA_GPU_CHART_NAME}"
NVIDIA_GPU_DEFAULT_VERSION: Final = "0.5.1"
NVIDIA_GPU_RELEASE: Final = NVIDIA_GPU_CHART_NAME
NVIDIA_GPU_NAMESPACE: Final = NVIDIA_GPU_CHART_NAME
# The NVIDIA GPU Operator (seed 000's cluster ran 26.3.3, with the image's GPU driver).
GPU_OPERATOR_CHART_NAME: Final = "gpu-operator"
GPU_OPERATOR_REPO: Final = "https://helm.ngc.nvidia.com/nvidia"
GPU_OPERATOR_DEFAULT_VERSION: Final = "v26.3.3"
GPU_OPERATOR_NAMESPACE: Final = "gpu-operator"

# The chart's name now and under its earlier names (kubernetes-sigs/dra-driver-nvidia-gpu, formerly
# NVIDIA/k8s-dra-driver-gpu): the policy pack recognises an installation by any of them.
NVIDIA_GPU_CHART_NAMES: Final = (NVIDIA_GPU_CHART_NAME, "nvidia-dra-driver-gpu", "k8s-dra-driver-gpu")

# The NVIDIA Network Operator (Mellanox/network-operator deployment/network-operator), from NVIDIA's Helm
# repository, with its SR-IOV Network Operator subchart (seed 001: 26.7.1). Its images in the
# NicClusterPolicy carry the tag network-operator-v<version>.
NETWORK_OPERATOR_CHART_NAME: Final = "network-operator"
NETWORK_OPERATOR_REPOSITORY: Final = "https://helm.ngc.nvidia.com/nvidia"
NETWORK_OPERATOR_DEFAULT_VERSION: Final = "26.7.1"
NETWORK_OPERATOR_RELEASE: Final = NETWORK_OPERATOR_CHART_NAME
NETWORK_OPERATOR_NAMESPACE: Final = "nvidia-network-operator"
NETWORK_OPERATOR_IMAGE_REPOSITORY: Final = "nvcr.io/nvidia/mellanox"
SRIOV_SUBCHART: Final = "sriov-network-operator"
# The SR-IOV config daemon plugin that rewrites NIC firmware (and drains and reboots nodes to apply it).
SRIOV_FIRMWARE_PLUGIN: Final = "mellanox"


def network_operator_image_tag(chart_version: str) -> str:
    """The tag of the operator's component images for a chart version: network-operator-v26.7.1."""
    return f"{NETWORK_OPERATOR_CHART_NAME}-v{chart_version.removeprefix('v')}"


# The NVIDIA chart's default kubeletPlugin.affinity (deployments/helm/dra-driver-nvidia-gpu/values.yaml):
# a node with NFD's NVIDIA PCI labels, NFD's NVIDIA CPU vendor, or the GPU Operator's gpu.present; the
# kubelet plugin template renders it whenever the values set no other affinity.
NVIDIA_GPU_KUBELET_AFFINITY_VALUE: Final = "kubeletPlugin.affinity"
NVIDIA_GPU_KUBELET_NODE_SELECTOR_VALUE: Final = "kubeletPlugin.nodeSelector"


def _term(key: str, value: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}


NVIDIA_GPU_DEFAULT_KUBELET_AFFINITY: Final[dict[str, Any]] = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                _term(labels.NFD_NVIDIA_PCI_LABEL, "true"),
                _term("feature.node.kubernetes.io/pci-0302_10de.present", "true"),
                _term("feature.node.kubernetes.io/pci-0300_10de.present", "true"),
                _term("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA"),
                _term(labels.GPU_PRESENT_LABEL, labels.GPU_PRESENT),
            ]
        }
    }
}

# DRANET's OKE options (kubernetes-sigs/dranet: the chart passes args.cloudProviderOptions.<provider>
# as --cloud-provider-options=<provider>.<key>=<value>). The child range, as a value path and a flag.
DRANET_PROVIDER_HINT_VALUE: Final = "args.cloudProviderHint"
DRANET_OKE_HINT: Final = "OKE"
DRANET_OKE_OPTIONS_VALUE: Final = "args.cloudProviderOptions.oke"
DRANET_CHILD_RANGE_KEY: Final = "rdma-child-ipv4-cidr"
DRANET_CHILD_RANGE_OPTION: Final = f"oke.{DRANET_CHILD_RANGE_KEY}"
DRANET_CHILD_RANGE_VALUE: Final = f"{DRANET_OKE_OPTIONS_VALUE}.{DRANET_CHILD_RANGE_KEY}"

# Values paths (dot-joined) each chart documents; a path ending in ".*" admits any keys below it
# (free-form maps such as nodeSelector or a volume definition). Sources: kubernetes-sigs/dranet
# deployments/helm/dranet (values.yaml, values.schema.json with additionalProperties: false),
# kubernetes-sigs/dra-driver-nvidia-gpu deployments/helm/dra-driver-nvidia-gpu/values.yaml for the
# NVIDIA chart (the values seed 000 sets; its templates read each one: kubeletplugin.yaml l. 15
# resources.*.enabled, l. 63 nvidiaDriverRoot, l. 410-421 kubeletPlugin.nodeSelector/affinity/tolerations,
# controller.yaml l. 15 and l. 122-133, validation.yaml l. 33 gpuResourcesEnabledOverride; chart 0.5.0-dev at
# commit 95932046, the newest the snapshot has).
DRANET_VALUE_PATHS: Final = frozenset(
    {
        "nameOverride",
        "fullnameOverride",
        "image.repository",
        "image.tag",
        "image.pullPolicy",
        "imagePullSecrets",
        "rbac.create",
        "podAnnotations.*",
        "podLabels.*",
        "logVerbosity",
        "args.filter",
        "args.moveIBInterfaces",
        DRANET_PROVIDER_HINT_VALUE,
        DRANET_CHILD_RANGE_VALUE,
        "args.profileProvider",
        "args.webhookURL",
        "args.featureGates",
        "extraVolumes",
        "extraVolumeMounts",
        "nodeSelector.*",
        "affinity.*",
        "tolerations",
        "resources.*",
        "serviceAccount.annotations.*",
    }
)

NVIDIA_GPU_VALUE_PATHS: Final = frozenset(
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
    }
)

# The network-operator chart ships no values.schema.json, so Helm ignores a misspelt value silently: the
# component emits only these (deployment/network-operator/values.yaml and the sriov-network-operator
# subchart's values.yaml).
NETWORK_OPERATOR_VALUE_PATHS: Final = frozenset(
    {
        "nfd.enabled",
        "node-feature-discovery.worker.tolerations",
        "sriovNetworkOperator.enabled",
        f"{SRIOV_SUBCHART}.sriovOperatorConfig.deploy",
        f"{SRIOV_SUBCHART}.sriovOperatorConfig.disableDrain",
        f"{SRIOV_SUBCHART}.sriovOperatorConfig.configurationMode",
        f"{SRIOV_SUBCHART}.sriovOperatorConfig.disablePlugins",
        f"{SRIOV_SUBCHART}.sriovOperatorConfig.configDaemonNodeSelector.*",
        "operator.resources.*",
        "operator.tolerations",
        "operator.nodeSelector.*",
    }
)


# Values of the gpu-operator chart this project sets, each one its templates read (NVIDIA/gpu-operator v26.3.3
# deployments/gpu-operator/templates/clusterpolicy.yaml: driver.enabled l. 162, devicePlugin.enabled l. 479,
# daemonsets.tolerations l. 52-53; the node-feature-discovery subchart's templates/worker.yaml l. 188-190:
# worker.tolerations).
NFD_WORKER_TOLERATIONS_VALUE: Final = "node-feature-discovery.worker.tolerations"
GPU_OPERATOR_DEVICE_PLUGIN_VALUE: Final = "devicePlugin.enabled"
GPU_OPERATOR_VALUE_PATHS: Final = frozenset(
    {
        "driver.enabled",
        GPU_OPERATOR_DEVICE_PLUGIN_VALUE,
        "daemonsets.tolerations",
        NFD_WORKER_TOLERATIONS_VALUE,
    }
)

# NVIDIA's device plugin chart (NVIDIA/k8s-device-plugin deployments/helm/nvidia-device-plugin), for the pools
# that take GPUs from a device plugin when the GPU Operator's own is off (oke_gpu_rdma/gpu_operator.py says
# why). 0.19.3 is the device plugin the pinned operator deploys (gpu-operator v26.3.3 values.yaml
# devicePlugin.version v0.19.3); the repository is the one the chart's README adds (`helm repo add nvdp`).
DEVICE_PLUGIN_CHART_NAME: Final = "nvidia-device-plugin"
DEVICE_PLUGIN_REPO: Final = "https://nvidia.github.io/k8s-device-plugin"
DEVICE_PLUGIN_DEFAULT_VERSION: Final = "0.19.3"
DEVICE_PLUGIN_RELEASE: Final = DEVICE_PLUGIN_CHART_NAME
DEVICE_PLUGIN_NAMESPACE: Final = DEVICE_PLUGIN_CHART_NAME
# Its default affinity (values.yaml l. 64-85): NFD's pci-10de label, an NVIDIA CPU vendor, or gpu.present.
DEVICE_PLUGIN_DEFAULT_AFFINITY: Final[dict[str, Any]] = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                _term(labels.NFD_NVIDIA_PCI_LABEL, "true"),
                _term("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA"),
                _term(labels.GPU_PRESENT_LABEL, labels.GPU_PRESENT),
            ]
        }
    }
}
# Values its templates read (templates/daemonset-device-plugin.yml at v0.19.3: priorityClassName l. 42-43,
# runtimeClassName l. 45-46, migStrategy l. 137-139, deviceListStrategy l. 149-151, cdi.nvidiaHookPath
# l. 165-167, nodeSelector l. 259-261, affinity l. 263-265, tolerations l. 267-269).
DEVICE_PLUGIN_VALUE_PATHS: Final = frozenset(
    {
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


def set_value(values: dict[str, Any], path: str, value: object) -> None:
    """Set the dot-separated values ``path`` (e.g. DRANET_CHILD_RANGE_VALUE), creating maps on the way.

    Keys are split on dots only: Helm value keys here never contain one.
    """
    *parents, last = path.split(".")
    node = values
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value


def undocumented_value_paths(values: object, documented: frozenset[str], prefix: str = "") -> list[str]:
    """The dot paths in `values` that `documented` does not admit (lists are leaves)."""
    if not isinstance(values, dict):
        return [] if _admitted(prefix, documented) else [prefix]
    if prefix and f"{prefix}.*" in documented:
        return []
    if not values and prefix:
        return [] if _admitted(prefix, documented) else [prefix]
    found: list[str] = []
    for key, value in values.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        found += undocumented_value_paths(value, documented, path)
    return found


def _admitted(path: str, documented: frozenset[str]) -> bool:
    if path in documented:
        return True
    parts = path.split(".")
    return any(".".join(parts[:i]) + ".*" in documented for i in range(1, len(parts)))
