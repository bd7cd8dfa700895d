"""Aligned request layouts: how many GPU/rail pairs a worker needs, and the claim specs that ask for them.

A *pair* is one GPU request and one rail request tied by ``matchAttribute:
resource.kubernetes.io/pcieRoot``, so the scheduler puts both on one PCIe root. On BM.GPU.B4.8 each
root has 2 GPUs and 4 rails: 8 GPUs -> 4 pairs of (2 GPUs, 4 rails), 6 -> 3, 4 -> 2, 2 -> 1, and
1 GPU -> one pair of (1 GPU, 2 rails). Other counts cannot be split evenly over roots.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oke_gpu_rdma.attributes import PCIE_ROOT
from oke_gpu_rdma.errors import PairingError
from oke_gpu_rdma.releases import dranet, nvidia_gpu
from oke_gpu_rdma.topology import Topology


@dataclass(frozen=True)
class Pair:
    """GPUs and rails that one pair of requests asks for, on one PCIe root."""

    gpus: int
    rails: int


def _uniform_root(topology: Topology) -> tuple[int, int, int]:
    """(GPUs per root, rails per root, roots with GPUs); PairingError if roots differ."""
    roots = [r for r in topology.roots if r.gpus]
    shapes = {(len(r.gpus), len(r.rails)) for r in roots}
    if not roots or len(shapes) != 1:
        layout = ", ".join(f"{r.name}: {len(r.gpus)} GPUs + {len(r.rails)} rails" for r in topology.roots)
        raise PairingError(
            f"{topology.shape}: aligned pairs need roots with equal GPU and rail counts ({layout})"
        )
    ((gpus, rails),) = shapes
    if rails == 0:
        raise PairingError(
            f"{topology.shape}: the PCIe roots with GPUs have no rails, so no pair can be aligned"
        )
    return gpus, rails, len(roots)


def valid_gpu_counts(topology: Topology) -> list[int]:
    """GPU counts per worker that split into aligned pairs on ``topology``."""
    g, r, n = _uniform_root(topology)
    counts = {k * g for k in range(1, n + 1)}
    counts.update(d for d in range(1, g) if g % d == 0 and (r * d) % g == 0)
    return sorted(counts)


def aligned_pairs(topology: Topology, gpus_per_worker: int) -> list[Pair]:
    """The pairs a worker with ``gpus_per_worker`` GPUs needs; :class:`PairingError` if none fit."""
    g, r, n = _uniform_root(topology)
    valid = valid_gpu_counts(topology)
    if gpus_per_worker not in valid:
        total = g * n
        why = (
            f"a {topology.shape} node has only {total} GPUs"
            if gpus_per_worker > total
            else f"{gpus_per_worker} GPUs cannot be split into pairs that each sit on one PCIe root "
            f"(each of the {n} roots has {g} GPUs and {r} rails)"
        )
        raise PairingError(
            f"{gpus_per_worker} GPUs per worker cannot be aligned on {topology.shape}: {why}; "
            f"use one of {', '.join(map(str, valid))}"
        )
    if gpus_per_worker >= g:
        return [Pair(g, r) for _ in range(gpus_per_worker // g)]
    return [Pair(gpus_per_worker, r * gpus_per_worker // g)]


def suggest_pairs(topology: Topology, gpus: int, rails: int) -> list[Pair] | None:
    """Per-root pairs holding ``gpus`` GPUs and ``rails`` rails, as even as possible; None if impossible."""
    roots = [x for x in topology.roots if x.gpus and x.rails]
    if not roots or gpus <= 0 or rails <= 0:
        return None
    max_g = min(len(x.gpus) for x in roots)
    max_r = min(len(x.rails) for x in roots)
    lowest = max(-(-gpus // max_g), -(-rails // max_r), 1)
    for k in range(lowest, min(len(roots), gpus, rails) + 1):
        pairs = [
            Pair(gpus // k + (1 if i < gpus % k else 0), rails // k + (1 if i < rails % k else 0))
            for i in range(k)
        ]
        if all(p.gpus <= max_g and p.rails <= max_r for p in pairs):
            return pairs
    return None


def shape_selector(shape: str) -> str:
    """CEL that keeps a request to rails of nodes of ``shape``: DRANET's OKE provider publishes the instance
    shape as ``oke.dra.net/shape`` on every device (seed 000, seed 003)."""
    domain, _, name = dranet.OKE_SHAPE.partition("/")
    return f'device.attributes["{domain}"].{name} == "{shape}"'


def rail_request(name: str, count: int, shape: str | None = None) -> dict[str, Any]:
    """A DRANET rail request with the seed's rail selector; with ``shape``, only rails of that shape."""
    selectors = [{"cel": {"expression": dranet.RAIL_SELECTOR}}]
    if shape is not None:
        selectors.append({"cel": {"expression": shape_selector(shape)}})
    return {
        "name": name,
        "exactly": {"deviceClassName": dranet.DEVICE_CLASS, "count": count, "selectors": selectors},
    }


def gpu_request(name: str, count: int) -> dict[str, Any]:
    """A request for whole GPUs from the NVIDIA DRA driver."""
    return {"name": name, "exactly": {"deviceClassName": nvidia_gpu.DEVICE_CLASS, "count": count}}


def pairs_claim_spec(pairs: list[Pair], shape: str | None = None) -> dict[str, Any]:
    """A ResourceClaimSpec with requests gpus-i/rails-i and one pcieRoot constraint per pair; with ``shape``,
    the rails (and, through the constraint, the GPUs beside them) only on nodes of that shape."""
    requests: list[dict[str, Any]] = []
    constraints: list[dict[str, Any]] = []
    for i, pair in enumerate(pairs, start=1):
        requests.append(gpu_request(f"gpus-{i}", pair.gpus))
        requests.append(rail_request(f"rails-{i}", pair.rails, shape))
        constraints.append({"requests": [f"gpus-{i}", f"rails-{i}"], "matchAttribute": PCIE_ROOT})
    return {"devices": {"requests": requests, "constraints": constraints}}


def aligned_claim_spec(topology: Topology, gpus_per_worker: int, pin_shape: bool = False) -> dict[str, Any]:
    """The aligned ResourceClaimSpec for a worker (seed aligned-8gpu-16rails for 8 GPUs on B4.8); with
    ``pin_shape``, allocatable only on nodes of the topology's shape (a fleet of several shapes)."""
    return pairs_claim_spec(aligned_pairs(topology, gpus_per_worker), topology.shape if pin_shape else None)


def rails_only_claim_spec(topology: Topology, pin_shape: bool = False) -> dict[str, Any]:
    """All rails of a node in one request (seed all-rails); ``pin_shape`` as for :func:`aligned_claim_spec`."""
    shape = topology.shape if pin_shape else None
    return {"devices": {"requests": [rail_request("rails", len(topology.rails), shape)]}}
