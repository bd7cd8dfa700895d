"""The policy pack config derived from a stack (stack_config/pack_config.py)."""

from __future__ import annotations

from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from stack_config.loading import parse_stack_config
from stack_config.pack_config import policy_pack_config
from tests.support import EXAMPLE_REGION, raw_config, topology_to_dict


def test_existing_stack_hands_its_referenced_ranges_to_the_pack() -> None:
    pack = policy_pack_config(parse_stack_config(raw_config("dev"), "dev", EXAMPLE_REGION)).to_dict()
    assert pack == {
        "dranet-child-range": {
            "ocaRdmaNetwork": "10.224.0.0/12",
            "existingCidrs": [
                {"name": "VCN (network.existing.vcnCidrs[0])", "cidr": "10.140.0.0/16"},
                {"name": "worker subnet (network.existing.workerSubnet.cidr)", "cidr": "10.140.64.0/19"},
                {"name": "pods CIDR (cluster.existing.podsCidr)", "cidr": "10.240.0.0/12"},
                {"name": "services CIDR (cluster.existing.servicesCidr)", "cidr": "10.96.0.0/16"},
            ],
            "workerSubnetCidrs": ["10.140.64.0/19"],
        },
        # The cluster's version judges claims at its feature gates; the rails publish the configured range.
        "gpu-rail-claims-aligned": {
            "shape": "BM.GPU.B4.8",
            "shapeTopologies": {},
            "kubernetesVersion": "v1.36.4",
            "childRange": "10.208.0.0/12",
            # Nothing is managed elsewhere unless the stack's policyPack says so: the pack fails closed.
            "managedDeviceClasses": [],
            "managedHelmReleases": [],
        },
        # Only the known gaps among the images the stack writes may go unpinned (oke_gpu_rdma/common/images.py).
        "images-pinned-by-digest": {"allowUnpinned": ["registry.k8s.io/networking/dranet:v1.5.0"]},
    }


def test_a_stack_file_image_never_reaches_the_unpinned_allowance() -> None:
    raw = raw_config("full")
    raw["workloads"]["acceptanceJobs"]["image"] = "docker.io/library/ubuntu:24.04"
    pack = policy_pack_config(parse_stack_config(raw, "full", EXAMPLE_REGION)).to_dict()
    assert "docker.io/library/ubuntu:24.04" not in pack["images-pinned-by-digest"]["allowUnpinned"]


def test_created_ranges_reach_the_pack_as_resources_not_config() -> None:
    pack = policy_pack_config(parse_stack_config(raw_config("full"), "full", EXAMPLE_REGION)).to_dict()
    assert pack["dranet-child-range"]["existingCidrs"] == []
    assert pack["dranet-child-range"]["workerSubnetCidrs"] == ["10.140.64.0/19"]


def test_sriov_stack_hands_the_vf_pool_policy_the_same_referenced_ranges() -> None:
    pack = policy_pack_config(parse_stack_config(raw_config("sriov"), "sriov", EXAMPLE_REGION)).to_dict()
    assert pack["sriov-vf-pool-range"] == {
        "ocaRdmaNetwork": "10.224.0.0/12",
        "existingCidrs": pack["dranet-child-range"]["existingCidrs"],
    }
    assert (
        "sriov-vf-pool-range"
        not in policy_pack_config(parse_stack_config(raw_config("dev"), "dev", EXAMPLE_REGION)).to_dict()
    )


def test_sriov_stack_hands_its_topologies_to_the_sriov_policies_that_look_shapes_up() -> None:
    raw = raw_config("sriov")
    raw["nodePools"][0]["shape"] = "BM.GPU.A100-v2.8"
    topology = topology_to_dict(CATALOG.topology("BM.GPU.B4.8"))
    del topology["shape"]
    raw["shapeTopologies"] = {"BM.GPU.A100-v2.8": topology}
    pack = policy_pack_config(parse_stack_config(raw, "sriov", EXAMPLE_REGION)).to_dict()
    for policy in ("gpu-rail-claims-aligned", "sriov-rail-root-devices", "sriov-pods-all-rails"):
        assert pack[policy]["shapeTopologies"] == raw["shapeTopologies"], policy
    # Without topologies (the example) the SR-IOV sections are left out: the pack's defaults are the same.
    example = policy_pack_config(parse_stack_config(raw_config("sriov"), "sriov", EXAMPLE_REGION)).to_dict()
    assert "sriov-rail-root-devices" not in example and "sriov-pods-all-rails" not in example
