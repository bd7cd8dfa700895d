"""A custom resource against its CRD's structural schema, as the API server checks it on create.

The API server validates a custom resource against the CRD version's openAPIV3Schema (types, required fields,
enums, patterns, min/max bounds: k8s.io/apiextensions-apiserver pkg/apiserver/validation), refuses or drops
fields the schema does not declare (pruning; with fieldValidation=Strict a refusal, which this check follows,
so a misspelt field fails here), and then evaluates the schema's `x-kubernetes-validations` CEL rules on each
value that declares them (pkg/apiserver/schema/cel). Rules that read `oldSelf` are transition rules, evaluated
only on update: a create skips them, as here, and the report counts them.

The schemas are the operators' own at the pinned tags (oke_gpu_rdma/common/crd_schemas.py); jsonschema comes with kubernetes-validate
(requirements-preview.txt), cel-expr-python with the program.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from cel_expr_python import cel

_ENV = cel.NewEnv(variables={"self": cel.Type.DYN})
_RULE_KEYS = ("x-kubernetes-validations",)


@dataclass
class CrdReport:
    errors: list[str] = field(default_factory=list)
    """`<path>: <message>`, one per violation."""
    transition_rules: int = 0
    """Rules skipped because they read oldSelf (update-only)."""


def strict(schema: Any) -> Any:
    """The schema with every object that declares its properties closed to others (unless it preserves unknown
    fields or declares additionalProperties itself)."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {k: strict(v) for k, v in schema.items() if k not in _RULE_KEYS}
    if (
        "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def _walk(schema: Mapping[str, Any], value: Any, path: str) -> Iterator[tuple[str, Mapping[str, Any], Any]]:
    """Each (path, schema node, value) pair the value has, for the nodes that carry CEL rules."""
    if schema.get("x-kubernetes-validations"):
        yield path, schema, value
    if isinstance(value, Mapping):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            child = properties.get(key) or (extra if isinstance(extra, Mapping) else None)
            if child is not None:
                yield from _walk(child, item, f"{path}.{key}")
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            yield from _walk(schema["items"], item, f"{path}[{i}]")


def _rule_holds(rule: str, value: Any) -> bool | str:
    try:
        result = _ENV.compile(rule).eval(data={"self": value})
    except Exception as exc:  # a compile or runtime error: the API server refuses the object too
        return f"rule {rule!r} could not be evaluated: {exc}"
    if result.type() != cel.Type.BOOL:
        return f"rule {rule!r} gave {result.value()!r}"
    return bool(result.value())


def check(manifest: Mapping[str, Any], schema: Mapping[str, Any]) -> CrdReport:
    """The violations of ``manifest`` against ``schema`` (the CRD version's openAPIV3Schema)."""
    report = CrdReport()
    validator = jsonschema.Draft7Validator(strict(schema))
    for error in sorted(validator.iter_errors(dict(manifest)), key=lambda e: list(e.absolute_path)):
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path) or "."
        report.errors.append(f"{where}: {error.message}")
    for path, node, value in _walk(schema, manifest, ""):
        for rule in node["x-kubernetes-validations"]:
            if "oldSelf" in rule["rule"]:
                report.transition_rules += 1
                continue
            held = _rule_holds(rule["rule"], value)
            if held is not True:
                message = rule.get("message") or f"failed rule: {rule['rule']}"
                report.errors.append(f"{path or '.'}: {message if held is False else held}")
    return report
