"""The b-matching of requests to device types: the grouped Hall check and the max-flow agree with Hall's
condition checked on every set of requests."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

from oke_gpu_rdma.claims.bipartite_flow import Flow, device_types, groups_fit


def _hall_by_subsets(masks: Sequence[int], needs: Sequence[int]) -> bool:
    """Every set of requests needs at most as many devices as their candidates hold (Hall)."""
    for size in range(1, len(masks) + 1):
        for subset in itertools.combinations(range(len(masks)), size):
            union = 0
            for k in subset:
                union |= masks[k]
            if sum(needs[k] for k in subset) > union.bit_count():
                return False
    return True


def test_grouped_fit_agrees_with_hall_and_the_per_request_flow() -> None:
    """groups_fit merges requests with equal candidates and answers small cases by Hall's condition,
    larger ones by a max-flow over groups; both must agree with Hall checked on every set of the
    ungrouped requests and with the per-request max-flow that builds witnesses."""
    rng = random.Random(7)
    for _ in range(3000):
        devices = rng.randint(1, 10)
        requests = rng.randint(1, 7)
        masks = [rng.randrange(1, 1 << devices) for _ in range(requests)]
        if rng.random() < 0.5:  # repeated candidate sets, as requests under one constraint value have
            masks = [rng.choice(masks[:2]) for _ in masks]
        needs = [rng.randint(1, 3) for _ in masks]
        expected = _hall_by_subsets(masks, needs)
        union = 0
        for m in masks:
            union |= m
        types = device_types(masks, union)
        edges = [[t for t, tm in enumerate(types) if tm & c] for c in masks]
        assert Flow(needs, edges, [t.bit_count() for t in types]).run() == expected, (masks, needs)
        groups: dict[int, int] = {}
        for m, n in zip(masks, needs, strict=True):
            groups[m] = groups.get(m, 0) + n
        # groups_fit expects what its caller checked: each group alone and all together.
        precheck = all(m.bit_count() >= n for m, n in groups.items()) and sum(needs) <= union.bit_count()
        assert (precheck and groups_fit(groups, union)) == expected, (masks, needs)
