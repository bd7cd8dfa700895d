"""Aligned pairs per GPU count, and the claim specs built from them (checked against the seed)."""

from __future__ import annotations

import pytest

from oke_gpu_rdma.claims import (
    aligned_claim_spec,
    aligned_claim_specs,
    aligned_pairs,
    judge_claim,
    rails_only_claim_spec,
)
from oke_gpu_rdma.claims.pairing import Pair, suggest_pairs, valid_gpu_counts
from oke_gpu_rdma.claims.spec import unwrap_claim
from oke_gpu_rdma.common.errors import PairingError
from oke_gpu_rdma.drivers import dranet
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from tests.fixtures import seed000

B4 = CATALOG.topology("BM.GPU.B4.8")


@pytest.mark.parametrize(
    ("gpus", "pairs"),
    [
        (8, [Pair(2, 4)] * 4),
        (6, [Pair(2, 4)] * 3),
        (4, [Pair(2, 4)] * 2),
        (2, [Pair(2, 4)]),
        (1, [Pair(1, 2)]),
    ],
)
def test_aligned_pairs(gpus: int, pairs: list[Pair]) -> None:
    assert aligned_pairs("BM.GPU.B4.8", gpus) == pairs


@pytest.mark.parametrize(
    ("gpus", "why"),
    [
        (3, "3 GPUs cannot be split into pairs that each sit on one PCIe root"),
        (12, "has only 8 GPUs"),
        (0, "cannot be split"),
    ],
)
def test_counts_that_cannot_align(gpus: int, why: str) -> None:
    with pytest.raises(PairingError) as info:
        aligned_pairs(B4, gpus)
    assert why in str(info.value)
    assert "use one of 1, 2, 4, 6, 8" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_aligned_claim_spec_for_8_is_the_seed_layout() -> None:
    _, seed_spec = unwrap_claim(seed000("aligned-8gpu-16rails"))
    assert aligned_claim_spec(B4, 8) == seed_spec


def test_aligned_claim_spec_for_4_is_the_seed_layout() -> None:
    _, seed_spec = unwrap_claim(seed000("aligned-4gpu-8rails-a"))
    assert aligned_claim_spec(B4, 4) == seed_spec


def test_rails_only_claim_spec_is_seed_all_rails() -> None:
    _, seed_spec = unwrap_claim(seed000("all-rails"))
    assert rails_only_claim_spec(B4) == seed_spec


@pytest.mark.parametrize("gpus", [1, 2, 4, 6, 8])
def test_generated_specs_are_aligned(gpus: int) -> None:
    assert judge_claim(aligned_claim_spec(B4, gpus), B4).kind == "aligned"


def test_suggest_pairs() -> None:
    assert suggest_pairs(B4, 4, 16) == [Pair(1, 4)] * 4
    assert suggest_pairs(B4, 2, 4) == [Pair(2, 4)]
    assert suggest_pairs(B4, 3, 6) == [Pair(2, 3), Pair(1, 3)]
    assert suggest_pairs(B4, 8, 2) is None


GB200 = CATALOG.topology("BM.GPU.GB200-v3.4")


def test_gb200_counts_are_every_gpu_or_part_of_one_numa_node() -> None:
    assert valid_gpu_counts(GB200) == [1, 2, 4]
    with pytest.raises(PairingError) as info:
        aligned_pairs(GB200, 3)
    assert str(info.value) == (
        "3 GPUs per worker cannot be aligned on BM.GPU.GB200-v3.4: 3 GPUs cannot be split into pairs that each "
        "sit in one NUMA node (each of the 2 NUMA nodes has 2 GPUs and 4 rails); use one of 1, 2, 4"
    )


def _selected(request: dict) -> list[str]:
    return [s["cel"]["expression"] for s in request["exactly"].get("selectors", [])]


def test_gb200_every_gpu_is_one_claim_with_a_gpu_and_a_rail_request_per_numa_node() -> None:
    (only,) = aligned_claim_specs(GB200, 4)
    assert (only.level, only.group) == ("numaNode", "")
    requests = only.spec["devices"]["requests"]
    assert [(r["name"], r["exactly"]["count"]) for r in requests] == [
        ("gpus-1", 2),
        ("rails-1", 4),
        ("gpus-2", 2),
        ("rails-2", 4),
    ]
    assert _selected(requests[0]) == [
        'has(device.attributes["resource.kubernetes.io"].pciBusID) && '
        'device.attributes["resource.kubernetes.io"].pciBusID in ["0008:06:00.0", "0009:06:00.0"]'
    ]
    assert _selected(requests[3]) == [
        dranet.RAIL_SELECTOR,
        'has(device.attributes["dra.net"].pciAddress) && device.attributes["dra.net"].pciAddress in '
        '["0010:03:00.0", "0010:03:00.1", "0012:03:00.0", "0012:03:00.1"]',
    ]
    assert "constraints" not in only.spec["devices"]  # no attribute is shared at the NUMA node


@pytest.mark.parametrize(("gpus", "rails"), [(2, 4), (1, 2)])
def test_gb200_part_of_a_numa_node_is_one_claim_per_node(gpus: int, rails: int) -> None:
    specs = aligned_claim_specs(GB200, gpus)
    assert [s.group for s in specs] == ["numa0", "numa1"]
    for spec in specs:
        assert [(r["name"], r["exactly"]["count"]) for r in spec.spec["devices"]["requests"]] == [
            ("gpus-1", gpus),
            ("rails-1", rails),
        ]
    # Pinning a shape adds nothing: the addresses keep the claims on GB200 nodes (no oke.dra.net/shape).
    assert aligned_claim_specs(GB200, gpus, pin_shape=True) == specs


def test_gb200_rails_only_is_pinned_by_the_rails_addresses() -> None:
    (request,) = rails_only_claim_spec(GB200, pin_shape=True)["devices"]["requests"]
    assert request["exactly"]["count"] == 8
    assert _selected(request)[0] == dranet.RAIL_SELECTOR
    assert '"0000:03:00.0"' in _selected(request)[1] and "oke.dra.net" not in _selected(request)[1]
    (alone,) = rails_only_claim_spec(GB200)["devices"]["requests"]  # one shape in the stack: no pin
    assert _selected(alone) == [dranet.RAIL_SELECTOR]
