"""The reference allocator: a depth-first model of the Kubernetes structured allocator, for tests only.

Why it exists (as upstream keeps its allocator variants and a shared test harness,
``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/README.md`` and
``internal/allocatortesting``): the product judges claims with
:class:`oke_gpu_rdma.claims.matching.Matcher`, which decides whether allocations EXIST without trying
devices one by one. This module tries them one by one, as upstream's ``allocator_stable.go`` does, and
the tests compare the two (``test_reference_allocator.py`` for the allocator's own rules,
``test_matching.py`` for the judge against it on 3,000 random claims). Nothing in the product imports it.
Both start from :mod:`oke_gpu_rdma.claims.candidates` (candidate devices, value keys, the 32-device
limit, the ``allocationMode: All`` abort rule), so a rule changes in one place for both.

The units follow upstream: :class:`MatchAttributeConstraint` (add/remove as devices are tried),
:class:`~oke_gpu_rdma.claims.candidates.ClaimToAllocate` (the claim with each request's candidate
devices), the pools of a :class:`~oke_gpu_rdma.claims.inventory.NodeInventory`, and :class:`Search`
(the depth-first search).

Semantics kept from upstream: requests in claim order; for ``firstAvailable`` the subrequests in order;
devices in pool/slice order; DeviceClass selectors and then the request's selectors must all be true;
a CEL error aborts (:class:`~oke_gpu_rdma.common.errors.SelectorError`); ``matchAttribute`` is checked as each
device is added (a device without the attribute is never chosen, the first device fixes the value);
a constraint without ``requests`` applies to all requests; constraints act within one claim only;
``allocationMode: All`` takes every matching device and fails if one is in use; at most 32 devices per
claim; the first full solution wins.

Differences, all invisible in the result: devices of one request are tried as combinations in
increasing order instead of as permutations (the first solution is the same, because constraints only
depend on the set of devices); every selector is evaluated on every device up front, so a CEL runtime
error surfaces even when upstream would have found a solution before reaching the failing device (slice
order is not guaranteed, so that error can happen); and the search is pruned. At each node it checks
necessary conditions on what is left: each remaining request still has enough free candidates that fit
the fixed constraint values; all remaining requests together fit in the union of their candidates; and
for each matchAttribute constraint some attribute value has enough candidates for every constrained
request and in total. Pruning removes only branches without a solution, so the first solution is
unchanged and a claim that cannot be satisfied is refuted without enumerating devices.
:attr:`Search.nodes` counts visited nodes (like upstream's ``numAllocateOneInvocations``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from oke_gpu_rdma.claims.candidates import CandidateList, ClaimToAllocate, ValueKey, value_key
from oke_gpu_rdma.claims.inventory import Device, DeviceID, NodeInventory
from oke_gpu_rdma.claims.spec_types import ClaimSpec, DeviceSelection, MatchAttribute
from oke_gpu_rdma.common import release_registry as registry
from oke_gpu_rdma.common.errors import AllocationAbortedError

DEFAULT_MAX_NODES = 500_000


def _hall_violation(items: Sequence[tuple[int, Sequence[int]]]) -> tuple[list[int], int, int] | None:
    """A set of requests that needs more devices than their candidates offer, or None.

    Hall's condition checked on the families that matter in practice: for the union of all candidate
    sets and for each request's set S, the requests whose candidates lie inside S must fit in S.
    """
    sets = [frozenset(avail) for _, avail in items]
    union = frozenset().union(*sets) if sets else frozenset()
    for s in (union, *sets):
        members = [k for k, other in enumerate(sets) if other <= s]
        total = sum(items[k][0] for k in members)
        if total > len(s):
            return members, total, len(s)
    return None


class MatchAttributeConstraint:
    """All devices of the constrained requests share one value of ``attribute``."""

    def __init__(self, spec: MatchAttribute) -> None:
        self.spec = spec
        self.value: ValueKey | None = None
        self.count = 0

    def applies(self, selection: DeviceSelection) -> bool:
        return self.spec.applies_to(selection)

    def add(self, selection: DeviceSelection, device: Device) -> bool:
        """Track ``device`` if it fits; False if it lacks the attribute or has another value."""
        if not self.applies(selection):
            return True
        key = value_key(device.attribute(self.spec.attribute))
        if key is None:
            return False
        if self.count == 0:
            self.value = key
        elif key != self.value:
            return False
        self.count += 1
        return True

    def remove(self, selection: DeviceSelection, device: Device) -> None:
        """Undo one successful :meth:`add` with the same arguments."""
        if not self.applies(selection):
            return
        self.count -= 1
        if self.count == 0:
            self.value = None


@dataclass(frozen=True)
class AllocatedDevice:
    """One device of an allocation and the request (``req`` or ``req/sub``) it serves."""

    request: str
    device: Device


@dataclass(frozen=True)
class AllocationResult:
    """``devices`` is None when no allocation exists; ``reason`` then says why, when known."""

    devices: tuple[AllocatedDevice, ...] | None
    nodes: int
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.devices is not None


class Search:
    """Depth-first search for the first allocation, with pruning (see the module docstring).

    ``blocked`` devices (in use by other claims, or excluded by the caller) are never chosen; when
    ``require_any`` is given, a solution must contain at least one of those device positions.
    """

    def __init__(
        self,
        claim: ClaimToAllocate,
        blocked: Iterable[int] = (),
        require_any: Iterable[int] = (),
        max_nodes: int = DEFAULT_MAX_NODES,
    ) -> None:
        self.claim = claim
        self.blocked: set[int] = set(blocked)
        self.require_any = frozenset(require_any)
        self.max_nodes = max_nodes
        self.constraints = [MatchAttributeConstraint(c) for c in claim.constraint_specs]
        self.chosen: list[tuple[CandidateList, int]] = []
        self.nodes = 0
        self.reason = ""

    def run(self) -> tuple[tuple[str, int], ...] | None:
        if self._request(0):
            return tuple((c.selection.name, d) for c, d in self.chosen)
        return None

    # -- the search -------------------------------------------------------------------------------
    def _request(self, i: int) -> bool:
        if i == len(self.claim.requests):
            return not self.require_any or any(d in self.require_any for _, d in self.chosen)
        for alt in self.claim.requests[i]:
            if not alt.fits_after(len(self.chosen)):
                continue
            if self._device(i, alt, alt.need, 0):
                return True
        return False

    def _device(self, i: int, alt: CandidateList, remaining: int, start: int) -> bool:
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise AllocationAbortedError(
                f"claim {self.claim.spec.name}: search stopped after {self.max_nodes} nodes without an answer"
            )
        if remaining == 0:
            return self._request(i + 1)
        reason = self._infeasible(i, alt, remaining, start)
        if reason:
            if self.nodes == 1 or not self.reason:
                self.reason = reason
            return False
        cands = alt.candidates
        if alt.selection.mode == "All":
            pos = cands[start]
            if pos in self.blocked:
                return False
            if not self._add(alt, pos):
                dev = self.claim.devices[pos]
                raise AllocationAbortedError(
                    f"claim {self.claim.spec.name}, request {alt.selection.name}: cannot add device {dev.id} "
                    "because a claim constraint would not be satisfied"
                )
            if self._device(i, alt, remaining - 1, start + 1):
                return True
            self._remove(alt, pos)
            return False
        for k in range(start, len(cands) - remaining + 1):
            pos = cands[k]
            if pos in self.blocked or not self._add(alt, pos):
                continue
            if self._device(i, alt, remaining - 1, k + 1):
                return True
            self._remove(alt, pos)
        return False

    def _add(self, alt: CandidateList, pos: int) -> bool:
        device = self.claim.devices[pos]
        done: list[MatchAttributeConstraint] = []
        for ci in alt.constraints:
            c = self.constraints[ci]
            if not c.add(alt.selection, device):
                for d in done:
                    d.remove(alt.selection, device)
                return False
            done.append(c)
        self.blocked.add(pos)
        self.chosen.append((alt, pos))
        return True

    def _remove(self, alt: CandidateList, pos: int) -> None:
        device = self.claim.devices[pos]
        for ci in alt.constraints:
            self.constraints[ci].remove(alt.selection, device)
        self.blocked.discard(pos)
        self.chosen.pop()

    # -- pruning ----------------------------------------------------------------------------------
    def _available(self, alt: CandidateList, start: int) -> list[int]:
        fixed = [(ci, self.constraints[ci].value) for ci in alt.constraints if self.constraints[ci].count]
        values = self.claim.values
        return [
            p
            for p in alt.candidates[start:]
            if p not in self.blocked and all(values[ci][p] == v for ci, v in fixed)
        ]

    def _infeasible(self, i: int, alt: CandidateList, remaining: int, start: int) -> str:
        """A reason why nothing below this node can succeed, or ''."""
        items: list[tuple[CandidateList, int, list[int]]] = [(alt, remaining, self._available(alt, start))]
        reach_required = bool(self.require_any) and not any(d in self.require_any for _, d in self.chosen)
        found_required = False
        for later in self.claim.requests[i + 1 :]:
            if len(later) == 1:
                items.append((later[0], later[0].need, self._available(later[0], 0)))
                continue
            options = [(a, self._available(a, 0)) for a in later]
            if not any(len(av) >= a.need and a.need > 0 for a, av in options):
                name = later[0].selection.request
                return f"no subrequest of request {name} has enough free devices"
            if reach_required and any(self.require_any.intersection(av) for _, av in options):
                found_required = True
        for item, need, avail in items:
            if len(avail) < need:
                return f"request {item.selection.name} needs {need} device(s), {len(avail)} available"
        short = _hall_violation([(need, avail) for _, need, avail in items])
        if short is not None:
            names = ", ".join(items[k][0].selection.name for k in short[0])
            return f"requests {names} need {short[1]} devices together, {short[2]} available"
        fitting: dict[int, set[ValueKey | None]] = {}
        for ci, c in enumerate(self.constraints):
            group = [(item, need, avail) for item, need, avail in items if ci in item.constraints]
            if not group:
                continue
            fitting[ci] = self._fitting_values(ci, c, group)
            if not fitting[ci]:
                return self._constraint_reason(ci, group)
        if reach_required and not found_required:
            values = self.claim.values
            viable = any(
                p in self.require_any
                and all(values[ci][p] in fitting[ci] for ci in item.constraints if ci in fitting)
                for item, _, avail in items
                for p in avail
            )
            if not viable:
                return "no remaining request can take a required device"
        return ""

    def _fitting_values(
        self, ci: int, c: MatchAttributeConstraint, group: list[tuple[CandidateList, int, list[int]]]
    ) -> set[ValueKey | None]:
        """Values of the constraint's attribute that leave room for every constrained request."""
        values = self.claim.values[ci]
        if c.count:
            candidates_values: set[ValueKey | None] = {c.value}
        else:
            candidates_values = {values[p] for _, _, avail in group for p in avail}
        result: set[ValueKey | None] = set()
        for v in candidates_values:
            restricted = [(need, [p for p in avail if values[p] == v]) for _, need, avail in group]
            if all(len(av) >= need for need, av in restricted) and _hall_violation(restricted) is None:
                result.add(v)
        return result

    def _constraint_reason(self, ci: int, group: list[tuple[CandidateList, int, list[int]]]) -> str:
        spec = self.claim.constraint_specs[ci]
        values = self.claim.values[ci]
        total = sum(need for _, need, _ in group)
        per_value: dict[str, list[set[int]]] = {}
        for k, (_, _, avail) in enumerate(group):
            for p in avail:
                v = values[p]
                label = str(v[1]) if v is not None else "?"
                per_value.setdefault(label, [set() for _ in group])[k].add(p)
        if len(group) <= 4:
            needs = " and ".join(f"{need} for {item.selection.name}" for item, need, _ in group)
            have = "; ".join(
                f"{v}: {', '.join(str(len(s)) for s in sets)}" for v, sets in sorted(per_value.items())
            )
            return f"no value of {spec.attribute} has {needs} (free per value: {have or 'none'})"
        most = max((len(set().union(*sets)) for sets in per_value.values()), default=0)
        return (
            f"no value of {spec.attribute} has devices for all {len(group)} constrained requests: they need "
            f"{total} devices together, the most any value offers is {most}"
        )


class Allocator:
    """Allocate claims on one node, like the scheduler's allocator for that node."""

    def __init__(
        self,
        inventory: NodeInventory,
        device_classes: Mapping[str, Sequence[str]] = registry.DEVICE_CLASS_SELECTORS,
        in_use: Iterable[DeviceID] = (),
        max_nodes: int = DEFAULT_MAX_NODES,
    ) -> None:
        self.inventory = inventory
        self.devices = inventory.devices()
        self.device_classes = device_classes
        self.max_nodes = max_nodes
        taken = set(in_use)
        self.in_use = frozenset(i for i, d in enumerate(self.devices) if d.id in taken)

    def prepare(self, spec: ClaimSpec) -> ClaimToAllocate:
        """The claim with its candidates; AllocationAbortedError where upstream always aborts."""
        claim = ClaimToAllocate(spec, self.devices, self.device_classes)
        for alternatives in claim.requests:
            for alt in alternatives:
                if alt.selection.mode != "All":
                    continue
                for ci in alt.constraints:
                    bad = claim.all_mode_misfit(alt, ci)
                    if bad is not None:
                        raise AllocationAbortedError(
                            f"claim {spec.name}, request {alt.selection.name}: cannot add device "
                            f"{self.devices[bad].id} because a claim constraint would not be satisfied "
                            f"(allocationMode All takes every matching device; they differ in "
                            f"{spec.constraints[ci].attribute})"
                        )
        too_many = claim.device_limit_problem()
        if too_many:
            raise AllocationAbortedError(f"claim {spec.name}: {too_many}")
        return claim

    def allocate(self, spec: ClaimSpec | ClaimToAllocate) -> AllocationResult:
        """The first allocation in allocator order, or None with the reason."""
        return self.find(spec)

    def find(
        self,
        spec: ClaimSpec | ClaimToAllocate,
        exclude: Iterable[Device] = (),
        require_any: Iterable[Device] = (),
    ) -> AllocationResult:
        """The first allocation that avoids ``exclude`` and, if given, uses one of ``require_any``."""
        claim = spec if isinstance(spec, ClaimToAllocate) else self.prepare(spec)
        index = {d.id: i for i, d in enumerate(self.devices)}
        blocked = set(self.in_use) | {index[d.id] for d in exclude if d.id in index}
        required = [index[d.id] for d in require_any if d.id in index]
        if not required and list(require_any):
            return AllocationResult(None, 0, "no required device is on this node")
        search = Search(claim, blocked, required, self.max_nodes)
        found = search.run()
        if found is None:
            return AllocationResult(None, search.nodes, search.reason)
        return AllocationResult(
            tuple(AllocatedDevice(name, self.devices[pos]) for name, pos in found), search.nodes
        )
