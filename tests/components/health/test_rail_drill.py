"""The rail agent's fault drill (tests/components/health/rail_drill.py), shorter than the acceptance drill of issue 35
(`make drill`: 1,000 rounds in each mode). Seed 3 brings every kind of fault within 60 rounds, three of its
restarts into a noisy API server; test_rail_drill_mutants.py runs the same drill against broken agents."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.components.health import rail_drill

ROUNDS = 60
SEED = 3


@pytest.mark.parametrize("mode", ["device", "node"])
def test_under_random_faults_no_mark_is_missing_invented_or_lifted_early(tmp_path: Path, mode: str) -> None:
    """About 3 s a mode: a round is one run of the script and of the fake kubectl calls it makes."""
    report = rail_drill.drill(tmp_path, mode, seed=SEED, rounds=ROUNDS)
    assert report.violations == []
    # A due mark waited only on the API server: never longer unwritten than the outage it met (checked each round).
    assert report.longest_outage > 0 and report.longest_unmarked <= report.longest_outage
    assert report.rounds == ROUNDS
    # The drill did drill: marks were written and lifted, and every kind of fault came up.
    # Node mode has one mark a node, so fewer of them.
    assert report.marks >= 2 and report.lifts >= 1
    assert {
        "down",
        "flap",
        "errors",
        "renamed",
        "to a pod",
        "function lost",
        "API down",
        "API hang",
        "API noisy",
        "restart",
    } <= set(report.faults)
