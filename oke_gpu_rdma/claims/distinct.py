"""Allocations of a claim with ``distinctAttribute`` constraints: a bounded depth-first search.

A distinctAttribute constraint (DRAConsumableCapacity, beta and on from v1.36) asks that the devices
its requests get all have the attribute, each with a value none of the others has. The structured
allocator (kubernetes `staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/
allocator_stable.go`, `distinctAttributeConstraint.add`) refuses a device without the attribute or with
a value already taken, and backtracks. :class:`~oke_gpu_rdma.claims.matching.Matcher` answers its
questions with flows that have no room for "pairwise different", so claims with such constraints are
searched here device by device, as upstream does, for the same questions (``find`` with excluded and
required devices, fixed values, a prefix of the requests). The search stops after a budget of steps
(:class:`SearchBudgetExceeded`): the judge then reports the claim as not checked, never guesses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from oke_gpu_rdma.claims.candidates import CandidateList, ClaimToAllocate, ValueKey, value_key
from oke_gpu_rdma.claims.matching import Matcher, Witness
from oke_gpu_rdma.claims.spec import MAX_DEVICES_PER_CLAIM
from oke_gpu_rdma.claims.spec_types import MatchAttribute

DEFAULT_BUDGET = 50_000


class SearchBudgetExceeded(Exception):
    """The search took more steps than its budget; the question has no answer here."""


@dataclass
class _State:
    used: set[int] = field(default_factory=set)
    values: dict[int, ValueKey] = field(default_factory=dict)  # matchAttribute constraint -> value
    taken: dict[int, set[ValueKey]] = field(default_factory=dict)  # distinct constraint -> values used
    picks: list[tuple[CandidateList, int]] = field(default_factory=list)


class DistinctMatcher(Matcher):
    """A :class:`Matcher` whose ``find`` also holds the claim's distinctAttribute constraints."""

    def __init__(
        self, claim: ClaimToAllocate, distinct: tuple[MatchAttribute, ...], budget: int = DEFAULT_BUDGET
    ) -> None:
        super().__init__(claim)
        self.distinct = distinct
        self.budget = budget
        self.distinct_values = [
            [value_key(device.attribute(c.attribute)) for device in claim.devices] for c in distinct
        ]

    def value_classes(
        self, attribute: str, distinguished: Iterable[int] = (), kinds: bool = False
    ) -> list[list[ValueKey]]:
        """Every value its own class: whether two values are interchangeable also depends on the distinct
        attributes, which the grouping does not see."""
        values = [value_key(d.attribute(attribute)) for d in self.claim.devices]
        return [[v] for v in dict.fromkeys(v for v in values if v is not None)]

    def find(
        self,
        excluded: Iterable[int] = (),
        required: Iterable[int] | None = None,
        fixed: Mapping[int, ValueKey] | None = None,
        upto: int | None = None,
        active: int | None = None,
    ) -> Witness | None:
        requests = self.claim.requests[: len(self.claim.requests) if upto is None else upto]
        self._excluded = frozenset(excluded)
        self._required = None if required is None else frozenset(required)
        self._active = active
        self._steps = 0
        state = _State(values=dict(fixed or {}))
        self.nodes += 1
        return self._request(requests, 0, state, active_seen=False)

    # -- the search ---------------------------------------------------------------------------------
    def _step(self) -> None:
        self._steps += 1
        if self._steps > self.budget:
            raise SearchBudgetExceeded(f"more than {self.budget} steps")

    def _distinct_of(self, alt: CandidateList) -> list[int]:
        return [k for k, c in enumerate(self.distinct) if c.applies_to(alt.selection)]

    def _request(
        self, requests: list[list[CandidateList]], index: int, state: _State, active_seen: bool
    ) -> Witness | None:
        if index == len(requests):
            if self._active is not None and not active_seen:
                return None
            if self._required is not None and not any(p in self._required for _, p in state.picks):
                return None
            return Witness(tuple(state.picks), dict(state.values))
        for alt in requests[index]:
            if not alt.fits_after(len(state.picks)):
                continue
            seen = active_seen or (self._active is not None and self._active in alt.constraints)
            found = self._devices(requests, index, alt, self._distinct_of(alt), 0, alt.need, state, seen)
            if found is not None:
                return found
        return None

    def _devices(
        self,
        requests: list[list[CandidateList]],
        index: int,
        alt: CandidateList,
        distinct: list[int],
        start: int,
        left: int,
        state: _State,
        seen: bool,
    ) -> Witness | None:
        if left == 0:
            return self._request(requests, index + 1, state, seen)
        candidates = alt.candidates
        all_mode = alt.selection.mode == "All"
        for offset in range(start, len(candidates) - left + 1):
            self._step()
            pos = candidates[offset]
            if not self._allowed(alt, distinct, pos, state):
                if all_mode:
                    return None  # All takes every candidate: one that does not fit fails the alternative
                continue
            added = self._add(alt, distinct, pos, state)
            found = self._devices(requests, index, alt, distinct, offset + 1, left - 1, state, seen)
            if found is not None:
                return found
            self._remove(alt, distinct, pos, state, added)
            if all_mode:
                return None
        return None

    def _allowed(self, alt: CandidateList, distinct: list[int], pos: int, state: _State) -> bool:
        if pos in state.used or pos in self._excluded or len(state.picks) >= MAX_DEVICES_PER_CLAIM:
            return False
        for ci in alt.constraints:
            value = self.values[ci][pos]
            if value is None or (ci in state.values and state.values[ci] != value):
                return False
        for k in distinct:
            value = self.distinct_values[k][pos]
            if value is None or value in state.taken.get(k, set()):
                return False
        return True

    def _add(
        self, alt: CandidateList, distinct: list[int], pos: int, state: _State
    ) -> tuple[list[int], list[int]]:
        set_values = [ci for ci in alt.constraints if ci not in state.values]
        for ci in set_values:
            value = self.values[ci][pos]
            assert value is not None
            state.values[ci] = value
        for k in distinct:
            value = self.distinct_values[k][pos]
            assert value is not None
            state.taken.setdefault(k, set()).add(value)
        state.used.add(pos)
        state.picks.append((alt, pos))
        return set_values, distinct

    def _remove(
        self,
        alt: CandidateList,
        distinct: list[int],
        pos: int,
        state: _State,
        added: tuple[list[int], list[int]],
    ) -> None:
        for ci in added[0]:
            del state.values[ci]
        for k in added[1]:
            value = self.distinct_values[k][pos]
            assert value is not None
            state.taken[k].discard(value)
        state.used.discard(pos)
        state.picks.pop()
