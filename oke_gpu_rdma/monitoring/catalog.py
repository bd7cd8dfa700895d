"""The metric names each exporter documents at the version the stack pins (metric_catalog.json, written by
tools/metric_catalog.py from the exporters' own repositories, which it names with their refs)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Final

CATALOG_FILE: Final = Path(__file__).resolve().parent / "metric_catalog.json"


@cache
def documented() -> dict[str, frozenset[str]]:
    """Exporter -> the metric names it documents."""
    data = json.loads(CATALOG_FILE.read_text())
    return {exporter: frozenset(entry["metrics"]) for exporter, entry in data.items()}


def exporter_of(metric: str) -> str | None:
    """The exporter that documents ``metric`` (None: none of them)."""
    return next((exporter for exporter, names in documented().items() if metric in names), None)
