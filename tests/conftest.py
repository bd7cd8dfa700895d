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
