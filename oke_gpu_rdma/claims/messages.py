"""The words of a verdict: its message and the fix it proposes, from what the judge found.

:mod:`oke_gpu_rdma.claims.judging` decides; every sentence a user reads about a claim is made here, so
that one verdict kind reads the same wherever it is reported (the policy pack, the stack config's claim
plan). Devices are named as the seed's tables name them (``GPU 2``, ``rdma4``), grouped by PCIe root.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from oke_gpu_rdma.claims.candidates import ClaimToAllocate
from oke_gpu_rdma.claims.inventory import Device
from oke_gpu_rdma.claims.pairing import suggest_pairs
from oke_gpu_rdma.claims.spec_types import MatchAttribute
from oke_gpu_rdma.claims.verdicts import DeviceRef, GroupNeed
from oke_gpu_rdma.drivers.attributes import PCI_BUS_ID, PCIE_ROOT
from oke_gpu_rdma.drivers.dranet import PCI_ADDRESS
from oke_gpu_rdma.nodes.topology import Topology


def describe(devices: Sequence[DeviceRef]) -> str:
    """Devices grouped by root (or NUMA node): 'GPU 2, GPU 3, rdma4, rdma5 on pci0000:3e; ...'."""
    by_root: dict[str, list[str]] = {}
    for device in devices:
        by_root.setdefault(device.where or "no PCIe root", []).append(device.label.split(" (")[0])
    return "; ".join(f"{', '.join(labels)} on {root}" for root, labels in by_root.items())


def root_capacity(topology: Topology) -> str:
    """What each PCIe root of the shape holds."""
    sizes = {(len(root.gpus), len(root.rails)) for root in topology.roots}
    if len(sizes) == 1:
        ((gpus, rails),) = sizes
        return f"each root of {topology.shape} has {gpus} GPUs and {rails} rails"
    return ", ".join(
        f"{root.name} has {len(root.gpus)} GPUs and {len(root.rails)} rails" for root in topology.roots
    )


# -- before the claim reaches the matcher ------------------------------------------------------------


def invalid(claim: str, problems: Sequence[str]) -> str:
    return f"claim {claim} would be rejected by the API server: {'; '.join(problems)}"


def not_checked(claim: str, shape: str, unevaluated: Sequence[str]) -> str:
    return (
        f"claim {claim} is valid but not checked on {shape}: {'; '.join(unevaluated)}, "
        "which this model does not evaluate; check its allocation on a node"
    )


def never_allocated(claim: str, shape: str, reason: object) -> str:
    """An unsatisfiable claim, with the allocator's reason (an abort) or the judge's."""
    return f"claim {claim} can never be allocated on {shape}: {reason}"


# -- allocationMode All ----------------------------------------------------------------------------


def all_mode_misfit_fix(request: str, constraint: MatchAttribute) -> str:
    return (
        f"take request {request} out of {constraint.label} or narrow its selectors: allocationMode All takes "
        f"every matching device, and they do not share one value of {constraint.attribute}"
    )


def all_mode_misfit(
    claim: str, shape: str, request: str, device: Device, constraint: MatchAttribute, fix: str
) -> str:
    return (
        f"claim {claim} can never be allocated on {shape}: request {request} "
        f"(allocationMode All) cannot add device {device.id} ({device.display}) because a claim "
        f"constraint would not be satisfied ({constraint.label}), and the allocator aborts the claim. Fix: {fix}"
    )


def all_mode_order_fix(request: str, earlier: Sequence[str], constraint: MatchAttribute) -> str:
    return (
        f"list request {request} before {', '.join(earlier)} in spec.devices.requests, so that its devices "
        f"fix the value of {constraint.attribute} first and the other requests follow it"
    )


def all_mode_order(
    claim: str,
    shape: str,
    satisfiable: bool,
    request: str,
    earlier: Sequence[str],
    constraint: MatchAttribute,
    value: object,
    other: object,
    device: Device,
    fix: str,
) -> str:
    """The All request needs ``value`` of the constraint's attribute; an earlier request can set ``other``."""
    if not satisfiable:
        head = f"claim {claim} can never be allocated on {shape}"
    else:
        head = f"claim {claim} may or may not be allocated on {shape}, depending on device order"
    return (
        f"{head}: request {request} (allocationMode All) needs {constraint.attribute} {value}, but the earlier "
        f"request(s) {', '.join(earlier)} in {constraint.label} can take devices with {other} first; then the "
        f'allocator cannot add {device.display} "because a claim constraint would not be satisfied" '
        f"and aborts the claim instead of trying other devices. Fix: {fix}"
    )


# -- no allocation -----------------------------------------------------------------------------------


def no_allocation_reason(claim: ClaimToAllocate) -> str:
    """Why no allocation exists: a request without enough matching devices, else the combination."""
    for alts in claim.requests:
        if len(alts) == 1 and len(alts[0].candidates) < alts[0].need:
            alt = alts[0]
            return (
                f"request {alt.selection.name} needs {alt.need} device(s), "
                f"{len(alt.candidates)} match its class and selectors"
            )
        if alts and all(
            len(a.candidates) < a.need or (a.selection.mode == "All" and not a.candidates) for a in alts
        ):
            return f"no subrequest of request {alts[0].selection.request} has enough matching devices"
    return "no set of devices satisfies all requests and constraints together"


def root_capacity_fix(group: GroupNeed, topology: Topology) -> str:
    if topology.alignment != "pcieRoot" and group.gpus and group.rails:
        return (
            f"no PCIe root of {topology.shape} holds both a GPU and a rail, so no {PCIE_ROOT} constraint "
            f"between them can hold; {_numa_fix(topology)}"
        )
    return (
        f"a {PCIE_ROOT} constraint can hold at most what one root has ({group.root_gpus} GPUs and "
        f"{group.root_rails} rails): split the requests into per-root pairs gpus-i/rails-i, each pair "
        "with its own constraint (oke_gpu_rdma.claims.aligned_claim_spec), or ask for fewer devices"
    )


def root_capacity_exceeded(claim: str, topology: Topology, group: GroupNeed) -> str:
    counts = (f"{group.gpus} GPUs" if group.gpus else "", f"{group.rails} rails" if group.rails else "")
    what = " and ".join(part for part in counts if part)
    return (
        f"claim {claim} can never be allocated on {topology.shape}: no PCIe root has {what} "
        f"({root_capacity(topology)}); requests {', '.join(group.requests)} share "
        f"matchAttribute {PCIE_ROOT}, so the pod would stay Pending"
    )


# -- allocations -------------------------------------------------------------------------------------


def not_applicable(
    claim: str, shape: str, only: str, asked: Sequence[str], example: Sequence[DeviceRef]
) -> str:
    return (
        f"claim {claim} asks only for {only} (requests {', '.join(asked)}), so GPU/rail alignment "
        f"does not apply; it can be allocated on an empty {shape} node ({describe(example)})"
    )


def _level(topology: Topology) -> tuple[str, str]:
    """How the alignment domain is named: ('on a PCIe root', 'on their root') or the NUMA node's words."""
    if topology.alignment == "pcieRoot":
        return "on a PCIe root", "on their root"
    return "in a NUMA node", "in their NUMA node"


def aligned(claim: str, topology: Topology, requests: Sequence[str], example: Sequence[DeviceRef]) -> str:
    where, _ = _level(topology)
    level = (
        "" if topology.alignment == "pcieRoot" else " at the NUMA node (no PCIe root holds a GPU and a rail)"
    )
    return (
        f"claim {claim} is aligned on {topology.shape}{level}: every allocation that satisfies requests "
        f"{', '.join(requests)} puts each GPU {where} with one of the claim's rails "
        f"and each rail {where} with one of its GPUs; for example {describe(example)}"
    )


def _numa_fix(topology: Topology) -> str:
    groups = "; ".join(
        f"{g.label}: GPUs {', '.join(x.pci_bus_id for x in g.gpus)} with rails {', '.join(r.name for r in g.rails)}"
        for g in topology.groups
        if g.gpus or g.rails
    )
    return (
        f"select each NUMA node's GPUs by {PCI_BUS_ID} and its rails by {PCI_ADDRESS} in the same claim "
        f"({groups}; see oke_gpu_rdma.claims.aligned_claim_specs)"
    )


def unaligned_fix(
    topology: Topology,
    gpu_requests: Sequence[str],
    rail_requests: Sequence[str],
    totals: tuple[int, int] | None,
) -> str:
    """How to align: a constraint for one pair, per-root pairs for the claim's totals, or the generic rule;
    at the NUMA node, explicit selectors per group."""
    if topology.alignment != "pcieRoot":
        return (
            f"{topology.shape} shares no attribute between GPUs and rails (no PCIe root holds both, the GPU "
            f"driver publishes no NUMA node), so {_numa_fix(topology)}"
        )
    generic = (
        f"tie each GPU request to rail requests on the same root with a constraint "
        f"{{requests: [gpus-i, rails-i], matchAttribute: {PCIE_ROOT}}} "
        "(see oke_gpu_rdma.claims.aligned_claim_spec)"
    )
    if totals is None:
        return generic
    gpus, rails = totals
    pairs = suggest_pairs(topology, gpus, rails)
    if pairs is None:
        return (
            f"no layout puts {gpus} GPUs and {rails} rails on {topology.shape} so that every GPU shares a root "
            "with a rail "
            f"({root_capacity(topology)}); ask for fewer rails or a GPU count that aligned_pairs accepts"
        )
    if len(pairs) == 1 and len(gpu_requests) == 1 and len(rail_requests) == 1:
        return f"add a constraint {{requests: [{gpu_requests[0]}, {rail_requests[0]}], matchAttribute: {PCIE_ROOT}}}"
    counted = Counter(pairs)
    layout = ", ".join(
        f"{times} x ({pair.gpus} GPU{'s' if pair.gpus > 1 else ''} + {pair.rails} rails)"
        for pair, times in counted.items()
    )
    return (
        f"split into {len(pairs)} per-root pairs, {layout}: requests gpus-i and rails-i, each pair with a "
        f"constraint {{requests: [gpus-i, rails-i], matchAttribute: {PCIE_ROOT}}}"
    )


def unaligned(
    claim: str, topology: Topology, devices: Sequence[DeviceRef], misplaced: Sequence[DeviceRef], fix: str
) -> str:
    _, theirs = _level(topology)
    parts = []
    gpus = [d for d in misplaced if d.kind == "gpu"]
    rails = [d for d in misplaced if d.kind == "rail"]
    if gpus:
        parts.append(f"GPUs without a claimed rail {theirs}: {describe(gpus)}")
    if rails:
        parts.append(f"rails without a claimed GPU {theirs}: {describe(rails)}")
    return (
        f"claim {claim} is unaligned on {topology.shape}: the scheduler could pick {describe(devices)}; "
        f"{'; '.join(parts)}. Fix: {fix}"
    )
