"""sriov-node-policy-limits: numVfs <= 2 on OCI, priority 0-99, a valid resourceName."""

from __future__ import annotations

import copy

import pytest

from tests.fixtures import seed001
from tests.policies.policy_helpers import (
    analyze,
    k8s,
    violations,
)

POLICY = "sriov-node-policy-limits"


def policy_with(**spec):
    policy = copy.deepcopy(seed001.all("sriov-node-policies-per-rail")[0])
    policy["spec"].update(spec)
    return k8s(policy)


def test_the_seeds_policies_pass():
    objects = [
        seed001("sriov-network-node-policy"),
        seed001("sriov-network-node-policy-2vf"),
        *seed001.all("sriov-node-policies-per-rail"),
    ]
    assert violations(analyze([k8s(o, f"p{i}") for i, o in enumerate(objects)]), POLICY) == []


@pytest.mark.parametrize(
    ("spec", "text"),
    [
        ({"numVfs": 4}, "spec.numVfs is 4, but Oracle Cloud allows at most 2 VFs on each RDMA PF"),
        ({"priority": 100}, "spec.priority is 100; the SriovNetworkNodePolicy CRD accepts 0 to 99"),
        ({"resourceName": "rdma.vf-0"}, "spec.resourceName 'rdma.vf-0' does not match"),
    ],
)
def test_out_of_limits(spec, text):
    (v,) = violations(analyze([policy_with(**spec)]), POLICY)
    assert v.level == "mandatory"
    assert v.message.startswith(f"SriovNetworkNodePolicy nvidia-network-operator/rdma-vf-0: {text}")
    assert "Fix:" in v.message


def test_wrong_type_is_a_violation():
    (v,) = violations(analyze([policy_with(numVfs="two")]), POLICY)
    assert "spec.numVfs must be a whole number, got a string ('two')" in v.message
