"""Every benchmark `make bench` runs loads: its imports resolve (a moved fixture or module breaks here,
not in the middle of `make bench`). Loading runs no benchmark: each runs under `__main__` only."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[2] / "benchmarks").glob("bench_*.py"))


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.name)
def test_the_benchmark_loads(path: Path) -> None:
    assert '__name__ == "__main__"' in path.read_text()
    namespace = runpy.run_path(str(path), run_name="benchmark_import_check")
    assert callable(namespace.get("main"))
