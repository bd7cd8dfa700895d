"""The Helm charts this project installs: where they live, their default versions, and the values
keys each documents. The components emit only documented keys (the dranet chart's values schema
forbids unknown ones, so a misspelt key fails `helm install`); the policy pack finds the charts by
these references.
"""

from __future__ import annotations

from typing import Final

DRANET_CHART: Final = "oci://registry.k8s.io/networking/charts/dranet"
DRANET_DEFAULT_VERSION: Final = "v1.5.0"
DRANET_NAMESPACE: Final = "kube-system"

NVIDIA_GPU_CHART: Final = "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"
NVIDIA_GPU_DEFAULT_VERSION: Final = "0.5.1"
NVIDIA_GPU_RELEASE: Final = "dra-driver-nvidia-gpu"
NVIDIA_GPU_NAMESPACE: Final = "dra-driver-nvidia-gpu"

# Values paths (dot-joined) each chart documents; a path ending in ".*" admits any keys below it
# (free-form maps such as nodeSelector or a volume definition). Sources: kubernetes-sigs/dranet
# deployments/helm/dranet (values.yaml, values.schema.json with additionalProperties: false),
# shared/domain.md sections 3 and 4 for the NVIDIA chart values used in seed 000.
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
        "args.cloudProviderHint",
        "args.cloudProviderOptions.oke.rdma-child-ipv4-cidr",
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
