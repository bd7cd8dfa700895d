"""sriov-resource-per-rail: with 2 VFs per PF, one resource per rail (seed 001's 32-VF trap)."""

from __future__ import annotations

import copy

from tests.fixtures import seed001
from tests.policies.policy_helpers import (
    analyze,
    k8s,
    violations,
)

POLICY = "sriov-resource-per-rail"


def test_per_rail_policies_and_one_vf_pass():
    resources = [k8s(o) for o in seed001.all("sriov-node-policies-per-rail")]
    assert violations(analyze(resources), POLICY) == []
    assert violations(analyze([k8s(seed001("sriov-network-node-policy"))]), POLICY) == []


def test_one_resource_over_32_vfs_is_rejected():
    (v,) = violations(analyze([k8s(seed001("sriov-network-node-policy-2vf"))]), POLICY)
    assert v.level == "mandatory"
    assert v.message.startswith(
        "SriovNetworkNodePolicy nvidia-network-operator/bm-gpu-b4-8: resource rdma-vf spans 16 PFs with numVfs 2 "
        "(32 VFs)"
    )
    assert "17.95 and 8.99 GB/s" in v.message and "rdma-vf-0 ... rdma-vf-15" in v.message


def test_one_resource_across_two_policies_is_rejected():
    a, b = (copy.deepcopy(p) for p in seed001.all("sriov-node-policies-per-rail")[:2])
    b["spec"]["resourceName"] = a["spec"]["resourceName"]
    found = violations(analyze([k8s(a), k8s(b)]), POLICY)
    assert len(found) == 2
    assert all("resource rdma-vf-0 spans 2 PFs with numVfs 2 (4 VFs)" in v.message for v in found)
