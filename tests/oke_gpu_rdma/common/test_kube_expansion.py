"""$(VAR) expansion as kubernetes third_party/forked/golang/expansion/expand.go does it (its test cases)."""

from __future__ import annotations

import pytest

from oke_gpu_rdma.common.kube_expansion import expand, mapping_for

ENV = {"VAR_A": "A", "VAR_B": "B", "VAR_EMPTY": "", "VAR_REF": "$(VAR_A)"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(VAR_A)", "A"),
        ("___$(VAR_B)___", "___B___"),
        ("$(VAR_A)-$(VAR_B)", "A-B"),
        ("$(VAR_EMPTY)", ""),
        ("$(VAR_REF)", "$(VAR_A)"),  # one pass: a value is not expanded again
        ("$(UNKNOWN)", "$(UNKNOWN)"),  # an unknown name stays as written
        ("$$(VAR_A)", "$(VAR_A)"),  # `$$` escapes
        ("$$$(VAR_A)", "$A"),
        ("$$$$(VAR_A)", "$$(VAR_A)"),
        ("$(VAR_A", "$(VAR_A"),  # incomplete reference
        ("$VAR_A", "$VAR_A"),  # not `$(`: as written
        ("$", "$"),
        ("a$", "a$"),
        ("$()", "$()"),  # the empty name is looked up like any other (and is unknown)
        ("${VAR_A}", "${VAR_A}"),
    ],
)
def test_expand(text, expected):
    assert expand(text, mapping_for(ENV)) == expected


def test_first_context_wins():
    assert expand("$(X)", mapping_for({"X": "1"}, {"X": "2"})) == "1"
