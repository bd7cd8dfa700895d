"""Packing: several claims (or device-plugin workers) on one node, and what they leave stranded.

Claims are allocated in order, each with the allocator's first fit, and devices taken by earlier claims
are not available to later ones (as the scheduler sees a node whose claims are already allocated). For
each claim the report gives its devices, whether that allocation is aligned, and the misplaced devices
(a GPU on a root with none of the claim's rails, a rail on a root with none of its GPUs). After all
claims, *stranded* devices are the free GPUs on a root with no free rail and the free rails on a root
with no free GPU: a later aligned claim cannot use them.

Device-plugin path (seed 000, "GPUs from the device plugin"): a worker asks ``nvidia.com/gpu: N`` and a
DRA claim for rails. The NVIDIA DRA driver is not running then, so the inventory has only DRANET's slice.
The scheduler allocates every worker's rail claim first; then the kubelet picks each worker's GPUs by
count, without looking at rails. The kubelet may pick any N free GPUs, so the model takes either an
explicit choice (``gpu_indices`` in the seed's GPU numbering: 0,1 on pci0000:00, 2,3 on 3e, 4,5 on 7d,
6,7 on ba; e.g. the seed's run-1 picks 4,5,6,7) or a bound: ``worst`` picks free GPUs on roots without
the worker's rails first (the seed's run 1 on 10.140.86.84), ``best`` picks GPUs next to them first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from oke_gpu_rdma.allocator import Allocator
from oke_gpu_rdma.attributes import DEVICE_CLASS_SELECTORS
from oke_gpu_rdma.claim_spec import parse_claim, unwrap_claim
from oke_gpu_rdma.errors import AllocationAbortedError, ClaimError, ClaimValidationError, SelectorError
from oke_gpu_rdma.inventory import DeviceID, NodeInventory, dranet_slice, node_inventory
from oke_gpu_rdma.topology import Topology
from oke_gpu_rdma.verdicts import DeviceRef, describe, misplaced_devices

Alignment = Literal["aligned", "unaligned", "not applicable", "not allocated"]
GpuChoice = Literal["worst", "best"]
DEVICE_PLUGIN_RESOURCE = "nvidia.com/gpu"


@dataclass(frozen=True)
class ClaimPlacement:
    """Where one claim (or worker) landed."""

    claim: str
    allocated: bool
    alignment: Alignment
    devices: tuple[DeviceRef, ...]
    misplaced: tuple[DeviceRef, ...]
    message: str

    @property
    def misplaced_gpus(self) -> tuple[DeviceRef, ...]:
        """GPUs whose root has none of this claim's (or worker's) rails."""
        return tuple(d for d in self.misplaced if d.kind == "gpu")


@dataclass(frozen=True)
class PackingReport:
    """The placements in order, the devices left free, and which of them are stranded."""

    shape: str
    node: str
    placements: tuple[ClaimPlacement, ...]
    free: tuple[DeviceRef, ...]
    stranded: tuple[DeviceRef, ...]
    nodes_visited: int = 0

    @property
    def all_aligned(self) -> bool:
        return all(p.alignment in ("aligned", "not applicable") for p in self.placements)

    def lines(self) -> list[str]:
        out = [p.message for p in self.placements]
        if self.stranded:
            out.append(f"stranded on {self.node}: {describe(self.stranded)}")
        return out


def _alignment(devices: tuple[DeviceRef, ...]) -> tuple[Alignment, tuple[DeviceRef, ...]]:
    kinds = {d.kind for d in devices}
    if "gpu" not in kinds or "rail" not in kinds:
        return "not applicable", ()
    bad = misplaced_devices(devices)
    return ("unaligned" if bad else "aligned"), bad


def _placement(name: str, devices: tuple[DeviceRef, ...]) -> ClaimPlacement:
    alignment, bad = _alignment(devices)
    text = f"{name}: {describe(devices)} ({alignment})"
    if bad:
        gpus = [d for d in bad if d.kind == "gpu"]
        rails = [d for d in bad if d.kind == "rail"]
        if gpus:
            text += f"; GPUs whose root has none of its rails: {describe(gpus)}"
        if rails:
            text += f"; rails whose root has none of its GPUs: {describe(rails)}"
    return ClaimPlacement(name, True, alignment, devices, bad, text)


def _stranded(free: tuple[DeviceRef, ...]) -> tuple[DeviceRef, ...]:
    gpu_roots = {d.root for d in free if d.kind == "gpu"}
    rail_roots = {d.root for d in free if d.kind == "rail"}
    return tuple(
        d
        for d in free
        if (d.kind == "gpu" and d.root not in rail_roots) or (d.kind == "rail" and d.root not in gpu_roots)
    )


def _allocate_in_order(
    claims: Sequence[Mapping[str, Any]],
    inventory: NodeInventory,
    device_classes: Mapping[str, Sequence[str]],
    names: Sequence[str] | None,
) -> tuple[list[tuple[str, tuple[DeviceRef, ...] | None, str]], set[DeviceID], int]:
    taken: set[DeviceID] = set()
    results: list[tuple[str, tuple[DeviceRef, ...] | None, str]] = []
    nodes = 0
    for i, claim in enumerate(claims):
        given = names[i] if names and i < len(names) else None
        try:
            name, _ = unwrap_claim(claim, given)
        except ClaimValidationError:
            name = given or f"claim-{i}"
        if name == "claim":
            name = f"claim-{i}"
        try:
            spec = parse_claim(claim, name)
            result = Allocator(inventory, device_classes, in_use=taken).allocate(spec)
        except ClaimValidationError as exc:
            results.append((name, None, f"{name}: invalid: {'; '.join(exc.problems)}"))
            continue
        except (SelectorError, AllocationAbortedError) as exc:
            results.append((name, None, f"{name}: not allocated: {exc}"))
            continue
        nodes += result.nodes
        if result.devices is None:
            results.append((name, None, f"{name}: not allocated: {result.reason or 'no free devices fit'}"))
            continue
        refs = tuple(DeviceRef.of(a.request, a.device) for a in result.devices)
        taken.update(a.device.id for a in result.devices)
        results.append((name, refs, ""))
    return results, taken, nodes


def pack_claims(
    claims: Sequence[Mapping[str, Any]],
    topology: Topology,
    inventory: NodeInventory | None = None,
    device_classes: Mapping[str, Sequence[str]] = DEVICE_CLASS_SELECTORS,
    names: Sequence[str] | None = None,
) -> PackingReport:
    """Allocate ``claims`` one after the other on one node of ``topology``."""
    inv = inventory or node_inventory(topology)
    results, taken, nodes = _allocate_in_order(claims, inv, device_classes, names)
    placements = [
        _placement(name, refs)
        if refs is not None
        else ClaimPlacement(name, False, "not allocated", (), (), why)
        for name, refs, why in results
    ]
    free = tuple(DeviceRef.of("", d) for d in inv.devices() if d.id not in taken and d.kind != "other")
    return PackingReport(topology.shape, inv.node_name, tuple(placements), free, _stranded(free), nodes)


@dataclass(frozen=True)
class DevicePluginWorker:
    """A pod with ``nvidia.com/gpu: gpus`` and, optionally, a DRA claim (for rails)."""

    name: str
    gpus: int
    claim: Mapping[str, Any] | None = None
    gpu_indices: tuple[int, ...] | None = None


def pack_device_plugin_workers(
    workers: Sequence[DevicePluginWorker],
    topology: Topology,
    gpu_choice: GpuChoice = "worst",
    inventory: NodeInventory | None = None,
) -> PackingReport:
    """Workers with device-plugin GPUs and DRA rail claims on one node (module docstring)."""
    inv = inventory or NodeInventory("node-1", (dranet_slice(topology, "node-1"),), topology.shape)
    with_claims = [w for w in workers if w.claim is not None]
    claims = [w.claim for w in with_claims if w.claim is not None]
    results, taken, nodes = _allocate_in_order(
        claims, inv, DEVICE_CLASS_SELECTORS, [w.name for w in with_claims]
    )
    rails_of: dict[str, tuple[DeviceRef, ...] | None] = {
        w.name: refs for w, (_, refs, _) in zip(with_claims, results, strict=True)
    }
    why_of = {w.name: why for w, (_, _, why) in zip(with_claims, results, strict=True)}
    free_gpus = {g.index: g for g in topology.gpus}
    placements: list[ClaimPlacement] = []
    for w in workers:
        rails = rails_of.get(w.name) or ()
        if w.claim is not None and rails_of.get(w.name) is None:
            placements.append(ClaimPlacement(w.name, False, "not allocated", (), (), why_of[w.name]))
            continue
        rail_roots = {d.root for d in rails}
        if w.gpu_indices is not None:
            if len(w.gpu_indices) != w.gpus:
                raise ClaimError(
                    f"worker {w.name}: gpu_indices lists {len(w.gpu_indices)} GPUs, it asks for {w.gpus}"
                )
            for idx in w.gpu_indices:
                if idx not in free_gpus:
                    raise ClaimError(
                        f"worker {w.name}: GPU {idx} does not exist on {topology.shape} or is already taken"
                    )
            picked = [free_gpus[i] for i in w.gpu_indices]
        else:
            if w.gpus > len(free_gpus):
                placements.append(
                    ClaimPlacement(
                        w.name,
                        False,
                        "not allocated",
                        rails,
                        (),
                        f"{w.name}: only {len(free_gpus)} free GPUs",
                    )
                )
                continue
            # worst: GPUs away from the worker's rails first; best: GPUs next to them first.
            near_last = gpu_choice == "worst"
            order = sorted(free_gpus.values(), key=lambda g: ((g.root in rail_roots) == near_last, g.index))
            picked = order[: w.gpus]
        for g in picked:
            del free_gpus[g.index]
        gpu_refs = tuple(
            DeviceRef(
                DEVICE_PLUGIN_RESOURCE,
                DEVICE_PLUGIN_RESOURCE,
                inv.node_name,
                f"gpu{g.index}",
                "gpu",
                g.root,
                f"GPU {g.index}",
            )
            for g in sorted(picked, key=lambda g: g.index)
        )
        placements.append(_placement(w.name, gpu_refs + rails))
    free_gpu_refs = tuple(
        DeviceRef("", DEVICE_PLUGIN_RESOURCE, inv.node_name, f"gpu{g.index}", "gpu", g.root, f"GPU {g.index}")
        for g in sorted(free_gpus.values(), key=lambda g: g.index)
    )
    free_rails = tuple(DeviceRef.of("", d) for d in inv.devices() if d.id not in taken and d.kind == "rail")
    free = free_gpu_refs + free_rails
    return PackingReport(topology.shape, inv.node_name, tuple(placements), free, _stranded(free), nodes)
