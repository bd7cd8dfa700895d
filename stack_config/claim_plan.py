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
from oke_gpu_rdma.claims import (
    Verdict,
    aligned_claim_specs,
    aligned_pairs,
    judge_claim,
    rails_only_claim_spec,
    valid_gpu_counts,
)
from oke_gpu_rdma.errors import PairingError, TopologyError
from oke_gpu_rdma.shape_catalog import CATALOG, ShapeCatalog, verified_override_problem
from oke_gpu_rdma.sriov import RdmaPath
from oke_gpu_rdma.topology import Topology, shape_slug

from .capacity import acceptance_pool
from .model import ClaimTemplateConfig, StackConfig
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
    """With several shapes, each template once more under its shape-free name, as built for the first shape
    (in pool order) it is made for, pinned to that shape: the names a one-shape stack had, so that a second
    shape joining it removes no template a workload names. After the per-shape ones, so that whoever looks a
    template up by name and shape (the acceptance jobs) keeps the per-shape one it had."""
    if len(shapes) <= 1:
        return ()
    first: dict[str, str] = {}
    for t in templates:
        first.setdefault(t.config_name, t.shape)
    return tuple(
        replace(t, name=f"{t.config_name}-{t.group}" if t.group else t.config_name)
        for t in templates
        if first[t.config_name] == t.shape
    )


def shape_catalog(config: StackConfig) -> ShapeCatalog:
    """The shape catalog with the stack's shapeTopologies (reported by :func:`plan_claims` if malformed)."""
    return CATALOG.with_topologies(config.shape_topologies)


def topology(config: StackConfig, shape: str) -> Topology:
    """The topology of `shape`: the user's (shapeTopologies) or the catalog's verified one."""
    return shape_catalog(config).topology(shape)


def emits_aligned_templates(config: StackConfig) -> bool:
    """GPU/rail templates need both drivers: the GPUs and the rails each come from one."""
    given = config.workloads.claim_templates
    return config.dranet.enabled and config.gpu_driver.enabled and (given is None or bool(given))


def emits_rails_only_template(config: StackConfig) -> bool:
    return config.dranet.enabled and bool(config.workloads.rails_only_template)


@dataclass(frozen=True)
class TemplateRequest:
    """An aligned template asked for: its name, the GPUs one pod gets, its namespace and the shapes it is for
    (None: every shape that can hold it)."""

    name: str
    gpus_per_worker: int
    namespace: str
    shapes: tuple[str, ...] | None = None


def gpu_counts(topology: Topology) -> tuple[int, ...]:
    """The GPUs per worker ``topology`` can align (none when its groups cannot be paired at all)."""
    try:
        return tuple(valid_gpu_counts(topology))
    except PairingError:
        return ()


def rails_for(topology: Topology, gpus_per_worker: int) -> int:
    """The rails a worker with ``gpus_per_worker`` aligned GPUs gets on ``topology``."""
    return sum(pair.rails for pair in aligned_pairs(topology, gpus_per_worker))


def default_claim_templates(catalog: ShapeCatalog, shapes: Sequence[str]) -> list[ClaimTemplateConfig]:
    """The templates of a stack that names none: for each shape, one for a whole node's GPUs and one for half
    of them (where half aligns), named by what a worker gets (``aligned-8gpu-16rails``), each made for every
    shape that gives it that name. So any fleet gets templates its every shape holds: BM.GPU.B4.8 keeps
    aligned-8gpu-16rails and aligned-4gpu-8rails; BM.GPU.GB200-v3.4 gets aligned-4gpu-8rails (its whole node)
    and aligned-2gpu-4rails (one NUMA node)."""
    made: dict[str, tuple[int, list[str]]] = {}
    for shape in dict.fromkeys(shapes):
        try:
            topology = catalog.topology(shape)
        except TopologyError:
            continue  # the stack config reports the shape (topology_problems)
        counts = gpu_counts(topology)
        total = len(topology.gpus)
        for gpus in (total, total // 2):
            if gpus not in counts:
                continue
            name = f"aligned-{gpus}gpu-{rails_for(topology, gpus)}rails"
            made.setdefault(name, (gpus, []))[1].append(shape)
    return [
        ClaimTemplateConfig.model_validate({"name": name, "gpusPerWorker": gpus, "shapes": made_for})
        for name, (gpus, made_for) in made.items()
    ]


def claim_templates(config: StackConfig) -> list[ClaimTemplateConfig]:
    """The aligned templates the stack asks for: workloads.claimTemplates, or the defaults of its shapes."""
    given = config.workloads.claim_templates
    if given is not None:
        return list(given)
    return default_claim_templates(shape_catalog(config), pool_shapes(config))


def template_shapes(
    catalog: ShapeCatalog,
    shapes: Sequence[str],
    index: int,
    wanted: TemplateRequest,
    keys: TemplateKeys,
) -> tuple[tuple[str, ...], list[ConfigProblem]]:
    """The shapes a template is made for, or the problems: a named shape the stack's pools lack or that cannot
    hold it; with no shapes named, every shape that can hold it, and a problem when none can."""
    at = f"{keys.claim_templates}[{index}]"
    if wanted.shapes is None:
        held = tuple(s for s in shapes if wanted.gpus_per_worker in gpu_counts(catalog.topology(s)))
        if held or not shapes:
            return held, []
        if len(shapes) == 1:
            try:
                aligned_pairs(catalog.topology(shapes[0]), wanted.gpus_per_worker)
            except PairingError as err:
                return (), [ConfigProblem(f"{at}.gpusPerWorker", wanted.gpus_per_worker, str(err))]
        each = "; ".join(
            f"{s}: {len(catalog.topology(s).gpus)} GPUs a node, aligns "
            f"{', '.join(map(str, gpu_counts(catalog.topology(s)))) or 'none'}"
            for s in shapes
        )
        return (), [
            ConfigProblem(
                f"{at}.gpusPerWorker",
                wanted.gpus_per_worker,
                f"no shape of the stack's rdma: dranet pools can hold a worker with {wanted.gpus_per_worker} aligned "
                f"GPUs ({each}); use a count one of them aligns",
            )
        ]
    problems: list[ConfigProblem] = []
    for j, shape in enumerate(wanted.shapes):
        key = f"{at}.shapes[{j}]"
        if shape not in shapes:
            problems.append(
                ConfigProblem(
                    key,
                    shape,
                    f"no rdma: dranet pool of the stack that gets claim templates has this shape (theirs: "
                    f"{', '.join(shapes) or 'none'}); name one of those, or add a pool of {shape}",
                )
            )
            continue
        try:
            aligned_pairs(catalog.topology(shape), wanted.gpus_per_worker)
        except PairingError as err:
            problems.append(
                ConfigProblem(key, shape, f"{err}; or leave {shape} out of the template's shapes")
            )
    return tuple(s for s in shapes if s in wanted.shapes), problems


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
    made_for: list[tuple[str, ...]] = []
    for i, wanted in enumerate(aligned_requests):
        held, found = template_shapes(catalog, shapes, i, wanted, keys)
        made_for.append(held)
        problems += found
    if problems:
        return ClaimPlan(shapes, problems=tuple(problems))
    aligned: list[PlannedTemplate] = []
    rails_only: list[PlannedTemplate] = []
    for shape in shapes:
        topology = catalog.topology(shape)
        for i, wanted in enumerate(aligned_requests):
            if shape not in made_for[i]:
                continue
            key = f"{keys.claim_templates}[{i}].gpusPerWorker"
            specs = aligned_claim_specs(topology, wanted.gpus_per_worker, pin_shape=pinned)
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


def shape_lines(config: StackConfig, plan: ClaimPlan) -> list[str]:
    """Which templates each shape got (their object names), then each aligned template a shape did not get and
    why: what the preview prints, so that a fleet's templates are never a surprise."""
    lines = []
    for shape in plan.shapes:
        names = [t.name for t in plan.templates if t.shape == shape]
        if names:
            lines.append(f"{shape}: {', '.join(names)}")
    if not emits_aligned_templates(config):
        return lines
    catalog = shape_catalog(config)
    given = {t.name: t for t in config.workloads.claim_templates or []}
    for name, made in template_shape_map(config).items():
        for shape in (s for s in plan.shapes if s not in made):
            template = given.get(name)
            if template is None:
                why = "a default template of another shape; each shape's defaults are its whole and half node"
            elif template.shapes is not None:
                why = f"its shapes are {', '.join(template.shapes)}"
            else:
                topology = catalog.topology(shape)
                counts = ", ".join(map(str, gpu_counts(topology))) or "none"
                why = f"a node has {len(topology.gpus)} GPUs and aligns {counts} per worker"
            lines.append(f"{name}: not made for {shape} ({why})")
    return lines


def plan_claims(config: StackConfig) -> ClaimPlan:
    """The judged templates, or a plan whose ``problems`` say which key to change."""
    shapes = pool_shapes(config)
    problems = list(_onboarding_problems(config)) + list(_topology_problems(config))
    # The jobs' templates are known once every shape has its topology.
    problems = problems or list(_acceptance_problems(config))
    if problems:
        return ClaimPlan(shapes, problems=tuple(problems))
    if not (emits_aligned_templates(config) or emits_rails_only_template(config)):
        return ClaimPlan(shapes)
    workloads = config.workloads
    requests = [
        TemplateRequest(
            t.name,
            t.gpus_per_worker,
            t.namespace or workloads.namespace,
            tuple(t.shapes) if t.shapes is not None else None,
        )
        for t in claim_templates(config)
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


def template_shape_map(config: StackConfig) -> dict[str, tuple[str, ...]]:
    """Each aligned template's name -> the shapes it is made for (a shape that cannot hold it left out)."""
    catalog = shape_catalog(config)
    shapes = pool_shapes(config)
    found: dict[str, tuple[str, ...]] = {}
    for i, t in enumerate(claim_templates(config)):
        request = TemplateRequest(t.name, t.gpus_per_worker, "", tuple(t.shapes) if t.shapes else None)
        found[t.name] = template_shapes(catalog, shapes, i, request, STACK_KEYS)[0]
    return found


def acceptance_template(config: StackConfig) -> str | None:
    """The NCCL acceptance job's template: acceptanceJobs.claimTemplate, else the one made for the jobs' pool's
    shape that holds all of a node's GPUs (aligned-8gpu-16rails on BM.GPU.B4.8); None when it has none."""
    jobs = config.workloads.acceptance_jobs
    if jobs.claim_template is not None:
        return jobs.claim_template
    pool = acceptance_pool(config)
    if pool is None:
        return None
    shape = pool.shape
    total = len(shape_catalog(config).topology(shape).gpus)
    templates = {t.name: t for t in claim_templates(config)}
    return next(
        (
            name
            for name, made in template_shape_map(config).items()
            if shape in made and templates[name].gpus_per_worker == total
        ),
        None,
    )
