"""The SR-IOV example stack, as the program declares it, passes every SR-IOV policy (seed 001's final design)."""

from __future__ import annotations

from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from preview.mock_runtime import pulumi_config_map, run_program
from preview.policy_check import analyze_run
from stack_config.loading import parse_stack_config, raw_config, stack_source
from stack_config.pack_config import policy_pack_config
from tests.support import stack_document, topology_to_dict


def test_sriov_example_has_no_finding() -> None:
    config_map = pulumi_config_map(stack_document("sriov"))
    run = run_program("sriov", config_map)
    pack = policy_pack_config(
        parse_stack_config(raw_config(config_map), stack_source("sriov"), config_map["oci:region"])
    ).to_dict()
    assert [f.message for f in analyze_run(run, pack)] == []


def test_exclusive_mode_example_has_no_finding() -> None:
    document = stack_document("sriov")
    document["config"]["oke-gpu-rdma:networkOperator"]["rdmaMode"] = "exclusive"
    config_map = pulumi_config_map(document)
    run = run_program("sriov", config_map)
    pack = policy_pack_config(
        parse_stack_config(raw_config(config_map), stack_source("sriov"), config_map["oci:region"])
    ).to_dict()
    assert [f.message for f in analyze_run(run, pack)] == []


def test_mixed_stack_keeps_the_paths_apart_without_finding() -> None:
    # A DRANET pool and an SR-IOV pool of the same shape: the program's node selection passes sriov-dra-disjoint
    # and gpu-device-plugin-off.
    document = stack_document("sriov")
    config = document["config"]
    config["oke-gpu-rdma:nodePools"] = [
        *stack_document("dev")["config"]["oke-gpu-rdma:nodePools"],
        *config["oke-gpu-rdma:nodePools"],
    ]
    for key in ("oke-gpu-rdma:dranet", "oke-gpu-rdma:gpuDriver", "oke-gpu-rdma:workloads"):
        config.pop(key)
    config_map = pulumi_config_map(document)
    run = run_program("sriov", config_map)
    pack = policy_pack_config(
        parse_stack_config(raw_config(config_map), stack_source("sriov"), config_map["oci:region"])
    ).to_dict()
    assert [f.message for f in analyze_run(run, pack)] == []


def test_a_shape_with_a_supplied_topology_passes_every_sriov_policy() -> None:
    # The node policies list the supplied topology's rail PFs; the pack checks them against the same
    # topology (its config carries the stack's shapeTopologies), not "no verified rail layout".
    document = stack_document("sriov")
    config = document["config"]
    config["oke-gpu-rdma:nodePools"][0]["shape"] = "BM.GPU.A100-v2.8"
    topology = topology_to_dict(CATALOG.topology("BM.GPU.B4.8"))
    del topology["shape"]
    topology["roots"][0]["rails"][0]["pciAddress"] = "0000:0d:00.0"
    config["oke-gpu-rdma:shapeTopologies"] = {"BM.GPU.A100-v2.8": topology}
    config_map = pulumi_config_map(document)
    run = run_program("sriov", config_map)
    pack = policy_pack_config(
        parse_stack_config(raw_config(config_map), stack_source("sriov"), config_map["oci:region"])
    ).to_dict()
    assert [f.message for f in analyze_run(run, pack)] == []
