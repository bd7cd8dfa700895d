"""Aligned pairs per GPU count, and the claim specs built from them (checked against the seed)."""

from __future__ import annotations

import pytest

from oke_gpu_rdma.claims import aligned_claim_spec, aligned_pairs, judge_claim, rails_only_claim_spec
from oke_gpu_rdma.claims.pairing import Pair, suggest_pairs
from oke_gpu_rdma.claims.spec import unwrap_claim
from oke_gpu_rdma.errors import PairingError
from oke_gpu_rdma.shape_catalog import CATALOG
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
