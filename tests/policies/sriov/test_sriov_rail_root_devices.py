"""sriov-rail-root-devices: only the shape's rail PFs, never the vendor alone or the front-end NIC."""

from __future__ import annotations

import copy

from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from tests.fixtures import seed001
from tests.policies.policy_helpers import analyze, k8s, of, violations
from tests.support import topology_to_dict

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


# A user's topology for a shape the catalog does not verify: the B4.8 layout with rdma0 elsewhere.
H100 = "BM.GPU.H100.8"


def h100_topology() -> dict:
    topology = topology_to_dict(CATALOG.topology("BM.GPU.B4.8"))
    topology["roots"][0]["rails"][0]["pciAddress"] = "0000:0d:00.0"
    return topology


def on_h100(root_devices: list[str]) -> dict:
    policy = copy.deepcopy(seed001("sriov-network-node-policy"))
    policy["spec"]["nodeSelector"]["node.kubernetes.io/instance-type"] = H100
    policy["spec"]["nicSelector"]["rootDevices"] = root_devices
    return policy


def test_pfs_of_an_overridden_shape_are_checked_against_its_supplied_topology():
    config = {POLICY: {"shapeTopologies": {H100: h100_topology()}}}
    devices = seed001("sriov-network-node-policy")["spec"]["nicSelector"]["rootDevices"]
    (v,) = violations(analyze([k8s(on_h100(devices))], config), POLICY)
    assert v.message.startswith(
        "SriovNetworkNodePolicy nvidia-network-operator/bm-gpu-b4-8: spec.nicSelector.rootDevices[0] "
        "'0000:0c:00.0' is not a rail PF of BM.GPU.H100.8"
    )
    assert "rdma0 0000:0d:00.0" in v.message
    fixed = on_h100(["0000:0d:00.0", *devices[1:]])
    assert of(analyze([k8s(fixed)], config), POLICY) == []


def test_without_its_topology_an_unverified_shape_is_not_checked():
    devices = seed001("sriov-network-node-policy")["spec"]["nicSelector"]["rootDevices"]
    (note,) = of(analyze([k8s(on_h100(devices))]), POLICY)
    assert "shape BM.GPU.H100.8 has no verified rail layout; its PFs were not checked" in note.message
