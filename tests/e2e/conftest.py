"""The e2e session: the control plane built once, one cluster per stack (started on first use, stopped at
the end), and the closing line `make e2e` prints (written to build/e2e/summary.json for tools/e2e_summary)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.cluster_stack import StackCluster, install_stack
from tests.e2e.control_plane import ROOT, build, fresh_workdir
from tests.e2e.nodes import Placement
from tests.e2e.stacks import rendered

WORK = ROOT / "build" / "e2e" / "work"
SUMMARY = ROOT / "build" / "e2e" / "summary.json"


@pytest.fixture(scope="session")
def binaries() -> Path:
    return build()


class Clusters:
    """Clusters by key, each a fresh control plane with one stack installed; one runs at a time (the MPI
    operator v0.6.0 serves its health check on a fixed port, :8080, cmd/mpi-operator/app/server.go; and two
    cores hold one control plane comfortably), so tests of one cluster are best kept together."""

    def __init__(self) -> None:
        self.started: dict[str, StackCluster] = {}
        self.versions: dict[str, str] = {}

    def get(self, stack: str, key: str | None = None, placement: Placement | None = None) -> StackCluster:
        key = key or stack
        if key not in self.started:
            self.stop_all()
            cluster = install_stack(fresh_workdir(WORK / key), rendered(stack), placement)
            self.started[key] = cluster
            # Read from the running binaries; Kueue's only where the stack runs it.
            self.versions |= {name: v for name, v in cluster.plane.versions().items() if v}
        return self.started[key]

    def stop(self, key: str) -> None:
        if key in self.started:
            self.started.pop(key).plane.stop()

    def stop_all(self) -> None:
        for key in list(self.started):
            self.stop(key)


_CLUSTERS = Clusters()


@pytest.fixture(scope="session")
def clusters(binaries: Path) -> Iterator[Clusters]:
    try:
        yield _CLUSTERS
    finally:
        _CLUSTERS.stop_all()


@pytest.fixture(scope="session")
def cluster_of(clusters: Clusters) -> Callable[..., StackCluster]:
    return clusters.get


def _cluster_key(item: pytest.Item) -> str:
    """The cluster a test runs on: its `stack` parameter, its `cluster` mark, or its module's KEY or STACK."""
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "stack" in callspec.params:
        return str(callspec.params["stack"])
    mark = item.get_closest_marker("cluster")
    if mark is not None:
        return str(mark.args[0])
    module = getattr(item, "module", None)
    for name in ("KEY", "STACK"):
        if hasattr(module, name):
            return str(getattr(module, name))
    return ""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # One cluster runs at a time (Clusters): run each cluster's tests together, so each is installed once.
    items.sort(key=_cluster_key)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cluster(key): the cluster (Clusters key) the test runs on")
    # Loopback to a self-signed API server (tests/e2e/kube.py); pytest would otherwise show urllib3's warning
    # on every request.
    config.addinivalue_line("filterwarnings", "ignore::urllib3.exceptions.InsecureRequestWarning")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(reporter, "stats", {})
    counts = {outcome: len(stats.get(outcome, [])) for outcome in ("passed", "failed", "error", "xfailed")}
    SUMMARY.parent.mkdir(parents=True, exist_ok=True)
    SUMMARY.write_text(json.dumps({"counts": counts, "versions": _CLUSTERS.versions}, indent=2) + "\n")
