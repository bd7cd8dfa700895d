"""A ValidatingAdmissionPolicy evaluated as kube-apiserver evaluates one (k8s.io/apiserver pkg/admission/plugin/
policy/validating): its matchConditions decide whether the request is the policy's at all, then its variables
are computed in order, then every validation must hold. CEL by cel-expr-python, with `request`, `object`,
`oldObject` and `variables` as the API server binds them (`object` is null on a DELETE, `oldObject` on a
CREATE)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cel_expr_python import cel

_ENV = cel.NewEnv(variables={name: cel.Type.DYN for name in ("request", "object", "oldObject", "variables")})


def _eval(expression: str, data: Mapping[str, Any]) -> Any:
    result = _ENV.compile(expression).eval(data=dict(data))
    if result.type() == cel.Type.ERROR:
        raise AssertionError(f"{expression}: {result.value()}")
    return result.value()


def denials(
    policy: Mapping[str, Any],
    request: Mapping[str, Any],
    obj: Mapping[str, Any] | None,
    old: Mapping[str, Any] | None = None,
) -> list[str] | None:
    """The messages of the validations that fail (``[]``: admitted), or None when the policy's match conditions
    leave the request alone."""
    data: dict[str, Any] = {"request": request, "object": obj, "oldObject": old, "variables": {}}
    if not all(_eval(c["expression"], data) is True for c in policy.get("matchConditions", [])):
        return None
    for variable in policy.get("variables", []):
        data["variables"] = {**data["variables"], variable["name"]: _eval(variable["expression"], data)}
    return [v["message"] for v in policy["validations"] if _eval(v["expression"], data) is not True]
