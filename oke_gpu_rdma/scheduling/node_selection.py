"""Which nodes a pod template selects: `nodeSelector` and required node affinity against node labels.

Rules from Kubernetes `staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity/
nodeaffinity.go` (and the NodeSelectorRequirement doc in `k8s.io/api/core/v1/types.go`): every
`nodeSelector` label must equal the node's; `requiredDuringSchedulingIgnoredDuringExecution.
nodeSelectorTerms` are ORed, the `matchExpressions` of one term ANDed, and an empty term matches no node;
operators In, NotIn (also true when the label is missing), Exists, DoesNotExist, Gt and Lt (the label
parsed as an integer). `matchFields` select on node fields (metadata.name) that no pool knows before
its nodes exist: such a term is reported as not decidable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class SelectionError(ValueError):
    """A selector or affinity that does not have the Kubernetes form; the message names the path."""


def _int(text: object) -> int | None:
    try:
        return int(str(text))
    except ValueError:
        return None


def requirement_matches(req: Mapping[str, Any], labels: Mapping[str, str], where: str) -> bool:
    key, op, values = req.get("key"), req.get("operator"), req.get("values") or []
    if not isinstance(key, str) or not isinstance(values, list):
        raise SelectionError(f"{where} needs a key string and a values list")
    present = key in labels
    value = labels.get(key)
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return not present or value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if len(values) != 1 or _int(values[0]) is None:
            raise SelectionError(f"{where}: {op} needs one integer value")
        have = _int(value) if present else None
        if have is None:
            return False
        bound = _int(values[0])
        assert bound is not None
        return have > bound if op == "Gt" else have < bound
    raise SelectionError(f"{where}.operator {op!r} is not In, NotIn, Exists, DoesNotExist, Gt or Lt")


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def affinity_matches(
    affinity: Mapping[str, Any], labels: Mapping[str, str], where: str = "affinity"
) -> bool | None:
    """Whether the required node affinity admits a node with ``labels``; None when it depends on node
    fields (matchFields) no pool knows."""
    node = affinity.get("nodeAffinity")
    if node is None:
        return True
    if not isinstance(node, Mapping):
        raise SelectionError(f"{where}.nodeAffinity must be an object")
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True  # preferred terms only weigh nodes, they exclude none
    base = f"{where}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    if not isinstance(required, Mapping) or not isinstance(required.get("nodeSelectorTerms"), list):
        raise SelectionError(f"{base} needs a nodeSelectorTerms list")
    undecided = False
    for i, term in enumerate(required["nodeSelectorTerms"]):
        where_term = f"{base}.nodeSelectorTerms[{i}]"
        if not isinstance(term, Mapping):
            raise SelectionError(f"{where_term} must be an object")
        exprs = term.get("matchExpressions") or []
        fields = term.get("matchFields") or []
        if not isinstance(exprs, list) or not isinstance(fields, list):
            raise SelectionError(f"{where_term}: matchExpressions and matchFields are lists")
        if not exprs and not fields:
            continue  # an empty term matches no node
        ok = True
        for j, req in enumerate(exprs):
            if not isinstance(req, Mapping):
                raise SelectionError(f"{where_term}.matchExpressions[{j}] must be an object")
            ok = ok and requirement_matches(req, labels, f"{where_term}.matchExpressions[{j}]")
        if ok and fields:
            undecided = True
            continue
        if ok:
            return True
    return None if undecided else False


def may_select(
    node_selector: Mapping[str, Any],
    affinity: Mapping[str, Any],
    labels: Mapping[str, str],
    later_keys: frozenset[str] = frozenset(),
) -> bool:
    """Whether a pod with this nodeSelector and node affinity may be placed on a node with ``labels`` by
    kube-scheduler's NodeAffinity Filter (kubernetes v1.36.4 pkg/scheduler/framework/plugins/nodeaffinity/
    node_affinity.go l. 218-239, which matches `GetRequiredNodeAffinity`: the nodeSelector, then the required
    terms; component-helpers v0.36.4 scheduling/corev1/nodeaffinity/nodeaffinity.go l. 306-331).

    ``later_keys`` are label keys the node carries whose values are known only once it runs (the fabric levels
    its cloud-init writes, its hostname): a requirement on one of them that ``labels`` does not hold is taken
    as met. A term on node fields (matchFields) or a malformed affinity is not decided here: True.
    """
    unknown = later_keys - set(labels)
    if not selector_matches({k: v for k, v in node_selector.items() if k not in unknown}, labels):
        return False
    node = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = (
        node.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(node, Mapping) else None
    )
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    if not isinstance(terms, list):
        return True
    kept: list[Any] = []
    for term in terms:
        exprs = term.get("matchExpressions") if isinstance(term, Mapping) else None
        if isinstance(exprs, list) and exprs and unknown:
            # A key of the wrong type (a list) is no known-at-run-time key: the schema check reports it.
            known = [
                e
                for e in exprs
                if not (isinstance(e, Mapping) and isinstance(e.get("key"), str) and e.get("key") in unknown)
            ]
            if not known and not term.get("matchFields"):
                return True  # every requirement of this term is on a value known only at run time
            term = {**term, "matchExpressions": known}
        kept.append(term)
    cut = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": kept}}}
    try:
        return affinity_matches(cut, labels) is not False
    except SelectionError:
        return True
