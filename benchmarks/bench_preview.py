"""Wall time of the offline preview: the dev stack against a stack with 32 GPU node pools.

Target (issue 2): `make preview` on the 32-pool stack takes under 3x the dev stack's time. Two
figures per stack: the whole command as a user runs it (a fresh interpreter: imports, config,
program, tree, rendered YAML) and the program alone in a warm process (what grows with the stack).
Prints figures; it does not assert, because wall time depends on the machine.

Target (issue 25): `make preview` of dev, warm (bytecode compiled), within 2x its import floor: a fresh
interpreter importing exactly the modules the preview ends with loaded, and nothing else run.
"""

from __future__ import annotations

import copy
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from preview.cli import stack_file  # noqa: E402
from preview.mock_runtime import PROJECT, pulumi_config_map, run_program  # noqa: E402

RUNS = 5
POOLS = 32


def many_pools_document(pools: int) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(stack_file("dev").read_text())
    template = document["config"][f"{PROJECT}:nodePools"][0]
    document["config"][f"{PROJECT}:nodePools"] = [
        {**copy.deepcopy(template), "name": f"gpu-{i:02d}"} for i in range(pools)
    ]
    return document


def cli_seconds(stack: str, stacks_dir: Path, rendered: Path) -> float:
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "preview", "--stack", stack, "--stacks-dir", str(stacks_dir),
             "--rendered", str(rendered)],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def program_seconds(stack: str, config: dict[str, str]) -> tuple[float, int]:
    samples = []
    count = 0
    for _ in range(RUNS):
        start = time.perf_counter()
        count = len(run_program(stack, config).resources)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), count


def loaded_modules(stack: str, stacks_dir: Path, rendered: Path) -> list[str]:
    """The modules a `make preview` of ``stack`` loads, in load order (`python -X importtime`)."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "preview", "--stack", stack, "--stacks-dir",
         str(stacks_dir), "--rendered", str(rendered)],
        cwd=ROOT, check=True, capture_output=True, text=True,
    )  # fmt: skip
    names = [
        line.rsplit("|", 1)[1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    ]
    return [n for n in dict.fromkeys(names) if n and n != "package"]


def import_floor_seconds(modules: list[str]) -> float:
    """A fresh interpreter importing ``modules`` (and only them), median of RUNS."""
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    try:\n        importlib.import_module(name)\n"
        "    except Exception:\n        pass\n"
    )
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        stacks = Path(tmp)
        dev_doc = yaml.safe_load(stack_file("dev").read_text())
        big_doc = many_pools_document(POOLS)
        (stacks / "Pulumi.dev.yaml").write_text(yaml.safe_dump(dev_doc))
        (stacks / "Pulumi.pools32.yaml").write_text(yaml.safe_dump(big_doc))
        rendered = stacks / "rendered"
        dev_cli = cli_seconds("dev", stacks, rendered)
        big_cli = cli_seconds("pools32", stacks, rendered)
        modules = loaded_modules("dev", stacks, rendered)
        floor = import_floor_seconds(modules)
        sdk = sum(1 for m in modules if m.startswith(("pulumi_oci.", "pulumi_kubernetes.")))
    run_program("dev", pulumi_config_map(dev_doc))  # warm the imports
    dev_prog, dev_count = program_seconds("dev", pulumi_config_map(dev_doc))
    big_prog, big_count = program_seconds("pools32", pulumi_config_map(big_doc))
    ratio = big_cli / dev_cli
    print(f"offline preview, median of {RUNS} runs")
    print(f"  {'stack':<16}{'resources':>10}{'make preview':>14}{'program only':>14}")
    print(f"  {'dev':<16}{dev_count:>10}{dev_cli * 1000:>11.0f} ms{dev_prog * 1000:>11.1f} ms")
    print(
        f"  {f'{POOLS} node pools':<16}{big_count:>10}{big_cli * 1000:>11.0f} ms{big_prog * 1000:>11.1f} ms"
    )
    print(f"  make preview ratio {ratio:.2f}x (target < 3x): {'met' if ratio < 3 else 'NOT met'}")
    print(f"  program cost per extra pool: {(big_prog - dev_prog) / (POOLS - 1) * 1000:.1f} ms")
    floor_ratio = dev_cli / floor
    print(
        f"  import floor of dev's make preview: {floor * 1000:.0f} ms ({len(modules)} modules, {sdk} of the "
        f"Pulumi OCI and Kubernetes SDKs); make preview {floor_ratio:.2f}x it (target within 2x): "
        f"{'met' if floor_ratio <= 2 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
