"""Exact questions about the allocations of one claim on one node, answered without a device-by-device search.

The structured allocator (``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/
allocator_stable.go``) tries devices one by one and backtracks; on some claims that takes minutes, and the
scheduler gives up after its filter timeout (kubernetes/kubernetes#131730). Which allocations EXIST does
not depend on that order, so this module decides existence another way:

1. choose an alternative for each ``firstAvailable`` request (in order; a combination above 32 devices is
   skipped, as upstream's ``errAllocationResultMaxSizeExceeded`` makes the allocator try the next one);
2. choose a value for each ``matchAttribute`` constraint that applies to a chosen (sub)request: each
   constraint is a variable whose domain is the values its devices can share (four PCIe roots on
   BM.GPU.B4.8);
3. with every choice made, the rest is a bipartite b-matching: each (sub)request needs ``count`` distinct
   devices among its candidates that have the chosen values (``allocationMode: All`` needs all of them).
   That is a max-flow on a graph of requests and device *types* (devices that the same requests accept),
   a few dozen nodes. For the yes/no question (every search node) requests with the same candidates are
   one group needing the sum of their counts, and up to four groups Hall's condition is checked directly
   (every set of groups needs at most the devices their candidates hold); the per-request flow runs only
   for the allocation that is returned, so the devices a verdict names do not depend on the grouping
   (the flow and the Hall check: :mod:`~oke_gpu_rdma.claims.bipartite_flow`).

Steps 1 and 2 are a search, but every node is pruned by the same max-flow with the undecided constraints
relaxed (devices only need the attribute), and values that are interchangeable are tried once: two values
of an attribute are interchangeable when the devices holding them look alike to every request and every
other constraint (on BM.GPU.B4.8 the four roots are, for the usual selectors). A search over at most 32
constraints with at most a handful of distinct values each, pruned by an exact relaxation, stays small;
:attr:`Matcher.nodes` counts the flow computations. Work that cannot change an answer is skipped: a
prefix of step 1 is checked only when a later request offers a choice it could prune, and step 2 narrows
the candidate masks by each value it sets and recomputes only the domains of constraints that share a
request with the ones just set.

``find`` answers "is there an allocation that avoids ``excluded`` devices and, if given, uses at least one
``required`` device", with constraint values optionally ``fixed`` and optionally only for the first
``upto`` requests. The required-device part needs no extra search: when some allocation exists and some
chosen request could take a required device, moving one of that request's devices onto it keeps the
allocation valid (the required device is free, else it would already be used).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from oke_gpu_rdma.claims.bipartite_flow import (
    Flow,
    bit_positions,
    bitmask,
    device_types,
    groups_fit,
    lowest_bit,
    union_of,
)
from oke_gpu_rdma.claims.candidates import CandidateList, ClaimToAllocate, ValueKey, value_key


@dataclass(frozen=True)
class Witness:
    """One allocation: (the (sub)request, device position) pairs, and the value of each constraint used."""

    picks: tuple[tuple[CandidateList, int], ...]
    values: Mapping[int, ValueKey]


class Matcher:
    """Existence of allocations of one prepared claim (see the module docstring)."""

    def __init__(self, claim: ClaimToAllocate) -> None:
        self.claim = claim
        self.values = claim.values
        self.attributes = [spec.attribute for spec in claim.constraint_specs]
        self.nodes = 0
        self._all_alts = [alt for alts in claim.requests for alt in alts]
        # Device sets as bitmasks (bit p = device position p). A constraint's values depend only on its
        # attribute, and claims often put many constraints on pcieRoot: one set of masks per attribute.
        per_attribute: dict[str, tuple[dict[ValueKey, int], int, list[tuple[ValueKey, int]]]] = {}
        for constraint, attribute in enumerate(self.attributes):
            if attribute not in per_attribute:
                masks: dict[ValueKey, int] = {}
                for pos, value in enumerate(claim.values[constraint]):
                    if value is not None:
                        masks[value] = masks.get(value, 0) | (1 << pos)
                # Values in order of their first device (the order values are tried in).
                order = sorted(masks.items(), key=lambda item: lowest_bit(item[1]))
                per_attribute[attribute] = (masks, union_of(masks.values()), order)
        self.value_masks = [per_attribute[attribute][0] for attribute in self.attributes]
        self.has_mask = [per_attribute[attribute][1] for attribute in self.attributes]
        self.value_order = [per_attribute[attribute][2] for attribute in self.attributes]
        self.base_mask: dict[int, int] = {}
        for alt in self._all_alts:
            mask = bitmask(alt.candidates)
            for constraint in alt.constraints:
                mask &= self.has_mask[constraint]
            self.base_mask[id(alt)] = mask
        self.full_mask = {id(alt): bitmask(alt.candidates) for alt in self._all_alts}
        # Per device: the (sub)requests whose candidates hold it, as a bitmask over ``_all_alts``.
        self._membership = [0] * len(claim.devices)
        for index, alt in enumerate(self._all_alts):
            for pos in alt.candidates:
                self._membership[pos] |= 1 << index
        self._signatures: dict[tuple[str, bool], list[tuple[ValueKey | None, tuple[object, ...]]]] = {}

    def signatures(self, attribute: str, kinds: bool) -> list[tuple[ValueKey | None, tuple[object, ...]]]:
        """Per device: its value of ``attribute`` and what the claim sees of it apart from that value."""
        hit = self._signatures.get((attribute, kinds))
        if hit is None:
            others = [ci for ci, other in enumerate(self.attributes) if other != attribute]
            hit = [
                (
                    value_key(device.attribute(attribute)),
                    (
                        self._membership[pos],
                        tuple(self.values[ci][pos] for ci in others),
                        device.kind if kinds else "",
                    ),
                )
                for pos, device in enumerate(self.claim.devices)
            ]
            self._signatures[(attribute, kinds)] = hit
        return hit

    # -- public -------------------------------------------------------------------------------------
    def find(
        self,
        excluded: Iterable[int] = (),
        required: Iterable[int] | None = None,
        fixed: Mapping[int, ValueKey] | None = None,
        upto: int | None = None,
        active: int | None = None,
    ) -> Witness | None:
        """An allocation of requests ``[:upto]`` avoiding ``excluded``, using one of ``required`` if given,
        with constraint values ``fixed``; ``active`` demands that this constraint applies to a chosen
        (sub)request (so that its value is set). None if there is none."""
        search = _AllocationSearch(
            self,
            frozenset(excluded),
            None if required is None else frozenset(required),
            dict(fixed or {}),
            active,
        )
        requests = self.claim.requests[: len(self.claim.requests) if upto is None else upto]
        search.check_prefix = _prefix_checks(requests)
        return search.alternatives(requests, 0, [], 0)

    def value_classes(
        self, attribute: str, distinguished: Iterable[int] = (), kinds: bool = False
    ) -> list[list[ValueKey]]:
        """Values of ``attribute`` (over all devices) grouped into interchangeable classes.

        ``distinguished`` devices (e.g. excluded ones) count as a separate kind of device.
        """
        marked = frozenset(distinguished)
        return _value_classes(self, attribute, marked, None, kinds)


def _prefix_checks(requests: Sequence[Sequence[CandidateList]]) -> list[bool]:
    """Per request i: whether step 1 checks the chosen prefix ``requests[:i + 1]`` before going on. Always
    at the last request; before that only when a later request still offers a choice of subrequests,
    which a prefix that does not fit prunes. Otherwise the rest is one path, and the check at its end
    refutes it the same way (adding requests never makes the relaxed allocation fit)."""
    checks = [False] * len(requests)
    choice_later = False
    for index in range(len(requests) - 1, -1, -1):
        checks[index] = choice_later or index == len(requests) - 1
        choice_later = choice_later or len(requests[index]) > 1
    return checks


def _value_classes(
    matcher: Matcher, attribute: str, marked: frozenset[int], required: frozenset[int] | None, kinds: bool
) -> list[list[ValueKey]]:
    """Values of ``attribute`` whose devices look alike (same signature, same marks), in device order."""
    by_value: dict[ValueKey, Counter[tuple[object, ...]]] = {}
    order: dict[ValueKey, int] = {}
    for pos, (value, signature) in enumerate(matcher.signatures(attribute, kinds)):
        if value is None:
            continue
        key = (signature, pos in marked, required is not None and pos in required)
        by_value.setdefault(value, Counter())[key] += 1
        order.setdefault(value, pos)
    groups: dict[frozenset[tuple[tuple[object, ...], int]], list[ValueKey]] = {}
    for value in sorted(by_value, key=lambda value: order[value]):
        groups.setdefault(frozenset(by_value[value].items()), []).append(value)
    return list(groups.values())


class _ChosenRequests:
    """The (sub)requests chosen at the end of step 1, and what step 2 asks of them at every node."""

    def __init__(
        self, search: _AllocationSearch, chosen: list[CandidateList], assigned: Mapping[int, ValueKey]
    ) -> None:
        self.chosen = list(chosen)
        self.active = [alt for alt in chosen if alt.need > 0]
        # Constraint -> positions in ``active`` of the (sub)requests it applies to, and their total need.
        self.under: dict[int, list[int]] = {}
        for slot, alt in enumerate(self.active):
            for constraint in alt.constraints:
                self.under.setdefault(constraint, []).append(slot)
        self.under = {ci: self.under[ci] for ci in sorted(self.under)}
        self.need_under = {
            ci: sum(self.active[slot].need for slot in slots) for ci, slots in self.under.items()
        }
        self.tied = search.tied(self.active, [ci for ci in self.under if ci not in assigned])


class _AllocationSearch:
    """One :meth:`Matcher.find`: its excluded and required devices and fixed values, and the search of
    steps 1 and 2 (module docstring) over the matcher's masks."""

    def __init__(
        self,
        matcher: Matcher,
        excluded: frozenset[int],
        required: frozenset[int] | None,
        fixed: dict[int, ValueKey],
        active: int | None,
    ) -> None:
        self.matcher = matcher
        self.excluded = excluded
        self.keep = ~bitmask(excluded)
        self.required = required
        self.required_mask = bitmask(required) if required is not None else 0
        self.fixed = fixed
        self.active = active
        self._class_of: dict[str, dict[ValueKey, int]] = {}
        self.check_prefix: list[bool] = []  # set by Matcher.find, see _prefix_checks

    # -- step 1: alternatives of firstAvailable requests ------------------------------------------
    def alternatives(
        self, requests: Sequence[Sequence[CandidateList]], index: int, chosen: list[CandidateList], total: int
    ) -> Witness | None:
        if index == len(requests):
            if self.active is not None and not any(
                self.active in alt.constraints and alt.need > 0 for alt in chosen
            ):
                return None
            return self.values(chosen, dict(self.fixed))
        last = index + 1 == len(requests)
        for alt in requests[index]:
            if not alt.fits_after(total):
                continue
            chosen.append(alt)
            if self.check_prefix[index] and self.feasible(chosen, self.fixed, complete=last) is None:
                chosen.pop()
                continue
            found = self.alternatives(requests, index + 1, chosen, total + alt.need)
            if found is not None:
                return found
            chosen.pop()
        return None

    # -- step 2: constraint values -----------------------------------------------------------------
    def values(self, chosen: list[CandidateList], assigned: dict[int, ValueKey]) -> Witness | None:
        """Search values for the constraints that apply to a chosen (sub)request with devices."""
        leaf = _ChosenRequests(self, chosen, assigned)
        return self._assign(leaf, assigned, [self._candidates(alt, assigned) for alt in leaf.active], {})

    def _assign(
        self,
        leaf: _ChosenRequests,
        assigned: dict[int, ValueKey],
        cands: list[int],
        known: Mapping[int, list[ValueKey]],
    ) -> Witness | None:
        # ``cands``: the candidates of each active (sub)request under the values ``assigned`` so far;
        # ``known``: domains from the parent node whose requests' candidates this node left unchanged
        # (a domain depends on nothing else), so that only the neighbours of the last step are redone.
        open_ = [ci for ci in leaf.under if ci not in assigned]
        if not open_:
            picks = self.feasible(leaf.chosen, assigned, witness=True)
            if picks is None:
                return None
            return Witness(tuple(picks), dict(assigned))
        domains: dict[int, list[ValueKey]] = {}
        for ci in open_:
            domain = known.get(ci)
            if domain is None:
                domain = self._viable(ci, leaf, cands)
                if not domain:
                    return None
            domains[ci] = domain
        # Fewest values first; among those the constraint over the most devices.
        constraint = min(open_, key=lambda ci: (len(domains[ci]), -leaf.need_under[ci]))
        members = leaf.tied[constraint]
        attribute = self.matcher.attributes[constraint]
        used = {value for ci, value in assigned.items() if self.matcher.attributes[ci] == attribute}
        classes = self._classes(attribute)
        # Constraints whose requests share one with the members: their domains change with the value.
        stale = {
            other for ci in members for slot in leaf.under[ci] for other in leaf.active[slot].constraints
        }
        unchanged = {ci: domain for ci, domain in domains.items() if ci not in stale}
        seen_classes: set[int] = set()
        for value in domains[constraint]:
            if any(value not in domains[ci] for ci in members):
                continue
            if value not in used:
                value_class = classes.get(value, -1 - len(seen_classes))
                if value_class in seen_classes:
                    continue  # an unused value interchangeable with one already tried
                seen_classes.add(value_class)
            narrowed = list(cands)
            for ci in members:
                assigned[ci] = value
                value_mask = self.matcher.value_masks[ci].get(value, 0)
                for slot in leaf.under[ci]:
                    narrowed[slot] &= value_mask
            if self._fit(leaf.active, narrowed, complete=True):
                found = self._assign(leaf, assigned, narrowed, unchanged)
                if found is not None:
                    return found
            for ci in members:
                del assigned[ci]
        return None

    def tied(self, active: list[CandidateList], open_: list[int]) -> dict[int, list[int]]:
        """Constraints on one attribute that share a chosen request with devices take one value together.

        Computed once per leaf: each step of the search assigns a whole group, so the groups of the
        constraints still open stay the same."""
        parent = {ci: ci for ci in open_}

        def root(ci: int) -> int:
            while parent[ci] != ci:
                ci = parent[ci]
            return ci

        for alt in active:
            by_attribute: dict[str, int] = {}
            for ci in alt.constraints:
                if ci not in parent:
                    continue
                first = by_attribute.setdefault(self.matcher.attributes[ci], ci)
                parent[root(ci)] = root(first)
        groups: dict[int, list[int]] = {}
        for ci in open_:
            groups.setdefault(root(ci), []).append(ci)
        return {ci: groups[root(ci)] for ci in open_}

    def _classes(self, attribute: str) -> dict[ValueKey, int]:
        hit = self._class_of.get(attribute)
        if hit is None:
            fixed_values = {
                value for ci, value in self.fixed.items() if self.matcher.attributes[ci] == attribute
            }
            groups = _value_classes(self.matcher, attribute, self.excluded, self.required, False)
            hit = {}
            for number, group in enumerate(groups):
                for value in group:
                    # A fixed value is not interchangeable with any other.
                    hit[value] = number if value not in fixed_values else 10_000 + len(hit)
            self._class_of[attribute] = hit
        return hit

    def _viable(self, constraint: int, leaf: _ChosenRequests, cands: list[int]) -> list[ValueKey]:
        """Values of ``constraint`` for which each constrained request alone, and all together, have
        enough devices (a quick necessary condition; the flow decides), in order of their first device."""
        group = leaf.under[constraint]
        total = leaf.need_under[constraint]
        ok: list[ValueKey] = []
        for value, value_mask in self.matcher.value_order[constraint]:
            union = 0
            for slot in group:
                inside = cands[slot] & value_mask
                if inside.bit_count() < leaf.active[slot].need:
                    break
                union |= inside
            else:
                if union.bit_count() >= total:
                    ok.append(value)
        return ok

    # -- step 3: the matching ----------------------------------------------------------------------
    def _candidates(self, alt: CandidateList, assigned: Mapping[int, ValueKey]) -> int:
        mask = self.matcher.base_mask[id(alt)] & self.keep
        for constraint in alt.constraints:
            if constraint in assigned:
                mask &= self.matcher.value_masks[constraint].get(assigned[constraint], 0)
        return mask

    def feasible(
        self,
        chosen: list[CandidateList],
        assigned: Mapping[int, ValueKey],
        witness: bool = False,
        complete: bool = True,
    ) -> list[tuple[CandidateList, int]] | None:
        """The allocation (when ``witness``) or [] if the chosen requests fit with constraints ``assigned``
        (undecided constraints relaxed); None if not. The required devices count only when the chosen
        requests are ``complete``."""
        active = [alt for alt in chosen if alt.need > 0]
        if not self._fit(active, [self._candidates(alt, assigned) for alt in active], complete):
            return None
        if not witness:
            return []
        return self._witness(chosen, assigned, complete)

    def _fit(self, active: Sequence[CandidateList], cands: Sequence[int], complete: bool) -> bool:
        """Whether the ``active`` (sub)requests (need > 0) get their devices from their ``cands``."""
        self.matcher.nodes += 1
        # (Sub)requests with the same candidates are interchangeable for the question "does it fit": one
        # group needing the sum of their counts (the max-flow has fewer nodes, often one per root).
        groups: dict[int, int] = {}
        union = 0
        for alt, mask in zip(active, cands, strict=True):
            if alt.selection.mode == "All" and mask != self.matcher.full_mask[id(alt)]:
                return False  # All takes every matching device: one is excluded or breaks a constraint
            total = groups.get(mask, 0) + alt.need
            if mask.bit_count() < total:
                return False
            groups[mask] = total
            union |= mask
        if sum(groups.values()) > union.bit_count():
            return False
        if complete and self.required is not None and not union & self.required_mask:
            return False  # no chosen request can take a required device
        return groups_fit(groups, union)

    def _witness(
        self, chosen: list[CandidateList], assigned: Mapping[int, ValueKey], complete: bool
    ) -> list[tuple[CandidateList, int]]:
        """The devices of a fitting allocation, one max-flow over the (sub)requests themselves, so that
        the example in a verdict names devices per request (the caller knows that it fits)."""
        active = [alt for alt in chosen if alt.need > 0]
        cands = [self._candidates(alt, assigned) for alt in active]
        union = union_of(cands)
        needs = [alt.need for alt in active]
        types = device_types(cands, union)
        edges = [[device_type for device_type, cell in enumerate(types) if cell & mask] for mask in cands]
        flow = Flow(needs, edges, [cell.bit_count() for cell in types])
        fitted = flow.run()
        assert fitted, "the grouped max-flow said it fits"
        required = self.required_mask if complete and self.required is not None else None
        if required is not None:
            usable = [
                (request, device_type)
                for request in range(len(active))
                for device_type in edges[request]
                if types[device_type] & required
            ]
            if not any(flow.used[device_type] for _, device_type in usable):
                # Move one unit of a request onto a free required type (see the module docstring).
                request, device_type = usable[0]
                give = next(held for held in edges[request] if flow.flow[request][held] > 0)
                flow.flow[request][give] -= 1
                flow.used[give] -= 1
                flow.flow[request][device_type] += 1
                flow.used[device_type] += 1
        picks: list[tuple[CandidateList, int]] = []
        free = [bit_positions(cell) for cell in types]
        if required is not None:
            for positions in free:  # required devices first inside a type, so one is picked
                positions.sort(key=lambda pos: (not (required >> pos) & 1, pos))
        for request, alt in enumerate(active):
            taken: list[int] = []
            for device_type in edges[request]:
                amount = flow.flow[request][device_type]
                if amount:
                    taken += free[device_type][:amount]
                    del free[device_type][:amount]
            picks += [(alt, pos) for pos in sorted(taken)]
        return picks
