"""Node affinity as k8s.io/component-helpers/scheduling/corev1/nodeaffinity evaluates it."""

from __future__ import annotations

import pytest

from oke_gpu_rdma.scheduling.node_selection import (
    SelectionError,
    affinity_matches,
    may_select,
    selector_matches,
)

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


BLOCK = "oke-gpu-rdma/rdma-local-block"  # a value the node learns when it boots


def test_may_select_applies_the_node_selector_then_the_required_terms():
    """GetRequiredNodeAffinity: the nodeSelector must match, then one required term."""
    assert may_select({"gpus": "8"}, {}, LABELS)
    assert not may_select({"gpus": "4"}, {}, LABELS)
    assert not may_select({}, terms({"matchExpressions": [expr("gpus", "In", "4")]}), LABELS)
    assert may_select(
        {},
        terms(
            {"matchExpressions": [expr("gpus", "In", "4")]}, {"matchExpressions": [expr("gpus", "Gt", "4")]}
        ),
        LABELS,
    )


def test_may_select_takes_a_requirement_on_a_value_known_only_at_boot_as_met():
    later = frozenset({BLOCK})
    assert may_select({BLOCK: "b1"}, {}, LABELS, later) and not may_select({BLOCK: "b1"}, {}, LABELS)
    assert may_select({}, terms({"matchExpressions": [expr(BLOCK, "In", "b1")]}), LABELS, later)
    # Its other requirements still count.
    assert not may_select({BLOCK: "b1", "gpus": "4"}, {}, LABELS, later)
    both = terms({"matchExpressions": [expr(BLOCK, "In", "b1"), expr("gpus", "In", "4")]})
    assert not may_select({}, both, LABELS, later)
    # Node fields and malformed terms are not decided here.
    assert may_select({}, terms({"matchFields": [expr("metadata.name", "In", "n1")]}), LABELS)
    assert may_select({}, terms({"matchExpressions": [expr("gpus", "Near", "8")]}), LABELS)
