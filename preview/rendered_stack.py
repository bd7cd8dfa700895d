"""`rendered/<stack>/` read back as the registrations the engine analyzes, for a policy pack run on a rendering.

preview/rendering.py writes each resource readable; this undoes what it can, on the records
preview/plan/change_plan.py parses: a Kubernetes object's inputs are its manifest, the cloud-init it decoded
(`decodedFromBase64`) is base64 again, `(known after apply)` is the engine's unknown value again, and parents,
providers and dependencies are URNs again. What the rendering keeps no more stays as it shows it: the id of
a resource the stack creates is its `${<name>.id}` text (offline it was a placeholder OCID), a secret is
`[secret]`.

    stack = read_rendered("dev")
    single, whole = policy_check.analyze_requests(stack.resources)
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf import struct_pb2
from pulumi.runtime import rpc

from . import base_rendering
from .mock_runtime import ROOT, STACK_TYPE, UNKNOWN_TEXT, RecordedResource
from .plan import change_plan
from .rendering import RESOURCES

RENDERED_DIR = ROOT / "rendered"


class RenderedStackError(Exception):
    """No rendering to read; the message names the folder and the command that writes it."""


@dataclass(frozen=True)
class RenderedStack:
    """`rendered/<stack>/` as the engine would send it: its resources, its project, its pack config."""

    name: str
    path: Path
    project: str
    resources: list[RecordedResource]
    pack_config: Mapping[str, Any]
    """policy-pack-config.json ({} without one): the stack's settings for this project's policies."""


def shown_path(path: Path) -> str:
    """A path as users type it: relative to the repository when inside it."""
    path = path.absolute()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def read_rendered(stack: str, rendered: Path = RENDERED_DIR) -> RenderedStack:
    folder = rendered / stack
    if not folder.is_dir():
        known = sorted(p.name for p in rendered.iterdir() if p.is_dir()) if rendered.is_dir() else []
        raise RenderedStackError(
            f"{shown_path(folder)}/ does not exist; run make preview STACK={stack} to render it "
            f"(rendered stacks: {', '.join(known) or 'none'})"
        )
    base = base_rendering.from_folder(folder, shown_path(folder))
    if base.files is None:
        raise RenderedStackError(
            f"{shown_path(folder)}/ has no {RESOURCES}/ records; run make preview STACK={stack} to render it again"
        )
    loaded: dict[str, Any] = {}
    rendering = change_plan.parse(base.files, loaded)
    # parse() keeps each file's document in `loaded` (text -> document): the records' decodedFromBase64.
    decoded = {
        doc["urn"]: frozenset(doc.get("decodedFromBase64") or ())
        for path, text in base.files.items()
        if path.startswith(f"{RESOURCES}/") and isinstance(doc := loaded.get(text), Mapping) and "urn" in doc
    }
    urns = {label: record.urn for label, record in rendering.by_label().items()}
    resources = [
        registration(record, urns, decoded.get(record.urn, frozenset()))
        for record in rendering.records.values()
    ]
    config = rendering.pack_config if isinstance(rendering.pack_config, Mapping) else {}
    # urn:pulumi:<stack>::<project>::<type>::<name>
    project = next((r.urn.split("::")[1] for r in resources if r.urn.count("::") >= 3), "")
    return RenderedStack(stack, folder, project, resources, config)


def registration(
    record: change_plan.Record, urns: Mapping[str, str], decoded: frozenset[str] = frozenset()
) -> RecordedResource:
    """A record as the engine registered it: labels (`urns`: label -> URN) back to URNs, inputs as it held them."""
    inputs = engine_value(record.inputs, "", decoded)
    struct = struct_pb2.Struct()
    struct.update(inputs)
    return RecordedResource(
        urn=record.urn,
        type=record.type,
        name=record.name,
        custom=record.type
        != STACK_TYPE,  # no analyzer request carries it, and the rendering does not keep it
        parent=urns.get(record.parent, ""),
        inputs=inputs,
        struct=struct,
        id="",
        provider=urns.get(record.provider, ""),
        dependencies=[urns[label] for label in record.depends_on if label in urns],
    )


def engine_value(value: Any, path: str, decoded: frozenset[str]) -> Any:
    """A rendered value as the engine held it: the inverse of preview/rendering.py's readable values, at the
    paths it lists them by (`a.b`, `a[0]`)."""
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            sub = f"{path}.{key}" if path else str(key)
            if sub in decoded and isinstance(item, str):
                out[str(key)] = base64.b64encode(item.encode()).decode()
            else:
                out[str(key)] = engine_value(item, sub, decoded)
        return out
    if isinstance(value, list):
        return [engine_value(item, f"{path}[{i}]", decoded) for i, item in enumerate(value)]
    if value == UNKNOWN_TEXT:
        return rpc.UNKNOWN
    if isinstance(value, datetime.date):  # a YAML timestamp; the engine had the text
        return value.isoformat()
    return value
