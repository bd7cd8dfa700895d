"""Issue 22's fuzz at full size: 4,500 seeded mutations of the example stacks through the preview's config
loading path, and a sample of them through the CLI entry (benchmarks/stack_fuzz.py).

Prints, per path: mutations, refused, accepted, crashed (tracebacks), the slowest input and the share over
20 s. Knobs: FUZZ_MUTATIONS (default 4500), FUZZ_CLI (default 60: the CLI sample, which runs the whole
program for each accepted mutation), FUZZ_SEED (default 22).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.stack_fuzz import Mutation, Outcome, cli_outcome, load_outcome, mutations  # noqa: E402

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


if __name__ == "__main__":
    main()
