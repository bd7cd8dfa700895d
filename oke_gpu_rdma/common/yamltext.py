"""YAML text for people to read in diffs: block style, multi-line strings as `|` blocks."""

from __future__ import annotations

from typing import Any

import yaml

# libyaml's emitter when PyYAML was built with it (the wheels are): ~10x faster than pure Python.
_BaseDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _ReadableDumper(_BaseDumper):  # type: ignore[valid-type,misc]
    """SafeDumper that writes multi-line strings as literal blocks."""


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_ReadableDumper.add_representer(str, _str_representer)


def dump(document: Any, *, sort_keys: bool = False) -> str:
    """Serialize `document`; key order is kept unless `sort_keys` is set."""
    return yaml.dump(
        document, Dumper=_ReadableDumper, sort_keys=sort_keys, default_flow_style=False, width=1000
    )
