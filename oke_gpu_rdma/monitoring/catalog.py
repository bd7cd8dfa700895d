"""The metric names each exporter documents at the version the stack pins (metric_catalog.json, written by
tools/metric_catalog.py from the exporters' own repositories, which it names with their refs)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Final

from oke_gpu_rdma.health.remediation import controller as remediation_controller

CATALOG_FILE: Final = Path(__file__).resolve().parent / "metric_catalog.json"


# This project's own exporter: the remediation controller, whose metrics its own code names.
OWN_EXPORTER: Final = "node-remediation"


@cache
def documented() -> dict[str, frozenset[str]]:
    """Exporter -> the metric names it documents (the upstream ones at their pins, and this project's own)."""
    data = json.loads(CATALOG_FILE.read_text())
    found = {exporter: frozenset(entry["metrics"]) for exporter, entry in data.items()}
    return found | {OWN_EXPORTER: frozenset(remediation_controller.METRICS)}


def exporter_of(metric: str) -> str | None:
    """The exporter that documents ``metric`` (None: none of them)."""
    return next((exporter for exporter, names in documented().items() if metric in names), None)
