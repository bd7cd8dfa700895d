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
   for the allocation that is returned, so the devices a verdict names do not depend on the grouping.

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

from oke_gpu_rdma.claims.candidates import CandidateList, ClaimToAllocate, ValueKey, value_key


@dataclass(frozen=True)
class Witness:
    """One allocation: (the (sub)request, device position) pairs, and the value of each constraint used."""

    picks: tuple[tuple[CandidateList, int], ...]
    values: Mapping[int, ValueKey]


class _Flow:
    """Max-flow from requests (capacity = need) through device types to the sink (capacity = size)."""

    def __init__(self, needs: Sequence[int], edges: Sequence[Sequence[int]], sizes: Sequence[int]) -> None:
        self.needs = needs
        self.edges = edges  # request -> types it accepts
        self.sizes = sizes
        self.flow = [dict.fromkeys(e, 0) for e in edges]
        self.used = [0] * len(sizes)

    def run(self) -> bool:
        """True when every request gets its need."""
        missing = [0] * len(self.needs)
        # Greedy start, then augmenting paths for what is left.
        for r, need in enumerate(self.needs):
            left = need
            for t in self.edges[r]:
                if not left:
                    break
                take = min(left, self.sizes[t] - self.used[t])
                if take > 0:
                    self.flow[r][t] += take
                    self.used[t] += take
                    left -= take
            missing[r] = left
        users: list[list[int]] = [[] for _ in self.sizes]
        for r, e in enumerate(self.edges):
            for t in e:
                users[t].append(r)
        for r in range(len(self.needs)):
            while missing[r]:
                pushed = self._augment(r, missing[r], users)
                if not pushed:
                    return False
                missing[r] -= pushed
        return True

    def _augment(self, start: int, amount: int, users: list[list[int]]) -> int:
        # BFS over requests: from request r to a type t (always), from t to a sink if it has room, or
        # back to another request r2 that sends flow into t (r2 gives up a unit of t, takes another).
        parent_t: dict[int, int] = {}  # type -> request that reached it
        parent_r: dict[int, int] = {start: -1}  # request -> type it was reached through
        queue = [start]
        for r in queue:
            for t in self.edges[r]:
                if t in parent_t:
                    continue
                parent_t[t] = r
                room = self.sizes[t] - self.used[t]
                if room > 0:
                    return self._apply(t, min(amount, room), parent_t, parent_r)
                for r2 in users[t]:
                    if r2 not in parent_r and self.flow[r2][t] > 0:
                        parent_r[r2] = t
                        queue.append(r2)
        return 0

    def _apply(self, t: int, amount: int, parent_t: dict[int, int], parent_r: dict[int, int]) -> int:
        # Bottleneck along the path: the units each displaced request holds in the type it gives up.
        path: list[tuple[int, int]] = []
        node_t = t
        while True:
            r = parent_t[node_t]
            path.append((r, node_t))
            back = parent_r[r]
            if back == -1:
                break
            amount = min(amount, self.flow[r][back])
            node_t = back
        self.used[t] += amount
        for r, tt in path:
            self.flow[r][tt] += amount
            back = parent_r[r]
            if back != -1:
                self.flow[r][back] -= amount
        return amount


class Matcher:
    """Existence of allocations of one prepared claim (see the module docstring)."""

    def __init__(self, claim: ClaimToAllocate) -> None:
        self.claim = claim
        self.values = claim.values
        self.attributes = [c.attribute for c in claim.constraint_specs]
        self.nodes = 0
        self._all_alts = [alt for alts in claim.requests for alt in alts]
        # Device sets as bitmasks (bit p = device position p). A constraint's values depend only on its
        # attribute, and claims often put many constraints on pcieRoot: one set of masks per attribute.
        per_attribute: dict[str, tuple[dict[ValueKey, int], int, list[tuple[ValueKey, int]]]] = {}
        for ci, attribute in enumerate(self.attributes):
            if attribute not in per_attribute:
                masks: dict[ValueKey, int] = {}
                for p, v in enumerate(claim.values[ci]):
                    if v is not None:
                        masks[v] = masks.get(v, 0) | (1 << p)
                # Values in order of their first device (the order values are tried in).
                order = sorted(masks.items(), key=lambda vm: vm[1] & -vm[1])
                per_attribute[attribute] = (masks, _union(masks.values()), order)
        self.value_masks = [per_attribute[a][0] for a in self.attributes]
        self.has_mask = [per_attribute[a][1] for a in self.attributes]
        self.value_order = [per_attribute[a][2] for a in self.attributes]
        self.base_mask: dict[int, int] = {}
        for alt in self._all_alts:
            mask = _mask(alt.candidates)
            for ci in alt.constraints:
                mask &= self.has_mask[ci]
            self.base_mask[id(alt)] = mask
        self.full_mask = {id(alt): _mask(alt.candidates) for alt in self._all_alts}
        # Per device: the (sub)requests whose candidates hold it, as a bitmask over ``_all_alts``.
        self._membership = [0] * len(claim.devices)
        for k, alt in enumerate(self._all_alts):
            for p in alt.candidates:
                self._membership[p] |= 1 << k
        self._signatures: dict[tuple[str, bool], list[tuple[ValueKey | None, tuple[object, ...]]]] = {}

    def signatures(self, attribute: str, kinds: bool) -> list[tuple[ValueKey | None, tuple[object, ...]]]:
        """Per device: its value of ``attribute`` and what the claim sees of it apart from that value."""
        hit = self._signatures.get((attribute, kinds))
        if hit is None:
            others = [ci for ci, a in enumerate(self.attributes) if a != attribute]
            hit = [
                (
                    value_key(d.attribute(attribute)),
                    (
                        self._membership[p],
                        tuple(self.values[ci][p] for ci in others),
                        d.kind if kinds else "",
                    ),
                )
                for p, d in enumerate(self.claim.devices)
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
        q = _Query(
            self,
            frozenset(excluded),
            None if required is None else frozenset(required),
            dict(fixed or {}),
            active,
        )
        requests = self.claim.requests[: len(self.claim.requests) if upto is None else upto]
        q.check_prefix = _prefix_checks(requests)
        return q.alternatives(requests, 0, [], 0)

    def value_classes(
        self, attribute: str, distinguished: Iterable[int] = (), kinds: bool = False
    ) -> list[list[ValueKey]]:
        """Values of ``attribute`` (over all devices) grouped into interchangeable classes.

        ``distinguished`` devices (e.g. excluded ones) count as a separate kind of device.
        """
        marked = frozenset(distinguished)
        return _classes(self, attribute, marked, None, kinds)


def _mask(positions: Iterable[int]) -> int:
    mask = 0
    for p in positions:
        mask |= 1 << p
    return mask


def _union(masks: Iterable[int]) -> int:
    out = 0
    for m in masks:
        out |= m
    return out


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _prefix_checks(requests: Sequence[Sequence[CandidateList]]) -> list[bool]:
    """Per request i: whether step 1 checks the chosen prefix ``requests[:i + 1]`` before going on. Always
    at the last request; before that only when a later request still offers a choice of subrequests,
    which a prefix that does not fit prunes. Otherwise the rest is one path, and the check at its end
    refutes it the same way (adding requests never makes the relaxed allocation fit)."""
    checks = [False] * len(requests)
    choice_later = False
    for i in range(len(requests) - 1, -1, -1):
        checks[i] = choice_later or i == len(requests) - 1
        choice_later = choice_later or len(requests[i]) > 1
    return checks


def _types(masks: Iterable[int], union: int) -> list[int]:
    """Device types: the cells of the partition of ``union`` by the masks (devices in one cell are accepted
    by the same requests), ordered by their lowest device."""
    types = [union]
    for c in masks:
        split = []
        for t in types:
            a, b = t & c, t & ~c
            if a:
                split.append(a)
            if b:
                split.append(b)
        types = split
    types.sort(key=lambda t: t & -t)
    return types


_HALL_MAX_GROUPS = 4


def _fits(groups: Mapping[int, int], union: int) -> bool:
    """Whether every group (candidate mask -> devices it needs) gets its devices, no device used twice.

    The caller has checked each group alone and all together. By Hall's theorem (for b-matchings: every
    set of groups needs at most as many devices as their candidates hold) that decides up to two groups;
    up to a few groups the remaining subsets are checked directly, beyond that a max-flow decides.
    """
    masks = list(groups)
    k = len(masks)
    if k <= 2:
        return True
    needs = list(groups.values())
    if k <= _HALL_MAX_GROUPS:
        unions = [0] * (1 << k)
        totals = [0] * (1 << k)
        for s in range(1, 1 << k):
            low = s & -s
            i = low.bit_length() - 1
            unions[s] = unions[s ^ low] | masks[i]
            totals[s] = totals[s ^ low] + needs[i]
            if totals[s] > unions[s].bit_count():
                return False
        return True
    types = _types(masks, union)
    edges = [[t for t, tm in enumerate(types) if tm & c] for c in masks]
    return _Flow(needs, edges, [t.bit_count() for t in types]).run()


def _classes(
    m: Matcher, attribute: str, marked: frozenset[int], required: frozenset[int] | None, kinds: bool
) -> list[list[ValueKey]]:
    by_value: dict[ValueKey, Counter[tuple[object, ...]]] = {}
    order: dict[ValueKey, int] = {}
    for p, (v, sig) in enumerate(m.signatures(attribute, kinds)):
        if v is None:
            continue
        key = (sig, p in marked, required is not None and p in required)
        by_value.setdefault(v, Counter())[key] += 1
        order.setdefault(v, p)
    groups: dict[frozenset[tuple[tuple[object, ...], int]], list[ValueKey]] = {}
    for v in sorted(by_value, key=lambda v: order[v]):
        groups.setdefault(frozenset(by_value[v].items()), []).append(v)
    return list(groups.values())


class _Leaf:
    """The chosen (sub)requests at the end of step 1, and what step 2 asks of them at every node."""

    def __init__(self, q: _Query, chosen: list[CandidateList], assigned: Mapping[int, ValueKey]) -> None:
        self.chosen = list(chosen)
        self.active = [alt for alt in chosen if alt.need > 0]
        # Constraint -> positions in ``active`` of the (sub)requests it applies to, and their total need.
        self.under: dict[int, list[int]] = {}
        for k, alt in enumerate(self.active):
            for ci in alt.constraints:
                self.under.setdefault(ci, []).append(k)
        self.under = {ci: self.under[ci] for ci in sorted(self.under)}
        self.need_under = {ci: sum(self.active[k].need for k in ks) for ci, ks in self.under.items()}
        self.tied = q.tied(self.active, [ci for ci in self.under if ci not in assigned])


class _Query:
    def __init__(
        self,
        m: Matcher,
        excluded: frozenset[int],
        required: frozenset[int] | None,
        fixed: dict[int, ValueKey],
        active: int | None,
    ) -> None:
        self.m = m
        self.excluded = excluded
        self.keep = ~_mask(excluded)
        self.required = required
        self.required_mask = _mask(required) if required is not None else 0
        self.fixed = fixed
        self.active = active
        self._class_of: dict[str, dict[ValueKey, int]] = {}
        self.check_prefix: list[bool] = []  # set by Matcher.find, see _prefix_checks
        self._first_pos: dict[ValueKey, int] = {}

    # -- step 1: alternatives of firstAvailable requests ------------------------------------------
    def alternatives(
        self, requests: Sequence[Sequence[CandidateList]], i: int, chosen: list[CandidateList], total: int
    ) -> Witness | None:
        if i == len(requests):
            if self.active is not None and not any(
                self.active in alt.constraints and alt.need > 0 for alt in chosen
            ):
                return None
            return self.values(chosen, dict(self.fixed))
        last = i + 1 == len(requests)
        for alt in requests[i]:
            if not alt.fits_after(total):
                continue
            chosen.append(alt)
            if self.check_prefix[i] and self.feasible(chosen, self.fixed, complete=last) is None:
                chosen.pop()
                continue
            found = self.alternatives(requests, i + 1, chosen, total + alt.need)
            if found is not None:
                return found
            chosen.pop()
        return None

    # -- step 2: constraint values -----------------------------------------------------------------
    def values(self, chosen: list[CandidateList], assigned: dict[int, ValueKey]) -> Witness | None:
        """Search values for the constraints that apply to a chosen (sub)request with devices."""
        leaf = _Leaf(self, chosen, assigned)
        return self._assign(leaf, assigned, [self._candidates(alt, assigned) for alt in leaf.active], {})

    def _assign(
        self,
        leaf: _Leaf,
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
        ci = min(open_, key=lambda c: (len(domains[c]), -leaf.need_under[c]))
        members = leaf.tied[ci]
        attribute = self.m.attributes[ci]
        used = {v for c, v in assigned.items() if self.m.attributes[c] == attribute}
        classes = self._classes(attribute)
        # Constraints whose requests share one with the members: their domains change with the value.
        stale = {c2 for c in members for k in leaf.under[c] for c2 in leaf.active[k].constraints}
        unchanged = {c2: d for c2, d in domains.items() if c2 not in stale}
        seen_classes: set[int] = set()
        for v in domains[ci]:
            if any(v not in domains[c] for c in members):
                continue
            if v not in used:
                cls = classes.get(v, -1 - len(seen_classes))
                if cls in seen_classes:
                    continue  # an unused value interchangeable with one already tried
                seen_classes.add(cls)
            narrowed = list(cands)
            for c in members:
                assigned[c] = v
                vmask = self.m.value_masks[c].get(v, 0)
                for k in leaf.under[c]:
                    narrowed[k] &= vmask
            if self._fit(leaf.active, narrowed, complete=True):
                found = self._assign(leaf, assigned, narrowed, unchanged)
                if found is not None:
                    return found
            for c in members:
                del assigned[c]
        return None

    def tied(self, active: list[CandidateList], open_: list[int]) -> dict[int, list[int]]:
        """Constraints on one attribute that share a chosen request with devices take one value together.

        Computed once per leaf: each step of the search assigns a whole group, so the groups of the
        constraints still open stay the same."""
        parent = {ci: ci for ci in open_}

        def root(c: int) -> int:
            while parent[c] != c:
                c = parent[c]
            return c

        for alt in active:
            by_attribute: dict[str, int] = {}
            for c in alt.constraints:
                if c not in parent:
                    continue
                first = by_attribute.setdefault(self.m.attributes[c], c)
                parent[root(c)] = root(first)
        groups: dict[int, list[int]] = {}
        for c in open_:
            groups.setdefault(root(c), []).append(c)
        return {c: groups[root(c)] for c in open_}

    def _classes(self, attribute: str) -> dict[ValueKey, int]:
        hit = self._class_of.get(attribute)
        if hit is None:
            fixed_values = {v for c, v in self.fixed.items() if self.m.attributes[c] == attribute}
            groups = _classes(self.m, attribute, self.excluded, self.required, False)
            hit = {}
            for n, group in enumerate(groups):
                for v in group:
                    # A fixed value is not interchangeable with any other.
                    hit[v] = n if v not in fixed_values else 10_000 + len(hit)
            self._class_of[attribute] = hit
        return hit

    def _viable(self, ci: int, leaf: _Leaf, cands: list[int]) -> list[ValueKey]:
        """Values of constraint ``ci`` for which each constrained request alone, and all together, have
        enough devices (a quick necessary condition; the flow decides), in order of their first device."""
        group = leaf.under[ci]
        total = leaf.need_under[ci]
        ok: list[ValueKey] = []
        for v, vmask in self.m.value_order[ci]:
            union = 0
            for k in group:
                inside = cands[k] & vmask
                if inside.bit_count() < leaf.active[k].need:
                    break
                union |= inside
            else:
                if union.bit_count() >= total:
                    ok.append(v)
        return ok

    # -- step 3: the matching ----------------------------------------------------------------------
    def _candidates(self, alt: CandidateList, assigned: Mapping[int, ValueKey]) -> int:
        mask = self.m.base_mask[id(alt)] & self.keep
        for ci in alt.constraints:
            if ci in assigned:
                mask &= self.m.value_masks[ci].get(assigned[ci], 0)
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
        self.m.nodes += 1
        # (Sub)requests with the same candidates are interchangeable for the question "does it fit": one
        # group needing the sum of their counts (the max-flow has fewer nodes, often one per root).
        groups: dict[int, int] = {}
        union = 0
        for alt, c in zip(active, cands, strict=True):
            if alt.selection.mode == "All" and c != self.m.full_mask[id(alt)]:
                return False  # All takes every matching device: one is excluded or breaks a constraint
            total = groups.get(c, 0) + alt.need
            if c.bit_count() < total:
                return False
            groups[c] = total
            union |= c
        if sum(groups.values()) > union.bit_count():
            return False
        if complete and self.required is not None and not union & self.required_mask:
            return False  # no chosen request can take a required device
        return _fits(groups, union)

    def _witness(
        self, chosen: list[CandidateList], assigned: Mapping[int, ValueKey], complete: bool
    ) -> list[tuple[CandidateList, int]]:
        """The devices of a fitting allocation, one max-flow over the (sub)requests themselves, so that
        the example in a verdict names devices per request (the caller knows that it fits)."""
        active = [alt for alt in chosen if alt.need > 0]
        cands = [self._candidates(alt, assigned) for alt in active]
        union = _union(cands)
        needs = [a.need for a in active]
        types = _types(cands, union)
        edges = [[t for t, tm in enumerate(types) if tm & c] for c in cands]
        flow = _Flow(needs, edges, [t.bit_count() for t in types])
        fitted = flow.run()
        assert fitted, "the grouped max-flow said it fits"
        required = self.required_mask if complete and self.required is not None else None
        if required is not None:
            usable = [(r, t) for r in range(len(active)) for t in edges[r] if types[t] & required]
            if not any(flow.used[t] for _, t in usable):
                # Move one unit of a request onto a free required type (see the module docstring).
                r, t = usable[0]
                give = next(t2 for t2 in edges[r] if flow.flow[r][t2] > 0)
                flow.flow[r][give] -= 1
                flow.used[give] -= 1
                flow.flow[r][t] += 1
                flow.used[t] += 1
        picks: list[tuple[CandidateList, int]] = []
        free = [_bits(t) for t in types]
        if required is not None:
            for positions in free:  # required devices first inside a type, so one is picked
                positions.sort(key=lambda p: (not (required >> p) & 1, p))
        for r, alt in enumerate(active):
            taken: list[int] = []
            for t in edges[r]:
                amount = flow.flow[r][t]
                if amount:
                    taken += free[t][:amount]
                    del free[t][:amount]
            picks += [(alt, p) for p in sorted(taken)]
        return picks
