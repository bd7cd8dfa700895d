"""The reference allocator (tests only, see reference_allocator.py): first fit, constraints, modes, pruning,
and properties."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oke_gpu_rdma.claims.inventory import node_inventory
from oke_gpu_rdma.claims.spec import parse_claim
from oke_gpu_rdma.claims.spec_types import MatchAttribute
from oke_gpu_rdma.common.errors import AllocationAbortedError
from oke_gpu_rdma.drivers import attributes as attr
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from tests.fixtures import seed000
from tests.oke_gpu_rdma.claims.claim_strategies import claims, gpus, rails
from tests.oke_gpu_rdma.claims.reference_allocator import Allocator, MatchAttributeConstraint

B4 = CATALOG.topology("BM.GPU.B4.8")
INV = node_inventory(B4)


def allocate(claim: dict[str, Any], inventory: Any = INV) -> list[tuple[str, str, str | None]]:
    result = Allocator(inventory).allocate(parse_claim(claim))
    assert result.devices is not None, result.reason
    return [(a.request, a.device.display.split(" (")[0], a.device.root) for a in result.devices]


def test_pair_check_default_order_matches_the_seed() -> None:
    # The NVIDIA driver lists gpu-0 (bus 50 on pci0000:3e) first, so the first fit is GPUs 2, 3 and the
    # four rails on pci0000:3e, as the seed observed.
    assert allocate(seed000("pair-check")) == [
        ("gpus", "GPU 2", "pci0000:3e"),
        ("gpus", "GPU 3", "pci0000:3e"),
        ("rails", "rdma4", "pci0000:3e"),
        ("rails", "rdma5", "pci0000:3e"),
        ("rails", "rdma6", "pci0000:3e"),
        ("rails", "rdma7", "pci0000:3e"),
    ]


def test_first_device_fixes_the_value_and_devices_without_it_are_never_chosen() -> None:
    # All DRANET devices, but the constraint skips eth1/cni0/flannel.1 (no pcieRoot) and fixes root 00.
    claim = {
        "devices": {
            "requests": [{"name": "nics", "exactly": {"deviceClassName": "dra.net", "count": 3}}],
            "constraints": [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}],
        }
    }
    assert [x[1] for x in allocate(claim)] == ["rdma0", "rdma1", "rdma2"]
    without = {"devices": {"requests": claim["devices"]["requests"]}}
    assert [x[1] for x in allocate(without)] == ["cni0", "eth1", "flannel.1"]


def test_constraint_add_and_remove() -> None:
    c = MatchAttributeConstraint(MatchAttribute(0, ("gpus", "rails"), attr.PCIE_ROOT))
    sel = parse_claim({"devices": {"requests": [gpus("gpus")]}}).requests[0].alternatives[0]
    gpu0, rdma0, eth1 = INV.device("gpu-0"), INV.device("rdma0"), INV.device("eth1")
    assert c.add(sel, gpu0)
    assert not c.add(sel, rdma0)  # another root
    assert not c.add(sel, eth1)  # no pcieRoot at all
    c.remove(sel, gpu0)
    assert c.count == 0 and c.value is None
    assert c.add(sel, rdma0)


def test_constraint_only_applies_to_named_requests() -> None:
    claim = {
        "devices": {
            "requests": [gpus("gpus", 1), rails("rails", 1), rails("more", 1)],
            "constraints": [{"requests": ["gpus", "rails"], "matchAttribute": attr.PCIE_ROOT}],
        }
    }
    assert allocate(claim) == [
        ("gpus", "GPU 2", "pci0000:3e"),
        ("rails", "rdma4", "pci0000:3e"),
        ("more", "rdma0", "pci0000:00"),
    ]


def test_constraint_without_requests_applies_to_all() -> None:
    claim = {
        "devices": {
            "requests": [gpus("gpus", 1), rails("rails", 1)],
            "constraints": [{"matchAttribute": attr.NUMA_NODE}],
        }
    }
    # GPUs publish no numaNode in driver 0.5.1, so no GPU can join a numaNode constraint.
    assert Allocator(INV).allocate(parse_claim(claim)).devices is None


def test_allocation_mode_all() -> None:
    claim = {"devices": {"requests": [gpus("gpus", allocationMode="All")]}}
    assert len(allocate(claim)) == 8
    taken = [INV.device("gpu-3").id]
    assert Allocator(INV, in_use=taken).allocate(parse_claim(claim)).devices is None
    mixed = {
        "devices": {
            "requests": [gpus("gpus", allocationMode="All")],
            "constraints": [{"matchAttribute": attr.PCIE_ROOT}],
        }
    }
    with pytest.raises(
        AllocationAbortedError,
        match=r"cannot add device .* because a claim constraint would not be satisfied",
    ):
        Allocator(INV).allocate(parse_claim(mixed))


def test_first_available_falls_back_to_the_next_subrequest() -> None:
    claim = {
        "devices": {
            "requests": [
                {
                    "name": "gpus",
                    "firstAvailable": [
                        {"name": "eight", "deviceClassName": "gpu.nvidia.com", "count": 8},
                        {"name": "two", "deviceClassName": "gpu.nvidia.com", "count": 2},
                    ],
                }
            ]
        }
    }
    assert [r for r, _, _ in allocate(claim)] == ["gpus/eight"] * 8
    busy = Allocator(INV, in_use=[INV.device("gpu-0").id])
    result = busy.allocate(parse_claim(claim))
    assert result.devices is not None
    assert [a.request for a in result.devices] == ["gpus/two", "gpus/two"]


def test_more_than_32_devices_per_claim_aborts() -> None:
    claim = {"devices": {"requests": [gpus("gpus", 8), rails("rails", 16), rails("more", 9, selectors=[])]}}
    with pytest.raises(
        AllocationAbortedError, match="number of requested devices 33 exceeds the claim limit of 32"
    ):
        Allocator(INV).allocate(parse_claim(claim))


def test_unknown_device_class_aborts() -> None:
    claim = {"devices": {"requests": [{"name": "x", "exactly": {"deviceClassName": "gpu.example.com"}}]}}
    with pytest.raises(AllocationAbortedError, match=r"could not retrieve device class gpu\.example\.com"):
        Allocator(INV).allocate(parse_claim(claim))


def test_many_single_requests_with_one_constraint_are_refuted_at_the_root() -> None:
    requests = [gpus(f"gpu-{i}", 1) for i in range(8)] + [rails(f"rail-{i}", 1) for i in range(16)]
    claim = {"devices": {"requests": requests, "constraints": [{"matchAttribute": attr.PCIE_ROOT}]}}
    result = Allocator(INV).allocate(parse_claim(claim))
    assert result.devices is None
    assert result.nodes == 1
    assert "need 24 devices together, the most any value offers is 6" in result.reason


def test_shape_root_is_refuted_at_the_root() -> None:
    result = Allocator(INV).allocate(parse_claim(seed000("shape-root")))
    assert (result.devices, result.nodes) == (None, 1)
    assert "4 for gpus and 16 for rails" in result.reason


def test_packed_refutation_is_fast() -> None:
    # Three pairs take three roots; the aligned 8-GPU claim then needs a fourth pair on a used root.
    first = seed000("aligned-4gpu-8rails-a")
    taken = Allocator(INV).allocate(parse_claim(first))
    assert taken.devices is not None
    one_more = Allocator(INV, in_use=[a.device.id for a in taken.devices]).allocate(
        parse_claim(seed000("aligned-8gpu-16rails"))
    )
    assert one_more.devices is None
    assert one_more.nodes <= 5


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(claims())
def test_any_allocation_satisfies_constraints_and_uses_distinct_devices(claim: dict[str, Any]) -> None:
    spec = parse_claim(claim)
    result = Allocator(INV).allocate(spec)
    if result.devices is None:
        return
    ids = [a.device.id for a in result.devices]
    assert len(ids) == len(set(ids))
    for r in spec.requests:
        assert sum(a.request == r.name for a in result.devices) == r.alternatives[0].count
    for c in spec.constraints:
        members = [a.device for a in result.devices if not c.requests or a.request in c.requests]
        values = {(type(v).__name__, v) for v in (d.attribute(c.attribute) for d in members)}
        assert None not in {d.attribute(c.attribute) for d in members}
        assert len(values) <= 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(claims(), st.permutations(list(range(8))), st.permutations(list(range(19))), st.booleans())
def test_satisfiability_does_not_depend_on_order(
    claim: dict[str, Any], gpu_order: list[int], dranet_order: list[int], flip: bool
) -> None:
    spec = parse_claim(claim)
    shuffled = INV.reordered(
        slice_order=[1, 0] if flip else [0, 1], device_orders={0: gpu_order, 1: dranet_order}
    )
    assert (Allocator(INV).allocate(spec).devices is None) == (
        Allocator(shuffled).allocate(spec).devices is None
    )
