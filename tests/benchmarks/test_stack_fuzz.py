"""The seeded fuzz of the example stacks (benchmarks/stack_fuzz.py): no mutation crashes the preview, through
the config loading path (a few hundred) and through the CLI entry (a sample), and every refusal is a message.

FUZZ_MUTATIONS sets how many the loading path gets (default 300). How long they take is a benchmark's
figure, not a test's verdict: benchmarks/bench_stack_fuzz.py runs the 4,500 of issue 22 and prints the slowest
input and how many took over the 20 s bound.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.stack_fuzz import cli_outcome, load_outcome, mutations

MUTATIONS = int(os.environ.get("FUZZ_MUTATIONS", "300"))


def test_the_same_seed_gives_the_same_files() -> None:
    assert [m.data for m in mutations(20, seed=5)] == [m.data for m in mutations(20, seed=5)]
    assert [m.data for m in mutations(20, seed=5)] != [m.data for m in mutations(20, seed=6)]


@pytest.mark.slow(
    reason="loads and checks 300 seeded mutations of a stack file (FUZZ_MUTATIONS), ~4 s on 2 quiet cores"
)
def test_no_mutation_crashes_the_config_loading(tmp_path: Path) -> None:
    outcomes = [(m, load_outcome(m, tmp_path)) for m in mutations(MUTATIONS)]
    crashed = [(m.index, m.edits, o.detail) for m, o in outcomes if o.kind == "crashed"]
    assert crashed == []
    kinds = Counter(o.kind for _, o in outcomes)
    # Most mutations break the stack; some leave it valid (a default key deleted): both paths are exercised.
    assert kinds["refused"] > kinds["accepted"] > 0
    # Every refusal names the stack file on each of its problems (a problem's own list, "- <pod>" under it,
    # continues it), and no line is a traceback.
    for _, outcome in outcomes:
        if outcome.kind == "refused":
            lines = [
                line.strip()
                for line in outcome.detail.splitlines()
                if line.strip() != "invalid stack config:" and not line.strip().startswith("- ")
            ]
            assert all(line.startswith("stacks/Pulumi.") for line in lines), outcome.detail
            assert "Traceback" not in outcome.detail


def test_a_sample_through_the_cli_entry_does_not_crash(tmp_path: Path) -> None:
    # Mutations the loading path accepts run the whole preview (program, checks, rendering, policy pack);
    # refused ones stop where loading stops.
    sample = mutations(200, seed=3)
    accepted = [m for m in sample if load_outcome(m, tmp_path).kind == "accepted"][:3]
    refused = [m for m in sample if m not in accepted][:5]
    assert accepted and refused
    for mutation in [*accepted, *refused]:
        outcome = cli_outcome(mutation, tmp_path)
        assert outcome.kind != "crashed", (mutation.edits, outcome.detail)
