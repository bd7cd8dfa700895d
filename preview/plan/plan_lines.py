"""The change plan as text, as `pulumi preview` prints it: each step's symbol, name and changes, its
replacement order, the summary counts."""

from __future__ import annotations

import difflib
import json
from typing import Any

from oke_gpu_rdma.common import resource_types
from stack_config.pack_config import FILENAME as PACK_CONFIG_FILE

from .change_plan import Change, Op, Plan, Step
from .replace_rules import PROVIDER_PATH, UNKNOWN

# --- text --------------------------------------------------------------------------------------------


def _value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return value if value == UNKNOWN else json.dumps(value)
    return json.dumps(value, sort_keys=True)


def change_lines(change: Change, indent: str = "      ") -> list[str]:
    """`~ path: old => new`, multi-line text as a unified diff, with the rule that decides."""
    why = f"{change.cause} is replaced" if change.cause else change.rule.why
    tail = ""
    if change.rule.replaces:
        tail = f"  (replaces: {why})"
    elif why and change.cause:
        tail = f"  ({why})"
    if change.path == PROVIDER_PATH:
        return [f"{indent}~ [provider]{tail}"]
    old, new = change.old, change.new
    if isinstance(old, str) and isinstance(new, str) and ("\n" in old or "\n" in new):
        lines = [f"{indent}~ {change.shown}:{tail}"]
        diff = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=1)
        lines += [f"{indent}    {d}" for d in list(diff)[2:]]
        return lines
    if change.kind == "+":
        text = f"{indent}+ {change.shown}: {_value(new)}"
    elif change.kind == "-":
        text = f"{indent}- {change.shown}: {_value(old)}"
    else:
        text = f"{indent}~ {change.shown}: {_value(old)} => {_value(new)}"
    lines = [text + tail]
    if change.rule.refused:
        lines.append(f"{indent}  ! {change.rule.refused}")
    return lines


def order_line(step: Step) -> str:
    """In words, the order the engine replaces `step` in and why (the `+-`/`-+` symbol's meaning).

    pulumi/pulumi pkg/resource/deploy/step_generator.go: a replacement creates the new resource first
    unless the resource's `deleteBeforeReplace` option is set or the provider's Diff asks for it
    (`DeleteBeforeReplace` in the DiffResponse: pulumi-kubernetes does when the replacement keeps the
    object's name, which two objects cannot share); then it deletes the old one first.
    """
    if step.op != "replace":
        return ""
    if step.delete_first:
        if step.record.options.get("deleteBeforeReplace"):
            why = "its deleteBeforeReplace option"
        else:
            why = (
                "the provider's rule: the replacement keeps the object's name, which two objects cannot share"
            )
        text = f"order: deleted first ({why}): the old one is gone before the new one exists"
    else:
        text = "order: created first (the engine's default): the new one exists before the old one is deleted"
    if step.record.type == resource_types.COMPUTE_CLUSTER:
        # terraform-provider-oci containerengine_node_pool_resource.go: node_config_details.0.
        # compute_cluster_id is ForceNew, so the pool in it is replaced too (its GPU line says what that needs).
        text += (
            "; a compute cluster holds no hosts, so this needs none, but its node pool is replaced with it "
            "(nodeConfigDetails.computeClusterId is ForceNew): see the GPU line"
        )
    return text


def step_lines(step: Step) -> list[str]:
    lines = [f"  {step.line()}"]
    order = order_line(step)
    if order:
        lines.append(f"      {order}")
    for change in step.changes:
        lines += change_lines(change)
    lines += [f"      ! {note}" for note in step.notes]
    if step.error:
        lines += [f"      error: {line}" for line in step.error.splitlines()]
    return lines


def summary_lines(plan: Plan) -> list[str]:
    """The `Resources:` block as `pulumi preview` prints it."""
    counts = plan.counts()
    lines = ["Resources:"]
    ops: tuple[tuple[Op, str], ...] = (
        ("create", "+ "),
        ("update", "~ "),
        ("replace", "+-"),
        ("delete", "- "),
    )
    for op, symbol in ops:
        if counts.get(op):
            lines.append(f"    {symbol}{counts[op]} to {op}")
    if counts.get("refused"):
        lines.append(
            f"    ! {counts['refused']} refused: protected (`pulumi preview` fails; `pulumi up` stops at the "
            "first one)"
        )
    changes = sum(n for op, n in counts.items() if op not in ("same", "refused"))
    same = counts.get("same", 0)
    if same and changes:
        lines.append(f"    {changes} change{'s' if changes != 1 else ''}. {same} unchanged")
    elif same:
        lines.append(f"    {same} unchanged")
    return lines


def plan_lines(plan: Plan) -> list[str]:
    """The plan: one line per changed resource with its changed properties, then the pack config."""
    if not plan.has_base:
        return [f"Plan: {plan.base_description}."]
    changed = plan.changed()
    lines = [f"Plan against {plan.base_description}:"]
    if not plan.has_changes():
        lines.append("  no changes")
    for step in changed:
        lines += step_lines(step)
    # What changes on resources that are otherwise the same (their protect option, an alias move): a line
    # of their own per note, naming every resource it concerns, not indented under the step above.
    noted: dict[str, list[str]] = {}
    for s in plan.steps:
        if s.op == "same":
            for note in s.notes:
                noted.setdefault(note, []).append(s.record.name)
    lines += [f"  {', '.join(names)}: {note}" for note, names in noted.items()]
    if plan.pack_config_changes:
        lines.append(f"  ~ {PACK_CONFIG_FILE} (not a resource: the policy pack's config)")
        for change in plan.pack_config_changes:
            lines += change_lines(change)
    return lines
