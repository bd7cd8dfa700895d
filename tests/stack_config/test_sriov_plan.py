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
    assert plan.pools == ("gpu-b4-vf",) and plan.shape == "BM.GPU.B4.8" and plan.mode == "shared"
    assert [r.name for r in plan.resources] == [f"rdma-vf-{i}" for i in range(16)]
    assert plan.pods_per_node == 2
    assert plan.node_selector == {"node.kubernetes.io/instance-type": "BM.GPU.B4.8"}


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
    assert line == f"{SOURCE}: nodePools[0].sriov.vfsPerPf = 3: Input should be less than or equal to 2"


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
    assert line == f"{SOURCE}: networkOperator.rdmaQos is not a known key; check its spelling"
    raw = raw_config("sriov")
    raw["networkOperator"]["rdmaMode"] = "exclusiv"
    (line,) = problems_of(raw)
    assert line.startswith(
        f"{SOURCE}: networkOperator.rdmaMode = 'exclusiv': Input should be 'shared' or 'exclusive'"
    )


def test_sriov_pools_share_one_shape_and_settings() -> None:
    raw = raw_config("sriov")
    second = {**raw["nodePools"][0], "name": "gpu-b4-vf-b", "sriov": {"vfsPerPf": 1}}
    raw["nodePools"].append(second)
    (line,) = problems_of(raw)
    assert line.startswith(f"{SOURCE}: nodePools[1].sriov: differs from nodePools[0].sriov")
