"""Kueue's CRD schemas at the pinned tag, as data: `kueue_crd_schemas.json` beside this module, written by
`python -m tools.kueue_crd_schemas` from kubernetes-sigs/kueue's own CRDs (the file names the repository, tag,
commit and the path of each kind's CRD). The preview validates the rendered Kueue objects against them
(preview/schema_check.py); the project never holds the CRD files themselves.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Final

SCHEMAS_FILE: Final = Path(__file__).with_name("kueue_crd_schemas.json")


@cache
def load() -> dict[str, Any]:
    """The file's content: repository, tag, commit, apiVersion, and per kind its source path and schema."""
    data: dict[str, Any] = json.loads(SCHEMAS_FILE.read_text())
    return data


def schema(api_version: str, kind: str) -> dict[str, Any] | None:
    """The openAPIV3Schema of ``kind`` at ``api_version`` (None for another version or kind)."""
    data = load()
    if api_version != data["apiVersion"] or kind not in data["kinds"]:
        return None
    found: dict[str, Any] = data["kinds"][kind]["schema"]
    return found


def provenance() -> str:
    """Where the schemas come from, for a report line."""
    data = load()
    return f"{data['repository']} {data['tag']} ({data['commit'][:12]}) CRDs"
