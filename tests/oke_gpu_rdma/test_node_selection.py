"""Node affinity as k8s.io/component-helpers/scheduling/corev1/nodeaffinity evaluates it."""

from __future__ import annotations

import pytest

from oke_gpu_rdma.node_selection import SelectionError, affinity_matches, selector_matches

LABELS = {"node.kubernetes.io/instance-type": "BM.GPU.B4.8", "gpus": "8"}


def terms(*terms):
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def expr(key, op, *values):
    return {"key": key, "operator": op, "values": list(values)}


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        ({"matchExpressions": [expr("gpus", "Gt", "4")]}, True),
        ({"matchExpressions": [expr("gpus", "Lt", "4")]}, False),
        ({"matchExpressions": [expr("missing", "NotIn", "x")]}, True),
        ({"matchExpressions": [expr("gpus", "Exists"), expr("missing", "Exists")]}, False),  # ANDed
        ({}, False),  # an empty term matches no node
    ],
)
def test_one_term(term, expected):
    assert affinity_matches(terms(term), LABELS) is expected


def test_terms_are_ored_and_match_fields_are_undecided():
    assert affinity_matches(terms({}, {"matchExpressions": [expr("gpus", "In", "8")]}), LABELS) is True
    fields = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
    assert affinity_matches(terms(fields), LABELS) is None


def test_no_required_affinity_admits_every_node_and_bad_operators_raise():
    assert affinity_matches({}, LABELS) is True
    assert selector_matches({}, LABELS) and not selector_matches({"gpus": "4"}, LABELS)
    with pytest.raises(SelectionError):
        affinity_matches(terms({"matchExpressions": [expr("gpus", "Near", "8")]}), LABELS)
