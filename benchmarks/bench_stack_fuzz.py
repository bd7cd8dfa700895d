"""Issue 22's fuzz at full size: 4,500 seeded mutations of the example stacks through the preview's config
loading path, and a sample of them through the CLI entry (benchmarks/stack_fuzz.py).

Prints, per path: mutations, refused, accepted, crashed (tracebacks), the slowest input and the share over
20 s; and how long a stack of 5,000 pools (over the 2,000 bound) takes to be refused (target: under 5 s). Knobs: FUZZ_MUTATIONS (default 4500), FUZZ_CLI (default 60: the CLI sample, which runs the whole
program for each accepted mutation), FUZZ_SEED (default 22).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from benchmarks.stack_fuzz import Mutation, Outcome, cli_outcome, load_outcome, mutations  # noqa: E402
from preview.mock_runtime import pulumi_config_map  # noqa: E402
from preview.stack_file import read_stack_file  # noqa: E402
from stack_config.loading import load_program_stack  # noqa: E402
from stack_config.problems import ConfigError  # noqa: E402

LIMIT_SECONDS = 20


def report(path: str, outcomes: list[tuple[Mutation, Outcome]]) -> None:
    kinds = Counter(o.kind for _, o in outcomes)
    slowest = max(outcomes, key=lambda pair: pair[1].seconds)
    over = sum(1 for _, o in outcomes if o.seconds > LIMIT_SECONDS)
    print(
        f"{path}: {len(outcomes)} mutations, {kinds['refused']} refused, {kinds['accepted']} accepted, "
        f"{kinds['crashed']} crashed; slowest {slowest[1].seconds:.2f} s (#{slowest[0].index}: "
        f"{'; '.join(slowest[0].edits)[:120]}); {over} over {LIMIT_SECONDS} s"
    )
    for mutation, outcome in outcomes:
        if outcome.kind == "crashed":
            print(f"  crashed #{mutation.index} {mutation.stack} {mutation.edits}:")
            print("    " + outcome.detail.strip().splitlines()[-1])


def oversized_fleet() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "Pulumi.big.yaml"
        document = yaml.safe_load((ROOT / "examples" / "Pulumi.dev.yaml").read_text())
        pools = document["config"]["oke-gpu-rdma:nodePools"]
        document["config"]["oke-gpu-rdma:nodePools"] = [dict(pools[0], name=f"p{i}") for i in range(5000)]
        path.write_text(yaml.safe_dump(document))
        started = time.perf_counter()
        try:
            load_program_stack(pulumi_config_map(read_stack_file(path, "stacks/Pulumi.big.yaml")), "big")
            verdict = "accepted (it should be refused)"
        except ConfigError as error:
            verdict = f"refused: {str(error).splitlines()[-1].strip()[:100]}"
        seconds = time.perf_counter() - started
    print(f"5,000 pools: {verdict}; {seconds:.2f} s ({'met' if seconds < 5 else 'NOT met'}: under 5 s)")


def main() -> None:
    count = int(os.environ.get("FUZZ_MUTATIONS", "4500"))
    sample = int(os.environ.get("FUZZ_CLI", "60"))
    seed = int(os.environ.get("FUZZ_SEED", "22"))
    files = mutations(count, seed)
    with tempfile.TemporaryDirectory() as folder:
        loaded = [(m, load_outcome(m, Path(folder))) for m in files]
        report("config loading", loaded)
        # The CLI sample: half accepted mutations (they run the whole preview), half refused ones.
        accepted = [m for m, o in loaded if o.kind != "refused"][: sample // 2]
        refused = [m for m, o in loaded if o.kind == "refused"][: sample - len(accepted)]
        report("CLI entry", [(m, cli_outcome(m, Path(folder))) for m in [*accepted, *refused]])
    oversized_fleet()


if __name__ == "__main__":
    main()
