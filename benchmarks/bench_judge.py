"""Time the claim judge per claim on BM.GPU.B4.8 over a large random set, adversarial claims included.

Run: .venv/bin/python benchmarks/bench_judge.py [claims]
Prints per-claim p50, p99 and max (ms) with the verdict kinds, the slowest claims, and the time for
2,000 distinct claims judged one after the other (CEL results are cached per selector, as in a policy
run). Figures only; tests assert behaviour.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "oke_gpu_rdma"))

import seed_claims

from oke_gpu_rdma import attributes as attr
from oke_gpu_rdma.inventory import node_inventory
from oke_gpu_rdma.topology import get_topology
from oke_gpu_rdma.verdicts import judge

RAIL = [{"cel": {"expression": attr.RAIL_SELECTOR}}]
ROOTS = ["pci0000:00", "pci0000:3e", "pci0000:7d", "pci0000:ba"]


def gpus(name: str, count: int) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "gpu.nvidia.com", "count": count}}


def rails(name: str, count: int) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "dra.net", "count": count, "selectors": RAIL}}


def adversarial(rng: random.Random) -> dict[str, Any]:
    """The seed's four-pair template with one pair's constraint pointed at another pair's rails, plus an
    unconstrained pair (issue 11), and variants: pairs of random sizes, constraints crossing pairs."""
    pairs = rng.randint(3, 6)
    requests: list[dict[str, Any]] = []
    constraints: list[dict[str, Any]] = []
    for i in range(1, pairs + 1):
        requests += [gpus(f"gpus-{i}", rng.choice([1, 2])), rails(f"rails-{i}", rng.choice([1, 2, 4]))]
        constraints.append({"requests": [f"gpus-{i}", f"rails-{i}"], "matchAttribute": attr.PCIE_ROOT})
    a, b = rng.sample(range(1, pairs + 1), 2)
    constraints[a - 1] = {"requests": [f"gpus-{a}", f"rails-{b}"], "matchAttribute": attr.PCIE_ROOT}
    requests += [gpus("gpus-x", rng.choice([1, 2])), rails("rails-x", rng.choice([1, 2, 4]))]
    return {"devices": {"requests": requests, "constraints": constraints}}


def many_singles(rng: random.Random) -> dict[str, Any]:
    """Up to 24 one-device requests under pairwise or shared constraints (the old search's worst case)."""
    g, r = rng.randint(4, 8), rng.randint(8, 16)
    requests = [gpus(f"g{i}", 1) for i in range(g)] + [rails(f"r{i}", 1) for i in range(r)]
    constraints = []
    for i in range(r):
        constraints.append({"requests": [f"g{i % g}", f"r{i}"], "matchAttribute": attr.PCIE_ROOT})
    if rng.random() < 0.3:
        constraints.append(
            {"requests": [f"g{rng.randrange(g)}", f"g{rng.randrange(g)}"], "matchAttribute": attr.PCIE_ROOT}
        )
    return {"devices": {"requests": requests, "constraints": constraints[:32]}}


def ordinary(rng: random.Random) -> dict[str, Any]:
    requests: list[dict[str, Any]] = []
    for i in range(rng.randint(1, 6)):
        kind = rng.random()
        if kind < 0.4:
            requests.append(gpus(f"g{i}", rng.randint(1, 4)))
        elif kind < 0.8:
            requests.append(rails(f"r{i}", rng.randint(1, 8)))
        elif kind < 0.9:
            root = rng.choice(ROOTS)
            sel = f'device.attributes["resource.kubernetes.io"].?pcieRoot.orValue("") == "{root}"'
            requests.append(
                {
                    "name": f"a{i}",
                    "exactly": {
                        "deviceClassName": "dra.net",
                        "allocationMode": "All",
                        "selectors": [{"cel": {"expression": sel}}],
                    },
                }
            )
        else:
            requests.append(
                {
                    "name": f"f{i}",
                    "firstAvailable": [
                        {"name": "big", "deviceClassName": "gpu.nvidia.com", "count": rng.randint(2, 8)},
                        {"name": "small", "deviceClassName": "gpu.nvidia.com", "count": 1},
                    ],
                }
            )
    names = [r["name"] for r in requests]
    constraints = [
        {
            "requests": rng.sample(names, rng.randint(1, len(names))),
            "matchAttribute": rng.choice([attr.PCIE_ROOT, attr.PCIE_ROOT, attr.NUMA_NODE]),
        }
        for _ in range(rng.randint(0, 4))
    ]
    return {"devices": {"requests": requests, "constraints": constraints}}


def claims(n: int, seed: int = 11) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out: list[dict[str, Any]] = list(seed_claims.ALL.values())
    while len(out) < n:
        pick = rng.random()
        out.append(adversarial(rng) if pick < 0.2 else many_singles(rng) if pick < 0.3 else ordinary(rng))
    return out


def _time(claim: dict[str, Any], topology: Any, inventory: Any) -> float:
    start = time.perf_counter()
    judge(claim, topology, inventory=inventory)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    b4 = get_topology("BM.GPU.B4.8")
    inv = node_inventory(b4)
    population = claims(n)
    for claim in population[:50]:
        judge(claim, b4, inventory=inv)  # warm the CEL caches
    samples: list[tuple[float, str, int]] = []
    kinds: Counter[str] = Counter()
    for i, claim in enumerate(population):
        start = time.perf_counter()
        verdict = judge(claim, b4, inventory=inv)
        samples.append(((time.perf_counter() - start) * 1000, verdict.kind, i))
        kinds[verdict.kind] += 1
    times = sorted(s[0] for s in samples)
    p50 = statistics.median(times)
    p99 = times[int(len(times) * 0.99) - 1]
    print(f"judge on {b4.shape}: {len(population)} claims (adversarial included)")
    print(f"  per claim: p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {times[-1]:.2f} ms")
    print(f"  kinds: {dict(kinds)}")
    print("  slowest (and the same claim timed again: the machine is shared, a pause is not the judge):")
    for ms, kind, i in sorted(samples, reverse=True)[:5]:
        reqs = len(population[i]["devices"]["requests"])
        cons = len(population[i]["devices"].get("constraints", []))
        again = min(_time(population[i], b4, inv) for _ in range(3))
        print(f"    #{i}: {ms:.2f} ms (again {again:.2f} ms), {kind}, {reqs} requests, {cons} constraints")
    distinct = claims(2000, seed=2026)
    start = time.perf_counter()
    for claim in distinct:
        judge(claim, b4, inventory=inv)
    print(f"2,000 distinct claims: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
