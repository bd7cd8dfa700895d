"""The claim plan's checks across the stack: pools without a usable topology, onboarding pools, and the
acceptance jobs' template against the pools they run on."""

from __future__ import annotations

from collections.abc import Iterator

from oke_gpu_rdma.common.errors import TopologyError
from oke_gpu_rdma.health.acceptance import SEED_NCCL_BUSBW_GBS, nccl_threshold
from oke_gpu_rdma.nodes.shape_catalog import ShapeCatalog
from oke_gpu_rdma.sriov.operator_objects import RdmaPath
from stack_config.claims.template_requests import (
    STACK_KEYS,
    acceptance_template,
    claim_templates,
    emits_aligned_templates,
    emits_rails_only_template,
    onboarding_path,
    shape_catalog,
    template_shape_map,
    topology_problems,
)
from stack_config.model import StackConfig
from stack_config.nodes.capacity import acceptance_pool
from stack_config.problems import ConfigProblem


def pool_topology_problems(config: StackConfig) -> list[ConfigProblem]:
    """Supplied topologies that do not parse, and pool shapes without a usable topology."""
    emits = emits_aligned_templates(config) or emits_rails_only_template(config)
    # Claim templates are for DRANET pools that are not onboarding; SR-IOV pools' rails come from
    # sriov_plan. Each shape is named by the first pool of it. A shape that another pool onboards is
    # reported once, by onboarding_problems (onboard every pool of it, or none).
    onboarded = {p.shape for p in config.dra_pools if p.onboarding}
    shapes: dict[str, str] = {}
    for i, pool in enumerate(config.node_pools):
        if emits and pool.rdma is RdmaPath.DRANET and not pool.onboarding and pool.shape not in onboarded:
            shapes.setdefault(pool.shape, f"nodePools[{i}].shape")
    return topology_problems(
        shape_catalog(config),
        shapes,
        config.shape_topologies,
        STACK_KEYS,
        lambda shape, key: onboarding_path(shape, key.removesuffix(".shape")),
    )


def onboarding_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """An onboarding pool must run both drivers (`make topology` reads both drivers' slices), onboard a shape
    that has no topology yet, and onboard it with every pool of that shape (templates are per shape, so a
    templated pool's would reach the others' nodes too)."""
    catalog = shape_catalog(config)
    templated = {p.shape: p.name for p in reversed(config.templated_pools)}
    for i, pool in enumerate(config.node_pools):
        if not pool.onboarding:
            continue
        key = f"nodePools[{i}].onboarding"
        off = [
            k
            for k, on in (
                ("dranet.enabled", config.dranet.enabled),
                ("gpuDriver.enabled", config.gpu_driver.enabled),
            )
            if not on
        ]
        if off:
            yield ConfigProblem(
                key,
                True,
                f"needs {' and '.join(off)}: `make topology` reads the shape from the ResourceSlices of DRANET and "
                "the GPU DRA driver on the pool's nodes; turn them on, or remove onboarding",
            )
        elif pool.shape in templated:
            yield ConfigProblem(
                key,
                True,
                f"pool {pool.name} onboards {pool.shape} but pool {templated[pool.shape]} of that shape gets its "
                "claim templates, which are per shape and would be allocated on both pools' nodes; set onboarding "
                "on every pool of the shape, or on none",
            )
        elif pool.shape in config.shape_topologies or verified_topology(catalog, pool.shape):
            where = (
                f"shapeTopologies.{pool.shape}"
                if pool.shape in config.shape_topologies
                else f"the catalog's verified oke_gpu_rdma/nodes/shapes/{pool.shape}.yaml"
            )
            yield ConfigProblem(
                key,
                True,
                f"{pool.shape} has its topology ({where}), so the pool can have its claim templates; remove "
                "onboarding",
            )


def verified_topology(catalog: ShapeCatalog, shape: str) -> bool:
    try:
        catalog.topology(shape)
    except TopologyError:
        return False
    return True


def acceptance_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    jobs = config.workloads.acceptance_jobs
    if jobs.active and jobs.node_pool in {p.name for p in config.railless_pools}:
        yield ConfigProblem(
            "workloads.acceptanceJobs.nodePool",
            jobs.node_pool,
            "is an rdma: none pool, which has no rails to test; name a pool with rdma: dranet or sriov",
        )
        return
    if not config.dra_pools:
        return  # SR-IOV pools only: the acceptance jobs use VFs, not claim templates
    dra_names = [p.name for p in config.templated_pools]
    if jobs.enabled and not dra_names:
        yield ConfigProblem(
            "workloads.acceptanceJobs.enabled",
            True,
            "every rdma: dranet pool is onboarding, so no claim template exists for the jobs; turn them on once a "
            "pool's shape has its topology and the pool its templates",
        )
        return
    if jobs.enabled and jobs.node_pool in {p.name for p in config.dra_pools if p.onboarding}:
        yield ConfigProblem(
            "workloads.acceptanceJobs.nodePool",
            jobs.node_pool,
            f"is an onboarding pool: its shape has no claim templates for the jobs yet; name a pool that has "
            f"them ({', '.join(dra_names)})",
        )
        return
    templates = {t.name: t for t in claim_templates(config)}
    sriov_names = {p.name for p in config.sriov_pools}
    if jobs.active and jobs.node_pool in sriov_names:
        yield ConfigProblem(
            "workloads.acceptanceJobs.nodePool",
            jobs.node_pool,
            f"is an rdma: sriov pool; the claim-template jobs run on a DRANET pool ({', '.join(dra_names)})",
        )
        return
    if jobs.active and jobs.rail_bandwidth and not emits_rails_only_template(config):
        yield ConfigProblem(
            "workloads.acceptanceJobs.railBandwidth",
            True,
            "needs the rails-only template: set workloads.railsOnlyTemplate (default all-rails) and dranet.enabled",
        )
    if not (jobs.active and jobs.nccl):
        return
    if not emits_aligned_templates(config):
        yield ConfigProblem(
            "workloads.acceptanceJobs.nccl",
            True,
            "needs GPU/rail claim templates: dranet.enabled, gpuDriver.enabled and workloads.claimTemplates",
        )
        return
    if jobs.claim_template is not None and jobs.claim_template not in templates:
        yield ConfigProblem(
            "workloads.acceptanceJobs.claimTemplate",
            jobs.claim_template,
            f"no such template in workloads.claimTemplates ({', '.join(templates) or 'none'})",
        )
        return
    pool = acceptance_pool(config)
    if pool is None or pool.name != (jobs.node_pool or pool.name):
        return  # a pool the stack does not have (region_checks reports it)
    shape = pool.shape
    name = acceptance_template(config)
    if name is None or shape not in template_shape_map(config).get(name, ()):
        for_shape = [n for n, made in template_shape_map(config).items() if shape in made]
        yield ConfigProblem(
            "workloads.acceptanceJobs.claimTemplate",
            jobs.claim_template,
            f"the NCCL job runs on pool {pool.name} ({shape}), and "
            + (
                f"template {name} is not made for {shape}"
                if name is not None
                else f"no template of {shape} has all of a node's GPUs"
            )
            + f"; name one made for it ({', '.join(for_shape) or 'none'}), or another nodePool",
        )
        return
    gpus = templates[name].gpus_per_worker
    if nccl_threshold("dranet", gpus, jobs.nccl_busbw_gbs) is None:
        measured = " and ".join(str(n) for n in SEED_NCCL_BUSBW_GBS["dranet"])
        yield ConfigProblem(
            "workloads.acceptanceJobs.ncclBusbwGBs",
            None,
            f"the seed measured NCCL jobs with {measured} GPUs per worker, not {gpus} "
            f"({name}); set the minimum busbw in GB/s the job must reach",
        )
