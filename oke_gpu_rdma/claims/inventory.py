"""What the registered DRA drivers publish in their ResourceSlices for one node of a shape.

Each driver's facts module (:mod:`oke_gpu_rdma.releases`: DRANET v1.5.0 in dranet.py, the NVIDIA DRA driver
0.5.1 in nvidia_gpu.py) builds the slice it publishes, with the attribute names and types the driver publishes;
a node's inventory is the slices of every driver in the registry (:mod:`oke_gpu_rdma.common.release_registry`), in
registry order. The device types are :mod:`oke_gpu_rdma.drivers.resource_slices`, re-exported here for the judge.

The order of devices matters only for which devices a first-fit allocation picks; slices, pools and the
devices inside a slice can be reordered with :meth:`NodeInventory.reordered`.
"""

from __future__ import annotations

from functools import lru_cache

from oke_gpu_rdma.common import release_registry as registry
from oke_gpu_rdma.common.release_facts import NodeSlices
from oke_gpu_rdma.drivers import dranet
from oke_gpu_rdma.drivers.resource_slices import (
    AttributeValue,
    Device,
    DeviceID,
    DeviceKind,
    NodeInventory,
    Pool,
    ResourceSlice,
    Version,
)
from oke_gpu_rdma.nodes.topology import Topology

__all__ = [
    "AttributeValue",
    "Device",
    "DeviceID",
    "DeviceKind",
    "NodeInventory",
    "Pool",
    "ResourceSlice",
    "Version",
    "node_inventory",
    "shape_inventory",
]


def node_inventory(
    topology: Topology, node_name: str = "node-1", child_cidr: str = dranet.OKE_DEFAULT_CHILD_IPV4_CIDR
) -> NodeInventory:
    """Every registered driver's slice for one node (the GPU slice first, then DRANET's), DRANET's rails
    publishing the child range DRANET runs with (``child_cidr``: the stack's `dranet.childRange`, seed 003)."""
    settings = NodeSlices(child_cidr)
    return NodeInventory(
        node_name,
        tuple(driver.publishes(topology, node_name, settings) for driver in registry.dra_drivers()),
        topology.shape,
    )


@lru_cache(maxsize=32)
def shape_inventory(
    topology: Topology, child_cidr: str = dranet.OKE_DEFAULT_CHILD_IPV4_CIDR
) -> NodeInventory:
    """:func:`node_inventory` of ``topology`` with rails publishing ``child_cidr``, built once per topology
    and range: the judge and the landing check ask for it on every claim."""
    return node_inventory(topology, child_cidr=child_cidr)
