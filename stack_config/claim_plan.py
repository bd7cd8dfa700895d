"""The claim templates a stack asks for, built from the topology of its GPU node pools and judged once.

Each shape of the stack's DRANET pools gets its own templates, built from its own topology and judged
on it. With one shape they carry the names of `workloads.claimTemplates` (renaming a template replaces
it); with several, each name ends with its shape (`aligned-8gpu-16rails-bm-gpu-b4-8`) and its rail
requests select that shape's rails (`oke.dra.net/shape`, which DRANET's OKE provider publishes), so the
scheduler only allocates it on the shape it was judged on, and the GPUs beside those rails through the
pcieRoot constraint. The shape catalog refuses unverified topologies, so a stack with such a shape
supplies it under `shapeTopologies`. :func:`plan_claims` returns the judged templates (the program
emits exactly these) or the problems, each naming the key to change.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from oke_gpu_rdma.acceptance import SEED_NCCL_BUSBW_GBS, nccl_threshold
from oke_gpu_rdma.claims import Verdict, aligned_claim_spec, judge_claim, rails_only_claim_spec
from oke_gpu_rdma.errors import PairingError, TopologyError
from oke_gpu_rdma.shape_catalog import CATALOG, ShapeCatalog
from oke_gpu_rdma.sriov import RdmaPath
from oke_gpu_rdma.topology import Topology, shape_slug

from .model import StackConfig
from .problems import ConfigProblem


@dataclass(frozen=True)
class PlannedTemplate:
    """One ResourceClaimTemplate to emit: its name, namespace, spec and its verdict on each pool shape."""

    name: str
    namespace: str
    spec: Mapping[str, Any]
    """The ResourceClaimSpec (Kubernetes JSON)."""
    gpus_per_worker: int
    """GPUs each pod gets from it (0 for the rails-only template)."""
    verdicts: tuple[Verdict, ...]
    shape: str = ""
    """The shape it was built for and judged on."""
    config_name: str = ""
    """Its name in workloads.claimTemplates (or railsOnlyTemplate): ``name`` without the shape."""


@dataclass(frozen=True)
class ClaimPlan:
    """The judged templates of a stack; empty when the drivers they need are off."""

    shapes: tuple[str, ...]
    aligned: tuple[PlannedTemplate, ...] = ()
    rails_only_templates: tuple[PlannedTemplate, ...] = ()
    """The rails-only template of each shape."""
    problems: tuple[ConfigProblem, ...] = field(default=(), compare=False)

    @property
    def templates(self) -> tuple[PlannedTemplate, ...]:
        return self.aligned + self.rails_only_templates

    def rails_only(self, shape: str) -> PlannedTemplate | None:
        """The rails-only template of ``shape``, if the plan has one."""
        return next((t for t in self.rails_only_templates if t.shape == shape), None)

    @property
    def namespaces(self) -> tuple[str, ...]:
        """Every namespace a template lives in, in template order."""
        return tuple(dict.fromkeys(t.namespace for t in self.templates))

    def aligned_template(self, name: str, shape: str) -> PlannedTemplate:
        """The aligned template ``name`` (as workloads.claimTemplates names it) for ``shape``; KeyError if the
        plan has none (the config check prevents it)."""
        for template in self.aligned:
            if template.config_name == name and template.shape == shape:
                return template
        raise KeyError(f"no aligned claim template {name!r} for {shape} in the plan")


def pool_shapes(config: StackConfig) -> tuple[str, ...]:
    """The distinct shapes of the stack's DRANET pools (the pools claim templates are for), in config order."""
    return tuple(dict.fromkeys(pool.shape for pool in config.dra_pools))


def template_name(name: str, shape: str, shapes: tuple[str, ...]) -> str:
    """The template's object name: ``name`` with one shape (today's names), ``name-<shape>`` with several."""
    return name if len(shapes) <= 1 else f"{name}-{shape_slug(shape)}"


def shape_catalog(config: StackConfig) -> ShapeCatalog:
    """The shape catalog with the stack's shapeTopologies (reported by :func:`plan_claims` if malformed)."""
    return CATALOG.with_topologies(config.shape_topologies)


def topology(config: StackConfig, shape: str) -> Topology:
    """The topology of `shape`: the user's (shapeTopologies) or the catalog's verified one."""
    return shape_catalog(config).topology(shape)


def emits_aligned_templates(config: StackConfig) -> bool:
    """GPU/rail templates need both drivers: the GPUs and the rails each come from one."""
    return config.dranet.enabled and config.gpu_driver.enabled and bool(config.workloads.claim_templates)


def emits_rails_only_template(config: StackConfig) -> bool:
    return config.dranet.enabled and bool(config.workloads.rails_only_template)


def plan_claims(config: StackConfig) -> ClaimPlan:
    """The judged templates, or a plan whose ``problems`` say which key to change."""
    shapes = pool_shapes(config)
    problems = list(_topology_problems(config)) + list(_acceptance_problems(config))
    if problems:
        return ClaimPlan(shapes, problems=tuple(problems))
    if not (emits_aligned_templates(config) or emits_rails_only_template(config)):
        return ClaimPlan(shapes)
    catalog = shape_catalog(config)
    pinned = len(shapes) > 1
    # Judged as the pack judges them: at the cluster's release, the rails publishing the configured range.
    version, child_range = config.cluster.spec.kubernetes_version, str(config.dranet.child_range)
    workloads = config.workloads
    aligned: list[PlannedTemplate] = []
    rails_only: list[PlannedTemplate] = []
    for shape in shapes:
        topology = catalog.topology(shape)
        if emits_aligned_templates(config):
            for i, wanted in enumerate(workloads.claim_templates):
                key = f"workloads.claimTemplates[{i}].gpusPerWorker"
                name = template_name(wanted.name, shape, shapes)
                try:
                    spec = aligned_claim_spec(topology, wanted.gpus_per_worker, pin_shape=pinned)
                except PairingError as err:
                    problems.append(ConfigProblem(key, wanted.gpus_per_worker, str(err)))
                    continue
                verdict = judge_claim(
                    spec, topology, name=name, kubernetes_version=version, child_range=child_range
                )
                if verdict.kind != "aligned":
                    problems.append(
                        ConfigProblem(
                            key,
                            wanted.gpus_per_worker,
                            f"the claim for {wanted.gpus_per_worker} GPUs is {verdict.kind} on {verdict.shape}: "
                            f"{verdict.message}",
                        )
                    )
                    continue
                namespace = wanted.namespace or workloads.namespace
                aligned.append(
                    PlannedTemplate(
                        name, namespace, spec, wanted.gpus_per_worker, (verdict,), shape, wanted.name
                    )
                )
        if emits_rails_only_template(config) and workloads.rails_only_template:
            name = template_name(workloads.rails_only_template, shape, shapes)
            spec = rails_only_claim_spec(topology, pin_shape=pinned)
            verdict = judge_claim(
                spec, topology, name=name, kubernetes_version=version, child_range=child_range
            )
            if not verdict.allocatable:
                problems.append(
                    ConfigProblem(
                        "workloads.railsOnlyTemplate",
                        workloads.rails_only_template,
                        f"a claim for every rail of {shape} cannot be allocated on {verdict.shape}: "
                        f"{verdict.message}",
                    )
                )
            else:
                rails_only.append(
                    PlannedTemplate(
                        name, workloads.namespace, spec, 0, (verdict,), shape, workloads.rails_only_template
                    )
                )
    return ClaimPlan(shapes, tuple(aligned), tuple(rails_only), tuple(problems))


def _topology_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """Supplied topologies that do not parse, and pool shapes without a usable topology."""
    catalog = shape_catalog(config)
    for shape, problems in catalog.problems().items():
        for problem in problems:
            yield ConfigProblem(f"shapeTopologies.{shape}", None, problem)
    if not (emits_aligned_templates(config) or emits_rails_only_template(config)):
        return
    for i, pool in enumerate(config.node_pools):
        if pool.rdma is not RdmaPath.DRANET:
            continue  # claim templates are for DRANET pools; SR-IOV pools' rails come from sriov_plan
        if pool.shape in config.shape_topologies:
            continue  # reported above if malformed
        try:
            catalog.topology(pool.shape)
        except TopologyError as err:
            yield ConfigProblem(
                f"nodePools[{i}].shape",
                pool.shape,
                f"{err}; add shapeTopologies.{pool.shape} or set workloads.claimTemplates to [] "
                "and workloads.railsOnlyTemplate to null",
            )
            return


def _acceptance_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    jobs = config.workloads.acceptance_jobs
    if jobs.enabled and jobs.node_pool in {p.name for p in config.railless_pools}:
        yield ConfigProblem(
            "workloads.acceptanceJobs.nodePool",
            jobs.node_pool,
            "is an rdma: none pool, which has no rails to test; name a pool with rdma: dranet or sriov",
        )
        return
    if not config.dra_pools:
        return  # SR-IOV pools only: the acceptance jobs use VFs, not claim templates
    jobs = config.workloads.acceptance_jobs
    names = [t.name for t in config.workloads.claim_templates]
    dra_names = [p.name for p in config.dra_pools]
    sriov_names = {p.name for p in config.sriov_pools}
    if jobs.enabled and jobs.node_pool in sriov_names:
        yield ConfigProblem(
            "workloads.acceptanceJobs.nodePool",
            jobs.node_pool,
            f"is an rdma: sriov pool; the claim-template jobs run on a DRANET pool ({', '.join(dra_names)})",
        )
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
    elif jobs.enabled and jobs.nccl:
        gpus = next(
            t.gpus_per_worker for t in config.workloads.claim_templates if t.name == jobs.claim_template
        )
        if nccl_threshold("dranet", gpus, jobs.nccl_busbw_gbs) is None:
            measured = " and ".join(str(n) for n in SEED_NCCL_BUSBW_GBS["dranet"])
            yield ConfigProblem(
                "workloads.acceptanceJobs.ncclBusbwGBs",
                None,
                f"the seed measured NCCL jobs with {measured} GPUs per worker, not {gpus} "
                f"({jobs.claim_template}); set the minimum busbw in GB/s the job must reach",
            )
