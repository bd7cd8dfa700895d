"""The plan's lines about claim template names: which disappear, and which move to one shape.

Pods name a ResourceClaimTemplate by its object name and namespace (`resourceClaims[].
resourceClaimTemplateName`), and a pod whose template is missing never gets its claim: the
resourceclaim controller's lookup fails (kubernetes pkg/controller/resourceclaim/controller.go handleClaim:
`templateLister...Get(*templateName)`, returning "resource claim template %q: %v"), so the pod is never
scheduled and stays Pending. So a change that
deletes a template name with nothing of that name left (a config template renamed, a shape leaving
the stack, the names' shape suffix changing) takes the template away from every workload that names
it, while running pods keep the claims they were given. And a template that is replaced with a spec
pinned to another shape (`oke.dra.net/shape`, stack_config/claims/claim_plan.py) is allocated only on that
shape's nodes from then on. The plan's tree shows both as deletes and replacements of resources;
these lines say what they mean to workloads, in their names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from oke_gpu_rdma.claims import shape_selector

from .change_plan import Plan, Record

KIND: Final = "ResourceClaimTemplate"
# The expression that pins a request to a shape, with the shape as its one group.
_PLACEHOLDER: Final = "\x00"
_SHAPE_SELECTOR: Final = re.compile(
    re.escape(shape_selector(_PLACEHOLDER)).replace(re.escape(_PLACEHOLDER), '([^"]+)')
)


def _identity(record: Record) -> tuple[str, str] | None:
    """(namespace, name) of a claim template's object; None for any other resource."""
    inputs = record.inputs
    if inputs.get("kind") != KIND:
        return None
    metadata = inputs.get("metadata")
    if not isinstance(metadata, Mapping):
        return None
    name, namespace = metadata.get("name"), metadata.get("namespace", "default")
    return (str(namespace), name) if isinstance(name, str) else None


def _expressions(value: Any) -> Iterator[str]:
    """Every CEL expression anywhere in a claim spec (requests, firstAvailable subrequests)."""
    if isinstance(value, Mapping):
        cel = value.get("cel")
        if isinstance(cel, Mapping) and isinstance(cel.get("expression"), str):
            yield cel["expression"]
        for item in value.values():
            yield from _expressions(item)
    elif isinstance(value, list):
        for item in value:
            yield from _expressions(item)


def pinned_shapes(record: Record) -> tuple[str, ...]:
    """The shapes a template's requests are pinned to (none: any node where its devices exist)."""
    found = (
        m.group(1) for e in _expressions(record.inputs.get("spec")) if (m := _SHAPE_SELECTOR.fullmatch(e))
    )
    return tuple(sorted(set(found)))


def _where(shapes: tuple[str, ...]) -> str:
    return f"{' or '.join(shapes)} nodes only" if shapes else "any node where its devices exist"


def template_lines(plan: Plan) -> list[str]:
    """One line per template name the change removes (with the names that take its place, if any), then one
    per template replaced onto other shapes."""
    if not plan.has_base:
        return []
    remaining: set[tuple[str, str]] = set()
    created: list[tuple[str, str]] = []
    for step in plan.steps:
        if step.op != "delete" and (identity := _identity(step.record)) is not None:
            remaining.add(identity)
            if step.op == "create" or (step.base is not None and _identity(step.base) != identity):
                created.append(identity)
    lines: list[str] = []
    for step in plan.steps:
        old = _identity(step.base) if step.base is not None else None
        if old is None or old in remaining or (step.op != "delete" and _identity(step.record) == old):
            continue
        namespace, name = old
        successors = [
            n
            for ns, n in created
            if ns == namespace and (n.startswith(f"{name}-") or name.startswith(f"{n}-"))
        ]
        instead = f"; the change adds {', '.join(successors)} in its place" if successors else ""
        lines.append(
            f"claim template {namespace}/{name} is removed and no template of that name remains{instead}: "
            "workloads that name it (resourceClaimTemplateName) lose their template: their new pods get no "
            "ResourceClaim and stay Pending (running pods keep theirs) until they name a template the stack has"
        )
    for step in plan.steps:
        if step.op != "replace" or step.base is None or (identity := _identity(step.record)) is None:
            continue
        before, after = pinned_shapes(step.base), pinned_shapes(step.record)
        if before != after:
            namespace, name = identity
            lines.append(
                f"claim template {namespace}/{name} is replaced and its claims are allocated on {_where(after)} "
                f"(was: {_where(before)}); workloads that name it and run elsewhere stay Pending"
            )
    return lines
