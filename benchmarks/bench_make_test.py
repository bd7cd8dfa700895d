"""Wall time of `make test`'s pytest, serial against pytest-xdist workers, on this machine.

`make test` takes its worker count from this measurement: `make bench-test` runs this with
`--write venv/.test-jobs` and the Makefile reads the fastest count from there (unmeasured it uses one
per core, what this measured fastest on 2 shared cores). The suite waits on subprocesses (fresh interpreters
of the preview, started policy packs and providers), so more workers than cores can pay. Prints the
figures; it does not assert, because wall time depends on the machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTEST = ROOT / "venv" / "bin" / "pytest"


def candidates(cores: int) -> list[int]:
    """Serial, one per core, two per core (0: pytest without workers, as `-n 0` runs it)."""
    return sorted({0, cores, 2 * cores})


def suite_seconds(workers: int, paths: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [str(PYTEST), "-q", "-n", str(workers), "--dist", "loadfile", "-p", "no:cacheprovider", *paths],
        cwd=ROOT, check=True, capture_output=True,
    )  # fmt: skip
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--write", type=Path, help="write the fastest worker count to this file")
    parser.add_argument(
        "paths", nargs="*", help="test paths (default: the whole suite, as make test runs it)"
    )
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    figures = {n: suite_seconds(n, args.paths) for n in candidates(cores)}
    serial = figures[0]
    print(f"make test's pytest on {cores} core(s){' (' + ' '.join(args.paths) + ')' if args.paths else ''}")
    for workers, seconds in figures.items():
        label = "serial" if workers == 0 else f"{workers} workers"
        print(f"  {label:<12}{seconds:>8.1f} s{serial / seconds:>8.2f}x")
    best = min(figures, key=lambda n: figures[n])
    print(f"  fastest: {'serial' if best == 0 else f'{best} workers'}")
    if args.write is not None:
        args.write.write_text(f"{best}\n")
        print(f"  written to {args.write}: make test uses it")


if __name__ == "__main__":
    main(sys.argv[1:])
