"""CEL pieces of the ValidatingAdmissionPolicies that narrow what RBAC cannot for the stack's own writers (the
rail health agent, components/health/rail_health.py; the scheduled fabric check, components/health/fabric_checks.py).

RBAC grants a verb on every object of a resource; a policy then refuses, at admission, any write that is not
the writer's own: kube-apiserver evaluates its matchConditions, variables and validations with `request`,
`object` and `oldObject` bound (k8s.io/apiserver pkg/admission/plugin/policy/validating; `object` is null on a
DELETE, `oldObject` on a CREATE). A PATCH (kubectl taint, label, annotate, patch) is admitted as an UPDATE
(pkg/endpoints/handlers/patch.go). The tests evaluate these expressions with cel-expr-python.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Final

# The key kube-apiserver puts the pod's node in for a bound service-account token (KEP-4193,
# ServiceAccountTokenPodNodeInfo: beta and on from 1.30, GA in 1.32; kubernetes
# staging/src/k8s.io/apiserver/pkg/authentication/serviceaccount/util.go NodeNameKey, set by UserInfo).
NODE_NAME_EXTRA: Final = "authentication.kubernetes.io/node-name"
# The pod's node from its bound token, '' when the token carries none (which no validation then passes).
TOKEN_NODE: Final = (
    f"has(request.userInfo.extra) && '{NODE_NAME_EXTRA}' in request.userInfo.extra && "
    f"size(request.userInfo.extra['{NODE_NAME_EXTRA}']) == 1 ? request.userInfo.extra['{NODE_NAME_EXTRA}'][0] : ''"
)


def service_account(namespace: str, name: str) -> list[dict[str, str]]:
    """matchConditions: the policy is about this ServiceAccount's requests only (the kubelet, an admin and
    every other writer pass untouched)."""
    return [
        {
            "name": f"the-{name}",
            "expression": f"request.userInfo.username == 'system:serviceaccount:{namespace}:{name}'",
        }
    ]


def resource_rule(
    group: str, resources: list[str], operations: list[str], versions: str = "v1"
) -> dict[str, Any]:
    """One matchConstraints resourceRule: ``operations`` on ``resources`` of API ``group`` ('' is core)."""
    return {"apiGroups": [group], "apiVersions": [versions], "operations": operations, "resources": resources}


def writer_policy(
    namespace: str,
    account: str,
    rules: list[dict[str, Any]],
    validations: list[dict[str, Any]],
    variables: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A ValidatingAdmissionPolicy spec about one ServiceAccount's requests matching ``rules``, refused when the
    API server cannot evaluate it (failurePolicy Fail), with ``validations`` (and ``variables``) as given."""
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": rules},
        "matchConditions": service_account(namespace, account),
        **({"variables": variables} if variables is not None else {}),
        "validations": validations,
    }


def is_taint(var: str, key: str, value: str, effect: str) -> str:
    """``var`` (a taint) is exactly key=value:effect."""
    return (
        f"{var}.key == '{key}' && has({var}.value) && {var}.value == '{value}' && "
        f"has({var}.effect) && {var}.effect == '{effect}'"
    )


def _or_empty(obj: str, field: str, empty: str) -> str:
    return f"(has({obj}.{field}) ? {obj}.{field} : {empty})"


def unchanged(field: str, empty: str) -> str:
    """``field`` of the node (``metadata.labels``, ``spec.unschedulable``) is the same before and after."""
    return f"{_or_empty('object', field, empty)} == {_or_empty('oldObject', field, empty)}"


def all_unchanged(*fields: tuple[str, str]) -> str:
    """Each (field, its empty value) of the node is the same before and after (:func:`unchanged`)."""
    return " && ".join(unchanged(f, e) for f, e in fields)


def only_key_changes(field: str, key: str) -> str:
    """A map ``field`` (labels, annotations) changes at ``key`` only."""
    new, old = _or_empty("object", field, "{}"), _or_empty("oldObject", field, "{}")
    return (
        f"{new}.all(k, k == '{key}' || (k in {old} && {old}[k] == {new}[k])) && "
        f"{old}.all(k, k == '{key}' || k in {new})"
    )


def only_own_taint_changes(key: str, value: str, effect: str) -> str:
    """The node's taints, but for the writer's own mark, are the same before and after: it adds or removes
    that mark and nothing else (another writer's value of the same key, or NoExecute, included)."""
    others = f"t, !({is_taint('t', key, value, effect)})"
    new, old = _or_empty("object", "spec.taints", "[]"), _or_empty("oldObject", "spec.taints", "[]")
    return f"{new}.filter({others}) == {old}.filter({others})"


def only_condition_changes(condition: str) -> str:
    """The node's conditions, but for ``condition``, are the same before and after (a status update)."""
    others = f"c, c.type != '{condition}'"
    new = _or_empty("object", "status.conditions", "[]")
    old = _or_empty("oldObject", "status.conditions", "[]")
    return f"{new}.filter({others}) == {old}.filter({others})"


# Every field of a Node at each Kubernetes minor, by section (node_fields.json, the API server's OpenAPI as
# kubernetes-validate ships it; tools/node_fields.py regenerates it), so that a policy compares the whole node but
# for the fields its writer may change: a field the policy does not name (ownerReferences, which let the garbage
# collector delete the node; finalizers; status.allocatable or addresses) is refused unchanged. The list is the
# server's own: a field it does not serve would not compile in its CEL (and fail every request of the writer).
NODE_FIELDS_FILE: Final = Path(__file__).with_name("node_fields.json")


@cache
def node_fields(kubernetes_minor: int) -> dict[str, tuple[str, ...]]:
    """The Node's fields by section at ``kubernetes_minor`` (the newest listed minor not newer than it)."""
    listed = json.loads(NODE_FIELDS_FILE.read_text())["fields"]
    fits = sorted((int(v.split(".")[1]), v) for v in listed if int(v.split(".")[1]) <= kubernetes_minor)
    if not fits:
        raise ValueError(f"{NODE_FIELDS_FILE.name} lists no Kubernetes minor up to 1.{kubernetes_minor}")
    return {section: tuple(fields) for section, fields in listed[fits[-1][1]].items()}


# What the API server itself changes on every write, whoever writes: the field manager's managedFields and the
# storage's resourceVersion (k8s.io/apiserver pkg/endpoints/handlers/fieldmanager, pkg/storage).
SERVER_SET: Final = ("metadata.managedFields", "metadata.resourceVersion")


def _same(path: str) -> str:
    """``path`` is present in both or neither, and equal where present (any field type)."""
    new, old = f"object.{path}", f"oldObject.{path}"
    return f"has({new}) == has({old}) && (!has({new}) || {new} == {old})"


def node_unchanged_but(kubernetes_minor: int, *allowed: str) -> str:
    """Every field of the node at ``kubernetes_minor`` (:func:`node_fields`) but ``allowed`` (``spec.taints``,
    ``metadata.labels``: the fields other validations judge) and :data:`SERVER_SET` is the same before and
    after."""
    fields_by_section = node_fields(kubernetes_minor)
    skip = {*allowed, *SERVER_SET}
    unknown = skip - {f"{s}.{f}" for s, fields in fields_by_section.items() for f in fields}
    if unknown:
        raise ValueError(f"not Node fields: {sorted(unknown)}")
    parts = []
    for section, fields in fields_by_section.items():
        same = " && ".join(_same(f"{section}.{f}") for f in fields if f"{section}.{f}" not in skip)
        parts.append(
            same
            if section == "metadata"
            else f"(has(object.{section}) == has(oldObject.{section}) && "
            f"(!has(object.{section}) || ({same})))"
        )
    return " && ".join(parts)


def named_with_prefix(prefix: str) -> str:
    """The object a request writes (or deletes) is named ``prefix``...: its writer's own."""
    return f"(request.operation == 'DELETE' ? oldObject : object).metadata.name.startsWith('{prefix}')"


# The DeviceTaintRule a request writes: the new one, or on a DELETE the one it deletes.
WRITTEN_RULE: Final = "(request.operation == 'DELETE' ? oldObject : object)"


def rule_owned_by_node(node: str) -> str:
    """The written DeviceTaintRule names no owner but the Node named by the CEL expression ``node``: its
    writers make the node its owner so that the garbage collector deletes it with the node (issue 35), and an
    owner reference to anything else would let the collector delete the rule (or keep it) on another object's
    account."""
    refs = f"{WRITTEN_RULE}.metadata.ownerReferences"
    return f"!has({refs}) || {refs}.all(r, r.apiVersion == 'v1' && r.kind == 'Node' && r.name == {node})"


def rule_selects_one_device(driver: str, pool: str | None = None) -> str:
    """The written DeviceTaintRule selects one device of ``driver`` (of the pool named by the CEL expression
    ``pool``, when given): an empty selector would match every device (k8s.io/api resource/v1
    DeviceTaintSelector)."""
    selector = f"{WRITTEN_RULE}.spec.deviceSelector"
    expr = f"has({selector}.driver) && {selector}.driver == '{driver}' && has({selector}.device)"
    if pool is not None:
        expr += f" && has({selector}.pool) && {selector}.pool == {pool}"
    return expr
