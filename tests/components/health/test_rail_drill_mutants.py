"""The rail agent's fault drill (tests/components/health/rail_drill.py) against broken copies of the agent: each must be
caught, or the drill proves nothing. In a file of its own so that pytest-xdist runs it beside the drill itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.claims.rdma_workloads import SCRIPTS
from tests.components.health import rail_drill
from tests.components.health.test_rail_drill import ROUNDS, SEED


def mutant(tmp_path: Path, old: str, new: str) -> Path:
    script = (SCRIPTS / "rail-health.sh").read_text()
    assert old in script
    path = tmp_path / "rail-health.sh"
    path.write_text(script.replace(old, new))
    return path


@pytest.mark.parametrize(
    ("mode", "old", "new", "caught"),
    [
        # No hysteresis: a mark is lifted at the first good check.
        ("device", '[ "$good" -ge "$recovery_checks" ] &&', "true ||", "lifted before its recovery"),
        # Discovery noise taken for an answer (defect 2): every rail adopted as marked, so one that goes bad
        # later is taken for marked and never is.
        ("device", '2>"$state/kubectl.err"; }', "2>&1; }", "held bad and not marked"),
        # A failed mark forgotten instead of retried.
        (
            "device",
            'mark_rail "$ifname" "$pci" && put "$ifname.written" 1',
            'mark_rail "$ifname" "$pci"; put "$ifname.written" 1',
            "held bad and not marked",
        ),
        # A failed read of the node's mark taken for none (defect 1).
        (
            "node",
            'listing=$(kube get node "$node" -o "$taints_jsonpath") || return 1',
            "listing=''",
            "the node's mark",
        ),
    ],
)
def test_the_drill_catches_a_broken_agent(tmp_path: Path, mode: str, old: str, new: str, caught: str) -> None:
    report = rail_drill.drill(
        tmp_path / "drill", mode, seed=SEED, rounds=ROUNDS, script=mutant(tmp_path, old, new)
    )
    assert any(caught in v for v in report.violations), report.violations[:5]
