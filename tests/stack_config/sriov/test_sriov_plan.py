"""The SR-IOV keys of the stack config and the checks across them (stack_config/model.py, sriov_plan.py)."""

from __future__ import annotations

from typing import Any

import pytest

from stack_config.loading import ConfigError, load_stack
from tests.support import EXAMPLE_REGION, raw_config

SOURCE = "examples/Pulumi.sriov.yaml"


def problems_of(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_stack(raw, SOURCE, EXAMPLE_REGION)
    return [line.strip() for line in str(caught.value).splitlines()[1:]]


def test_example_stack_plans_sixteen_rails_with_two_vfs() -> None:
    plan = load_stack(raw_config("sriov"), SOURCE, EXAMPLE_REGION).sriov
    assert plan is not None
    (shape,) = plan.shapes
    assert plan.pools == ("gpu-b4-vf",) and shape.shape == "BM.GPU.B4.8" and plan.mode == "shared"
    assert [r.name for r in shape.resources] == [f"rdma-vf-{i}" for i in range(16)]
    assert shape.pods_per_node == 2 and shape.gpus_per_node == 8
    assert shape.node_selector == {"node.kubernetes.io/instance-type": "BM.GPU.B4.8"}


def test_a_pool_asking_for_both_paths_is_refused() -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["sriov"] = {"vfsPerPf": 2}
    (line,) = problems_of(raw)
    assert line.startswith(
        f"{SOURCE}: nodePools[0]: asks for both RDMA paths: rdma is dranet but an sriov block"
    )
    assert "Set rdma: sriov, or remove the sriov block" in line


def test_two_vfs_need_a_resource_per_rail() -> None:
    raw = raw_config("sriov")
    raw["nodePools"][0]["sriov"] = {"vfsPerPf": 2, "resourcePerRail": False}
    (line,) = problems_of(raw)
    assert line.startswith(f"{SOURCE}: nodePools[0].sriov: vfsPerPf 2 needs resourcePerRail: true")
    assert "seed 001" in line


def test_more_than_two_vfs_is_refused() -> None:
    raw = raw_config("sriov")
    raw["nodePools"][0]["sriov"] = {"vfsPerPf": 3}
    (line,) = problems_of(raw)
    assert line == f"{SOURCE}: nodePools[0].sriov.vfsPerPf = 3: must be at most 2"


@pytest.mark.parametrize(
    ("subnet", "hit"),
    [
        ("10.140.0.0/16", "VCN (network.existing.vcnCidrs[0]) 10.140.0.0/16"),
        ("10.240.0.0/16", "pods CIDR (cluster.existing.podsCidr) 10.240.0.0/12"),
        ("10.96.0.0/20", "services CIDR (cluster.existing.servicesCidr) 10.96.0.0/16"),
        ("10.224.0.0/16", "OCA RDMA network (network.rdmaCidr) 10.224.0.0/12"),
    ],
)
def test_vf_pool_must_stay_clear_of_the_address_plan(subnet: str, hit: str) -> None:
    raw = raw_config("sriov")
    raw["networkOperator"]["vfPool"] = {"subnet": subnet, "gateway": None}
    lines = problems_of(raw)
    assert any(
        line.startswith(
            f"{SOURCE}: networkOperator.vfPool.subnet = '{subnet}': VF pool {subnet} overlaps {hit}"
        )
        for line in lines
    ), lines


def test_vf_pool_against_the_dranet_child_range_in_a_mixed_stack() -> None:
    raw = raw_config("sriov")
    raw["nodePools"] = [*raw_config("dev")["nodePools"], *raw["nodePools"]]
    del raw["dranet"], raw["gpuDriver"]
    raw["networkOperator"]["vfPool"] = {"subnet": "10.208.0.0/16", "gateway": "10.208.0.1"}
    (line,) = problems_of(raw)
    assert "overlaps DRANET child range (dranet.childRange) 10.208.0.0/12" in line


def test_gateway_outside_the_pool() -> None:
    raw = raw_config("sriov")
    raw["networkOperator"]["vfPool"] = {"gateway": "10.0.0.1"}
    (line,) = problems_of(raw)
    assert "networkOperator.vfPool: gateway 10.0.0.1 is not a host address of subnet 192.168.0.0/16" in line


def test_dra_drivers_left_on_without_dra_pools() -> None:
    raw = raw_config("sriov")
    del raw["dranet"]
    lines = problems_of(raw)
    assert lines == [
        f"{SOURCE}: dranet.enabled = true: every node pool has rdma: sriov, so this DRA driver would select no "
        "node (SR-IOV pools get GPUs from the GPU Operator's device plugin and rails from VFs); set it to false"
    ]


def test_network_operator_without_sriov_pools_and_unknown_keys() -> None:
    raw = raw_config("dev")
    raw["networkOperator"] = {"rdmaMode": "exclusive"}
    (line,) = problems_of(raw)
    assert line == (
        f"{SOURCE}: networkOperator is set but no node pool has rdma: sriov; set rdma: sriov on a pool or "
        "remove networkOperator"
    )
    raw = raw_config("sriov")
    raw["networkOperator"]["rdmaQos"] = 41
    (line,) = problems_of(raw)
    assert line == f"{SOURCE}: networkOperator.rdmaQos is not a known key; did you mean rdmaMode?"
    raw = raw_config("sriov")
    raw["networkOperator"]["rdmaMode"] = "exclusiv"
    (line,) = problems_of(raw)
    assert line.startswith(
        f"{SOURCE}: networkOperator.rdmaMode = 'exclusiv': takes one of: shared, exclusive; did you mean exclusive?"
    )


def test_sriov_pools_of_one_shape_share_settings() -> None:
    raw = raw_config("sriov")
    second = {**raw["nodePools"][0], "name": "gpu-b4-vf-b", "sriov": {"vfsPerPf": 1}}
    raw["nodePools"].append(second)
    (line,) = problems_of(raw)
    assert line.startswith(f"{SOURCE}: nodePools[1].sriov: differs from nodePools[0].sriov")


H100 = "BM.GPU.H100.8"


def h100_topology() -> dict[str, Any]:
    """2 roots of 2 GPUs and 4 rails: 4 GPUs and 8 rails a node (not the catalog's; any layout will do)."""
    return {
        "roots": [
            {
                "name": f"pci0000:{i:02x}",
                "numaNode": i,
                "gpus": [f"0000:{16 + 2 * i + g:02x}:00.0" for g in range(2)],
                "rails": [
                    {"name": f"rdma{4 * i + r}", "pciAddress": f"0000:{64 + 4 * i + r:02x}:00.0"}
                    for r in range(4)
                ],
            }
            for i in range(2)
        ]
    }


def two_sriov_shapes(**second: Any) -> dict[str, Any]:
    raw = raw_config("sriov")
    raw["nodePools"].append(
        {**raw["nodePools"][0], "name": "gpu-h100-vf", "shape": H100, "sriov": {"vfsPerPf": 1}, **second}
    )
    raw["shapeTopologies"] = {H100: h100_topology()}
    return raw


def test_each_sriov_shape_gets_its_own_rails_policies_and_gpu_count() -> None:
    """Issue 19 item 2: a second SR-IOV shape was refused; now each shape has its own plan."""
    plan = load_stack(two_sriov_shapes(), SOURCE, EXAMPLE_REGION).sriov
    assert plan is not None
    b4, h100 = plan.shapes
    assert (b4.shape, b4.pools, b4.gpus_per_node, b4.pods_per_node) == ("BM.GPU.B4.8", ("gpu-b4-vf",), 8, 2)
    assert (h100.shape, h100.pools, h100.gpus_per_node, h100.pods_per_node) == (H100, ("gpu-h100-vf",), 4, 1)
    # Names carry the shape once there are several; each shape's rails are its own PFs.
    assert [r.name for r in b4.resources] == [f"rdma-vf-bm-gpu-b4-8-{i}" for i in range(16)]
    assert [r.name for r in h100.resources] == [f"rdma-vf-bm-gpu-h100-8-{i}" for i in range(8)]
    assert h100.resources[5].pfs == ("0000:45:00.0",)
    policies = {p.name: p.spec for p in plan.node_policies()}
    assert len(policies) == 24
    assert policies["rdma-vf-bm-gpu-h100-8-5"]["nodeSelector"] == {"node.kubernetes.io/instance-type": H100}
    assert policies["rdma-vf-bm-gpu-h100-8-5"]["numVfs"] == 1
    assert policies["rdma-vf-bm-gpu-b4-8-5"]["numVfs"] == 2
    assert plan.pool_vf_resources()["gpu-h100-vf"] == frozenset(
        f"nvidia.com/rdma-vf-bm-gpu-h100-8-{i}" for i in range(8)
    )


def test_vf_nccl_jobs_on_a_shape_without_a_seed_figure_need_a_threshold() -> None:
    """Two pods a node on 4 GPUs: two jobs of 2 GPUs per worker, which the seed never measured."""
    raw = two_sriov_shapes(sriov={"vfsPerPf": 2})
    raw["workloads"] = {"acceptanceJobs": {"enabled": True, "nodePool": "gpu-h100-vf"}}
    (line,) = problems_of(raw)
    assert line == (
        f"{SOURCE}: workloads.acceptanceJobs.ncclBusbwGBs: the VF NCCL jobs on {H100} run 2 GPUs per worker, "
        "and the seed measured 8 and 4; set the minimum busbw in GB/s the jobs must reach"
    )


def test_a_rail_less_pool_of_the_sriov_shape_is_kept_out_of_the_node_policies() -> None:
    """An rdma: none pool of the SR-IOV pools' shape: the node policies select the SR-IOV nodes by their label."""
    raw = raw_config("sriov")
    raw["nodePools"].append({**raw["nodePools"][0], "name": "gpu-b4-plain", "rdma": "none"})
    del raw["nodePools"][1]["sriov"]
    plan = load_stack(raw, SOURCE, EXAMPLE_REGION).sriov
    assert plan is not None
    (shape,) = plan.shapes
    assert shape.pools == ("gpu-b4-vf",)
    assert shape.node_selector == {
        "node.kubernetes.io/instance-type": "BM.GPU.B4.8",
        "oke-gpu-rdma/rdma-path": "sriov",
    }


def test_dra_drivers_left_on_with_only_rail_less_pools() -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["rdma"] = "none"
    assert problems_of(raw) == [
        f"{SOURCE}: {key} = true: no node pool has rdma: dranet, so this DRA driver would select no node (rdma: "
        "sriov and rdma: none pools get GPUs from the GPU Operator's device plugin); set it to false"
        for key in ("dranet.enabled", "gpuDriver.enabled")
    ]
    raw["dranet"] = {"enabled": False}
    raw["gpuDriver"] = {"enabled": False}
    raw["workloads"] = {"acceptanceJobs": {"enabled": False}}
    config = load_stack(raw, SOURCE, EXAMPLE_REGION).config
    assert [p.name for p in config.railless_pools] == ["gpu-b4"] and config.dra_pools == []


def created_cluster_with_sriov_pools() -> dict[str, Any]:
    raw = raw_config("full")
    sriov = raw_config("sriov")
    raw["nodePools"] = sriov["nodePools"]
    raw["networkOperator"] = sriov["networkOperator"]
    raw["dranet"] = {"enabled": False}
    raw["gpuDriver"] = {"enabled": False}
    raw.pop("workloads", None)
    raw.pop("claimTemplates", None)
    raw.pop("health", None)  # its GPU and rail checks need the DRA drivers this stack turns off
    return raw


def test_a_created_cluster_needs_an_nfd_for_the_sriov_config_daemon() -> None:
    raw = created_cluster_with_sriov_pools()
    load_stack(raw, SOURCE, EXAMPLE_REGION)  # the GPU Operator's NFD labels the NICs
    raw["gpuOperator"] = {"enabled": False}
    assert problems_of(raw) == [
        f"{SOURCE}: networkOperator.deployNfd = false: the cluster is created by the stack without the GPU "
        "Operator, so no Node Feature Discovery would label the Mellanox NICs the SR-IOV config daemon selects "
        "(and the chart's NodeFeatureRule has no CRD); set networkOperator.deployNfd: true or "
        "gpuOperator.enabled: true"
    ]
    raw["networkOperator"]["deployNfd"] = True
    load_stack(raw, SOURCE, EXAMPLE_REGION)
