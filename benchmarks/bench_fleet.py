"""Fleet scale (issue 19): 64 GPU pools over four shapes plus a CPU pool (benchmarks/fleet.py).

Targets: `make preview` on the fleet stack within 2x the dev stack's time, and the policy pack on
the fleet stack's resources within 5 s. Figures: the whole command as a user runs it (a fresh
interpreter each time), and the pack alone on what the program declared (the requests `pulumi
preview` sends it: Configure, one Analyze per resource, AnalyzeStack), the first run with empty
verdict caches and a warm one. Prints figures; it does not assert, because wall time depends on the
machine.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.fleet import fleet_document  # noqa: E402
from oke_gpu_rdma.claims import device_cel  # noqa: E402
from oke_gpu_rdma.claims.inventory import shape_inventory  # noqa: E402
from preview.cli import stack_file  # noqa: E402
from preview.mock_runtime import pulumi_config_map, run_program  # noqa: E402
from preview.policy_check import analyze_run  # noqa: E402
from stack_config.loading import parse_stack_config, raw_config  # noqa: E402
from stack_config.pack_config import policy_pack_config  # noqa: E402

RUNS = 3
NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"


def cli_seconds(stack: str, stacks_dir: Path) -> float:
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "preview", "--stack", stack, "--stacks-dir", str(stacks_dir),
             "--rendered", str(stacks_dir / "rendered")],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        stacks = Path(tmp)
        (stacks / "Pulumi.dev.yaml").write_text(stack_file("dev").read_text())
        (stacks / "Pulumi.fleet.yaml").write_text(yaml.safe_dump(fleet_document()))
        dev_cli = cli_seconds("dev", stacks)
        fleet_cli = cli_seconds("fleet", stacks)
    config_map = pulumi_config_map(fleet_document())
    run = run_program("fleet", config_map)
    pack = policy_pack_config(
        parse_stack_config(raw_config(config_map), "fleet", config_map.get("oci:region"))
    ).to_dict()
    shapes = Counter(r.inputs["nodeShape"] for r in run.resources if r.type == NODE_POOL)
    # The pack runs in a process of its own under `pulumi preview`: forget what the program's claim
    # plan compiled and built (CEL selectors, shape inventories), so the first run starts cold.
    device_cel._CACHE.clear()
    shape_inventory.cache_clear()
    start = time.perf_counter()
    findings = analyze_run(run, pack)
    first = time.perf_counter() - start
    warm = []
    for _ in range(RUNS):
        start = time.perf_counter()
        analyze_run(run, pack)
        warm.append(time.perf_counter() - start)
    ratio = fleet_cli / dev_cli
    pools = ", ".join(f"{n} {s}" for s, n in sorted(shapes.items()))
    print(f"fleet stack: {len(run.resources)} resources; node pools: {pools}")
    print(f"make preview, median of {RUNS} runs: dev {dev_cli:.2f} s, fleet {fleet_cli:.2f} s")
    print(f"  ratio {ratio:.2f}x (target < 2x): {'met' if ratio < 2 else 'NOT met'}")
    print(
        f"policy pack on the fleet stack: first run {first:.2f} s (target < 5 s: {'met' if first < 5 else 'NOT met'}), "
        f"warm min {min(warm):.2f} s; findings: {len(findings)}"
    )


if __name__ == "__main__":
    main()
