"""Which claim templates a stack asks for, per shape of its DRANET pools: their names, GPU counts and rails,
from `workloads.claimTemplates` or the shape's own topology, and what to do for a shape without one."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from oke_gpu_rdma.claims import (
    aligned_pairs,
    valid_gpu_counts,
)
from oke_gpu_rdma.common.errors import PairingError, TopologyError
from oke_gpu_rdma.nodes.shape_catalog import CATALOG, ShapeCatalog, verified_override_problem
from oke_gpu_rdma.nodes.topology import Topology, shape_slug
from stack_config.claims.claim_settings import ClaimTemplateConfig
from stack_config.model import StackConfig
from stack_config.nodes.capacity import acceptance_pool
from stack_config.problems import ConfigProblem


def pool_shapes(config: StackConfig) -> tuple[str, ...]:
    """The distinct shapes of the stack's DRANET pools that get claim templates (not the onboarding ones),
    in config order."""
    return tuple(dict.fromkeys(pool.shape for pool in config.templated_pools))


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
        return f"{shape} is not in the shape catalog (oke_gpu_rdma/nodes/shapes/)"
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
