"""The public API other code calls: judge a claim, build aligned claim specs.

``shape`` arguments take a shape name (a verified shape of :data:`oke_gpu_rdma.shape_catalog.CATALOG`),
a :class:`~oke_gpu_rdma.topology.Topology` or a topology dict (see
:func:`oke_gpu_rdma.topology.topology_from_dict`). Claims are Kubernetes JSON
dicts: a ResourceClaimSpec, a ResourceClaim or a ResourceClaimTemplate. Errors a caller can cause are
``ValueError`` subclasses from :mod:`oke_gpu_rdma.errors` with one-line messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oke_gpu_rdma.claims import pairing
from oke_gpu_rdma.claims.inventory import NodeInventory
from oke_gpu_rdma.claims.pairing import Pair
from oke_gpu_rdma.claims.verdicts import DeviceRef, Verdict, VerdictKind, judge
from oke_gpu_rdma.shape_catalog import CATALOG
from oke_gpu_rdma.topology import Topology

ShapeArg = str | Topology | Mapping[str, Any]

__all__ = [
    "DeviceRef",
    "Pair",
    "Verdict",
    "VerdictKind",
    "aligned_claim_spec",
    "aligned_pairs",
    "judge_claim",
    "rails_only_claim_spec",
]


def judge_claim(
    claim: Mapping[str, Any], shape: ShapeArg, inventory: NodeInventory | None = None, name: str | None = None
) -> Verdict:
    """Verdict of one claim on one shape: invalid, unsatisfiable, not applicable, unaligned or aligned."""
    return judge(claim, CATALOG.resolve(shape), inventory=inventory, name=name)


def aligned_pairs(shape: ShapeArg, gpus_per_worker: int) -> list[Pair]:
    """Pairs (GPUs, rails) per PCIe root for a worker; PairingError for counts that cannot align."""
    return pairing.aligned_pairs(CATALOG.resolve(shape), gpus_per_worker)


def aligned_claim_spec(shape: ShapeArg, gpus_per_worker: int) -> dict[str, Any]:
    """ResourceClaimSpec with gpus-i/rails-i requests and one pcieRoot constraint per pair."""
    return pairing.aligned_claim_spec(CATALOG.resolve(shape), gpus_per_worker)


def rails_only_claim_spec(shape: ShapeArg) -> dict[str, Any]:
    """ResourceClaimSpec asking for every rail of a node (seed all-rails)."""
    return pairing.rails_only_claim_spec(CATALOG.resolve(shape))
