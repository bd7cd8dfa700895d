"""Fixtures: the offline Pulumi runtime, fresh for every test."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from preview.mock_runtime import pulumi_config_map, record, run_program
from tests.support import Run, as_stack_file, stack_document

E2E = Path(__file__).resolve().parent / "e2e"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--e2e",
        action="store_true",
        help="run tests/e2e against a control plane built from the Go modules (make e2e); left out otherwise",
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """tests/e2e only with --e2e (`make e2e`): it builds and starts a control plane, which `make test` does not."""
    inside = collection_path == E2E or E2E in collection_path.parents
    if inside and not config.getoption("--e2e"):
        return True
    return None


@pytest.fixture
def run_stack() -> Callable[..., Run]:
    """Run __main__.py offline on a stack, optionally with its config replaced."""

    def run(stack: str = "dev", raw: dict[str, Any] | None = None) -> Run:
        document = stack_document(stack) if raw is None else as_stack_file(raw)
        return Run(run_program(stack, pulumi_config_map(document)))

    return run


@pytest.fixture
def declare() -> Callable[[Callable[[], object]], Run]:
    """Run a block that builds components under fresh mocks and return what it registered."""

    def run(body: Callable[[], object]) -> Run:
        return Run(record("test", {}, body))

    return run


# --- tests that cost more than 5 s -------------------------------------------------------------------------------

SLOW_SECONDS = 5.0
"""A test whose setup and call take longer than this says why, with @pytest.mark.slow(reason=...)."""
_seconds: dict[str, float] = {}
_reasons: dict[str, str] = {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow(reason): the test costs more than 5 s, and this is why")


def pytest_runtest_setup(item: pytest.Item) -> None:
    # Carried in the test's reports (user_properties), so the pytest-xdist controller sees it too.
    marker = item.get_closest_marker("slow")
    if marker is not None:
        item.user_properties.append(("slow", str(marker.kwargs.get("reason") or (marker.args or ("",))[0])))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when in ("setup", "call"):
        _seconds[report.nodeid] = _seconds.get(report.nodeid, 0.0) + report.duration
        for key, value in report.user_properties:
            if key == "slow":
                _reasons[report.nodeid] = str(value)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The tests over 5 s, each with why; one without a reason is named, so that it gets one or gets faster. A
    report, not a failure: wall time depends on the machine (the benchmarks print it, tests assert behaviour)."""
    slow = sorted(((s, n) for n, s in _seconds.items() if s > SLOW_SECONDS), reverse=True)
    # make e2e's tests wait on a control plane by design (docs/contributing/testing.md); the rule is make test's.
    if not slow or terminalreporter.config.getoption("--e2e"):
        return
    terminalreporter.write_sep("-", f"tests over {SLOW_SECONDS:.0f} s")
    for seconds, nodeid in slow:
        why = _reasons.get(nodeid) or "NO REASON: mark it @pytest.mark.slow(reason=...) or make it faster"
        terminalreporter.write_line(f"{seconds:5.1f} s  {nodeid}: {why}")
