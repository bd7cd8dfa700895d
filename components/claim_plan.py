"""The claim templates a stack asks for, checked against the topology of its GPU node pools.

A template must be aligned on every shape the stack's pools use: the scheduler may place the pod
on any of them. The shape catalog refuses unverified topologies, so a stack with such a shape
supplies it under `shapeTopologies`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from oke_gpu_rdma.claims import aligned_claim_spec, judge_claim, rails_only_claim_spec
from oke_gpu_rdma.errors import PairingError, TopologyError
from oke_gpu_rdma.topology import Topology, resolve_topology, topology_from_dict

from .address_plan import ConfigProblem
from .config import StackConfig


class ClaimPlanError(ValueError):
    """A template the program would emit is not aligned (a bug in generation, never user input)."""


def pool_shapes(config: StackConfig) -> list[str]:
    """The distinct shapes of the stack's GPU pools, in config order."""
    return list(dict.fromkeys(pool.shape for pool in config.node_pools))


def topology(config: StackConfig, shape: str) -> Topology:
    """The topology of `shape`: the user's (shapeTopologies) or the catalog's verified one."""
    supplied = config.shape_topologies.get(shape)
    if supplied is not None:
        return topology_from_dict({**supplied, "shape": shape})
    return resolve_topology(shape)


def aligned_template_spec(config: StackConfig, gpus_per_worker: int) -> dict[str, Any]:
    """The ResourceClaimSpec for `gpus_per_worker`, judged aligned on every pool shape."""
    shapes = pool_shapes(config)
    spec = aligned_claim_spec(topology(config, shapes[0]), gpus_per_worker)
    for shape in shapes:
        verdict = judge_claim(spec, topology(config, shape))
        if verdict.kind != "aligned":
            raise ClaimPlanError(
                f"generated claim for {gpus_per_worker} GPUs is {verdict.kind}: {verdict.message}"
            )
    return spec


def rails_only_template_spec(config: StackConfig) -> dict[str, Any]:
    """Every rail of the node in one request (the per-rail bandwidth test), allocatable on every pool shape."""
    shapes = pool_shapes(config)
    spec = rails_only_claim_spec(topology(config, shapes[0]))
    for shape in shapes:
        verdict = judge_claim(spec, topology(config, shape))
        if not verdict.allocatable:
            raise ClaimPlanError(
                f"a claim for every rail of {shapes[0]} cannot be allocated on {shape}: {verdict.message}"
            )
    return spec


def problems(config: StackConfig) -> list[ConfigProblem]:
    """Templates that no pool shape can align, shapes without a usable topology, dangling references."""
    return list(_topologies(config)) + list(_templates(config)) + list(_acceptance(config))


def emits_aligned_templates(config: StackConfig) -> bool:
    """GPU/rail templates need both drivers: the GPUs and the rails each come from one."""
    return config.dranet.enabled and config.gpu_driver.enabled and bool(config.workloads.claim_templates)


def emits_rails_only_template(config: StackConfig) -> bool:
    return config.dranet.enabled and bool(config.workloads.rails_only_template)


def _templates(config: StackConfig) -> Iterator[ConfigProblem]:
    if not (emits_aligned_templates(config) or emits_rails_only_template(config)):
        return
    for i, pool in enumerate(config.node_pools):
        if pool.shape in config.shape_topologies:
            continue
        try:
            resolve_topology(pool.shape)
        except TopologyError as err:
            yield ConfigProblem(
                f"nodePools[{i}].shape",
                pool.shape,
                f"{err}; add shapeTopologies.{pool.shape} or set workloads.claimTemplates to [] "
                "and workloads.railsOnlyTemplate to null",
            )
            return
    # Judge exactly what the program will emit, on every pool shape.
    if emits_aligned_templates(config):
        for i, template in enumerate(config.workloads.claim_templates):
            try:
                aligned_template_spec(config, template.gpus_per_worker)
            except (PairingError, TopologyError, ClaimPlanError) as err:
                yield ConfigProblem(
                    f"workloads.claimTemplates[{i}].gpusPerWorker", template.gpus_per_worker, str(err)
                )
    if emits_rails_only_template(config):
        try:
            rails_only_template_spec(config)
        except (TopologyError, ClaimPlanError) as err:
            yield ConfigProblem("workloads.railsOnlyTemplate", config.workloads.rails_only_template, str(err))


def _acceptance(config: StackConfig) -> Iterator[ConfigProblem]:
    jobs = config.workloads.acceptance_jobs
    names = [t.name for t in config.workloads.claim_templates]
    if jobs.enabled and jobs.rail_bandwidth and not emits_rails_only_template(config):
        yield ConfigProblem(
            "workloads.acceptanceJobs.railBandwidth",
            True,
            "needs the rails-only template: set workloads.railsOnlyTemplate (default all-rails) and dranet.enabled",
        )
    if jobs.enabled and jobs.nccl and not emits_aligned_templates(config):
        yield ConfigProblem(
            "workloads.acceptanceJobs.nccl",
            True,
            "needs GPU/rail claim templates: dranet.enabled, gpuDriver.enabled and workloads.claimTemplates",
        )
    elif jobs.enabled and jobs.nccl and jobs.claim_template not in names:
        yield ConfigProblem(
            "workloads.acceptanceJobs.claimTemplate",
            jobs.claim_template,
            f"no such template in workloads.claimTemplates ({', '.join(names) or 'none'})",
        )


def _topologies(config: StackConfig) -> Iterator[ConfigProblem]:
    for shape, supplied in config.shape_topologies.items():
        try:
            topology_from_dict({**supplied, "shape": shape})
        except TopologyError as err:
            yield ConfigProblem(f"shapeTopologies.{shape}", None, str(err))
