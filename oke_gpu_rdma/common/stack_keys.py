"""Stack-config keys that messages outside the config loader tell users to set.

The policy pack cannot import the stack config model (it runs alone from `policies/`), yet its
messages point users at stack settings. They name them through these constants, and a test checks
each one against the model (`tests/test_layout.py`), so a message never sends a
user to a key that does not exist (unknown keys are errors).
"""

from __future__ import annotations

from typing import Final

GPU_DRIVER_ENABLED: Final = "gpuDriver.enabled"
NODE_POOL_LABELS: Final = "nodePools[].labels"
NODE_POOL_SHAPE: Final = "nodePools[].shape"
DRANET_CHILD_RANGE: Final = "dranet.childRange"
SHAPE_TOPOLOGIES: Final = "shapeTopologies"
CLAIM_TEMPLATES: Final = "workloads.claimTemplates"
NODE_POOL_RDMA: Final = "nodePools[].rdma"
NODE_POOL_SRIOV: Final = "nodePools[].sriov"
NETWORK_OPERATOR_RDMA_MODE: Final = "networkOperator.rdmaMode"
VF_POOL_SUBNET: Final = "networkOperator.vfPool.subnet"
NODE_POOL_REPLACE_ORDER: Final = "nodePools[].replaceOrder"
NODE_POOL_ONBOARDING: Final = "nodePools[].onboarding"
MANAGED_DEVICE_CLASSES: Final = "policyPack.managedDeviceClasses"
MANAGED_HELM_RELEASES: Final = "policyPack.managedHelmReleases"

ALL: Final = (
    GPU_DRIVER_ENABLED,
    NODE_POOL_LABELS,
    NODE_POOL_SHAPE,
    DRANET_CHILD_RANGE,
    SHAPE_TOPOLOGIES,
    CLAIM_TEMPLATES,
    NODE_POOL_RDMA,
    NODE_POOL_SRIOV,
    NETWORK_OPERATOR_RDMA_MODE,
    VF_POOL_SUBNET,
    NODE_POOL_REPLACE_ORDER,
    NODE_POOL_ONBOARDING,
    MANAGED_DEVICE_CLASSES,
    MANAGED_HELM_RELEASES,
)


def stack_setting(key: str, value: str | None = None) -> str:
    """How a message names a stack setting: `stack config gpuDriver.enabled: true`."""
    return f"stack config {key}" + (f": {value}" if value is not None else "")
