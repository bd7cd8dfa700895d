"""`make preview`: what `pulumi preview` would show for a stack, computed offline.

Runs the program under the mock runtime with `stacks/Pulumi.<stack>.yaml`, compares what it
declares with a base rendering (the committed `rendered/<stack>/` at HEAD, or `--base <ref>`) and
prints what `pulumi up` would do: GPU node impact first, the tree with each resource's step, the plan
with the properties that change and whether each updates or replaces (preview/plan/change_plan.py), and the
counts. It writes `rendered/<stack>/` (preview/rendering.py: a record per
declared resource, the Kubernetes manifests apart, the policy pack config derived from the stack) so
that pull requests show every change as a plain diff.
Then it runs the policy pack on the recorded resources, prints its findings as the CLI does, and
exits 1 on a mandatory violation.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi

from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.scheduling import mpi_operator
from oke_gpu_rdma.scheduling.pod_admission import Verdict
from stack_config.claims import claim_plan
from stack_config.loading import load_stack as load_checked_stack
from stack_config.loading import raw_config, stack_source
from stack_config.nodes import region_checks
from stack_config.pack_config import FILENAME as PACK_CONFIG_FILE
from stack_config.pack_config import policy_pack_config

from . import base_rendering, rendering, schedulability, schema_check
from .base_rendering import BaseFiles
from .mock_runtime import (
    ROOT,
    ProgramRun,
    RecordedResource,
    pulumi_config_map,
    run_program,
    secret_config_keys,
)
from .plan import change_plan, claim_templates, gpu_impact, plan_lines
from .policy_check import Finding, PackConfigError, analyze_run, format_findings, has_mandatory
from .rendered_stack import shown_path as _shown
from .stack_file import StackFileError, read_stack_file, undecryptable
from .stacks import EXAMPLES, USER_STACKS, stack_names

STACKS_DIR = USER_STACKS
# Where `--stack NAME` is looked up: the user's stacks first, then the examples.
STACK_DIRS = (USER_STACKS, EXAMPLES)
RENDERED_DIR = ROOT / "rendered"


class PreviewError(Exception):
    """A problem to report as one message and exit 1."""


def stack_file(stack: str, dirs: Sequence[Path] = STACK_DIRS) -> Path:
    """The file of ``stack`` in ``dirs``; a name in two folders is ambiguous and refused."""
    found = [d / f"Pulumi.{stack}.yaml" for d in dirs if (d / f"Pulumi.{stack}.yaml").is_file()]
    if len(found) > 1:
        raise PreviewError(
            f"{' and '.join(_shown(p) for p in found)} both exist; give your stack a name of its own "
            f"(the examples are {', '.join(stack_names(EXAMPLES))})"
        )
    if not found:
        known = sorted({name for d in dirs for name in stack_names(d)})
        where = " or ".join(_shown(d / f"Pulumi.{stack}.yaml") for d in dirs)
        raise PreviewError(f"no stack file {where}; stacks: {', '.join(known) or 'none'}")
    return found[0]


def load_stack(stack: str, dirs: Sequence[Path] = STACK_DIRS) -> dict[str, str]:
    """The stack's config as the CLI would pass it to the program."""
    return pulumi_config_map(load_stack_file(stack, dirs))


def load_stack_file(stack: str, dirs: Sequence[Path] = STACK_DIRS) -> Mapping[str, Any]:
    """The stack file's YAML document, checked to hold a `config:` mapping."""
    path = stack_file(stack, dirs)
    try:
        return read_stack_file(path, _shown(path))
    except StackFileError as err:
        raise PreviewError(str(err)) from None


@dataclass
class Preview:
    """An offline run, the pack config derived from the stack, and what the policy pack found."""

    run: ProgramRun
    pack_config: dict[str, Any]
    findings: list[Finding]
    placement: Verdict = field(default_factory=lambda: Verdict((), ()))
    """The schedulability check: where each pod can run, and what it could not see (an existing cluster)."""
    schemas: schema_check.SchemaReport | None = None
    """Every manifest against the OpenAPI schemas of the stack's Kubernetes version (preview/schema_check.py)."""
    templates: tuple[str, ...] = ()
    """Which claim templates each shape got, and which it did not (stack_config/claims/claim_plan.py shape_lines)."""


def preview(stack: str, dirs: Sequence[Path] = STACK_DIRS) -> Preview:
    """Run the program offline, then the policy pack on what it declared.

    A config problem becomes a PreviewError with the program's own message, naming the file previewed
    (the program names stacks/Pulumi.<stack>.yaml, where the CLI keeps stack files).
    """
    document = load_stack_file(stack, dirs)
    # Imported here, with pulumi-oci: the program imports it next anyway, and a stack file refused above
    # is refused without that cost.
    from components.nodes.gpu_node_pool import typed_provider_settings

    secrets = undecryptable(document, _shown(stack_file(stack, dirs)), typed_provider_settings())
    if secrets:
        raise PreviewError("\n  ".join(["invalid stack config:", *secrets]))
    config_map = pulumi_config_map(document)
    try:
        run = run_program(stack, config_map, secret_keys=secret_config_keys(document))
    except pulumi.RunError as err:
        raise PreviewError(str(err).replace(stack_source(stack), _shown(stack_file(stack, dirs)))) from None
    # The program accepted this config, so parsing it again cannot fail.
    checked = load_checked_stack(
        raw_config(config_map), stack_source(stack), config_map.get(region_checks.REGION_KEY)
    )
    # Every pod the stack starts must fit a node pool of the stack (preview/schedulability.py).
    placement = schedulability.check_run(run.resources, checked)
    if placement.problems:
        raise PreviewError(
            f"{_shown(stack_file(stack, dirs))}: pods that no node pool admits (they would stay Pending and "
            "`pulumi up` would time out waiting for them):\n" + _indented(placement.problems)
        )
    pack_config = policy_pack_config(checked.config).to_dict()
    try:
        schemas = schema_check.check(
            [rendering.manifest(r) for r in run.resources if rendering.is_manifest(r.type)],
            checked.config.cluster.spec.kubernetes_version,
        )
    except schema_check.SchemaVersionError as err:
        raise PreviewError(f"{_shown(stack_file(stack, dirs))}: {err}") from None
    templates = tuple(claim_plan.shape_lines(checked.config, checked.claims))
    return Preview(run, pack_config, analyze_run(run, pack_config), placement, schemas, templates)


def _indented(lines: Sequence[str]) -> str:
    """Report lines under their heading; a line of several (a reason and the pods it applies to) indented whole."""
    return "\n".join("  " + row for line in lines for row in line.splitlines())


# --- the resource tree ---------------------------------------------------------------------------


def tree_lines(resources: list[RecordedResource]) -> list[tuple[str, str, str]]:
    """(URN, type column, name) rows drawn like the CLI's preview tree, siblings sorted by name."""
    children: dict[str, list[RecordedResource]] = {}
    for r in resources:
        children.setdefault(r.parent, []).append(r)
    # Registration order depends on when outputs resolve; siblings by name keep the report stable.
    for siblings in children.values():
        siblings.sort(key=lambda r: (r.name, r.type))
    rows: list[tuple[str, str, str]] = []

    def walk(node: RecordedResource, prefix: str, last: bool, depth: int) -> None:
        branch = "" if depth == 0 else prefix + ("└─ " if last else "├─ ")
        rows.append((node.urn, branch + node.type, node.name))
        kids = children.get(node.urn, [])
        deeper = "" if depth == 0 else prefix + ("   " if last else "│  ")
        for i, kid in enumerate(kids):
            walk(kid, deeper, i == len(kids) - 1, depth + 1)

    for root in children.get("", []):
        walk(root, "", True, 0)
    return rows


SHOW_SAMES_HINT = "--show-sames, or make preview SHOW_SAMES=1, lists them"


def shown_resources(
    resources: list[RecordedResource], plan: change_plan.Plan | None, show_sames: bool
) -> list[RecordedResource]:
    """The tree's rows: as `pulumi preview` shows them, the resources with a step and their ancestors (for
    the tree's shape); unchanged ones only when asked. pulumi/pulumi pkg/backend/display/progress.go
    drops a row that `HideRowIfUnnecessary` (a `same` step without --show-sames) unless it has shown
    children."""
    if plan is None or show_sames:
        return resources
    same = {s.record.urn for s in plan.steps if s.op == "same" and not s.notes}
    by_urn = {r.urn: r for r in resources}
    kept: set[str] = set()
    for r in resources:
        if r.urn in same:
            continue
        current: RecordedResource | None = r
        while current is not None and current.urn not in kept:
            kept.add(current.urn)
            current = by_urn.get(current.parent)
    return [r for r in resources if r.urn in kept]


def format_report(run: ProgramRun, plan: change_plan.Plan | None = None, show_sames: bool = False) -> str:
    """The CLI's preview: GPU node impact first, the tree with each resource's step, the plan, the counts.

    Without a plan (no base) every resource is a create. Unchanged resources are a count (`Resources:`)
    unless ``show_sames``; the tree keeps the ancestors of what changes, for its shape.
    """
    shown = shown_resources(run.resources, plan, show_sames)
    rows = tree_lines(shown)
    steps = {s.record.urn: s for s in plan.steps if s.op != "delete"} if plan else {}
    deleted = [s for s in plan.steps if s.op == "delete"] if plan else []
    # Columns as wide as the whole tree's, so that a row sits where --show-sames would put it.
    every = tree_lines(run.resources)
    width = max(len(t) for _, t, _ in [*every, *(("", s.record.type, "") for s in deleted)]) + 2
    names = max(len(n) for _, _, n in every) + 2
    lines = [f"Previewing update ({run.stack}) offline: Pulumi mock runtime, nothing was sent to a cloud"]
    if plan is not None:
        impact = gpu_impact.gpu_node_lines(plan)
        if impact:
            lines += ["", "GPU nodes:"] + [f"  ! {line}" for line in impact]
        renamed = claim_templates.template_lines(plan)
        if renamed:
            lines += ["", "Claim templates:"] + [f"  ! {line}" for line in renamed]
    lines += ["", f"     {'Type':<{width}}Name"]
    for urn, type_column, name in rows:
        step = steps.get(urn)
        symbol, info = (step.symbol, _tree_info(step)) if step else ("+", "")
        lines.append(f" {symbol:<3} {type_column:<{width}}{name:<{names}}{info}".rstrip())
    lines += [f" {s.symbol:<3} {s.record.type:<{width}}{s.record.name:<{names}}delete" for s in deleted]
    hidden = sum(1 for r in run.resources if r.urn in steps) - sum(1 for r in shown if r.urn in steps)
    if hidden:
        lines.append(f"     ({hidden} other unchanged resources not shown: {SHOW_SAMES_HINT})")
    if plan is not None:
        lines += ["", *plan_lines.plan_lines(plan), *not_shown_lines(plan)]
    if run.outputs:
        lines += ["", "Outputs:"]
        lines += [f"    {k}: {_short(v)}" for k, v in sorted(run.outputs.items())]
    if plan is not None:
        lines += ["", *plan_lines.summary_lines(plan)]
    else:
        lines += ["", "Resources:", f"    + {len(run.resources)} to create"]
    return "\n".join(lines)


def _tree_info(step: change_plan.Step) -> str:
    if step.op in ("same", "create"):
        return ""
    return f"{step.op} [diff: {step.diff_info()}]"


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(", ", ": "))
    return text if len(text) <= 100 else text[:97] + "..."


# --- rendered/<stack>/ -------------------------------------------------------------------------------


def rendered_files(result: Preview, documents: dict[str, Any] | None = None) -> dict[str, str]:
    """Relative path -> text of `rendered/<stack>/` for this run (preview/rendering.py), with where each
    pod can run (preview/schedulability.py)."""
    files = rendering.render_files(result.run.resources, result.pack_config, documents)
    files[schedulability.PLACEMENT_FILE] = schedulability.placement_text(result.placement)
    return dict(sorted(files.items()))


def plan_against(files: dict[str, str], loaded: dict[str, Any], base: BaseFiles) -> change_plan.Plan:
    """The plan from the base rendering to this run's `files` (`loaded`: the run's parsed documents, so
    only the base's changed files are loaded)."""
    new = change_plan.parse(files, loaded)
    old = change_plan.parse(base.files, loaded) if base.files is not None else None
    return change_plan.build(old, new, base.description)


def not_shown_lines(plan: change_plan.Plan) -> list[str]:
    """What the stack applies that neither the plan nor the policy pack sees: the objects Helm renders
    from its charts and the manifests ConfigFiles fetch, both at apply time (every other object is a
    resource of the program)."""
    live = [s.record for s in plan.steps if s.op != "delete"]
    releases = sorted(r.name for r in live if r.type in resource_types.HELM_TYPES)
    manifests = sorted(
        f"{r.name} ({r.inputs.get('file')})" for r in live if r.type == mpi_operator.CONFIG_FILE_TYPE
    )
    lines = []
    if releases:
        lines.append(
            f"Not shown: the objects Helm renders from the charts of {', '.join(releases)} at apply time "
            "(the plan shows each release's chart, version and values)"
        )
    if manifests:
        lines.append(
            f"Not shown: the objects of the manifests that ConfigFile {', '.join(manifests)} fetches at "
            "apply time (the plan shows the manifest's URL, pinned to a commit)"
        )
    return lines


NO_CHANGES = "**No changes:** "


def summary_markdown(stack: str, plan: change_plan.Plan) -> str:
    """The plan for a CI job summary (GitHub Markdown): GPU node impact, plan lines, counts."""
    impact = gpu_impact.gpu_node_lines(plan) + claim_templates.template_lines(plan)
    body = ([*(f"! {line}" for line in impact), ""] if impact else []) + [
        *plan_lines.plan_lines(plan),
        *not_shown_lines(plan),
        "",
        *plan_lines.summary_lines(plan),
    ]
    return f"### Change plan: `{stack}`\n\n```text\n" + "\n".join(body) + "\n```\n\n"


def append_summary(path: Path, stack: str, plan: change_plan.Plan) -> None:
    """Add ``stack`` to the CI job summary at ``path``: a section if its plan changes anything, else its
    name on the summary's one closing line of stacks without changes.

    Each stack's preview is its own process (`make render`), so the closing line is read back and
    rewritten: it stays last, after every section, however the stacks are ordered.
    """
    text = path.read_text() if path.exists() else ""
    body, _, last = text.rstrip("\n").rpartition("\n")
    unchanged: list[str] = []
    if last.startswith(NO_CHANGES):
        unchanged = [name.strip("` ") for name in last[len(NO_CHANGES) :].split(",")]
        text = body + "\n" if body else ""
    if plan.has_changes():
        text += summary_markdown(stack, plan)
    else:
        unchanged.append(stack)
    if unchanged:
        text += NO_CHANGES + ", ".join(f"`{name}`" for name in unchanged) + "\n"
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--stack", default="dev", help="stack name: stacks/ or examples/Pulumi.<stack>.yaml (default dev)"
    )
    parser.add_argument(
        "--stacks-dir", type=Path, default=None, help="look only in this folder of Pulumi.<stack>.yaml files"
    )
    parser.add_argument("--rendered", type=Path, default=RENDERED_DIR, help="where rendered/<stack>/ goes")
    parser.add_argument(
        "--base",
        default="HEAD",
        help="git ref whose committed rendered/<stack>/ the plan starts from (default HEAD)",
    )
    parser.add_argument(
        "--base-dir", type=Path, default=None, help="a rendering folder to start from instead of --base"
    )
    parser.add_argument(
        "--summary",
        type=Path,
        default=None,
        help="add the plan as Markdown to this file (a stack without changes: its name on one closing line)",
    )
    parser.add_argument(
        "--show-sames",
        action="store_true",
        help="list unchanged resources in the tree too (as pulumi preview's)",
    )
    args = parser.parse_args(argv)
    try:
        # Read the base first: a --base that names no commit fails before the run, and --base-dir may be
        # the folder about to be replaced.
        if args.base_dir is not None:
            base = base_rendering.from_folder(args.base_dir)
        else:
            base = base_rendering.from_git(args.stack, args.base)
        result = preview(args.stack, [args.stacks_dir] if args.stacks_dir else STACK_DIRS)
    except (PreviewError, PackConfigError, base_rendering.BaseRefError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    # Rendered once: the plan reads the run's documents, and the same files are written below.
    loaded: dict[str, Any] = {}
    files = rendered_files(result, loaded)
    plan = plan_against(files, loaded, base)
    print(format_report(result.run, plan, args.show_sames))
    if args.summary is not None:
        append_summary(args.summary, args.stack, plan)
    where = args.rendered / args.stack
    shown = _shown(where)
    refusal = _refusal(result, plan)
    if refusal is None:
        rendering.write_files(files, where)
        objects = sum(1 for f in files if f.startswith(rendering.MANIFESTS + "/"))
        records = sum(1 for f in files if f.startswith(rendering.RESOURCES + "/"))
        print(
            f"\nRendered {records} resource record(s), {objects} Kubernetes manifest(s) and {PACK_CONFIG_FILE} "
            f"to {shown}/\n"
        )
    else:
        # As `pulumi preview`: a refused preview changes nothing, so the rendering a review diffs stays as it was.
        print(f"\nNot rendered: {shown}/ is left as it was, because the preview failed (below)\n")
    if result.templates:
        print("Claim templates by shape:")
        print(_indented(result.templates) + "\n")
    if result.placement.notes:
        print("Schedulability: not checked for pods that may run on pools outside this stack:")
        print(_indented(result.placement.notes) + "\n")
    if result.placement.settings:
        print(
            "GPU Operator: this cluster's own operator must have these settings (docs/gpu-operator-and-scheduling.md):"
        )
        print(_indented(result.placement.settings) + "\n")
    if result.schemas is not None:
        print("\n".join(result.schemas.lines()) + "\n")
    print(format_findings(result.findings) or "Policies: the oke-gpu-rdma pack reported nothing.")
    if refusal is not None:
        print(f"error: preview failed: {refusal}", file=sys.stderr)
        return 1
    return 0


def _refusal(result: Preview, plan: change_plan.Plan) -> str | None:
    """Why the preview fails after the run (as `pulumi preview` fails it), None when it passes."""
    if has_mandatory(result.findings):
        return "mandatory policy violations (above)"
    if result.schemas is not None and result.schemas.errors:
        return "manifests the Kubernetes API would refuse (Schemas, above)"
    if plan.refused():
        # As `pulumi preview` does: the engine reports a protected replacement or delete as an error.
        names = ", ".join(s.record.name for s in plan.refused())
        return (
            f"protected resources would be replaced or deleted: {names} "
            f"(set {change_plan.protect_setting(*plan.refused())} in the stack file to allow it)"
        )
    return None


if __name__ == "__main__":
    sys.exit(main())
