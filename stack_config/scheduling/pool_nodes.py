"""The node pools a stack plans, as the scheduler will see their nodes (oke_gpu_rdma/scheduling/pod_admission.py).

Labels are the pools' initial node labels plus what is set at run time: the kubelet's
`node.kubernetes.io/instance-type` and OS labels, NFD's NVIDIA NIC label on pools with rails, and on GPU
shapes NFD's `feature.node.kubernetes.io/pci-10de.present` and what the GPU Operator sets from it:
`nvidia.com/gpu.present` and its `nvidia.com/gpu.deploy.<operand>` labels, which keep a value the pool
already sets (oke_gpu_rdma/drivers/gpu_operator_operands.py operator_node_labels). The labels the network operators set
from the objects a run declares are added by the preview (oke_gpu_rdma/network_operator.py
with_operator_labels).
"""

from __future__ import annotations

from collections.abc import Mapping

from oke_gpu_rdma.drivers.attributes import NVIDIA_GPU_RESOURCE
from oke_gpu_rdma.drivers.gpu_operator_operands import operator_node_labels
from oke_gpu_rdma.nodes.labels import (
    DEVICE_PLUGIN_LABEL,
    DEVICE_PLUGIN_OFF,
    INSTANCE_TYPE_LABEL,
    NFD_NVIDIA_PCI_LABEL,
    POOL_LABEL,
    RAILS_UNMARKED_LABEL,
    RDMA_PATH_LABEL,
    RDMA_PATH_SRIOV,
)
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from oke_gpu_rdma.scheduling.pod_admission import NodeTaint, PoolNodes
from oke_gpu_rdma.sriov.network_operator_chart import KUBELET_OS_LABELS, MELLANOX_NIC_LABEL
from oke_gpu_rdma.sriov.operator_objects import RdmaPath
from stack_config.health.health_plan import mark_taints, rails_unmarked_pools
from stack_config.model import StackConfig
from stack_config.nodes.pool_settings import NodePoolConfig, SystemPoolConfig


def gpu_pool_labels(
    pool: NodePoolConfig, gpus_from_dra: bool, rails_unmarked: bool = False
) -> dict[str, str]:
    """The labels every node of a GPU pool starts with (no later `kubectl label` step).

    SR-IOV pools keep the GPU Operator's device plugin on (their pods ask for nvidia.com/gpu) and carry
    the label the DRA drivers stay away from; pools without rails (rdma: none) keep it on too: no DRA driver
    selects them (components/drivers/dra_drivers.py selects the rdma: dranet pools by name).
    """
    labels = {POOL_LABEL: pool.name, **pool.labels}
    if pool.rdma is RdmaPath.SRIOV:
        labels[RDMA_PATH_LABEL] = RDMA_PATH_SRIOV
    elif pool.rdma is RdmaPath.DRANET and gpus_from_dra:
        labels[DEVICE_PLUGIN_LABEL] = DEVICE_PLUGIN_OFF
    if pool.rdma is RdmaPath.DRANET and rails_unmarked:
        # Healthy until its rail agent says otherwise (health_plan.rails_unmarked_pools).
        labels[RAILS_UNMARKED_LABEL] = "true"
    return labels


def node_agent_labels(pool: NodePoolConfig) -> dict[str, str]:
    """Labels a GPU pool's nodes get at run time from the kubelet and NFD that the SR-IOV path selects on:
    the kubelet's OS labels, and NFD's NVIDIA NIC label on a pool with rails (the rails are ConnectX NICs,
    PCI vendor 15b3, which the node policies select; oke_gpu_rdma/network_operator.py)."""
    labels = dict(KUBELET_OS_LABELS)
    if pool.rdma is not RdmaPath.NONE:
        labels[MELLANOX_NIC_LABEL] = "true"
    return labels


def gpu_product(shape: str) -> str:
    """The GPU model of a shape the catalog lists (GFD publishes it as nvidia.com/gpu.product), else ""."""
    topology = CATALOG.info(shape).topology if shape in CATALOG else None
    return topology.gpu_product if topology is not None else ""


def system_pool_labels(pool: SystemPoolConfig) -> dict[str, str]:
    """The labels the system pool's nodes start with: the pool label, as on every pool of the stack."""
    return {POOL_LABEL: pool.name}


def planned_pools(
    config: StackConfig, vf_resources: Mapping[str, frozenset[str]] | None = None
) -> list[PoolNodes]:
    """The stack's GPU pools and its system pool; each SR-IOV pool offers its ``vf_resources`` (by pool name:
    the VF resources of its shape)."""
    pools: list[PoolNodes] = []
    # Once per stack: a fuzzed stack has thousands of pools.
    marks = tuple(NodeTaint(t.key, t.value, t.effect) for t in mark_taints(config))
    unmarked = rails_unmarked_pools(config)
    for pool in config.node_pools:
        labels = gpu_pool_labels(pool, config.gpu_driver.enabled, pool.name in unmarked)
        device_plugin = labels.get(DEVICE_PLUGIN_LABEL) != DEVICE_PLUGIN_OFF
        resources = {NVIDIA_GPU_RESOURCE} if device_plugin else set()
        if pool.rdma is RdmaPath.SRIOV:
            resources |= (vf_resources or {}).get(pool.name, frozenset())
        pools.append(
            PoolNodes(
                name=pool.name,
                labels=operator_node_labels(
                    {
                        **labels,
                        **node_agent_labels(pool),
                        INSTANCE_TYPE_LABEL: pool.shape,
                        NFD_NVIDIA_PCI_LABEL: "true",
                    },
                    gpu_product(pool.shape),
                ),
                taints=tuple(NodeTaint(t.key, t.value, t.effect) for t in pool.taints),
                extended_resources=frozenset(resources),
                marks=marks if pool.rdma is RdmaPath.DRANET else (),
            )
        )
    if config.creates_system_pool:
        system = config.system_pool
        pools.append(
            PoolNodes(
                name=system.name,
                labels={
                    **system_pool_labels(system),
                    **KUBELET_OS_LABELS,
                    INSTANCE_TYPE_LABEL: system.shape,
                },
            )
        )
    return pools


def unseen_pools(config: StackConfig) -> str | None:
    """What the check cannot see: the node pools an existing cluster has besides this stack's."""
    if config.cluster.existing is None:
        return None
    return f"the node pools of cluster {config.cluster.existing.id} that this stack does not declare"
