"""The oke-gpu-rdma policy pack: its policies, and the analyzer the CLI (or preview/policy_check.py) talks to.

`policies/__main__.py` calls :func:`serve`; tests and the offline preview call :func:`servicer`,
the same servicer :func:`serve` puts behind gRPC (:class:`sdk_adapter.PackAnalyzer`, the SDK's servicer
deserializing the stack once for all stack policies), built from the same list.
"""

from __future__ import annotations

from typing import Final

from pulumi_policy import Policy

from . import (
    device_plugin_gpus,
    dranet_child_range,
    dranet_profile_claims,
    gpu_device_plugin_off,
    gpu_rail_claims,
    nccl_gid_index,
    rdma_workloads_baseline,
    sdk_adapter,
    sriov_dra_disjoint,
    sriov_network_references,
    sriov_node_policy_limits,
    sriov_pods_all_rails,
    sriov_rail_root_devices,
    sriov_rdma_cni_mode,
    sriov_rdma_qos,
    sriov_resource_per_rail,
    sriov_vf_pool_range,
)
from .sdk_adapter import PackAnalyzer
from .values import LazyProps

PACK_NAME: Final = "oke-gpu-rdma"
# The CLI takes the pack's version from PulumiPolicy.yaml; the SDK reports this one otherwise.
SDK_VERSION: Final = "0.0.1"
DESCRIPTION: Final = (
    "RDMA GPU clusters on OKE with DRA: DRANET child range, GPU/rail claim alignment, "
    "no device-plugin GPUs next to DRA rails, DRANET oke-rdma profile rules; with SR-IOV VFs: rdmaQoS, "
    "RDMA CNI mode, VF limits and rail PFs, a resource per rail, network references, the VF pool."
)

POLICIES: Final[list[Policy]] = [
    dranet_child_range.policy,
    gpu_rail_claims.policy,
    device_plugin_gpus.policy,
    nccl_gid_index.policy,
    dranet_profile_claims.policy,
    gpu_device_plugin_off.policy,
    rdma_workloads_baseline.policy,
    sriov_rdma_qos.policy,
    sriov_rdma_cni_mode.policy,
    sriov_node_policy_limits.policy,
    sriov_rail_root_devices.policy,
    sriov_resource_per_rail.policy,
    sriov_network_references.policy,
    sriov_vf_pool_range.policy,
    sriov_dra_disjoint.policy,
    sriov_pods_all_rails.policy,
]


def servicer() -> PackAnalyzer:
    """The analyzer servicer `serve()` puts behind gRPC, for in-process use."""
    return PackAnalyzer(PACK_NAME, SDK_VERSION, POLICIES, DESCRIPTION, LazyProps)


def serve() -> None:
    """Serve the pack as the Pulumi CLI expects: print the port, block until killed."""
    sdk_adapter.serve(servicer())
