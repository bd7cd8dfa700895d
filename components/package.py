"""The components the oke-gpu-rdma component package serves (provider/): one list, read by the plugin
and by its tests, so a component added here is in the schema and tested there."""

from typing import Final

import pulumi

from oke_gpu_rdma import resource_types

from .cluster import OkeCluster
from .dra_drivers import Dranet, NvidiaComputeDomainDriver, NvidiaGpuDraDriver
from .gpu_node_pool import RdmaGpuNodePool
from .job_compute_domain import JobComputeDomain
from .kueue import Kueue
from .network import Network
from .rdma_workloads import GpuRailClaimTemplates, RdmaWorkloadNamespace
from .system_pool import SystemNodePool

PACKAGE_NAME: Final = resource_types.PACKAGE
"""The package name, the first part of every component's type token."""
PACKAGE_NAMESPACE: Final = "oke-gpu-rdma"
"""The publisher namespace the generated SDKs are named with."""

PACKAGE_COMPONENTS: Final[tuple[type[pulumi.ComponentResource], ...]] = (
    Network,
    OkeCluster,
    RdmaGpuNodePool,
    SystemNodePool,
    Dranet,
    NvidiaGpuDraDriver,
    NvidiaComputeDomainDriver,
    JobComputeDomain,
    RdmaWorkloadNamespace,
    GpuRailClaimTemplates,
    Kueue,
)
