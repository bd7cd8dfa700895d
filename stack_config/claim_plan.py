"""The claim templates a stack asks for, built from the topology of its GPU node pools and judged once.

Each shape of the stack's DRANET pools gets its own templates, built from its own topology and judged
on it. With one shape they carry the names of `workloads.claimTemplates` (renaming a template replaces
it); with several, each name ends with its shape (`aligned-8gpu-16rails-bm-gpu-b4-8`) and its rail
requests select that shape's rails (`oke.dra.net/shape`, which DRANET's OKE provider publishes), so the
scheduler only allocates it on the shape it was judged on, and the GPUs beside those rails through the
pcieRoot constraint. The first shape (of the first pool with templates) keeps the shape-free names as
well, pinned to it (:func:`stable_names`): a second shape joining the stack renames nothing, so
workloads written for one shape keep their templates. The shape catalog refuses unverified topologies,
so a stack with such a shape supplies it under `shapeTopologies`, or onboards its pools
(`nodePools[].onboarding`: the drivers run there, the shape gets no templates, until `make topology`
gives its entry). :func:`plan_claims` returns the judged templates (the program emits exactly these)
or the problems, each naming the key to change.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from oke_gpu_rdma.acceptance import SEED_NCCL_BUSBW_GBS, nccl_threshold
from oke_gpu_rdma.claims import Verdict, aligned_claim_specs, judge_claim, rails_only_claim_spec
from oke_gpu_rdma.errors import PairingError, TopologyError
from oke_gpu_rdma.shape_catalog import CATALOG, ShapeCatalog, verified_override_problem
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
    alignment: str = ""
    """The level its GPUs and rails share (``pcieRoot``, ``numaNode``; "" for the rails-only template)."""
    group: str = ""
    """The one group it keeps to (``numa0``: its name ends with it), "" when it spans the node's groups."""


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
    """The distinct shapes of the stack's DRANET pools that get claim templates (not the onboarding ones),
    in config order."""
    return tuple(dict.fromkeys(pool.shape for pool in config.templated_pools))


def template_name(name: str, shape: str, shapes: tuple[str, ...]) -> str:
    """The template's object name: ``name`` with one shape (today's names), ``name-<shape>`` with several."""
    return name if len(shapes) <= 1 else f"{name}-{shape_slug(shape)}"


def stable_names(
    templates: Sequence[PlannedTemplate], shapes: tuple[str, ...]
) -> tuple[PlannedTemplate, ...]:
    """With several shapes, the first shape's templates once more under their shape-free names (their spec
    as built, pinned to that shape): the names a one-shape stack had, so that a second shape joining it
    removes no template a workload names. After the per-shape ones, so that whoever looks a template up by
    name and shape (the acceptance jobs) keeps the per-shape one it had."""
    if len(shapes) <= 1:
        return ()
    return tuple(replace(t, name=t.config_name) for t in templates if t.shape == shapes[0])


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


@dataclass(frozen=True)
class TemplateRequest:
    """An aligned template asked for: its name, the GPUs one pod gets and its namespace."""

    name: str
    gpus_per_worker: int
    namespace: str


@dataclass(frozen=True)
class TemplateKeys:
    """Where a caller keeps what :func:`judged_templates` reads, so each problem names the caller's key:
    the stack config's (``workloads.claimTemplates``) or a component's inputs (``claimTemplates``)."""

    claim_templates: str
    rails_only_template: str
    shape_topologies: str = "shapeTopologies"


STACK_KEYS: Final = TemplateKeys("workloads.claimTemplates", "workloads.railsOnlyTemplate")


def missing_topology(catalog: ShapeCatalog, shape: str) -> str:
    """Why ``shape`` has no topology to build and judge templates on, in the user's terms (the catalog's own
    error names the library function that supplies one)."""
    if shape not in catalog:
        return f"{shape} is not in the shape catalog (oke_gpu_rdma/shapes/)"
    info = catalog.info(shape)
    return (
        f"{shape} has no GPU/NIC topology to build and judge claim templates on (the catalog lists it "
        f"{info.evidence}: {info.note})"
    )


def topology_problems(
    catalog: ShapeCatalog,
    shapes: Mapping[str, str],
    supplied: Collection[str],
    keys: TemplateKeys,
    fix: Callable[[str, str], str],
) -> list[ConfigProblem]:
    """Supplied topologies that do not parse, then the first of ``shapes`` (shape -> the key naming it)
    without a usable topology; ``fix(shape, key)`` says what to do about it."""
    problems = [
        ConfigProblem(f"{keys.shape_topologies}.{shape}", None, problem)
        for shape, found in catalog.problems().items()
        for problem in found
    ]
    # A verified shape's file is what the pack judges against whatever a stack supplies (issue 28): refuse
    # the override here rather than plan templates the pack would judge on another topology.
    problems += [
        ConfigProblem(f"{keys.shape_topologies}.{shape}", None, verified_override_problem(shape))
        for shape in catalog.verified_overrides()
    ]
    for shape, key in shapes.items():
        if shape in supplied:
            continue  # reported above if malformed
        try:
            catalog.topology(shape)
        except TopologyError:
            problems.append(
                ConfigProblem(key, shape, f"{missing_topology(catalog, shape)}; {fix(shape, key)}")
            )
            break
    return problems


def onboarding_path(shape: str, pool_key: str) -> str:
    """How a stack gets templates for a pool of ``shape`` without a topology (docs/onboarding-a-shape.md)."""
    return (
        f"onboard it: set {pool_key}.onboarding: true (DRANET and the GPU DRA driver run on the pool, its shape "
        "gets no claim templates, the other pools keep theirs) and pulumi up; then `kubectl get resourceslices "
        "-o yaml > slices.yaml`, `kubectl get nodes -o yaml > nodes.yaml`, `make topology SLICES=slices.yaml "
        f"NODES=nodes.yaml SHAPE={shape}`, paste the entry it prints (shapeTopologies.{shape}) under "
        f"oke-gpu-rdma:shapeTopologies and remove {pool_key}.onboarding (docs/onboarding-a-shape.md)"
    )


def judged_templates(
    catalog: ShapeCatalog,
    shapes: Sequence[str],
    aligned_requests: Sequence[TemplateRequest],
    rails_only_template: str | None,
    rails_only_namespace: str,
    keys: TemplateKeys,
    kubernetes_version: str | None = None,
    child_range: str | None = None,
) -> ClaimPlan:
    """The templates of every shape, built from its topology and judged on it, or the problems.

    The one place templates are built and judged: the stack config (:func:`plan_claims`) and the
    claim-template component (components/rdma_workloads.py) both call it, so a caller that passes shapes
    and template requests gets the templates a stack with those pools gets. With several shapes each
    name ends with its shape and its requests are pinned to it (:func:`template_name`), and the first
    shape's come once more under the shape-free names (:func:`stable_names`). Each is judged at
    ``kubernetes_version`` with the rails publishing ``child_range`` (the judge's defaults when None).
    """
    shapes = tuple(dict.fromkeys(shapes))
    pinned = len(shapes) > 1
    problems: list[ConfigProblem] = []
    aligned: list[PlannedTemplate] = []
    rails_only: list[PlannedTemplate] = []
    for shape in shapes:
        topology = catalog.topology(shape)
        for i, wanted in enumerate(aligned_requests):
            key = f"{keys.claim_templates}[{i}].gpusPerWorker"
            try:
                specs = aligned_claim_specs(topology, wanted.gpus_per_worker, pin_shape=pinned)
            except PairingError as err:
                problems.append(ConfigProblem(key, wanted.gpus_per_worker, str(err)))
                continue
            # A shape aligned at the NUMA node gives a worker with part of a node's GPUs one template
            # per NUMA node (oke_gpu_rdma/claims/pairing.py): each name ends with its group.
            for aligned_spec in specs:
                base = f"{wanted.name}-{aligned_spec.group}" if aligned_spec.group else wanted.name
                name = template_name(base, shape, shapes)
                verdict = judge_claim(
                    aligned_spec.spec,
                    topology,
                    name=name,
                    kubernetes_version=kubernetes_version,
                    child_range=child_range,
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
                    break
                aligned.append(
                    PlannedTemplate(
                        name,
                        wanted.namespace,
                        aligned_spec.spec,
                        wanted.gpus_per_worker,
                        (verdict,),
                        shape,
                        wanted.name,
                        aligned_spec.level,
                        aligned_spec.group,
                    )
                )
        if rails_only_template:
            name = template_name(rails_only_template, shape, shapes)
            spec = rails_only_claim_spec(topology, pin_shape=pinned)
            verdict = judge_claim(
                spec, topology, name=name, kubernetes_version=kubernetes_version, child_range=child_range
            )
            if not verdict.allocatable:
                problems.append(
                    ConfigProblem(
                        keys.rails_only_template,
                        rails_only_template,
                        f"a claim for every rail of {shape} cannot be allocated on {verdict.shape}: "
                        f"{verdict.message}",
                    )
                )
            else:
                rails_only.append(
                    PlannedTemplate(
                        name, rails_only_namespace, spec, 0, (verdict,), shape, rails_only_template
                    )
                )
    return ClaimPlan(
        shapes,
        tuple(aligned) + stable_names(aligned, shapes),
        tuple(rails_only) + stable_names(rails_only, shapes),
        tuple(problems),
    )


def plan_claims(config: StackConfig) -> ClaimPlan:
    """The judged templates, or a plan whose ``problems`` say which key to change."""
    shapes = pool_shapes(config)
    problems = (
        list(_onboarding_problems(config))
        + list(_topology_problems(config))
        + list(_acceptance_problems(config))
    )
    if problems:
        return ClaimPlan(shapes, problems=tuple(problems))
    if not (emits_aligned_templates(config) or emits_rails_only_template(config)):
        return ClaimPlan(shapes)
    workloads = config.workloads
    requests = [
        TemplateRequest(t.name, t.gpus_per_worker, t.namespace or workloads.namespace)
        for t in workloads.claim_templates
    ]
    return judged_templates(
        shape_catalog(config),
        shapes,
        requests if emits_aligned_templates(config) else [],
        workloads.rails_only_template if emits_rails_only_template(config) else None,
        workloads.namespace,
        STACK_KEYS,
        # Judged as the pack judges them: at the cluster's release, the rails publishing the configured range.
        kubernetes_version=config.cluster.spec.kubernetes_version,
        child_range=str(config.dranet.child_range),
    )


def _topology_problems(config: StackConfig) -> list[ConfigProblem]:
    """Supplied topologies that do not parse, and pool shapes without a usable topology."""
    emits = emits_aligned_templates(config) or emits_rails_only_template(config)
    # Claim templates are for DRANET pools that are not onboarding; SR-IOV pools' rails come from
    # sriov_plan. Each shape is named by the first pool of it. A shape that another pool onboards is
    # reported once, by _onboarding_problems (onboard every pool of it, or none).
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


def _onboarding_problems(config: StackConfig) -> Iterator[ConfigProblem]:
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
        elif pool.shape in config.shape_topologies or _verified(catalog, pool.shape):
            where = (
                f"shapeTopologies.{pool.shape}"
                if pool.shape in config.shape_topologies
                else f"the catalog's verified oke_gpu_rdma/shapes/{pool.shape}.yaml"
            )
            yield ConfigProblem(
                key,
                True,
                f"{pool.shape} has its topology ({where}), so the pool can have its claim templates; remove "
                "onboarding",
            )


def _verified(catalog: ShapeCatalog, shape: str) -> bool:
    try:
        catalog.topology(shape)
    except TopologyError:
        return False
    return True


def _acceptance_problems(config: StackConfig) -> Iterator[ConfigProblem]:
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
    names = [t.name for t in config.workloads.claim_templates]
    sriov_names = {p.name for p in config.sriov_pools}
    if jobs.active and jobs.node_pool in sriov_names:
        yield ConfigProblem(
            "workloads.acceptanceJobs.nodePool",
            jobs.node_pool,
            f"is an rdma: sriov pool; the claim-template jobs run on a DRANET pool ({', '.join(dra_names)})",
        )
    if jobs.active and jobs.rail_bandwidth and not emits_rails_only_template(config):
        yield ConfigProblem(
            "workloads.acceptanceJobs.railBandwidth",
            True,
            "needs the rails-only template: set workloads.railsOnlyTemplate (default all-rails) and dranet.enabled",
        )
    if jobs.active and jobs.nccl and not emits_aligned_templates(config):
        yield ConfigProblem(
            "workloads.acceptanceJobs.nccl",
            True,
            "needs GPU/rail claim templates: dranet.enabled, gpuDriver.enabled and workloads.claimTemplates",
        )
    elif jobs.active and jobs.nccl and jobs.claim_template not in names:
        yield ConfigProblem(
            "workloads.acceptanceJobs.claimTemplate",
            jobs.claim_template,
            f"no such template in workloads.claimTemplates ({', '.join(names) or 'none'})",
        )
    elif jobs.active and jobs.nccl:
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
