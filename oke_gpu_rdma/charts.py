"""Helm values helpers: setting a dot-joined values path, and finding the paths a chart does not document.

Each chart's reference, default version and documented values paths live in its facts module under
:mod:`oke_gpu_rdma.releases`; the components emit only documented keys (the dranet chart's values schema
forbids unknown ones, so a misspelt key fails `helm install`).
"""

from __future__ import annotations

from typing import Any, Final

from oke_gpu_rdma.releases import dranet

# Read by preview/plan/gpu_impact.py, which another branch is changing: it moves to releases.dranet there.
DRANET_CHART: Final = dranet.CHART
DRANET_CHILD_RANGE_VALUE: Final = dranet.CHILD_RANGE_VALUE


def set_value(values: dict[str, Any], path: str, value: object) -> None:
    """Set the dot-separated values ``path`` (e.g. releases.dranet.CHILD_RANGE_VALUE), creating maps on the way.

    Keys are split on dots only: Helm value keys here never contain one.
    """
    *parents, last = path.split(".")
    node = values
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value


def undocumented_value_paths(values: object, documented: frozenset[str], prefix: str = "") -> list[str]:
    """The dot paths in `values` that `documented` does not admit (lists are leaves)."""
    if not isinstance(values, dict):
        return [] if _admitted(prefix, documented) else [prefix]
    if prefix and f"{prefix}.*" in documented:
        return []
    if not values and prefix:
        return [] if _admitted(prefix, documented) else [prefix]
    found: list[str] = []
    for key, value in values.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        found += undocumented_value_paths(value, documented, path)
    return found


def _admitted(path: str, documented: frozenset[str]) -> bool:
    if path in documented:
        return True
    parts = path.split(".")
    return any(".".join(parts[:i]) + ".*" in documented for i in range(1, len(parts)))
