"""The matcher's last step: a b-matching of requests to device types, by Hall's condition or a max-flow.

Step 3 of :mod:`oke_gpu_rdma.claims.matching` asks whether every chosen (sub)request gets its devices, no
device used twice: a bipartite b-matching between requests (each needing ``count`` devices) and device
*types*, devices that the same requests accept; sets of devices are bitmasks over the claim's device
positions (bit ``p`` = position ``p``). Up to :data:`HALL_MAX_GROUPS` groups of requests the answer is Hall's condition for
b-matchings (every set of groups needs at most the devices their candidates hold), checked directly;
beyond that, and for the allocation a verdict names, a max-flow (:class:`Flow`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


def bitmask(positions: Iterable[int]) -> int:
    mask = 0
    for pos in positions:
        mask |= 1 << pos
    return mask


def union_of(masks: Iterable[int]) -> int:
    out = 0
    for mask in masks:
        out |= mask
    return out


def lowest_bit(mask: int) -> int:
    """The lowest set bit of ``mask`` (sorting masks by it orders them by their first device)."""
    return mask & -mask


def bit_positions(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def device_types(masks: Iterable[int], union: int) -> list[int]:
    """Device types: the cells of the partition of ``union`` by the masks (devices in one cell are accepted
    by the same requests), ordered by their lowest device."""
    types = [union]
    for candidates in masks:
        split = []
        for cell in types:
            inside, outside = cell & candidates, cell & ~candidates
            if inside:
                split.append(inside)
            if outside:
                split.append(outside)
        types = split
    types.sort(key=lowest_bit)
    return types


HALL_MAX_GROUPS = 4


def groups_fit(groups: Mapping[int, int], union: int) -> bool:
    """Whether every group (candidate mask -> devices it needs) gets its devices, no device used twice.

    The caller has checked each group alone and all together. By Hall's theorem (for b-matchings: every
    set of groups needs at most as many devices as their candidates hold) that decides up to two groups;
    up to a few groups the remaining subsets are checked directly, beyond that a max-flow decides.
    """
    masks = list(groups)
    count = len(masks)
    if count <= 2:
        return True
    needs = list(groups.values())
    if count <= HALL_MAX_GROUPS:
        # Subsets as bitmasks over the groups, each built from a smaller one by adding its lowest group.
        unions = [0] * (1 << count)
        totals = [0] * (1 << count)
        for subset in range(1, 1 << count):
            low = subset & -subset  # its lowest group
            group = low.bit_length() - 1
            unions[subset] = unions[subset ^ low] | masks[group]
            totals[subset] = totals[subset ^ low] + needs[group]
            if totals[subset] > unions[subset].bit_count():
                return False
        return True
    types = device_types(masks, union)
    edges = [[device_type for device_type, cell in enumerate(types) if cell & mask] for mask in masks]
    return Flow(needs, edges, [cell.bit_count() for cell in types]).run()


class Flow:
    """Max-flow from requests (capacity = need) through device types to the sink (capacity = size)."""

    def __init__(self, needs: Sequence[int], edges: Sequence[Sequence[int]], sizes: Sequence[int]) -> None:
        self.needs = needs
        self.edges = edges  # request -> types it accepts
        self.sizes = sizes
        self.flow = [dict.fromkeys(types, 0) for types in edges]  # request -> type -> units
        self.used = [0] * len(sizes)

    def run(self) -> bool:
        """True when every request gets its need."""
        missing = [0] * len(self.needs)
        # Greedy start, then augmenting paths for what is left.
        for request, need in enumerate(self.needs):
            left = need
            for device_type in self.edges[request]:
                if not left:
                    break
                take = min(left, self.sizes[device_type] - self.used[device_type])
                if take > 0:
                    self.flow[request][device_type] += take
                    self.used[device_type] += take
                    left -= take
            missing[request] = left
        users: list[list[int]] = [[] for _ in self.sizes]
        for request, types in enumerate(self.edges):
            for device_type in types:
                users[device_type].append(request)
        for request in range(len(self.needs)):
            while missing[request]:
                pushed = self._augment(request, missing[request], users)
                if not pushed:
                    return False
                missing[request] -= pushed
        return True

    def _augment(self, start: int, amount: int, users: list[list[int]]) -> int:
        # BFS over requests: from a request to a type it accepts (always), from the type to the sink if it
        # has room, or back to another request that sends flow into the type (that request gives up a unit
        # of the type and takes another).
        reached_from: dict[int, int] = {}  # type -> request that reached it
        entered_by: dict[int, int] = {start: -1}  # request -> type it was reached through
        queue = [start]
        for request in queue:
            for device_type in self.edges[request]:
                if device_type in reached_from:
                    continue
                reached_from[device_type] = request
                room = self.sizes[device_type] - self.used[device_type]
                if room > 0:
                    return self._apply(device_type, min(amount, room), reached_from, entered_by)
                for other in users[device_type]:
                    if other not in entered_by and self.flow[other][device_type] > 0:
                        entered_by[other] = device_type
                        queue.append(other)
        return 0

    def _apply(self, last: int, amount: int, reached_from: dict[int, int], entered_by: dict[int, int]) -> int:
        # Bottleneck along the path: the units each displaced request holds in the type it gives up.
        path: list[tuple[int, int]] = []
        device_type = last
        while True:
            request = reached_from[device_type]
            path.append((request, device_type))
            back = entered_by[request]
            if back == -1:
                break
            amount = min(amount, self.flow[request][back])
            device_type = back
        self.used[last] += amount
        for request, device_type in path:
            self.flow[request][device_type] += amount
            back = entered_by[request]
            if back != -1:
                self.flow[request][back] -= amount
        return amount
