"""The SR-IOV side of a stack: the node policies and networks its rdma: sriov pools need, and the checks across values.

Generated from the shape catalog's rail PCI addresses (:mod:`oke_gpu_rdma.nodes.shape_catalog`; front-end NICs are
never rails) with the rules of :mod:`oke_gpu_rdma.sriov.operator_objects`. Cross-value problems name the key to change:
a VF pool that overlaps the address plan or the DRANET child range, SR-IOV pools of one shape that disagree
on their settings, and DRA drivers left on where no pool uses them. Each shape of the SR-IOV pools gets its
own rails, node policies (selecting its instance type), VF settings and GPU count; with several shapes the
resource (and network) names carry the shape (`rdma-vf-bm-gpu-h100-8-3`), with one they stay `rdma-vf-3`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from oke_gpu_rdma.common.errors import TopologyError
from oke_gpu_rdma.health.acceptance import SEED_NCCL_BUSBW_GBS, nccl_threshold
from oke_gpu_rdma.nodes import cidr_rules as cidr
from oke_gpu_rdma.nodes.labels import RDMA_PATH_LABEL, RDMA_PATH_SRIOV
from oke_gpu_rdma.nodes.topology import Topology, shape_slug
from oke_gpu_rdma.sriov import operator_objects as sriov
from stack_config.claims.template_requests import topology
from stack_config.model import StackConfig
from stack_config.nodes import address_plan
from stack_config.nodes.pool_settings import NodePoolConfig
from stack_config.problems import ConfigProblem
from stack_config.sriov.sriov_settings import NetworkOperatorConfig, SriovPoolConfig


@dataclass(frozen=True)
class NamedSpec:
    """A custom resource to declare: its metadata.name and spec (Kubernetes JSON)."""

    name: str
    spec: dict[str, Any]


@dataclass(frozen=True)
class SriovShapePlan:
    """The SR-IOV pools of one shape: their rails, VF settings, node selection and GPUs per node."""

    shape: str
    pools: tuple[str, ...]
    settings: SriovPoolConfig
    resources: tuple[sriov.RailResource, ...]
    node_selector: dict[str, str]
    gpus_per_node: int
    """GPUs of a node of the shape (its topology), which the device plugin offers."""

    @property
    def pods_per_node(self) -> int:
        """RDMA pods a node can hold, each with one VF of every rail."""
        return self.settings.vfs_per_pf

    def pod_networks(self) -> str:
        return sriov.pod_networks(self.resources)

    def pod_vf_limits(self) -> dict[str, int]:
        return sriov.pod_vf_limits(self.resources)


@dataclass(frozen=True)
class SriovPlan:
    """What the SR-IOV pools of a stack need from the NVIDIA Network Operator, per shape."""

    operator: NetworkOperatorConfig
    shapes: tuple[SriovShapePlan, ...]

    @property
    def mode(self) -> sriov.RdmaMode:
        return self.operator.rdma_mode

    @property
    def pools(self) -> tuple[str, ...]:
        return tuple(p for s in self.shapes for p in s.pools)

    def shape_of(self, pool: str) -> SriovShapePlan:
        """The plan of the shape of SR-IOV pool ``pool``; KeyError for another pool."""
        for shape in self.shapes:
            if pool in shape.pools:
                return shape
        raise KeyError(f"no SR-IOV pool {pool!r} in the plan")

    def acceptance_shape(self, node_pool: str | None) -> SriovShapePlan:
        """The shape the VF acceptance jobs run on: workloads.acceptanceJobs.nodePool's, else the first."""
        return self.shape_of(node_pool) if node_pool in self.pools else self.shapes[0]

    def node_policies(self) -> list[NamedSpec]:
        """One SriovNetworkNodePolicy per resource: per rail `rdma-vf-N`, or the shape's name for one resource."""
        return [
            NamedSpec(
                shape_slug(s.shape) if len(s.resources) == 1 else r.name,
                sriov.node_policy_spec(r, s.settings.vfs_per_pf, s.node_selector),
            )
            for s in self.shapes
            for r in s.resources
        ]

    def networks(self) -> list[NamedSpec]:
        """One SriovNetwork per resource, named after it."""
        pool = self.operator.vf_pool.name
        return [
            NamedSpec(r.name, sriov.network_spec(r, self.operator.network_namespace, pool, self.mode))
            for s in self.shapes
            for r in s.resources
        ]

    def pod_vf_limits(self) -> dict[str, int]:
        """Every VF resource of the stack, for its outputs."""
        return {k: v for s in self.shapes for k, v in s.pod_vf_limits().items()}

    def pool_vf_resources(self) -> dict[str, frozenset[str]]:
        """SR-IOV pool name -> the VF resources its nodes offer."""
        return {p: frozenset(s.pod_vf_limits()) for s in self.shapes for p in s.pools}


def plan_sriov(config: StackConfig) -> tuple[SriovPlan | None, list[ConfigProblem]]:
    """The stack's SR-IOV plan (None without rdma: sriov pools) and every cross-value problem."""
    pools = [(i, p) for i, p in enumerate(config.node_pools) if p.rdma is sriov.RdmaPath.SRIOV]
    problems: list[ConfigProblem] = []
    if not pools:
        problems += list(_drivers_without_pools(config))
        if "network_operator" in config.model_fields_set:
            problems.append(
                ConfigProblem(
                    "networkOperator",
                    None,
                    "is set but no node pool has rdma: sriov; set rdma: sriov on a pool or remove networkOperator",
                )
            )
        return None, problems
    by_shape: dict[str, list[tuple[int, NodePoolConfig]]] = {}
    for i, pool in pools:
        by_shape.setdefault(pool.shape, []).append((i, pool))
    for same in by_shape.values():
        first_index, first = same[0]
        for i, pool in same[1:]:
            if pool.sriov_settings != first.sriov_settings:
                problems.append(
                    ConfigProblem(
                        f"nodePools[{i}].sriov",
                        None,
                        f"differs from nodePools[{first_index}].sriov: the node policies select every SR-IOV node "
                        f"of the shape ({first.shape}), so the SR-IOV pools of one shape share vfsPerPf and "
                        "resourcePerRail",
                    )
                )
    problems += list(_drivers_without_pools(config))
    problems += list(_vf_pool(config))
    problems += list(_no_nfd(config))
    tagged = len(by_shape) > 1  # several shapes: resource names carry the shape
    shapes: list[SriovShapePlan] = []
    for shape, same in by_shape.items():
        first_index, first = same[0]
        try:
            topo: Topology = topology(config, shape)
        except TopologyError as err:
            problems.append(
                ConfigProblem(
                    f"nodePools[{first_index}].shape",
                    shape,
                    f"{err}; the SR-IOV node policies need its rail PCI addresses: add shapeTopologies.{shape}",
                )
            )
            continue
        settings = first.sriov_settings
        assert settings is not None  # an rdma: sriov pool always has settings
        selector = sriov.default_node_selector(shape)
        if any(p.shape == shape and p.rdma is not sriov.RdmaPath.SRIOV for p in config.node_pools):
            # DRA or rail-less pools of the same shape: select the SR-IOV nodes by their label, never by shape alone.
            selector[RDMA_PATH_LABEL] = RDMA_PATH_SRIOV
        shapes.append(
            SriovShapePlan(
                shape=shape,
                pools=tuple(p.name for _, p in same),
                settings=settings,
                resources=tuple(
                    sriov.rail_resources(
                        topo, settings.resource_per_rail, shape_slug(shape) if tagged else None
                    )
                ),
                node_selector=selector,
                gpus_per_node=len(topo.gpus),
            )
        )
    if problems:
        return None, problems
    plan = SriovPlan(operator=config.network_operator, shapes=tuple(shapes))
    problems += list(_acceptance_thresholds(config, plan))
    return (None if problems else plan), problems


def _acceptance_thresholds(config: StackConfig, plan: SriovPlan) -> Iterator[ConfigProblem]:
    """The VF NCCL jobs run on the first SR-IOV shape with its GPUs per node: the seed measured 8 and 4."""
    jobs = config.workloads.acceptance_jobs
    if not (jobs.enabled and jobs.nccl) or config.dra_pools:
        return
    shape = plan.acceptance_shape(jobs.node_pool)
    for gpus in dict.fromkeys(gpus for _, gpus in nccl_job_sizes(shape)):
        if nccl_threshold("sriov", gpus, jobs.nccl_busbw_gbs) is None:
            measured = " and ".join(str(n) for n in SEED_NCCL_BUSBW_GBS["sriov"])
            yield ConfigProblem(
                "workloads.acceptanceJobs.ncclBusbwGBs",
                None,
                f"the VF NCCL jobs on {shape.shape} run {gpus} GPUs per worker, and the seed measured {measured}; "
                "set the minimum busbw in GB/s the jobs must reach",
            )


def nccl_job_sizes(shape: SriovShapePlan) -> list[tuple[str, int]]:
    """(job name, GPUs per worker) of the VF NCCL jobs: two side by side, each with half of a node's GPUs, when
    a node holds two RDMA pods; else one with all of them."""
    if shape.pods_per_node >= 2:
        half = shape.gpus_per_node // 2
        return [("nccl-vf-a", half), ("nccl-vf-b", half)]
    return [("nccl-vf", shape.gpus_per_node)]


def _drivers_without_pools(config: StackConfig) -> Iterator[ConfigProblem]:
    if config.dra_pools:
        return
    why = (
        "no node pool has rdma: dranet, so this DRA driver would select no node (rdma: sriov and rdma: none pools "
        "get GPUs from the GPU Operator's device plugin)"
        if config.railless_pools
        else "every node pool has rdma: sriov, so this DRA driver would select no node (SR-IOV pools get GPUs "
        "from the GPU Operator's device plugin and rails from VFs)"
    )
    for key, enabled in (
        ("dranet.enabled", config.dranet.enabled),
        ("gpuDriver.enabled", config.gpu_driver.enabled),
    ):
        if enabled:
            yield ConfigProblem(key, True, f"{why}; set it to false")


def _no_nfd(config: StackConfig) -> Iterator[ConfigProblem]:
    """The SR-IOV config daemon runs only where NFD labels a Mellanox NIC (the chart's configDaemonNodeSelector
    needs mofed.wait, which the operator sets on such nodes; oke_gpu_rdma/network_operator.py), and
    the chart's NodeFeatureRule needs NFD's CRD: a cluster the stack creates has an NFD only from the GPU
    Operator or from the chart itself."""
    if config.cluster.create is None or config.deploys_gpu_operator or config.network_operator.deploy_nfd:
        return
    yield ConfigProblem(
        "networkOperator.deployNfd",
        False,
        "the cluster is created by the stack without the GPU Operator, so no Node Feature Discovery would label "
        "the Mellanox NICs the SR-IOV config daemon selects (and the chart's NodeFeatureRule has no CRD); set "
        "networkOperator.deployNfd: true or gpuOperator.enabled: true",
    )


def _vf_pool(config: StackConfig) -> Iterator[ConfigProblem]:
    subnet = config.network_operator.vf_pool.subnet
    plan = [r.named() for r in address_plan.plan_ranges(config)]
    if config.dranet.enabled and config.dra_pools:
        plan.append(cidr.NamedRange("DRANET child range (dranet.childRange)", config.dranet.child_range))
    for message in cidr.vf_pool_problems(subnet, plan):
        yield ConfigProblem("networkOperator.vfPool.subnet", str(subnet), message)
