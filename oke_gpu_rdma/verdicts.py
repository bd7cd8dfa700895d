"""Verdicts: is a claim aligned on a shape, i.e. does every claimed GPU sit next to one of its rails?

For one claim against one shape (an empty node of it) the verdict is, in this order:

* ``invalid``: the API server would reject the claim (:mod:`oke_gpu_rdma.claim_spec`);
* ``unsatisfiable``: the allocator finds no devices even on an empty node, or aborts (CEL error,
  unknown DeviceClass, more than 32 devices); the pod would stay Pending;
* ``not applicable``: the claim asks only for GPUs or only for rails (or neither): alignment between
  GPUs and rails does not apply; ``allocatable`` says whether it fits an empty node;
* ``unaligned``: some allocation the scheduler could pick puts a claimed GPU on a PCIe root with none
  of the claim's rails, or a claimed rail on a root with none of the claim's GPUs;
* ``aligned``: no such allocation exists.

How "could pick" is judged. The scheduler takes the first fit in pool/slice order, but neither the
order of pools and slices nor the order of devices in a slice is guaranteed (drivers republish, the
informer cache has no order), and a node that runs other claims has fewer free devices. So a claim
whose alignment depends on device order is not aligned. A claim is aligned iff EVERY allocation that
satisfies its requests and constraints is aligned; for ``firstAvailable`` every subrequest counts,
because on a busy node the scheduler falls back to later ones. The judge searches for a counterexample
with the same pruned depth-first search the allocator uses, which is exhaustive and so does not depend
on device order: for each root R, one search requires a GPU on R while excluding every rail on R, and
another requires a rail on R while excluding every GPU on R. The first counterexample found is returned
in ``Verdict.devices``; for ``aligned`` and ``not applicable`` the devices are the first fit in the
inventory's order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from oke_gpu_rdma.allocator import AllocatedDevice, Allocator, ClaimToAllocate
from oke_gpu_rdma.attributes import DEVICE_CLASS_SELECTORS, PCIE_ROOT
from oke_gpu_rdma.claim_spec import ClaimSpec, parse_claim, unwrap_claim
from oke_gpu_rdma.errors import AllocationAbortedError, ClaimValidationError, SelectorError
from oke_gpu_rdma.inventory import Device, NodeInventory, node_inventory
from oke_gpu_rdma.pairing import suggest_pairs
from oke_gpu_rdma.topology import Topology

VerdictKind = Literal["invalid", "unsatisfiable", "unaligned", "aligned", "not applicable"]


@dataclass(frozen=True)
class DeviceRef:
    """A device in a verdict or report: which request got it, what it is, where it sits."""

    request: str
    driver: str
    pool: str
    name: str
    kind: str
    root: str | None
    label: str

    @classmethod
    def of(cls, request: str, device: Device) -> DeviceRef:
        return cls(request, device.driver, device.pool, device.name, device.kind, device.root, device.display)

    def __str__(self) -> str:
        return f"{self.label} on {self.root}" if self.root else self.label


@dataclass(frozen=True)
class Verdict:
    """The judgement of one claim on one shape; ``message`` is one paragraph a user can act on."""

    kind: VerdictKind
    message: str
    claim: str
    shape: str
    requests: tuple[str, ...] = ()
    roots: tuple[str, ...] = ()
    devices: tuple[DeviceRef, ...] = ()
    misplaced: tuple[DeviceRef, ...] = ()
    fix: str | None = None
    problems: tuple[str, ...] = ()
    allocatable: bool | None = None
    warnings: tuple[str, ...] = ()
    nodes_visited: int = 0
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True for verdicts that need no change: aligned, or not applicable and allocatable."""
        return self.kind == "aligned" or (self.kind == "not applicable" and bool(self.allocatable))


def misplaced_devices(devices: Sequence[DeviceRef]) -> tuple[DeviceRef, ...]:
    """GPUs on roots with none of the set's rails, and rails on roots with none of its GPUs."""
    gpu_roots = {d.root for d in devices if d.kind == "gpu"}
    rail_roots = {d.root for d in devices if d.kind == "rail"}
    if not gpu_roots or not rail_roots:
        return ()
    return tuple(
        d
        for d in devices
        if (d.kind == "gpu" and d.root not in rail_roots) or (d.kind == "rail" and d.root not in gpu_roots)
    )


def describe(devices: Sequence[DeviceRef]) -> str:
    """Devices grouped by root: 'GPU 2, GPU 3, rdma4, rdma5 on pci0000:3e; ...'."""
    by_root: dict[str, list[str]] = {}
    for d in devices:
        by_root.setdefault(d.root or "no PCIe root", []).append(d.label.split(" (")[0])
    return "; ".join(f"{', '.join(labels)} on {root}" for root, labels in by_root.items())


def _root_capacity(topology: Topology) -> str:
    sizes = {(len(r.gpus), len(r.rails)) for r in topology.roots}
    if len(sizes) == 1:
        ((g, r),) = sizes
        return f"each root of {topology.shape} has {g} GPUs and {r} rails"
    return ", ".join(f"{r.name} has {len(r.gpus)} GPUs and {len(r.rails)} rails" for r in topology.roots)


class _ClaimShape:
    """Which (sub)requests can yield GPUs or rails, and their fixed counts where known."""

    def __init__(self, claim: ClaimToAllocate) -> None:
        self.gpu: list[str] = []
        self.rail: list[str] = []
        self.counts: dict[str, int] = {}
        self.warnings: list[str] = []
        for alts in claim.requests:
            for alt in alts:
                kinds = {claim.devices[p].kind for p in alt.candidates}
                name = alt.selection.name
                if "gpu" in kinds:
                    self.gpu.append(name)
                if "rail" in kinds:
                    self.rail.append(name)
                    others = sorted(
                        {claim.devices[p].display for p in alt.candidates if claim.devices[p].kind == "other"}
                    )
                    if others:
                        self.warnings.append(
                            f"request {name} can also get devices that are not RDMA rails "
                            f"({', '.join(others)}); "
                            "use the rail selector of oke_gpu_rdma.attributes.RAIL_SELECTOR"
                        )
                if len(alts) == 1:
                    self.counts[name] = alt.need

    def totals(self) -> tuple[int, int] | None:
        if any(n not in self.counts for n in self.gpu + self.rail):
            return None
        return sum(self.counts[n] for n in self.gpu), sum(self.counts[n] for n in self.rail)


def judge(
    claim: Mapping[str, Any],
    topology: Topology,
    inventory: NodeInventory | None = None,
    device_classes: Mapping[str, Sequence[str]] = DEVICE_CLASS_SELECTORS,
    name: str | None = None,
) -> Verdict:
    """The verdict of ``claim`` on an empty node of ``topology`` (module docstring)."""
    shape = topology.shape
    try:
        claim_name, _ = unwrap_claim(claim, name)
        spec = parse_claim(claim, name)
    except ClaimValidationError as exc:
        label = name or "claim"
        if isinstance(claim, Mapping):
            meta = claim.get("metadata")
            if isinstance(meta, Mapping) and isinstance(meta.get("name"), str):
                label = name or meta["name"]
        return Verdict(
            "invalid",
            f"claim {label} would be rejected by the API server: {'; '.join(exc.problems)}",
            label,
            shape,
            problems=exc.problems,
            allocatable=False,
        )
    inv = inventory or node_inventory(topology)
    allocator = Allocator(inv, device_classes)
    requests = spec.request_names
    try:
        prepared = allocator.prepare(spec)
        first = allocator.allocate(prepared)
    except (SelectorError, AllocationAbortedError) as exc:
        return Verdict(
            "unsatisfiable",
            f"claim {claim_name} can never be allocated on {shape}: {exc}",
            claim_name,
            shape,
            requests=requests,
            allocatable=False,
        )
    info = _ClaimShape(prepared)
    warnings = tuple(info.warnings)
    nodes = first.nodes
    if first.devices is None:
        return _unsatisfiable(spec, topology, info, first.reason, nodes, warnings)
    chosen = tuple(DeviceRef.of(a.request, a.device) for a in first.devices)
    if not info.gpu or not info.rail:
        only = "GPUs" if info.gpu else "rails" if info.rail else "neither GPUs nor rails"
        asked = info.gpu or info.rail or list(requests)
        return Verdict(
            "not applicable",
            f"claim {claim_name} asks only for {only} (requests {', '.join(asked)}), so GPU/rail alignment "
            f"does not apply; it can be allocated on an empty {shape} node ({describe(chosen)})",
            claim_name,
            shape,
            requests=tuple(asked),
            roots=tuple(sorted({d.root for d in chosen if d.root})),
            devices=chosen,
            allocatable=True,
            warnings=warnings,
            nodes_visited=nodes,
        )
    devices = inv.devices()
    for root in topology.roots:
        for want, avoid in (("gpu", "rail"), ("rail", "gpu")):
            required = [d for d in devices if d.kind == want and d.root == root.name]
            excluded = [d for d in devices if d.kind == avoid and d.root == root.name]
            if not required:
                continue
            try:
                found = allocator.find(prepared, exclude=excluded, require_any=required)
            except (SelectorError, AllocationAbortedError) as exc:
                return Verdict(
                    "unsatisfiable",
                    f"claim {claim_name} may fail to allocate on {shape}: {exc}",
                    claim_name,
                    shape,
                    requests=requests,
                    allocatable=False,
                    nodes_visited=nodes,
                )
            nodes += found.nodes
            if found.devices is not None:
                return _unaligned(spec, topology, info, found.devices, nodes, warnings)
    used_roots = tuple(sorted({d.root for d in chosen if d.root}))
    return Verdict(
        "aligned",
        f"claim {claim_name} is aligned on {shape}: every allocation that satisfies requests "
        f"{', '.join(info.gpu + info.rail)} puts each GPU on a PCIe root with one of the claim's rails "
        f"and each rail on a root with one of its GPUs; first fit in slice order: {describe(chosen)}",
        claim_name,
        shape,
        requests=tuple(info.gpu + info.rail),
        roots=used_roots,
        devices=chosen,
        allocatable=True,
        warnings=warnings,
        nodes_visited=nodes,
    )


def _unsatisfiable(
    spec: ClaimSpec, topology: Topology, info: _ClaimShape, reason: str, nodes: int, warnings: tuple[str, ...]
) -> Verdict:
    shape = topology.shape
    message = f"claim {spec.name} can never be allocated on {shape}: {reason or 'no devices fit'}"
    involved = spec.request_names
    for c in spec.constraints:
        if c.attribute != PCIE_ROOT:
            continue
        members = [
            n
            for n in info.gpu + info.rail
            if not c.requests or n.split("/")[0] in c.requests or n in c.requests
        ]
        if not members or any(n not in info.counts for n in members):
            continue
        g = sum(info.counts[n] for n in members if n in info.gpu)
        r = sum(info.counts[n] for n in members if n in info.rail)
        if any(len(x.gpus) >= g and len(x.rails) >= r for x in topology.roots):
            continue
        what = " and ".join(p for p in (f"{g} GPUs" if g else "", f"{r} rails" if r else "") if p)
        message = (
            f"claim {spec.name} can never be allocated on {shape}: no PCIe root has {what} "
            f"({_root_capacity(topology)}); requests {', '.join(members)} share "
            f"matchAttribute {PCIE_ROOT}, so the pod would stay Pending"
        )
        involved = tuple(members)
        break
    return Verdict(
        "unsatisfiable",
        message,
        spec.name,
        shape,
        requests=involved,
        roots=topology.root_names,
        allocatable=False,
        warnings=warnings,
        nodes_visited=nodes,
        details={"reason": reason},
    )


def _fix(spec: ClaimSpec, topology: Topology, info: _ClaimShape) -> str:
    totals = info.totals()
    generic = (
        f"tie each GPU request to rail requests on the same root with a constraint "
        f"{{requests: [gpus-i, rails-i], matchAttribute: {PCIE_ROOT}}} "
        "(see oke_gpu_rdma.claims.aligned_claim_spec)"
    )
    if totals is None:
        return generic
    g, r = totals
    pairs = suggest_pairs(topology, g, r)
    if pairs is None:
        return (
            f"no layout puts {g} GPUs and {r} rails on {topology.shape} so that every GPU shares a root "
            "with a rail "
            f"({_root_capacity(topology)}); ask for fewer rails or a GPU count that aligned_pairs accepts"
        )
    if len(pairs) == 1 and len(info.gpu) == 1 and len(info.rail) == 1:
        return f"add a constraint {{requests: [{info.gpu[0]}, {info.rail[0]}], matchAttribute: {PCIE_ROOT}}}"
    counted = Counter(pairs)
    layout = ", ".join(
        f"{n} x ({p.gpus} GPU{'s' if p.gpus > 1 else ''} + {p.rails} rails)" for p, n in counted.items()
    )
    return (
        f"split into {len(pairs)} per-root pairs, {layout}: requests gpus-i and rails-i, each pair with a "
        f"constraint {{requests: [gpus-i, rails-i], matchAttribute: {PCIE_ROOT}}}"
    )


def _unaligned(
    spec: ClaimSpec,
    topology: Topology,
    info: _ClaimShape,
    found: tuple[AllocatedDevice, ...],
    nodes: int,
    warnings: tuple[str, ...],
) -> Verdict:
    devices = tuple(DeviceRef.of(a.request, a.device) for a in found)
    bad = misplaced_devices(devices)
    parts = []
    gpus = [d for d in bad if d.kind == "gpu"]
    rails = [d for d in bad if d.kind == "rail"]
    if gpus:
        parts.append(f"GPUs without a claimed rail on their root: {describe(gpus)}")
    if rails:
        parts.append(f"rails without a claimed GPU on their root: {describe(rails)}")
    fix = _fix(spec, topology, info)
    involved = tuple(dict.fromkeys(d.request for d in bad))
    message = (
        f"claim {spec.name} is unaligned on {topology.shape}: the scheduler could pick {describe(devices)}; "
        f"{'; '.join(parts)}. Fix: {fix}"
    )
    return Verdict(
        "unaligned",
        message,
        spec.name,
        topology.shape,
        requests=involved,
        roots=tuple(sorted({d.root for d in bad if d.root})),
        devices=devices,
        misplaced=bad,
        fix=fix,
        allocatable=True,
        warnings=warnings,
        nodes_visited=nodes,
    )
