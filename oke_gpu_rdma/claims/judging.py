"""The judge: which verdict (:mod:`oke_gpu_rdma.claims.verdicts`) a claim gets on an empty node of a shape.

The kinds are decided in the order :mod:`~oke_gpu_rdma.claims.verdicts` lists them; the words come from
:mod:`oke_gpu_rdma.claims.messages`. Callers use :func:`oke_gpu_rdma.claims.judge_claim`.

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from oke_gpu_rdma.claims import messages
from oke_gpu_rdma.claims.candidates import CandidateList, ClaimToAllocate, ValueKey
from oke_gpu_rdma.claims.device_cel import compile_selector
from oke_gpu_rdma.claims.distinct import DistinctMatcher, SearchBudgetExceeded
from oke_gpu_rdma.claims.inventory import Device, NodeInventory, shape_inventory
from oke_gpu_rdma.claims.matching import Matcher, Witness
from oke_gpu_rdma.claims.spec import parse_claim, unwrap_claim
from oke_gpu_rdma.claims.spec_types import ClaimSpec
from oke_gpu_rdma.claims.verdicts import (
    DeviceRef,
    GroupNeed,
    UnsatisfiableCause,
    Verdict,
    VerdictKind,
    misplaced_devices,
)
from oke_gpu_rdma.common import release_registry as registry
from oke_gpu_rdma.common.errors import AllocationAbortedError, ClaimValidationError, SelectorError
from oke_gpu_rdma.drivers.attributes import PCIE_ROOT
from oke_gpu_rdma.nodes.topology import Topology


class _Verdicts:
    """Makes the verdicts of one claim on one shape: the shape, the requests a verdict names unless it
    says otherwise, and the matcher's count of flow computations are set once."""

    def __init__(self, shape: str, requests: tuple[str, ...] = ()) -> None:
        self.shape = shape
        self.requests = requests
        self.matcher: Matcher | None = None

    def __call__(self, kind: VerdictKind, message: str, **fields: Any) -> Verdict:
        fields.setdefault("requests", self.requests)
        nodes = self.matcher.nodes if self.matcher is not None else 0
        return Verdict(kind, message, self.shape, nodes_visited=nodes, **fields)


class _Asks:
    """Which (sub)requests can yield GPUs or rails, and their fixed counts where known."""

    def __init__(self, claim: ClaimToAllocate) -> None:
        self.gpu: list[str] = []
        self.rail: list[str] = []
        self.counts: dict[str, int] = {}
        for alternatives in claim.requests:
            for alt in alternatives:
                kinds = {claim.devices[p].kind for p in alt.candidates}
                name = alt.selection.name
                if "gpu" in kinds:
                    self.gpu.append(name)
                if "rail" in kinds:
                    self.rail.append(name)
                if len(alternatives) == 1:
                    self.counts[name] = alt.need

    def totals(self) -> tuple[int, int] | None:
        """(GPUs, rails) the claim takes, when every GPU or rail request has one count."""
        if any(n not in self.counts for n in self.gpu + self.rail):
            return None
        return sum(self.counts[n] for n in self.gpu), sum(self.counts[n] for n in self.rail)


def judge(
    claim: Mapping[str, Any],
    topology: Topology,
    inventory: NodeInventory | None = None,
    device_classes: Mapping[str, Sequence[str]] = registry.DEVICE_CLASS_SELECTORS,
    name: str | None = None,
    api_version: str | None = None,
    kubernetes_version: str | None = None,
) -> Verdict:
    """The verdict of ``claim`` (as written in ``api_version``, else its ``apiVersion``, else v1) on an
    empty node of ``topology`` (module docstring), with the fields the API server of
    ``kubernetes_version`` serves (:mod:`oke_gpu_rdma.claims.feature_gates`)."""
    shape = topology.shape
    try:
        claim_name, _ = unwrap_claim(claim, name)
        spec = parse_claim(claim, name, api_version=api_version, kubernetes_version=kubernetes_version)
    except ClaimValidationError as exc:
        label = name or "claim"
        if isinstance(claim, Mapping):
            meta = claim.get("metadata")
            if isinstance(meta, Mapping) and isinstance(meta.get("name"), str):
                label = name or meta["name"]
        return _Verdicts(shape)(
            VerdictKind.INVALID,
            messages.invalid(label, exc.problems),
            problems=exc.problems,
            allocatable=False,
        )
    verdict = _Verdicts(shape, spec.request_names)
    unevaluated = _unevaluated(spec, device_classes)
    if unevaluated:
        return verdict(
            VerdictKind.NOT_CHECKED,
            messages.not_checked(claim_name, shape, unevaluated),
            problems=unevaluated,
        )

    def aborted(cause: UnsatisfiableCause, reason: object) -> Verdict:
        return verdict(
            VerdictKind.UNSATISFIABLE,
            messages.never_allocated(claim_name, shape, reason),
            allocatable=False,
            cause=cause,
        )

    try:
        prepared = ClaimToAllocate(spec, (inventory or shape_inventory(topology)).devices(), device_classes)
    except SelectorError as exc:
        return aborted(UnsatisfiableCause.CEL_ERROR, exc)
    except AllocationAbortedError as exc:
        return aborted(UnsatisfiableCause.UNKNOWN_DEVICE_CLASS, exc)
    too_many = prepared.device_limit_problem()
    if too_many:
        return aborted(UnsatisfiableCause.TOO_MANY_DEVICES, too_many)
    asks = _Asks(prepared)
    # distinctAttribute constraints need the device-by-device search (oke_gpu_rdma.claims.distinct).
    matcher = verdict.matcher = (
        DistinctMatcher(prepared, spec.distinct) if spec.distinct else Matcher(prepared)
    )
    try:
        return _decide(verdict, spec, topology, asks, prepared, matcher, claim_name, shape)
    except SearchBudgetExceeded as exc:
        reason = f"the search for allocations under its distinctAttribute constraints took {exc}"
        return verdict(
            VerdictKind.NOT_CHECKED, messages.not_checked(claim_name, shape, (reason,)), problems=(reason,)
        )


def _decide(
    verdict: _Verdicts,
    spec: ClaimSpec,
    topology: Topology,
    asks: _Asks,
    prepared: ClaimToAllocate,
    matcher: Matcher,
    claim_name: str,
    shape: str,
) -> Verdict:
    first = matcher.find()
    hazard = _all_mode_hazard(matcher, prefixes=first is not None)
    if hazard is not None:
        return _all_mode_verdict(verdict, spec, hazard, first is not None)
    if first is None:
        return _unsatisfiable(verdict, spec, topology, asks, prepared)
    example = _refs(prepared, first, topology)
    if not asks.gpu or not asks.rail:
        only = "GPUs" if asks.gpu else "rails" if asks.rail else "neither GPUs nor rails"
        asked = tuple(asks.gpu or asks.rail or spec.request_names)
        return verdict(
            VerdictKind.NOT_APPLICABLE,
            messages.not_applicable(claim_name, shape, only, asked, example),
            requests=asked,
            roots=_roots(example),
            devices=example,
            allocatable=True,
        )
    counterexample = _counterexample(matcher, prepared, topology)
    if counterexample is not None:
        return _unaligned(verdict, spec, topology, asks, counterexample)
    return verdict(
        VerdictKind.ALIGNED,
        messages.aligned(claim_name, topology, asks.gpu + asks.rail, example),
        requests=tuple(asks.gpu + asks.rail),
        roots=_roots(example),
        devices=example,
        allocatable=True,
    )


def _unevaluated(spec: ClaimSpec, device_classes: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """Selectors of the claim and of the DeviceClasses it uses that call functions this model does not
    evaluate (a CEL error is reported when the class is used)."""
    found = list(spec.unevaluated)
    for selection in (a for r in spec.requests for a in r.alternatives):
        for k, expr in enumerate(device_classes.get(selection.device_class, ())):
            try:
                compiled = compile_selector(expr)
            except SelectorError:
                continue
            if compiled.unsupported:
                found.append(
                    f"DeviceClass {selection.device_class}: selector #{k} uses {compiled.unsupported}"
                )
    return tuple(dict.fromkeys(found))


def _roots(devices: Sequence[DeviceRef]) -> tuple[str, ...]:
    return tuple(sorted({d.root for d in devices if d.root}))


def _domain(topology: Topology, device: Device) -> str | None:
    """The NUMA node a GPU or rail sits in, on a shape aligned at the NUMA node (else None: its root)."""
    if topology.alignment == "pcieRoot" or device.kind not in ("gpu", "rail") or device.root is None:
        return None
    group = topology.group_of_root(device.root)
    return group.label if group is not None else None


def _refs(claim: ClaimToAllocate, witness: Witness, topology: Topology) -> tuple[DeviceRef, ...]:
    return tuple(
        DeviceRef.of(alt.selection.name, claim.devices[p], _domain(topology, claim.devices[p]))
        for alt, p in witness.picks
    )


def _counterexample(
    matcher: Matcher, claim: ClaimToAllocate, topology: Topology
) -> tuple[DeviceRef, ...] | None:
    """An allocation with a GPU on a root without a claimed rail (or a rail without a GPU), or None. On a
    shape aligned at the NUMA node, in a NUMA node: for each node, an allocation with one of its GPUs
    and none of its rails, or the reverse (no matchAttribute can tie them, so no structural shortcut)."""
    devices = claim.devices
    if topology.alignment != "pcieRoot":
        domains = [_domain(topology, d) for d in devices]
        for group in topology.groups:
            for want, avoid in (("gpu", "rail"), ("rail", "gpu")):
                required = [p for p, d in enumerate(devices) if d.kind == want and domains[p] == group.label]
                excluded = [p for p, d in enumerate(devices) if d.kind == avoid and domains[p] == group.label]
                found = matcher.find(excluded=excluded, required=required) if required else None
                if found is not None:
                    return _refs(claim, found, topology)
        return None
    if _anchored(claim):
        return None
    for root_class in matcher.value_classes(PCIE_ROOT, kinds=True):
        root = root_class[0][1]
        for want, avoid in (("gpu", "rail"), ("rail", "gpu")):
            required = [p for p, d in enumerate(devices) if d.kind == want and d.root == root]
            excluded = [p for p, d in enumerate(devices) if d.kind == avoid and d.root == root]
            if not required:
                continue
            found = matcher.find(excluded=excluded, required=required)
            if found is not None:
                return _refs(claim, found, topology)
    return None


def _anchored(claim: ClaimToAllocate) -> bool:
    """A sufficient condition for alignment, checked on the claim's structure: every (sub)request that can
    get a GPU or a rail is under a pcieRoot constraint that also holds a request certain to take a GPU
    and one certain to take a rail (single-alternative requests whose candidates are all GPUs, resp. all
    rails). Then every device shares its root with a claimed GPU and a claimed rail in any allocation."""
    devices = claim.devices
    anchors: dict[int, set[str]] = {}
    for alternatives in claim.requests:
        if len(alternatives) != 1 or alternatives[0].need <= 0:
            continue
        kinds = {devices[p].kind for p in alternatives[0].candidates}
        if len(kinds) == 1 and kinds <= {"gpu", "rail"}:
            for ci in alternatives[0].constraints:
                if claim.constraint_specs[ci].attribute == PCIE_ROOT:
                    anchors.setdefault(ci, set()).update(kinds)
    for alternatives in claim.requests:
        for alt in alternatives:
            if any(devices[p].kind in ("gpu", "rail") for p in alt.candidates) and not any(
                anchors.get(ci) == {"gpu", "rail"} for ci in alt.constraints
            ):
                return False
    return True


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
    for j, alternatives in enumerate(claim.requests):
        if (
            len(alternatives) != 1
            or alternatives[0].selection.mode != "All"
            or not alternatives[0].candidates
        ):
            continue
        alt = alternatives[0]
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


def _all_mode_verdict(verdict: _Verdicts, spec: ClaimSpec, hazard: _Hazard, satisfiable: bool) -> Verdict:
    constraint = spec.constraints[hazard.constraint]
    later = hazard.later.selection.name
    if hazard.value is None:
        fix = messages.all_mode_misfit_fix(later, constraint)
        return verdict(
            VerdictKind.UNSATISFIABLE,
            messages.all_mode_misfit(spec.name, verdict.shape, later, hazard.device, constraint, fix),
            requests=(later, *hazard.earlier),
            allocatable=False,
            fix=fix,
            cause=UnsatisfiableCause.ALL_MODE_CONSTRAINT,
        )
    fix = messages.all_mode_order_fix(later, hazard.earlier, constraint)
    message = messages.all_mode_order(
        spec.name,
        verdict.shape,
        satisfiable,
        later,
        hazard.earlier,
        constraint,
        hazard.value[1],
        hazard.other[1] if hazard.other else "?",
        hazard.device,
        fix,
    )
    return verdict(
        VerdictKind.ORDER_DEPENDENT if satisfiable else VerdictKind.UNSATISFIABLE,
        message,
        requests=(*hazard.earlier, later),
        allocatable=satisfiable,
        fix=fix,
        cause=None if satisfiable else UnsatisfiableCause.ALL_MODE_CONSTRAINT,
    )


def _root_capacity_group(spec: ClaimSpec, topology: Topology, asks: _Asks) -> GroupNeed | None:
    """A pcieRoot constraint whose GPU and rail requests need more than any one root holds."""
    for constraint in spec.constraints:
        if constraint.attribute != PCIE_ROOT:
            continue
        members = [
            n
            for n in asks.gpu + asks.rail
            if not constraint.requests or n.split("/")[0] in constraint.requests or n in constraint.requests
        ]
        if not members or any(n not in asks.counts for n in members):
            continue
        gpus = sum(asks.counts[n] for n in members if n in asks.gpu)
        rails = sum(asks.counts[n] for n in members if n in asks.rail)
        if any(len(root.gpus) >= gpus and len(root.rails) >= rails for root in topology.roots):
            continue
        return GroupNeed(
            tuple(members),
            constraint.attribute,
            gpus,
            rails,
            max(len(root.gpus) for root in topology.roots),
            max(len(root.rails) for root in topology.roots),
        )
    return None


def _unsatisfiable(
    verdict: _Verdicts, spec: ClaimSpec, topology: Topology, asks: _Asks, claim: ClaimToAllocate
) -> Verdict:
    group = _root_capacity_group(spec, topology, asks)
    if group is not None:
        return verdict(
            VerdictKind.UNSATISFIABLE,
            messages.root_capacity_exceeded(spec.name, topology, group),
            requests=group.requests,
            roots=topology.root_names,
            allocatable=False,
            fix=messages.root_capacity_fix(group, topology),
            cause=UnsatisfiableCause.ROOT_CAPACITY,
            group=group,
        )
    return verdict(
        VerdictKind.UNSATISFIABLE,
        messages.never_allocated(spec.name, topology.shape, messages.no_allocation_reason(claim)),
        roots=topology.root_names,
        allocatable=False,
        cause=UnsatisfiableCause.NO_ALLOCATION,
    )


def _unaligned(
    verdict: _Verdicts, spec: ClaimSpec, topology: Topology, asks: _Asks, devices: tuple[DeviceRef, ...]
) -> Verdict:
    misplaced = misplaced_devices(devices)
    fix = messages.unaligned_fix(topology, asks.gpu, asks.rail, asks.totals())
    return verdict(
        VerdictKind.UNALIGNED,
        messages.unaligned(spec.name, topology, devices, misplaced, fix),
        requests=tuple(dict.fromkeys(d.request for d in misplaced)),
        roots=_roots(misplaced),
        devices=devices,
        misplaced=misplaced,
        fix=fix,
        allocatable=True,
    )
