"""The matching judge against two independent judges, and its answers to claims the old search could not
finish.

The brute-force judge below is written separately from oke_gpu_rdma.claims.matching and verdicts: it lists every
allocation of a claim on a tiny node (itertools over the devices of each request, constraints checked on
the finished allocation) and derives the verdict kind from that list. The reference allocator
(reference_allocator.py, a depth-first first fit as upstream's allocator_stable.go) answers what a
first fit can: whether the claim allocates or aborts in the inventory's order, and whether an allocation
with a GPU and no rail (or a rail and no GPU) on some root exists. The tiny node has three roots that
are not all alike (two with 2 GPUs + 2 rails on NUMA node 0, one with 1 GPU + 1 rail on NUMA node 1) and a
front-end NIC without a root, so the matcher's interchangeable-value shortcut is exercised both ways.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from typing import Any

import pytest

from oke_gpu_rdma.claims import UnsatisfiableCause, VerdictKind, judge_claim
from oke_gpu_rdma.claims.device_cel import selector_matches
from oke_gpu_rdma.claims.inventory import Device, NodeInventory, node_inventory
from oke_gpu_rdma.claims.spec import parse_claim
from oke_gpu_rdma.common import release_registry as registry
from oke_gpu_rdma.common.errors import AllocationAbortedError
from oke_gpu_rdma.drivers import attributes as attr
from oke_gpu_rdma.drivers import dranet
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from oke_gpu_rdma.nodes.topology import topology_from_dict
from tests.fixtures import seed000
from tests.oke_gpu_rdma.claims.reference_allocator import Allocator

TINY = topology_from_dict(
    {
        "shape": "TINY.3",
        "roots": [
            {
                "name": "pci0000:00",
                "numaNode": 0,
                "gpus": ["0000:0f:00.0", "0000:15:00.0"],
                "rails": [
                    {"name": "rdma0", "pciAddress": "0000:0c:00.0"},
                    {"name": "rdma1", "pciAddress": "0000:0c:00.1"},
                ],
            },
            {
                "name": "pci0000:3e",
                "numaNode": 0,
                "gpus": ["0000:50:00.0", "0000:53:00.0"],
                "rails": [
                    {"name": "rdma2", "pciAddress": "0000:45:00.0"},
                    {"name": "rdma3", "pciAddress": "0000:45:00.1"},
                ],
            },
            {
                "name": "pci0000:7d",
                "numaNode": 1,
                "gpus": ["0000:8f:00.0"],
                "rails": [{"name": "rdma4", "pciAddress": "0000:85:00.0"}],
            },
        ],
        "frontEndInterfaces": ["eth1"],
    }
)
TINY_DEVICES = node_inventory(TINY).devices()
B4 = CATALOG.topology("BM.GPU.B4.8")
RAIL = [{"cel": {"expression": dranet.RAIL_SELECTOR}}]


# -- the brute-force judge ------------------------------------------------------------------------


_SEEN: dict[tuple[str, str, tuple[str, ...]], bool] = {}


def _matches(device: Device, cls: str, selectors: Sequence[str]) -> bool:
    key = (device.name, cls, tuple(selectors))
    if key not in _SEEN:
        _SEEN[key] = all(
            selector_matches(e, device) for e in (*registry.DEVICE_CLASS_SELECTORS[cls], *selectors)
        )
    return _SEEN[key]


def _value(device: Device, attribute: str) -> tuple[str, object] | None:
    v = device.attribute(attribute)
    return None if v is None else (type(v).__name__, v)


def brute_kind(claim: dict[str, Any], devices: Sequence[Device] = TINY_DEVICES) -> str:
    """The verdict kind from the list of all allocations (see the module docstring)."""
    spec = parse_claim(claim)
    sels = [
        [(s, [d for d in devices if _matches(d, s.device_class, s.selectors)]) for s in r.alternatives]
        for r in spec.requests
    ]

    def applies(c: Any, s: Any) -> bool:
        return not c.requests or s.request in c.requests or s.name in c.requests

    def consistent(picked: list[tuple[Any, tuple[Device, ...]]]) -> bool:
        for c in spec.constraints:
            vals = [_value(d, c.attribute) for s, ds in picked if applies(c, s) for d in ds]
            if None in vals or len(set(vals)) > 1:
                return False
        return True

    # allocationMode All: every matching device is taken; upstream aborts when one fails a constraint.
    for alts in sels:
        s, cands = alts[0]
        if len(alts) != 1 or s.mode != "All" or not cands:
            continue
        for c in spec.constraints:
            if not applies(c, s):
                continue
            vals = {_value(d, c.attribute) for d in cands}
            if None in vals or len(vals) > 1:
                return "unsatisfiable"
    allocations: list[list[tuple[Any, tuple[Device, ...]]]] = []

    def extend(i: int, upto: int, picked: list[tuple[Any, tuple[Device, ...]]], out: list[Any]) -> None:
        if i == upto:
            if consistent(picked):
                out.append(list(picked))
            return
        used = {d for _, ds in picked for d in ds}
        for s, cands in sels[i]:
            if s.mode == "All":
                if not cands or used & set(cands):
                    continue
                options: Any = [tuple(cands)]
            else:
                options = itertools.combinations([d for d in cands if d not in used], s.count)
            if sum(len(ds) for _, ds in picked) + (len(cands) if s.mode == "All" else s.count) > 32:
                continue
            for ds in options:
                picked.append((s, ds))
                if consistent(picked):  # a partial allocation that breaks a constraint stays broken
                    extend(i + 1, upto, picked, out)
                picked.pop()

    extend(0, len(sels), [], allocations)
    if not allocations:
        return "unsatisfiable"
    for j, alts in enumerate(sels):
        s, cands = alts[0]
        if len(alts) != 1 or s.mode != "All" or not cands:
            continue
        for c in spec.constraints:
            if not applies(c, s):
                continue
            own = _value(cands[0], c.attribute)
            prefixes: list[Any] = []
            extend(0, j, [], prefixes)
            for p in prefixes:
                set_values = {_value(d, c.attribute) for ps, ds in p if applies(c, ps) for d in ds}
                if set_values and own not in set_values:
                    return "order-dependent"
    # What the claim asks for: the kinds its (sub)requests can get (a device without the attribute of a
    # constraint on its request is never chosen).
    kinds = {
        d.kind
        for alts in sels
        for s, cands in alts
        for d in cands
        if all(_value(d, c.attribute) is not None for c in spec.constraints if applies(c, s))
    }
    if "gpu" not in kinds or "rail" not in kinds:
        return "not applicable"
    for a in allocations:
        ds = [d for _, x in a for d in x]
        gpu_roots = {d.root for d in ds if d.kind == "gpu"}
        rail_roots = {d.root for d in ds if d.kind == "rail"}
        if any(d.kind == "gpu" and d.root not in rail_roots for d in ds) or any(
            d.kind == "rail" and d.root not in gpu_roots for d in ds
        ):
            return "unaligned"
    return "aligned"


# -- the reference allocator's judge --------------------------------------------------------------


def reference_kinds(claim: dict[str, Any], inventory: NodeInventory) -> set[str]:
    """The verdict kinds the reference allocator allows for ``claim`` (see the module docstring).

    A first fit that aborts (allocationMode All) allows unsatisfiable and order-dependent; one that finds
    nothing allows unsatisfiable. Order dependence (an All request after a request that can fix another
    value first) shows only in some device orders, so it stays allowed wherever the first fit succeeds;
    the brute force tells it apart."""
    allocator = Allocator(inventory)
    try:
        prepared = allocator.prepare(parse_claim(claim))
        first = allocator.allocate(prepared)
    except AllocationAbortedError:
        return {"unsatisfiable", "order-dependent"}
    if first.devices is None:
        return {"unsatisfiable"}
    kinds = {inventory.devices()[p].kind for alts in prepared.requests for a in alts for p in a.candidates}
    if not {"gpu", "rail"} <= kinds:
        return {"not applicable", "order-dependent"}
    devices = inventory.devices()
    for root in sorted({d.root for d in devices if d.root}):
        for want, avoid in (("gpu", "rail"), ("rail", "gpu")):
            required = [d for d in devices if d.kind == want and d.root == root]
            excluded = [d for d in devices if d.kind == avoid and d.root == root]
            try:
                found = allocator.find(prepared, exclude=excluded, require_any=required)
            except AllocationAbortedError:
                continue  # this order aborts; the question is whether some allocation misplaces a device
            if required and found.devices is not None:
                return {"unaligned", "order-dependent"}
    return {"aligned", "order-dependent"}


# -- random claims --------------------------------------------------------------------------------

ROOTS = ["pci0000:00", "pci0000:3e", "pci0000:7d"]


def _exact(rng: random.Random, kind: str) -> dict[str, Any]:
    if kind == "gpu":
        return {"deviceClassName": "gpu.nvidia.com", "count": rng.randint(1, 2)}
    if kind == "rail":
        return {"deviceClassName": "dra.net", "count": rng.randint(1, 3), "selectors": RAIL}
    return {"deviceClassName": "dra.net", "count": rng.randint(1, 2)}  # any DRANET device, eth1 too


def random_claim(rng: random.Random) -> dict[str, Any]:
    requests: list[dict[str, Any]] = []
    use_all = rng.random() < 0.3
    for i in range(rng.randint(1, 4)):
        kind = rng.choice(["gpu", "gpu", "rail", "rail", "nic"])
        name = f"r{i}"
        if use_all and rng.random() < 0.4:
            root = rng.choice(ROOTS)
            sel = f'device.attributes["resource.kubernetes.io"].?pcieRoot.orValue("") == "{root}"'
            if rng.random() < 0.3:
                sel = f'device.attributes["dra.net"].?numaNode.orValue(-1) == {rng.choice([0, 1])}'
            cls = "gpu.nvidia.com" if kind == "gpu" else "dra.net"
            requests.append(
                {
                    "name": name,
                    "exactly": {
                        "deviceClassName": cls,
                        "allocationMode": "All",
                        "selectors": [{"cel": {"expression": sel}}],
                    },
                }
            )
        elif not use_all and rng.random() < 0.25:
            subs = [{"name": f"s{k}", **_exact(rng, rng.choice(["gpu", "rail", "nic"]))} for k in range(2)]
            requests.append({"name": name, "firstAvailable": subs})
        else:
            requests.append({"name": name, "exactly": _exact(rng, kind)})
    names = [r["name"] for r in requests]
    constraints = []
    for _ in range(rng.choice([0, 1, 1, 2, 2, 3])):
        members = rng.sample(names, rng.randint(1, len(names)))
        attribute = rng.choice([attr.PCIE_ROOT] * 5 + [attr.NUMA_NODE])
        constraints.append({"requests": members if rng.random() < 0.85 else [], "matchAttribute": attribute})
    all_mode = [i for i, r in enumerate(requests) if r.get("exactly", {}).get("allocationMode") == "All"]
    if all_mode and all_mode[-1] > 0 and rng.random() < 0.7:
        # An All request sharing a constraint with an earlier request (item 2 of issue 11).
        j = all_mode[-1]
        constraints.append(
            {"requests": [names[rng.randrange(j)], names[j]], "matchAttribute": attr.PCIE_ROOT}
        )
    return {"devices": {"requests": requests, "constraints": constraints}}


def test_matching_judge_agrees_with_brute_force_and_the_reference_on_random_claims() -> None:
    """The three judges see the same 3,000 claims; the kinds must agree with the brute force on every one,
    and be among those the reference allocator allows."""
    rng = random.Random(20261130)
    inv = node_inventory(TINY)
    seen: dict[str, int] = {}
    for n in range(3000):
        claim = random_claim(rng)
        fast = judge_claim(claim, TINY, inventory=inv).kind
        slow = brute_kind(claim)
        assert fast == slow, (n, claim)
        assert fast in reference_kinds(claim, inv), (n, claim)
        seen[slow] = seen.get(slow, 0) + 1
    # The random set reaches every kind the brute force can tell apart.
    assert set(seen) == {"unsatisfiable", "order-dependent", "not applicable", "unaligned", "aligned"}, seen


# -- item 1: claims the depth-first search could not finish --------------------------------------


def _pairs_template(misdirected: bool, unconstrained_pair: bool) -> dict[str, Any]:
    spec = seed000("aligned-8gpu-16rails")["spec"]["spec"]
    requests = list(spec["devices"]["requests"])
    constraints = [dict(c) for c in spec["devices"]["constraints"]]
    if misdirected:
        constraints[3] = {"requests": ["gpus-4", "rails-3"], "matchAttribute": attr.PCIE_ROOT}
    if unconstrained_pair:
        if misdirected:
            requests = [*requests, {"name": "gpus-5", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]
            requests.append({"name": "rails-5", "exactly": {"deviceClassName": "dra.net", "selectors": RAIL}})
        else:
            constraints = constraints[:3]
    return {"devices": {"requests": requests, "constraints": constraints}}


@pytest.mark.parametrize("extra_pair", [False, True])
def test_pair_constraint_pointed_at_another_pairs_rails_is_refuted_without_a_search(extra_pair: bool) -> None:
    """Seed four-pair template, pair 4's constraint pointed at rails-3 (and an unconstrained pair added):
    gpus-3, gpus-4 and rails-3 must share a root, which has 2 GPUs. Upstream's allocator
    (structured/internal/stable/allocator_stable.go) backtracks over devices until the scheduler's filter
    times out (kubernetes/kubernetes#131730); the old model hit its node cap. The answer is
    'unsatisfiable', decided with a few dozen flow computations."""
    v = judge_claim(_pairs_template(misdirected=True, unconstrained_pair=extra_pair), B4)
    assert v.kind == VerdictKind.UNSATISFIABLE and v.cause == UnsatisfiableCause.NO_ALLOCATION
    assert v.nodes_visited < 200


def test_three_pairs_plus_an_unconstrained_pair_is_aligned() -> None:
    """Three constrained pairs fill three roots; the unconstrained pair (2 GPUs, 4 rails) can then only
    take the fourth root's devices, so every allocation is aligned (the old search took seconds)."""
    v = judge_claim(_pairs_template(misdirected=False, unconstrained_pair=True), B4)
    assert v.kind == VerdictKind.ALIGNED
    assert v.nodes_visited < 200


def test_an_unconstrained_pair_next_to_smaller_pairs_is_unaligned() -> None:
    """Two pairs of (1 GPU, 2 rails) leave devices on their roots free, so the unconstrained pair can put
    a GPU on one root and its rails on another (the counterexample lists the misplaced devices)."""
    claim = seed000("aligned-4gpu-8rails-a")["spec"]["spec"]
    requests = [
        {"name": r["name"], "exactly": {**r["exactly"], "count": r["exactly"]["count"] // 2}}
        for r in claim["devices"]["requests"]
    ]
    requests += [
        {"name": "gpus-x", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}},
        {"name": "rails-x", "exactly": {"deviceClassName": "dra.net", "count": 2, "selectors": RAIL}},
    ]
    v = judge_claim({"devices": {"requests": requests, "constraints": claim["devices"]["constraints"]}}, B4)
    assert v.kind == VerdictKind.UNALIGNED
    assert v.misplaced and {d.request for d in v.misplaced} <= {"gpus-x", "rails-x"}


def test_the_old_search_cap_is_gone() -> None:
    """A claim with 24 single-device requests, each pair tied by its own pcieRoot constraint: the judge
    answers exactly (aligned: every GPU comes with a rail on its root)."""
    requests: list[dict[str, Any]] = []
    constraints: list[dict[str, Any]] = []
    for i in range(8):
        requests.append({"name": f"g{i}", "exactly": {"deviceClassName": "gpu.nvidia.com"}})
        requests.append({"name": f"r{i}", "exactly": {"deviceClassName": "dra.net", "selectors": RAIL}})
        constraints.append({"requests": [f"g{i}", f"r{i}"], "matchAttribute": attr.PCIE_ROOT})
    for i in range(8, 16):
        requests.append({"name": f"r{i}", "exactly": {"deviceClassName": "dra.net", "selectors": RAIL}})
        constraints.append({"requests": [f"g{i - 8}", f"r{i}"], "matchAttribute": attr.PCIE_ROOT})
    v = judge_claim({"devices": {"requests": requests, "constraints": constraints}}, B4)
    assert v.kind == VerdictKind.ALIGNED
    assert len(v.devices) == 24


@pytest.mark.parametrize("name", sorted(seed000.claims()))
def test_seed_claims_agree_with_brute_force_on_the_tiny_node(name: str) -> None:
    claim = seed000(name)
    assert judge_claim(claim, TINY, inventory=node_inventory(TINY)).kind == brute_kind(claim)


def test_prefix_checks_only_where_a_later_request_offers_a_choice() -> None:
    """Step 1 checks a prefix only when it can prune: before a later firstAvailable request, and at the
    end. Single-alternative requests after the last choice are one path, refuted at its end."""
    from oke_gpu_rdma.claims.matching import _prefix_checks

    one, two = [object()], [object(), object()]
    assert _prefix_checks([one, one, one]) == [False, False, True]
    assert _prefix_checks([one, two, one, one]) == [True, False, False, True]
    assert _prefix_checks([two]) == [True]
    assert _prefix_checks([]) == []


def test_many_single_device_requests_under_pairwise_constraints_need_few_flow_checks() -> None:
    """The bench's slowest shape: 6 GPUs and 16 rails, one request each, rail i tied to GPU i mod 6 by
    a pcieRoot constraint. Four GPUs need 3 rails on their root, so they fill the 4 roots and the two
    GPUs needing 2 rails find 1 left: unsatisfiable. The value search stays a few dozen flow checks."""
    requests: list[dict[str, Any]] = [
        {"name": f"g{i}", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}} for i in range(6)
    ]
    requests += [
        {"name": f"r{i}", "exactly": {"deviceClassName": "dra.net", "count": 1, "selectors": RAIL}}
        for i in range(16)
    ]
    constraints = [{"requests": [f"g{i % 6}", f"r{i}"], "matchAttribute": attr.PCIE_ROOT} for i in range(16)]
    v = judge_claim({"devices": {"requests": requests, "constraints": constraints}}, B4)
    assert v.kind == VerdictKind.UNSATISFIABLE and v.cause == UnsatisfiableCause.NO_ALLOCATION
    assert v.nodes_visited < 100
