"""The SR-IOV side of a stack: the node policies and networks its rdma: sriov pools need, and the checks across values.

Generated from the shape catalog's rail PCI addresses (:mod:`oke_gpu_rdma.shape_catalog`; front-end NICs are
never rails) with the rules of :mod:`oke_gpu_rdma.sriov`. Cross-value problems name the key to change:
a VF pool that overlaps the address plan or the DRANET child range, SR-IOV pools that disagree on their
shape or settings, and DRA drivers left on where no pool uses them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from oke_gpu_rdma import cidr_rules as cidr
from oke_gpu_rdma import sriov
from oke_gpu_rdma.errors import TopologyError
from oke_gpu_rdma.labels import RDMA_PATH_LABEL, RDMA_PATH_SRIOV
from oke_gpu_rdma.topology import Topology

from . import address_plan
from .claim_plan import topology
from .model import NetworkOperatorConfig, SriovPoolConfig, StackConfig
from .problems import ConfigProblem


@dataclass(frozen=True)
class NamedSpec:
    """A custom resource to declare: its metadata.name and spec (Kubernetes JSON)."""

    name: str
    spec: dict[str, Any]


@dataclass(frozen=True)
class SriovPlan:
    """What the SR-IOV pools of a stack need from the NVIDIA Network Operator."""

    operator: NetworkOperatorConfig
    shape: str
    pools: tuple[str, ...]
    settings: SriovPoolConfig
    resources: tuple[sriov.RailResource, ...]
    node_selector: dict[str, str]

    @property
    def mode(self) -> sriov.RdmaMode:
        return self.operator.rdma_mode

    def node_policies(self) -> list[NamedSpec]:
        """One SriovNetworkNodePolicy per resource: per rail `rdma-vf-N`, or the shape's name for one resource."""
        single = len(self.resources) == 1
        return [
            NamedSpec(
                self.shape.lower().replace(".", "-") if single else r.name,
                sriov.node_policy_spec(r, self.settings.vfs_per_pf, self.node_selector),
            )
            for r in self.resources
        ]

    def networks(self) -> list[NamedSpec]:
        """One SriovNetwork per resource, named after it."""
        pool = self.operator.vf_pool.name
        return [
            NamedSpec(r.name, sriov.network_spec(r, self.operator.network_namespace, pool, self.mode))
            for r in self.resources
        ]

    @property
    def pods_per_node(self) -> int:
        """RDMA pods a node can hold, each with one VF of every rail."""
        return self.settings.vfs_per_pf

    def pod_networks(self) -> str:
        return sriov.pod_networks(self.resources)

    def pod_vf_limits(self) -> dict[str, int]:
        return sriov.pod_vf_limits(self.resources)


def plan_sriov(config: StackConfig) -> tuple[SriovPlan | None, list[ConfigProblem]]:
    """The stack's SR-IOV plan (None without rdma: sriov pools) and every cross-value problem."""
    pools = [(i, p) for i, p in enumerate(config.node_pools) if p.rdma is sriov.RdmaPath.SRIOV]
    problems: list[ConfigProblem] = []
    if not pools:
        if "network_operator" in config.model_fields_set:
            problems.append(
                ConfigProblem(
                    "networkOperator",
                    None,
                    "is set but no node pool has rdma: sriov; set rdma: sriov on a pool or remove networkOperator",
                )
            )
        return None, problems
    first_index, first = pools[0]
    for i, pool in pools[1:]:
        if pool.shape != first.shape:
            problems.append(
                ConfigProblem(
                    f"nodePools[{i}].shape",
                    pool.shape,
                    f"every rdma: sriov pool must have one shape (nodePools[{first_index}] is {first.shape}): the "
                    "node policies list one shape's rail PFs and the resources carry one set of names",
                )
            )
        if pool.sriov_settings != first.sriov_settings:
            problems.append(
                ConfigProblem(
                    f"nodePools[{i}].sriov",
                    None,
                    f"differs from nodePools[{first_index}].sriov: the node policies select every SR-IOV node of "
                    "the shape, so all SR-IOV pools share vfsPerPf and resourcePerRail",
                )
            )
    problems += list(_drivers_without_pools(config))
    problems += list(_vf_pool(config))
    try:
        topo: Topology = topology(config, first.shape)
    except TopologyError as err:
        problems.append(
            ConfigProblem(
                f"nodePools[{first_index}].shape",
                first.shape,
                f"{err}; the SR-IOV node policies need its rail PCI addresses: add shapeTopologies.{first.shape}",
            )
        )
        return None, problems
    settings = first.sriov_settings
    assert settings is not None  # an rdma: sriov pool always has settings
    selector = sriov.default_node_selector(first.shape)
    if any(p.shape == first.shape for p in config.dra_pools):
        # DRA pools of the same shape: select the SR-IOV nodes by their pool label, never by shape alone.
        selector[RDMA_PATH_LABEL] = RDMA_PATH_SRIOV
    plan = SriovPlan(
        operator=config.network_operator,
        shape=first.shape,
        pools=tuple(p.name for _, p in pools),
        settings=settings,
        resources=tuple(sriov.rail_resources(topo, settings.resource_per_rail)),
        node_selector=selector,
    )
    return (None if problems else plan), problems


def _drivers_without_pools(config: StackConfig) -> Iterator[ConfigProblem]:
    if config.dra_pools:
        return
    for key, enabled in (
        ("dranet.enabled", config.dranet.enabled),
        ("gpuDriver.enabled", config.gpu_driver.enabled),
    ):
        if enabled:
            yield ConfigProblem(
                key,
                True,
                "every node pool has rdma: sriov, so this DRA driver would select no node (SR-IOV pools get GPUs "
                "from the GPU Operator's device plugin and rails from VFs); set it to false",
            )


def _vf_pool(config: StackConfig) -> Iterator[ConfigProblem]:
    subnet = config.network_operator.vf_pool.subnet
    plan = [r.named() for r in address_plan.plan_ranges(config)]
    if config.dranet.enabled and config.dra_pools:
        plan.append(cidr.NamedRange("DRANET child range (dranet.childRange)", config.dranet.child_range))
    for message in cidr.vf_pool_problems(subnet, plan):
        yield ConfigProblem("networkOperator.vfPool.subnet", str(subnet), message)
