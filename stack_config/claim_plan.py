"""The claim templates a stack asks for, built from the topology of its GPU node pools and judged once.

A template must be aligned on every shape the stack's pools use: the scheduler may place the pod
on any of them. The shape catalog refuses unverified topologies, so a stack with such a shape
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
from oke_gpu_rdma.topology import Topology

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


@dataclass(frozen=True)
class ClaimPlan:
    """The judged templates of a stack; empty when the drivers they need are off."""

    shapes: tuple[str, ...]
    aligned: tuple[PlannedTemplate, ...] = ()
    rails_only: PlannedTemplate | None = None
    problems: tuple[ConfigProblem, ...] = field(default=(), compare=False)

    @property
    def templates(self) -> tuple[PlannedTemplate, ...]:
        return self.aligned + ((self.rails_only,) if self.rails_only else ())

    @property
    def namespaces(self) -> tuple[str, ...]:
        """Every namespace a template lives in, in template order."""
        return tuple(dict.fromkeys(t.namespace for t in self.templates))

    def aligned_template(self, name: str) -> PlannedTemplate:
        """The aligned template ``name``; KeyError if the plan has none (the config check prevents it)."""
        for template in self.aligned:
            if template.name == name:
                return template
        raise KeyError(f"no aligned claim template {name!r} in the plan")


def pool_shapes(config: StackConfig) -> tuple[str, ...]:
    """The distinct shapes of the stack's GPU pools, in config order."""
    return tuple(dict.fromkeys(pool.shape for pool in config.node_pools))


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
    topologies = [catalog.topology(shape) for shape in shapes]
    workloads = config.workloads
    aligned: list[PlannedTemplate] = []
    if emits_aligned_templates(config):
        for i, wanted in enumerate(workloads.claim_templates):
            key = f"workloads.claimTemplates[{i}].gpusPerWorker"
            try:
                spec = aligned_claim_spec(topologies[0], wanted.gpus_per_worker)
            except PairingError as err:
                problems.append(ConfigProblem(key, wanted.gpus_per_worker, str(err)))
                continue
            verdicts = tuple(judge_claim(spec, t, name=wanted.name) for t in topologies)
            bad = [v for v in verdicts if v.kind != "aligned"]
            if bad:
                problems.append(
                    ConfigProblem(
                        key,
                        wanted.gpus_per_worker,
                        f"the claim for {wanted.gpus_per_worker} GPUs is {bad[0].kind} on {bad[0].shape}: "
                        f"{bad[0].message}",
                    )
                )
                continue
            namespace = wanted.namespace or workloads.namespace
            aligned.append(PlannedTemplate(wanted.name, namespace, spec, wanted.gpus_per_worker, verdicts))
    rails_only = None
    if emits_rails_only_template(config) and workloads.rails_only_template:
        spec = rails_only_claim_spec(topologies[0])
        verdicts = tuple(judge_claim(spec, t, name=workloads.rails_only_template) for t in topologies)
        stuck = [v for v in verdicts if not v.allocatable]
        if stuck:
            problems.append(
                ConfigProblem(
                    "workloads.railsOnlyTemplate",
                    workloads.rails_only_template,
                    f"a claim for every rail of {shapes[0]} cannot be allocated on {stuck[0].shape}: "
                    f"{stuck[0].message}",
                )
            )
        else:
            rails_only = PlannedTemplate(
                workloads.rails_only_template, workloads.namespace, spec, 0, verdicts
            )
    return ClaimPlan(shapes, tuple(aligned), rails_only, tuple(problems))


def _topology_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """Supplied topologies that do not parse, and pool shapes without a usable topology."""
    catalog = shape_catalog(config)
    for shape, problems in catalog.problems().items():
        for problem in problems:
            yield ConfigProblem(f"shapeTopologies.{shape}", None, problem)
    if not (emits_aligned_templates(config) or emits_rails_only_template(config)):
        return
    for i, pool in enumerate(config.node_pools):
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
    if not config.dra_pools:
        return  # SR-IOV pools only: the acceptance jobs use VFs, not claim templates
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
