"""Verdicts on a shape, i.e. does every claimed GPU sit next to one of its rails?

For one claim against one shape (an empty node of it) the verdict kind (:class:`VerdictKind`) is, in
this order:

* ``invalid``: the API server would reject the claim (:mod:`oke_gpu_rdma.claims.spec`, per API version);
* ``not checked``: the claim is valid but a selector uses a Kubernetes CEL function this model does not
  evaluate; advisory, never a rejection;
* ``unsatisfiable``: no allocation exists even on an empty node, or the allocator always aborts (CEL
  runtime error, unknown DeviceClass, more than 32 devices, ``allocationMode: All`` whose devices break
  a constraint); the pod would stay Pending. ``Verdict.cause`` says which (:class:`UnsatisfiableCause`);
* ``order-dependent``: an ``allocationMode: All`` request shares a constraint with an earlier request, and
  the allocator aborts or succeeds depending on which devices the earlier request takes first (upstream
  aborts the claim when an All device fails the constraint, ``allocateDevice`` with ``must`` in
  ``structured/internal/stable/allocator_stable.go``);
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
because on a busy node the scheduler falls back to later ones. The judge asks
:class:`~oke_gpu_rdma.claims.matching.Matcher` (exact, no device-by-device search): for each root R (one per
class of interchangeable roots), is there an allocation with a GPU on R and no rail on R, or a rail on R
and no GPU on R? Such an allocation is returned in ``Verdict.devices``; for ``aligned`` and ``not
applicable`` the devices are one allocation (values and devices tried in inventory order).
``nodes_visited`` counts the matcher's flow computations.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from oke_gpu_rdma.attributes import DEVICE_CLASS_SELECTORS, PCIE_ROOT
from oke_gpu_rdma.claims.candidates import AllocatedDevice, CandidateList, ClaimToAllocate, ValueKey
from oke_gpu_rdma.claims.device_cel import compile_selector
from oke_gpu_rdma.claims.inventory import Device, DeviceKind, NodeInventory, shape_inventory
from oke_gpu_rdma.claims.matching import Matcher, Witness
from oke_gpu_rdma.claims.pairing import suggest_pairs
from oke_gpu_rdma.claims.spec import ClaimSpec, parse_claim, unwrap_claim
from oke_gpu_rdma.errors import AllocationAbortedError, ClaimValidationError, SelectorError
from oke_gpu_rdma.topology import Topology


class VerdictKind(StrEnum):
    """What the judge decided; compare with the members (they also equal their string values)."""

    INVALID = "invalid"
    NOT_CHECKED = "not checked"
    UNSATISFIABLE = "unsatisfiable"
    ORDER_DEPENDENT = "order-dependent"
    NOT_APPLICABLE = "not applicable"
    UNALIGNED = "unaligned"
    ALIGNED = "aligned"

    @property
    def blocks_deploy(self) -> bool:
        """True for kinds a deploy must not pass: the claim is rejected, can stay Pending, or misaligns."""
        return self in _BLOCKING


_BLOCKING = frozenset(
    {VerdictKind.INVALID, VerdictKind.UNSATISFIABLE, VerdictKind.ORDER_DEPENDENT, VerdictKind.UNALIGNED}
)


class UnsatisfiableCause(StrEnum):
    """Why an ``unsatisfiable`` claim cannot be allocated."""

    NO_ALLOCATION = "no allocation"  # requests and constraints cannot be met together
    ROOT_CAPACITY = "root capacity"  # a pcieRoot matchAttribute group needs more than one root holds
    ALL_MODE_CONSTRAINT = "allocationMode All breaks a constraint"
    CEL_ERROR = "CEL error"
    UNKNOWN_DEVICE_CLASS = "unknown device class"
    TOO_MANY_DEVICES = "too many devices"


@dataclass(frozen=True)
class GroupNeed:
    """What the requests of one ``matchAttribute`` group need, against what one value (root) holds."""

    requests: tuple[str, ...]
    attribute: str
    gpus: int
    rails: int
    root_gpus: int
    root_rails: int


@dataclass(frozen=True)
class DeviceRef:
    """A device in a verdict or report: which request got it, what it is, where it sits."""

    request: str
    driver: str
    pool: str
    name: str
    kind: DeviceKind
    root: str | None
    label: str

    @classmethod
    def of(cls, request: str, device: Device) -> DeviceRef:
        return cls(request, device.driver, device.pool, device.name, device.kind, device.root, device.display)

    def __str__(self) -> str:
        return f"{self.label} on {self.root}" if self.root else self.label


@dataclass(frozen=True)
class Verdict:
    """The judgement of one claim on one shape; ``message`` is one paragraph a user can act on, rendered
    from the fields (``kind``, ``cause``, ``group``, ``devices``, ``misplaced``, ``fix``)."""

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
    cause: UnsatisfiableCause | None = None
    group: GroupNeed | None = None

    @property
    def ok(self) -> bool:
        """True for verdicts that need no change: aligned, or not applicable and allocatable."""
        return self.kind == VerdictKind.ALIGNED or (
            self.kind == VerdictKind.NOT_APPLICABLE and bool(self.allocatable)
        )

    @property
    def blocks_deploy(self) -> bool:
        return self.kind.blocks_deploy


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
    api_version: str | None = None,
) -> Verdict:
    """The verdict of ``claim`` (as written in ``api_version``, else its ``apiVersion``, else v1) on an
    empty node of ``topology`` (module docstring)."""
    shape = topology.shape
    try:
        claim_name, _ = unwrap_claim(claim, name)
        spec = parse_claim(claim, name, api_version=api_version)
    except ClaimValidationError as exc:
        label = name or "claim"
        if isinstance(claim, Mapping):
            meta = claim.get("metadata")
            if isinstance(meta, Mapping) and isinstance(meta.get("name"), str):
                label = name or meta["name"]
        return Verdict(
            VerdictKind.INVALID,
            f"claim {label} would be rejected by the API server: {'; '.join(exc.problems)}",
            label,
            shape,
            problems=exc.problems,
            allocatable=False,
        )
    unevaluated = list(spec.unevaluated)
    for sel in (a for r in spec.requests for a in r.alternatives):
        for k, expr in enumerate(device_classes.get(sel.device_class, ())):
            try:
                compiled = compile_selector(expr)
            except SelectorError:
                continue  # reported as a CEL error when the class is used
            if compiled.unsupported:
                unevaluated.append(
                    f"DeviceClass {sel.device_class}: selector #{k} uses {compiled.unsupported}"
                )
    if unevaluated:
        return Verdict(
            VerdictKind.NOT_CHECKED,
            f"claim {claim_name} is valid but not checked on {shape}: {'; '.join(dict.fromkeys(unevaluated))}, "
            "which this model does not evaluate; check its allocation on a node",
            claim_name,
            shape,
            requests=spec.request_names,
            problems=tuple(dict.fromkeys(unevaluated)),
        )
    inv = inventory or shape_inventory(topology)

    def aborted(cause: UnsatisfiableCause, exc: Exception) -> Verdict:
        return Verdict(
            VerdictKind.UNSATISFIABLE,
            f"claim {claim_name} can never be allocated on {shape}: {exc}",
            claim_name,
            shape,
            requests=spec.request_names,
            allocatable=False,
            cause=cause,
        )

    try:
        prepared = ClaimToAllocate(spec, inv.devices(), device_classes)
    except SelectorError as exc:
        return aborted(UnsatisfiableCause.CEL_ERROR, exc)
    except AllocationAbortedError as exc:
        return aborted(UnsatisfiableCause.UNKNOWN_DEVICE_CLASS, exc)
    too_many = prepared.device_limit_problem()
    if too_many:
        return aborted(UnsatisfiableCause.TOO_MANY_DEVICES, AllocationAbortedError(too_many))
    info = _ClaimShape(prepared)
    warnings = tuple(info.warnings)
    matcher = Matcher(prepared)
    first = matcher.find()
    hazard = _all_mode_hazard(matcher, prefixes=first is not None)
    if hazard is not None:
        return _order_verdict(spec, topology, hazard, first is not None, matcher.nodes, warnings)
    if first is None:
        return _unsatisfiable(spec, topology, info, prepared, matcher.nodes, warnings)
    chosen = _refs(prepared, first)
    if not info.gpu or not info.rail:
        only = "GPUs" if info.gpu else "rails" if info.rail else "neither GPUs nor rails"
        asked = info.gpu or info.rail or list(spec.request_names)
        return Verdict(
            VerdictKind.NOT_APPLICABLE,
            f"claim {claim_name} asks only for {only} (requests {', '.join(asked)}), so GPU/rail alignment "
            f"does not apply; it can be allocated on an empty {shape} node ({describe(chosen)})",
            claim_name,
            shape,
            requests=tuple(asked),
            roots=tuple(sorted({d.root for d in chosen if d.root})),
            devices=chosen,
            allocatable=True,
            warnings=warnings,
            nodes_visited=matcher.nodes,
        )
    devices = prepared.devices
    for root_class in [] if _anchored(prepared) else matcher.value_classes(PCIE_ROOT, kinds=True):
        root = root_class[0][1]
        for want, avoid in (("gpu", "rail"), ("rail", "gpu")):
            required = [p for p, d in enumerate(devices) if d.kind == want and d.root == root]
            excluded = [p for p, d in enumerate(devices) if d.kind == avoid and d.root == root]
            if not required:
                continue
            found = matcher.find(excluded=excluded, required=required)
            if found is not None:
                return _unaligned(spec, topology, info, _allocated(prepared, found), matcher.nodes, warnings)
    used_roots = tuple(sorted({d.root for d in chosen if d.root}))
    return Verdict(
        VerdictKind.ALIGNED,
        f"claim {claim_name} is aligned on {shape}: every allocation that satisfies requests "
        f"{', '.join(info.gpu + info.rail)} puts each GPU on a PCIe root with one of the claim's rails "
        f"and each rail on a root with one of its GPUs; for example {describe(chosen)}",
        claim_name,
        shape,
        requests=tuple(info.gpu + info.rail),
        roots=used_roots,
        devices=chosen,
        allocatable=True,
        warnings=warnings,
        nodes_visited=matcher.nodes,
    )


def _anchored(claim: ClaimToAllocate) -> bool:
    """A sufficient condition for alignment, checked on the claim's structure: every (sub)request that can
    get a GPU or a rail is under a pcieRoot constraint that also holds a request certain to take a GPU
    and one certain to take a rail (single-alternative requests whose candidates are all GPUs, resp. all
    rails). Then every device shares its root with a claimed GPU and a claimed rail in any allocation."""
    devices = claim.devices
    anchors: dict[int, set[str]] = {}
    for alts in claim.requests:
        if len(alts) != 1 or alts[0].need <= 0:
            continue
        kinds = {devices[p].kind for p in alts[0].candidates}
        if len(kinds) == 1 and kinds <= {"gpu", "rail"}:
            for ci in alts[0].constraints:
                if claim.constraint_specs[ci].attribute == PCIE_ROOT:
                    anchors.setdefault(ci, set()).update(kinds)
    for alts in claim.requests:
        for alt in alts:
            if any(devices[p].kind in ("gpu", "rail") for p in alt.candidates) and not any(
                anchors.get(ci) == {"gpu", "rail"} for ci in alt.constraints
            ):
                return False
    return True


def _allocated(claim: ClaimToAllocate, witness: Witness) -> tuple[AllocatedDevice, ...]:
    return tuple(AllocatedDevice(alt.selection.name, claim.devices[p]) for alt, p in witness.picks)


def _refs(claim: ClaimToAllocate, witness: Witness) -> tuple[DeviceRef, ...]:
    return tuple(DeviceRef.of(a.request, a.device) for a in _allocated(claim, witness))


@dataclass(frozen=True)
class _Hazard:
    """An ``allocationMode: All`` request under a constraint that an earlier request can set otherwise."""

    later: CandidateList
    constraint: int
    earlier: tuple[str, ...]
    value: ValueKey | None  # the value every device of the All request has; None if they differ
    other: ValueKey | None  # a value an earlier request can fix first
    device: Device


def _all_mode_hazard(matcher: Matcher, prefixes: bool) -> _Hazard | None:
    """allocator_stable.go ``allocateOne``: the devices of an All request are added one by one with
    ``must`` set, and a device that a constraint rejects aborts the whole claim ("cannot add device ...
    because a claim constraint would not be satisfied"); the allocator does not try other devices for the
    earlier requests. Requests with ``firstAvailable`` are not analysed here. With ``prefixes`` False (the
    claim has no allocation anyway) only the All requests whose own devices break a constraint count."""
    claim = matcher.claim
    for j, alts in enumerate(claim.requests):
        if len(alts) != 1 or alts[0].selection.mode != "All" or not alts[0].candidates:
            continue
        alt = alts[0]
        for ci in alt.constraints:
            earlier = tuple(a.selection.name for e in claim.requests[:j] for a in e if ci in a.constraints)
            bad = claim.all_mode_misfit(alt, ci)
            if bad is not None:
                return _Hazard(alt, ci, earlier, None, None, claim.devices[bad])
            value = claim.values[ci][alt.candidates[0]]
            if not earlier or not prefixes:
                continue
            others = {v for v in claim.values[ci] if v is not None and v != value}
            for other in sorted(others, key=lambda v: claim.values[ci].index(v)):
                if matcher.find(fixed={ci: other}, upto=j, active=ci) is not None:
                    return _Hazard(alt, ci, earlier, value, other, claim.devices[alt.candidates[0]])
    return None


def _order_verdict(
    spec: ClaimSpec, topology: Topology, h: _Hazard, satisfiable: bool, nodes: int, warnings: tuple[str, ...]
) -> Verdict:
    c = spec.constraints[h.constraint]
    later = h.later.selection.name
    if h.value is None:
        fix = (
            f"take request {later} out of {c.label} or narrow its selectors: allocationMode All takes "
            f"every matching device, and they do not share one value of {c.attribute}"
        )
        return Verdict(
            VerdictKind.UNSATISFIABLE,
            f"claim {spec.name} can never be allocated on {topology.shape}: request {later} "
            f"(allocationMode All) cannot add device {h.device.id} ({h.device.display}) because a claim "
            f"constraint would not be satisfied ({c.label}), and the allocator aborts the claim. Fix: {fix}",
            spec.name,
            topology.shape,
            requests=(later, *h.earlier),
            allocatable=False,
            fix=fix,
            warnings=warnings,
            nodes_visited=nodes,
            cause=UnsatisfiableCause.ALL_MODE_CONSTRAINT,
        )
    fix = (
        f"list request {later} before {', '.join(h.earlier)} in spec.devices.requests, so that its devices "
        f"fix the value of {c.attribute} first and the other requests follow it"
    )
    value = h.value[1]
    other = h.other[1] if h.other else "?"
    if not satisfiable:
        head = f"claim {spec.name} can never be allocated on {topology.shape}"
        kind = VerdictKind.UNSATISFIABLE
    else:
        head = f"claim {spec.name} may or may not be allocated on {topology.shape}, depending on device order"
        kind = VerdictKind.ORDER_DEPENDENT
    return Verdict(
        kind,
        f"{head}: request {later} (allocationMode All) needs {c.attribute} {value}, but the earlier "
        f"request(s) {', '.join(h.earlier)} in {c.label} can take devices with {other} first; then the "
        f'allocator cannot add {h.device.display} "because a claim constraint would not be satisfied" '
        f"and aborts the claim instead of trying other devices. Fix: {fix}",
        spec.name,
        topology.shape,
        requests=(*h.earlier, later),
        allocatable=satisfiable,
        fix=fix,
        warnings=warnings,
        nodes_visited=nodes,
        cause=UnsatisfiableCause.ALL_MODE_CONSTRAINT if not satisfiable else None,
    )


def _reason(claim: ClaimToAllocate) -> str:
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


def _unsatisfiable(
    spec: ClaimSpec,
    topology: Topology,
    info: _ClaimShape,
    claim: ClaimToAllocate,
    nodes: int,
    warnings: tuple[str, ...],
) -> Verdict:
    shape = topology.shape
    reason = _reason(claim)
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
        group = GroupNeed(
            tuple(members),
            c.attribute,
            g,
            r,
            max(len(x.gpus) for x in topology.roots),
            max(len(x.rails) for x in topology.roots),
        )
        what = " and ".join(p for p in (f"{g} GPUs" if g else "", f"{r} rails" if r else "") if p)
        fix = (
            f"a {PCIE_ROOT} constraint can hold at most what one root has ({group.root_gpus} GPUs and "
            f"{group.root_rails} rails): split the requests into per-root pairs gpus-i/rails-i, each pair "
            "with its own constraint (oke_gpu_rdma.claims.aligned_claim_spec), or ask for fewer devices"
        )
        return Verdict(
            VerdictKind.UNSATISFIABLE,
            f"claim {spec.name} can never be allocated on {shape}: no PCIe root has {what} "
            f"({_root_capacity(topology)}); requests {', '.join(members)} share "
            f"matchAttribute {PCIE_ROOT}, so the pod would stay Pending",
            spec.name,
            shape,
            requests=tuple(members),
            roots=topology.root_names,
            allocatable=False,
            fix=fix,
            warnings=warnings,
            nodes_visited=nodes,
            details={"reason": reason},
            cause=UnsatisfiableCause.ROOT_CAPACITY,
            group=group,
        )
    return Verdict(
        VerdictKind.UNSATISFIABLE,
        f"claim {spec.name} can never be allocated on {shape}: {reason}",
        spec.name,
        shape,
        requests=spec.request_names,
        roots=topology.root_names,
        allocatable=False,
        warnings=warnings,
        nodes_visited=nodes,
        details={"reason": reason},
        cause=UnsatisfiableCause.NO_ALLOCATION,
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
        VerdictKind.UNALIGNED,
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
