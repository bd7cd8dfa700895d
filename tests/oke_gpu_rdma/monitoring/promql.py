"""PromQL through Prometheus' own grammar: tools/promql/parse.mjs (@prometheus-io/lezer-promql, installed by
`make test` with `npm ci` from tools/promql/package-lock.json)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PARSER = ROOT / "tools" / "promql" / "parse.mjs"
MODULES = ROOT / "tools" / "promql" / "node_modules"


@dataclass(frozen=True)
class Parsed:
    error: str | None
    metrics: tuple[str, ...]


def parse(expressions: list[str]) -> list[Parsed]:
    """Each expression's first syntax error (None: it parses) and the metric names it selects."""
    assert (MODULES / "@prometheus-io" / "lezer-promql").is_dir(), (
        "the PromQL parser is not installed: run `make test` (it runs `npm ci` in tools/promql)"
    )
    result = subprocess.run(
        ["node", str(PARSER)],
        input=json.dumps(expressions),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=Path(PARSER).parent,
    )
    return [Parsed(r["error"], tuple(r["metrics"])) for r in json.loads(result.stdout)]
