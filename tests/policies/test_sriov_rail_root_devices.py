"""sriov-rail-root-devices: only the shape's rail PFs, never the vendor alone or the front-end NIC."""

from __future__ import annotations

from tests.fixtures import seed001
from tests.policies.policy_helpers import (
    analyze,
    k8s,
    violations,
)

POLICY = "sriov-rail-root-devices"


def test_the_seeds_policies_pass():
    objects = [seed001("sriov-network-node-policy"), *seed001.all("sriov-node-policies-per-rail")]
    assert violations(analyze([k8s(o, f"p{i}") for i, o in enumerate(objects)]), POLICY) == []


def test_a_pf_that_is_no_rail_is_rejected():
    policy = seed001("sriov-network-node-policy")
    policy["spec"]["nicSelector"]["rootDevices"].append("0000:01:00.0")
    (v,) = violations(analyze([k8s(policy)]), POLICY)
    assert v.message.startswith(
        "SriovNetworkNodePolicy nvidia-network-operator/bm-gpu-b4-8: spec.nicSelector.rootDevices[16] "
        "'0000:01:00.0' is not a rail PF of BM.GPU.B4.8"
    )
    assert "rdma0 0000:0c:00.0" in v.message


def test_vendor_alone_selects_the_front_end_nic():
    policy = seed001("sriov-network-node-policy")
    del policy["spec"]["nicSelector"]["rootDevices"]
    (v,) = violations(analyze([k8s(policy)]), POLICY)
    assert (
        "names no rootDevices or pfNames, so it selects every PF of vendor 15b3 on BM.GPU.B4.8" in v.message
    )
    assert "the front-end NIC included" in v.message


def test_front_end_pf_name_is_rejected():
    policy = seed001("sriov-network-node-policy")
    policy["spec"]["nicSelector"] = {"vendor": "15b3", "pfNames": ["rdma0", "eth1"]}
    (v,) = violations(analyze([k8s(policy)]), POLICY)
    assert "spec.nicSelector.pfNames[1] 'eth1' is not a rail of BM.GPU.B4.8" in v.message
