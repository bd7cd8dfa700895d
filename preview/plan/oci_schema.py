"""Update or replace for an OCI input path, from terraform-provider-oci's schema (`oci_schema_rules.json`).

pulumi-oci bridges terraform-provider-oci, so a change replaces exactly when Terraform's plan says
`RequiresNew`. terraform-plugin-sdk v2 decides that from the schema (helper/schema/schema.go):

- a scalar, or a map, list or set of primitives: `ForceNew` on the field (`finalizeDiff`; `diffList`
  and `diffSet` copy the collection's `ForceNew` onto each primitive element, `diffMap` onto each key);
- a nested block (a list or set of `schema.Resource`): its own `ForceNew` only through its element
  count (`field.#`), that is when the block or one of its elements is added or removed; a change
  inside an element is decided by the fields that change;
- a set of blocks has no stable indices: an element whose fields change is one removed and one added
  (its hash changes), which replaces when the set is `ForceNew`, or when the element's schema has a
  `ForceNew` field (removing the old element diffs every field of it to empty);
- `CustomizeDiff: customdiff.ForceNewIfChange(path, f)`: replaces when that path changes and `f`
  says so; the ones OCI uses here replace once the old value is set (the endpoint subnet of a cluster).

The data file records the schema with its provenance; `python -m tools.oci_schema_rules` regenerates it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA_FILE = Path(__file__).with_name("oci_schema_rules.json")


@dataclass(frozen=True)
class SchemaVerdict:
    """What Terraform's plan does with a change at one input path."""

    replaces: bool
    why: str
    known: bool = True
    """False when the schema has no such resource or field (the plan then says so and takes a replace)."""


@functools.cache
def rules() -> Mapping[str, Any]:
    data: Mapping[str, Any] = json.loads(DATA_FILE.read_text())
    return data


def provenance() -> str:
    p = rules()["provenance"]
    return f"terraform-provider-oci {p['version']}"


def _has_force_new(fields: Mapping[str, Any]) -> bool:
    return any(
        f["forceNew"] or (f["kind"] == "block" and _has_force_new(f["fields"])) for f in fields.values()
    )


def _force_new_set(fields: Mapping[str, Any], value: object, prefix: str = "") -> list[str]:
    """The ForceNew fields that `value` (one block element, or a list of them) sets."""
    if isinstance(value, list):
        return [name for item in value for name in _force_new_set(fields, item, prefix)]
    if not isinstance(value, Mapping):
        return []
    found: list[str] = []
    for name, item in value.items():
        field = fields.get(name)
        if field is None or item in (None, "", [], {}):
            continue
        if field["forceNew"]:
            found.append(f"{prefix}{name}")
        elif field["kind"] == "block":
            found += _force_new_set(field["fields"], item, f"{prefix}{name}.")
    return found


def _shown(walked: Sequence[str | int]) -> str:
    return "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in walked).lstrip(".")


def verdict(token: str, path: Sequence[str | int], old: object = None, new: object = None) -> SchemaVerdict:
    """Whether a change at `path` (engine names; ints are list indices) replaces the resource.

    `old` and `new` are the values at `path` before and after (None: absent), which tell an added or
    removed block or element from one that changed inside.
    """
    resource = rules()["resources"].get(token)
    if resource is None:
        return SchemaVerdict(True, f"no schema recorded for {token}", known=False)
    source = f"{resource['terraform']} ({provenance()})"
    for rule in resource.get("forceNewIfChange", []):
        if _shown(path) == rule["path"] and old not in (None, ""):
            return SchemaVerdict(True, f"{source}: CustomizeDiff ForceNewIfChange on {rule['path']}")
    fields: Mapping[str, Any] = resource["fields"]
    walked: list[str | int] = []
    i = 0
    while i < len(path):
        segment = path[i]
        field = fields.get(str(segment)) if not isinstance(segment, int) else None
        if field is None:
            return SchemaVerdict(
                True, f"{source} has no input {_shown([*walked, segment])}: taken as a replace", known=False
            )
        walked.append(segment)
        rest = path[i + 1 :]
        shown = _shown(walked)
        if field["kind"] != "block":
            # A scalar, or a primitive list/set/map: every element inherits the field's ForceNew.
            return SchemaVerdict(
                field["forceNew"], f"{source}: {shown} is{'' if field['forceNew'] else ' not'} ForceNew"
            )
        whole_element = not field["object"] and len(rest) == 1 and isinstance(rest[0], int)
        if not rest or whole_element:
            # The block, or one element of it, is added or removed: its count changes (ForceNew on the
            # block), and every field of the element diffs from or to empty (ForceNew on a field).
            element = new if old is None else old
            fixed = _force_new_set(field["fields"], element)
            if field["forceNew"] or fixed:
                why = f"block {shown} is ForceNew" if field["forceNew"] else f"{', '.join(fixed)} ForceNew"
                return SchemaVerdict(True, f"{source}: {shown} added or removed; {why}")
            return SchemaVerdict(False, f"{source}: {shown} added or removed; nothing in it is ForceNew")
        if field["object"]:
            fields = field["fields"]
            i += 1
            continue
        if rest and isinstance(rest[0], int):
            walked.append(rest[0])
            i += 1
        if field["collection"] == "set":
            replaces = field["forceNew"] or _has_force_new(field["fields"])
            return SchemaVerdict(
                replaces,
                f"{source}: {shown} is a set, so a changed element is removed and added; "
                + (
                    "the set or a field of its elements is ForceNew"
                    if replaces
                    else "nothing in it is ForceNew"
                ),
            )
        fields = field["fields"]
        i += 1
    return SchemaVerdict(False, f"{source}: {_shown(walked)} is not ForceNew")


def docstring_disagreements() -> list[tuple[str, str, bool]]:
    """(type, input path, what the SDK's "(Updatable)" docstrings say: True = update) for every leaf
    input where the docstrings and the schema disagree about changing a value that stays set."""
    from . import oci_updatable  # the cross-check only: the plan itself never reads the docstrings

    found: list[tuple[str, str, bool]] = []
    for token, resource in rules()["resources"].items():
        for dotted, updatable in sorted(oci_updatable.table(token, depth=8).items()):
            path = _engine_path(resource["fields"], dotted.split("."))
            if path is None:
                continue
            if verdict(token, path, "old", "new").replaces == updatable:
                found.append((token, dotted, updatable))
    return found


def _engine_path(fields: Mapping[str, Any], names: Sequence[str]) -> tuple[str | int, ...] | None:
    """A leaf's path as the engine names it (`[0]` for list blocks); None for a block or unknown name."""
    path: list[str | int] = []
    field: Mapping[str, Any] | None = None
    for name in names:
        field = fields.get(name)
        if field is None:
            return None
        path.append(name)
        if field["kind"] == "block":
            if not field["object"]:
                path.append(0)
            fields = field["fields"]
    if field is None or field["kind"] == "block":
        return None
    return tuple(path)
