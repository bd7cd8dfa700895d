"""Time the claim judge on the seed 000 claims (BM.GPU.B4.8).

Run: venv/bin/python benchmarks/bench_seed_claims.py
Prints, per claim: the verdict, the matcher's flow computations, and the mean time per judge_claim over
several runs (CEL expressions are compiled once and cached). The depth-first allocator this file also
timed is now the tests' reference (tests/oke_gpu_rdma/claims/reference_allocator.py): its speed is not a
product figure.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oke_gpu_rdma.claims import judge_claim
from oke_gpu_rdma.claims.inventory import node_inventory
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
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
    b4 = CATALOG.topology("BM.GPU.B4.8")
    inv = node_inventory(b4)
    print(f"judge_claim on {b4.shape} (mean of {RUNS} runs)")
    print(f"{'claim':<24} {'verdict':<16} {'nodes':>6} {'ms':>8}")
    for name, claim in seed000.claims().items():
        ms, verdict = timed(lambda claim=claim: judge_claim(claim, b4, inventory=inv))
        print(f"{name:<24} {verdict.kind:<16} {verdict.nodes_visited:>6} {ms:>8.2f}")


if __name__ == "__main__":
    main()
