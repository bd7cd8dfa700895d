"""Helm values as Helm computes them from what the engine sends: `valueYamlFiles`, then `values`.

pulumi-kubernetes `helm.sh/v3:Release` and `helm.sh/v4:Chart` take `valueYamlFiles` (a list of assets:
a `FileAsset` path or a `StringAsset` text) and `values`; Helm merges the files in order and then the
values, later keys winning map by map (helm `pkg/cli/values/options.go` MergeValues, `mergeMaps`).
During preview `values` may be unknown while the files are known: the files are then read instead of
skipping the chart, and what is unknown is named.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pulumi import FileAsset, StringAsset

from .kube import PlainResource
from .report import Reporter
from .values import UNKNOWN, PropertyTypeError, as_list, plain


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's mergeMaps: maps merge key by key, anything else in ``override`` replaces."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def _file_values(asset: Any, where: str) -> Mapping[str, Any] | None:
    """The mapping in one values file; None when it cannot be read from here."""
    if isinstance(asset, StringAsset):
        text = asset.text
    elif isinstance(asset, FileAsset):
        path = Path(asset.path)
        if not path.is_file():
            return None
        text = path.read_text()
    elif isinstance(asset, str):  # a path, as some programs pass it
        path = Path(asset)
        if not path.is_file():
            return None
        text = path.read_text()
    else:
        raise PropertyTypeError(where, "a values file (a file or string asset)", asset)
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise PropertyTypeError(where, "a YAML file of values", f"YAML that does not parse ({err})") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, Mapping):
        raise PropertyTypeError(where, "a YAML mapping of values", loaded)
    return plain(loaded)  # type: ignore[no-any-return]


def helm_values(res: PlainResource, reporter: Reporter) -> dict[str, Any] | None:
    """The chart's merged values; None (and a note) when what matters is unknown or unreadable."""
    label = f"{res.kind} {res.name}"
    files = res.props.get("valueYamlFiles")
    values = res.props.get("values")
    merged: dict[str, Any] = {}
    if files is UNKNOWN:
        reporter.unchecked(f"{label}: valueYamlFiles unknown until apply, not checked")
        return None
    for i, asset in enumerate(as_list(files, "valueYamlFiles")):
        where = f"valueYamlFiles[{i}]"
        if asset is UNKNOWN:
            reporter.unchecked(f"{label}: {where} unknown until apply, not checked")
            return None
        found = _file_values(asset, where)
        if found is None:
            reporter.unchecked(
                f"{label}: {where} ({getattr(asset, 'path', asset)}) cannot be read from the pack"
            )
            return None
        merged = merge(merged, found)
    if values is UNKNOWN:
        if files:
            reporter.unchecked(f"{label}: values unknown until apply; checked with valueYamlFiles only")
            return merged
        reporter.unchecked(f"{label}: Helm values unknown until apply, not checked")
        return None
    if values is not None and not isinstance(values, Mapping):
        raise PropertyTypeError("values", "an object", values)
    return merge(merged, values or {})
