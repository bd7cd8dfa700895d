"""CPU and memory of one round of the rail health agent (components/health/scripts/rail-health.sh) on a BM.GPU.B4.8 node.

Runs ROUNDS steady rounds of the script on the recorded healthy and failing /sys trees of the shape's 16 rails
(tests/fixtures/sysfs/), in each mark mode, with a kubectl that answers at once (/bin/true: the script's own
cost; a real kubectl call adds its process start, some 50-100 ms of CPU, and a steady round makes one). Prints
the script's CPU a round (user + system of the rounds, from getrusage of the children), the millicores that
makes at the default interval against the container's request (oke_gpu_rdma/health/health_marks.py AGENT_CPU_REQUEST), and
the largest resident set of a round's bash, by GNU time (/usr/bin/time; getrusage here would count this Python
process, which each child is a copy of until it execs). It does not assert: CPU time depends on the machine.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from components.claims.rdma_workloads import SCRIPTS  # noqa: E402
from oke_gpu_rdma.health import health_marks as health  # noqa: E402
from oke_gpu_rdma.nodes.labels import RAIL_UNHEALTHY_TAINT_KEY  # noqa: E402
from tests.fixtures import sysfs_b48  # noqa: E402

ROUNDS = 20
INTERVAL_SECONDS = 30  # health.rails.intervalSeconds' default (stack_config/model.py)
TREES = ROOT / "tests/fixtures/sysfs"


def millicores(quantity: str) -> float:
    return float(quantity[:-1]) if quantity.endswith("m") else float(quantity) * 1000


GNU_TIME = Path("/usr/bin/time")


def rounds(tree: Path, mode: str) -> tuple[float, int | None]:
    """CPU seconds a round and the largest resident set (KiB) of ROUNDS steady rounds (None without GNU time)."""
    state = Path(tempfile.mkdtemp())
    try:
        env = {
            "PATH": os.environ["PATH"],
            "SYSFS": str(tree),
            "STATE_DIR": str(state),
            "KUBECTL": shutil.which("true") or "/bin/true",
            "NODE_NAME": "bench",
            "MARK_MODE": mode,
            "TAINT_KEY": RAIL_UNHEALTHY_TAINT_KEY,
            "RAILS": " ".join(f"{name}={pci}" for name, pci, _ in sysfs_b48.rails()),
            "ONCE": "1",
        }
        script = str(SCRIPTS / "rail-health.sh")
        # The first round adopts and takes the first readings; the ones measured are the steady rounds after it.
        subprocess.run(["bash", script], env={**env, "NOW": "0"}, check=True, capture_output=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        for step in range(1, ROUNDS + 1):
            subprocess.run(
                ["bash", script],
                env={**env, "NOW": str(step * INTERVAL_SECONDS)},
                check=True,
                capture_output=True,
            )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        rss = None
        if GNU_TIME.exists():
            done = subprocess.run(
                [str(GNU_TIME), "-f", "%M", "bash", script],
                env={**env, "NOW": str((ROUNDS + 1) * INTERVAL_SECONDS)},
                check=True,
                capture_output=True,
                text=True,
            )
            rss = int(done.stderr.strip().splitlines()[-1])
        return cpu / ROUNDS, rss
    finally:
        shutil.rmtree(state, ignore_errors=True)


def main() -> None:
    request = millicores(health.AGENT_CPU_REQUEST)
    print(f"rail agent, 16 rails, {ROUNDS} steady rounds each, kubectl answering at once")
    for tree in ("b48-healthy", "b48-failing"):
        for mode in ("device", "node"):
            cpu, rss = rounds(TREES / tree, mode)
            share = cpu / INTERVAL_SECONDS * 1000
            print(
                f"  {tree:12} {mode:6}: {cpu * 1000:6.1f} ms CPU a round = {share:4.1f}m at a {INTERVAL_SECONDS} s "
                f"interval (request {health.AGENT_CPU_REQUEST}, {share / request:.0%} of it); largest resident set "
                + (f"{rss / 1024:.1f} MiB" if rss is not None else "not measured (no /usr/bin/time)")
                + f" (limit {health.AGENT_MEMORY_LIMIT})"
            )


if __name__ == "__main__":
    main()
