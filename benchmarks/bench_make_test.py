"""Wall time of `make test` on a fresh clone of HEAD, by phase, and the tests over 5 s with why they cost it.

The figure the README states (goal: under 180 s on 2 cores): `git clone` of this checkout's HEAD into a
temporary folder, then `make test` there, as a new user runs it, so the virtualenvs, the npm packages and
actionlint are installed as part of it (from the machine's uv, npm and Go caches when they are warm, as they
are after one run; a machine that never ran it also downloads the wheels, ~400 MB). Phases are timed from the
commands make echoes. `--sweep` also times this checkout's pytest serial and with one and two workers per
core, and `--write` keeps the fastest count for `make test` (the Makefile's JOBS). Prints figures; it does
not assert, because wall time depends on the machine.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTEST = ROOT / "venv" / "bin" / "pytest"
GOAL_SECONDS = 180.0
# The commands make echoes as a phase starts (Makefile: lint, typecheck, unit), in the order they run; what
# comes before the first and between mypy and pytest is installing (the venvs, npm, actionlint).
LINT = "venv/bin/ruff check"
TYPECHECK = "venv/bin/mypy"
TYPECHECKED = "Success: no issues found"
UNIT = "venv/bin/pytest"
PYTEST_SUMMARY = re.compile(r"^\d+ passed.* in [\d.]+s")
SLOW_SECTION = re.compile(r"^-+ tests over \d+ s -+$")
SLOW_LINE = re.compile(r"^\s*[\d.]+ s  \S+: ")


@dataclass
class FreshRun:
    seconds: float = 0.0
    marks: dict[str, float] = field(default_factory=dict)
    summary: str = ""
    slow: list[str] = field(default_factory=list)
    returncode: int = 0

    def phases(self) -> dict[str, float]:
        m = self.marks
        if not {"lint", "typecheck", "typechecked", "unit"} <= m.keys():
            return {}
        return {
            "install": m["lint"] + (m["unit"] - m["typechecked"]),
            "lint": m["typecheck"] - m["lint"],
            "typecheck": m["typechecked"] - m["typecheck"],
            "pytest": self.seconds - m["unit"],
        }


def fresh_make_test(keep: bool = False) -> FreshRun:
    """`make test` in a clone of HEAD, its output read line by line as it comes."""
    where = Path(tempfile.mkdtemp(prefix="bench-make-test-"))
    try:
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(where)], check=True)
        run = FreshRun()
        start = time.perf_counter()
        in_slow = False
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with subprocess.Popen(
            ["make", "test"], cwd=where, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        ) as make:
            assert make.stdout is not None
            for line in make.stdout:
                at = time.perf_counter() - start
                line = line.rstrip("\n")
                for mark, prefix in (
                    ("lint", LINT),
                    ("typecheck", TYPECHECK),
                    ("typechecked", TYPECHECKED),
                    ("unit", UNIT),
                ):
                    if line.startswith(prefix) and mark not in run.marks:
                        run.marks[mark] = at
                if PYTEST_SUMMARY.match(line.strip("= ")):
                    run.summary = line.strip("= ")
                if SLOW_SECTION.match(line):
                    in_slow = True
                elif in_slow and SLOW_LINE.match(line):
                    run.slow.append(line.strip())
                elif in_slow:
                    in_slow = False
            run.returncode = make.wait()
        run.seconds = time.perf_counter() - start
        return run
    finally:
        if keep:
            print(f"  the clone is kept at {where}")
        else:
            shutil.rmtree(where, ignore_errors=True)


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


def sweep(paths: list[str], write: Path | None) -> None:
    cores = os.cpu_count() or 1
    figures = {n: suite_seconds(n, paths) for n in candidates(cores)}
    serial = figures[0]
    print(f"make test's pytest on {cores} core(s){' (' + ' '.join(paths) + ')' if paths else ''}")
    for workers, seconds in figures.items():
        label = "serial" if workers == 0 else f"{workers} workers"
        print(f"  {label:<12}{seconds:>8.1f} s{serial / seconds:>8.2f}x")
    best = min(figures, key=lambda n: figures[n])
    print(f"  fastest: {'serial' if best == 0 else f'{best} workers'}")
    if write is not None:
        write.write_text(f"{best}\n")
        print(f"  written to {write}: make test uses it")


def _head() -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()


def _uncommitted() -> bool:
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=ROOT, check=True, capture_output=True, text=True
    )
    return bool(status.stdout.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--sweep", action="store_true", help="also time this checkout's pytest by worker count"
    )
    parser.add_argument(
        "--write", type=Path, help="with --sweep: write the fastest worker count to this file"
    )
    parser.add_argument("--keep", action="store_true", help="keep the fresh clone (its path is printed)")
    parser.add_argument("--no-fresh", action="store_true", help="skip the fresh clone (with --sweep)")
    parser.add_argument("paths", nargs="*", help="with --sweep: test paths (default: the whole suite)")
    args = parser.parse_args(argv)
    if not args.no_fresh:
        cores = os.cpu_count() or 1
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(
            f"make test on a fresh clone of HEAD ({_head()}), {cores} core(s), load average {load} at the start"
        )
        if _uncommitted():
            print("  (the checkout has uncommitted changes: the clone measures HEAD without them)")
        run = fresh_make_test(args.keep)
        for phase, seconds in run.phases().items():
            print(f"  {phase:<12}{seconds:>8.1f} s")
        verdict = "under" if run.seconds < GOAL_SECONDS else "OVER"
        print(f"  {'make test':<12}{run.seconds:>8.1f} s  ({verdict} the {GOAL_SECONDS:.0f} s goal)")
        print(f"  pytest: {run.summary or 'no summary line (see the exit status)'}")
        if run.slow:
            print("  tests over 5 s, with why:")
            print("\n".join(f"    {line}" for line in run.slow))
        else:
            print("  tests over 5 s: none")
        if run.returncode != 0:
            print(f"  make test failed (exit status {run.returncode})")
            return run.returncode
    if args.sweep:
        sweep(args.paths, args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
