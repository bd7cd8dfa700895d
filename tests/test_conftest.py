"""The suite's report of tests over 5 s (tests/conftest.py): each with its reason, one without named as such."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests import conftest


class _Reporter:
    def __init__(self, e2e: bool = False) -> None:
        self.lines: list[str] = []
        self.config = SimpleNamespace(getoption=lambda name: e2e if name == "--e2e" else None)

    def write_sep(self, sep: str, title: str) -> None:
        self.lines.append(f"--- {title}")

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def _report(nodeid: str, when: str, seconds: float, reason: str | None = None) -> pytest.TestReport:
    properties = [("slow", reason)] if reason else []
    return SimpleNamespace(nodeid=nodeid, when=when, duration=seconds, user_properties=properties)  # type: ignore[return-value]


def test_a_slow_test_is_reported_with_its_reason_and_one_without_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(conftest, "_seconds", {})
    monkeypatch.setattr(conftest, "_reasons", {})
    for report in (
        _report("t.py::explained", "setup", 1.0, "two previews"),
        _report("t.py::explained", "call", 5.5, "two previews"),
        _report("t.py::unexplained", "call", 9.0),
        _report("t.py::quick", "call", 4.9),
        _report("t.py::quick", "teardown", 3.0),
    ):
        conftest.pytest_runtest_logreport(report)
    reporter = _Reporter()
    conftest.pytest_terminal_summary(reporter)
    assert reporter.lines == [
        "--- tests over 5 s",
        "  9.0 s  t.py::unexplained: NO REASON: mark it @pytest.mark.slow(reason=...) or make it faster",
        "  6.5 s  t.py::explained: two previews",
    ]


def test_make_e2e_reports_none_its_tests_wait_on_a_control_plane(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conftest, "_seconds", {"tests/e2e/t.py::apply": 60.0})
    reporter = _Reporter(e2e=True)
    conftest.pytest_terminal_summary(reporter)
    assert reporter.lines == []


def test_nothing_is_reported_when_no_test_is_slow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conftest, "_seconds", {"t.py::quick": 0.2})
    reporter = _Reporter()
    conftest.pytest_terminal_summary(reporter)
    assert reporter.lines == []
