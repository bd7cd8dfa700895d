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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from oke_gpu_rdma.claims import (
    Verdict,
    aligned_claim_specs,
    judge_claim,
    rails_only_claim_spec,
)
from oke_gpu_rdma.nodes.shape_catalog import ShapeCatalog
from stack_config.claims.claim_checks import acceptance_problems, onboarding_problems, pool_topology_problems
from stack_config.claims.template_requests import (
    STACK_KEYS,
    TemplateKeys,
    TemplateRequest,
    claim_templates,
    emits_aligned_templates,
    emits_rails_only_template,
    gpu_counts,
    pool_shapes,
    shape_catalog,
    template_name,
    template_shape_map,
    template_shapes,
)
from stack_config.model import StackConfig
from stack_config.problems import ConfigProblem


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
    claim-template component (components/claims/rdma_workloads.py) both call it, so a caller that passes shapes
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
    problems = list(onboarding_problems(config)) + list(pool_topology_problems(config))
    # The jobs' templates are known once every shape has its topology.
    problems = problems or list(acceptance_problems(config))
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
