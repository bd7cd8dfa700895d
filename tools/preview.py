"""`make preview`: what `pulumi preview` would show for a stack, computed offline.

Runs the program under the mock runtime with `stacks/Pulumi.<stack>.yaml`, prints the resource
tree and the count to create, and writes every Kubernetes object the program declares to
`rendered/<stack>/` as YAML (one file per object, stable names and field order) so that pull
requests show manifest changes as plain diffs, with the policy pack config derived from the stack.
Then it runs the policy pack on the recorded resources, prints its findings as the CLI does, and
exits 1 on a mandatory violation.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import yaml

from oke_gpu_rdma import yamltext
from stack_config import placement
from stack_config.loading import parse_stack_config, raw_config, stack_source
from stack_config.pack_config import FILENAME as PACK_CONFIG_FILE
from stack_config.pack_config import policy_pack_config

from .mock_runtime import ROOT, ProgramRun, RecordedResource, pulumi_config_map, run_program
from .policy_check import Finding, PackConfigError, analyze_run, format_findings, has_mandatory
from .stack_list import EXAMPLES, USER_STACKS, stack_names

STACKS_DIR = USER_STACKS
# Where `--stack NAME` is looked up: the user's stacks first, then the examples.
STACK_DIRS = (USER_STACKS, EXAMPLES)
RENDERED_DIR = ROOT / "rendered"
# Resources that are Kubernetes objects a reviewer reads as manifests (not providers).
_NOT_MANIFESTS = ("pulumi:providers:",)


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
    path = stack_file(stack, dirs)
    try:
        document = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise PreviewError(f"{_shown(path)} is not valid YAML: {err}") from None
    if not isinstance(document, Mapping) or not isinstance(document.get("config") or {}, Mapping):
        raise PreviewError(f"{_shown(path)} must be a mapping with a `config:` mapping of keys to values")
    return pulumi_config_map(document)


@dataclass
class Preview:
    """An offline run, the pack config derived from the stack, and what the policy pack found."""

    run: ProgramRun
    pack_config: dict[str, Any]
    findings: list[Finding]


def preview(stack: str, dirs: Sequence[Path] = STACK_DIRS) -> Preview:
    """Run the program offline, then the policy pack on what it declared.

    A config problem becomes a PreviewError with the program's own message, naming the file previewed
    (the program names stacks/Pulumi.<stack>.yaml, where the CLI keeps stack files).
    """
    config_map = load_stack(stack, dirs)
    try:
        run = run_program(stack, config_map)
    except pulumi.RunError as err:
        raise PreviewError(str(err).replace(stack_source(stack), _shown(stack_file(stack, dirs)))) from None
    # The program accepted this config, so parsing it again cannot fail.
    stack_config = parse_stack_config(
        raw_config(config_map), stack_source(stack), config_map.get(placement.REGION_KEY)
    )
    pack_config = policy_pack_config(stack_config).to_dict()
    return Preview(run, pack_config, analyze_run(run, pack_config))


def _shown(path: Path) -> str:
    """Paths relative to the repository, as users type them; stacks kept elsewhere by their base name."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else f"stacks/{path.name}"


# --- the resource tree ---------------------------------------------------------------------------


def tree_lines(resources: list[RecordedResource]) -> list[tuple[str, str]]:
    """(type column, name) rows drawn like the CLI's preview tree, siblings sorted by name."""
    children: dict[str, list[RecordedResource]] = {}
    for r in resources:
        children.setdefault(r.parent, []).append(r)
    # Registration order depends on when outputs resolve; siblings by name keep the report stable.
    for siblings in children.values():
        siblings.sort(key=lambda r: (r.name, r.type))
    rows: list[tuple[str, str]] = []

    def walk(node: RecordedResource, prefix: str, last: bool, depth: int) -> None:
        branch = "" if depth == 0 else prefix + ("└─ " if last else "├─ ")
        rows.append((branch + node.type, node.name))
        kids = children.get(node.urn, [])
        deeper = "" if depth == 0 else prefix + ("   " if last else "│  ")
        for i, kid in enumerate(kids):
            walk(kid, deeper, i == len(kids) - 1, depth + 1)

    for root in children.get("", []):
        walk(root, "", True, 0)
    return rows


def format_report(run: ProgramRun) -> str:
    rows = tree_lines(run.resources)
    width = max(len(t) for t, _ in rows) + 2
    lines = [
        f"Previewing update ({run.stack}) offline: Pulumi mock runtime, nothing was sent to a cloud",
        "",
        f"     {'Type':<{width}}Name",
    ]
    lines += [f" +   {t:<{width}}{n}" for t, n in rows]
    if run.outputs:
        lines += ["", "Outputs:"]
        lines += [f"    {k}: {_short(v)}" for k, v in sorted(run.outputs.items())]
    lines += ["", "Resources:", f"    + {len(run.resources)} to create"]
    return "\n".join(lines)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(", ", ": "))
    return text if len(text) <= 100 else text[:97] + "..."


# --- rendered manifests ----------------------------------------------------------------------------


def manifests(resources: Iterable[RecordedResource]) -> dict[str, dict[str, Any]]:
    """File name -> manifest for each Kubernetes object the program declares."""
    out: dict[str, dict[str, Any]] = {}
    for r in resources:
        if not r.type.startswith("kubernetes:") or r.type.startswith(_NOT_MANIFESTS):
            continue
        document = manifest(r)
        meta = document.get("metadata") or {}
        namespace = meta.get("namespace") or "_cluster"
        filename = f"{document['kind']}.{namespace}.{meta.get('name', r.name)}.yaml".lower()
        out[filename] = document
    return out


def manifest(r: RecordedResource) -> dict[str, Any]:
    """The object as YAML would show it: apiVersion, kind, metadata first, the rest sorted."""
    group_version, kind = r.type.removeprefix("kubernetes:").split(":", 1)
    group_version = group_version.removeprefix("core/")  # the core group has no name in apiVersion
    inputs = dict(r.inputs)
    if r.type.startswith("kubernetes:helm.sh/"):
        # A Helm release is no API object; show it with its chart, version and values
        # (`compat` is the provider's own bookkeeping, not the user's).
        inputs.pop("compat", None)
        metadata = {"name": inputs.pop("name", r.name), "namespace": inputs.pop("namespace", None)}
        head = {"apiVersion": group_version, "kind": kind, "metadata": _sorted(metadata)}
    else:
        head = {
            "apiVersion": inputs.pop("apiVersion", group_version),
            "kind": inputs.pop("kind", kind),
            "metadata": _sorted(inputs.pop("metadata", {"name": r.name})),
        }
    return {**head, **{k: _sorted(inputs[k]) for k in sorted(inputs)}}


def _sorted(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _sorted(value[k]) for k in sorted(value) if value[k] is not None}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def write_rendered(result: Preview, out_dir: Path = RENDERED_DIR) -> list[Path]:
    """Replace `out_dir/<stack>/` with the run's manifests and the pack config; returns the manifests."""
    target = out_dir / result.run.stack
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    written = []
    for filename, document in sorted(manifests(result.run.resources).items()):
        path = target / filename
        path.write_text(yamltext.dump(document))
        written.append(path)
    (target / PACK_CONFIG_FILE).write_text(json.dumps(result.pack_config, indent=2, sort_keys=True) + "\n")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--stack", default="dev", help="stack name: stacks/ or examples/Pulumi.<stack>.yaml (default dev)"
    )
    parser.add_argument(
        "--stacks-dir", type=Path, default=None, help="look only in this folder of Pulumi.<stack>.yaml files"
    )
    parser.add_argument("--rendered", type=Path, default=RENDERED_DIR, help="where manifests go")
    args = parser.parse_args(argv)
    try:
        result = preview(args.stack, [args.stacks_dir] if args.stacks_dir else STACK_DIRS)
    except (PreviewError, PackConfigError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(format_report(result.run))
    written = write_rendered(result, args.rendered)
    where = args.rendered / args.stack
    shown = _shown(where) if where.is_relative_to(ROOT) else str(where)
    print(f"\nRendered {len(written)} Kubernetes object(s) and {PACK_CONFIG_FILE} to {shown}/\n")
    print(format_findings(result.findings) or "Policies: the oke-gpu-rdma pack reported nothing.")
    if has_mandatory(result.findings):
        print("error: preview failed: mandatory policy violations (above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
