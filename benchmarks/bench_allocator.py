"""Time the claim judge and the allocator on the seed 000 claims (BM.GPU.B4.8).

Run: .venv/bin/python benchmarks/bench_allocator.py
Prints, per claim: the verdict, search nodes visited (first fit plus counterexample searches), and the
mean time per judge_claim over several runs (CEL expressions are compiled once and cached).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# This checkout first: the project, and the seed claims (tests.fixtures).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oke_gpu_rdma import attributes as attr
from oke_gpu_rdma.claims import judge_claim
from oke_gpu_rdma.claims.allocator import Allocator
from oke_gpu_rdma.claims.inventory import node_inventory
from oke_gpu_rdma.claims.spec import parse_claim
from oke_gpu_rdma.topology import get_topology
from tests.fixtures import seed000

RUNS = 20


def timed(fn: Callable[[], Any], runs: int = RUNS) -> tuple[float, Any]:
    fn()  # warm the CEL cache
    samples = []
    result = None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - start)
    return statistics.mean(samples) * 1000, result


def main() -> None:
    b4 = get_topology("BM.GPU.B4.8")
    inv = node_inventory(b4)
    print(f"judge_claim on {b4.shape} (mean of {RUNS} runs)")
    print(f"{'claim':<24} {'verdict':<16} {'nodes':>6} {'ms':>8}")
    for name, claim in seed000.claims().items():
        ms, verdict = timed(lambda claim=claim: judge_claim(claim, b4, inventory=inv))
        print(f"{name:<24} {verdict.kind:<16} {verdict.nodes_visited:>6} {ms:>8.2f}")

    requests = [
        {"name": f"gpu-{i}", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}} for i in range(8)
    ] + [
        {
            "name": f"rail-{i}",
            "exactly": {
                "deviceClassName": "dra.net",
                "count": 1,
                "selectors": [{"cel": {"expression": attr.RAIL_SELECTOR}}],
            },
        }
        for i in range(16)
    ]
    hard = {"devices": {"requests": requests, "constraints": [{"matchAttribute": attr.PCIE_ROOT}]}}
    spec = parse_claim(hard)
    ms, result = timed(lambda: Allocator(inv).allocate(spec))
    print()
    print("allocator, 24 single-device requests under one pcieRoot constraint (unsatisfiable)")
    print(f"  nodes {result.nodes}, {ms:.2f} ms: {result.reason}")


if __name__ == "__main__":
    main()
