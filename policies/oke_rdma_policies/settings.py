"""The pack config as the policies read it: parsed sections, the shape catalog a section supplies, the whole file checked.

The contract itself (the file format, the models of the sections the program writes) is
:mod:`oke_gpu_rdma.common.pack_settings`, which the program uses to write the file; which policies exist and
what each section holds, the pack's rules declare (:mod:`oke_rdma_policies.registry`). A section that
does not fit its model becomes a violation naming the key, never a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from oke_gpu_rdma.common.pack_settings import (
    ALL_KEY,
    LEVEL_KEY,
    LEVELS,
    PolicySettings,
    SettingsError,
    ShapeTopologiesSettings,
)
from oke_gpu_rdma.nodes.shape_catalog import ShapeCatalog

from .registry import Rule

S = TypeVar("S", bound=PolicySettings)


def read_section(model: type[S], raw: Mapping[str, Any]) -> tuple[S, list[str]]:
    """The section parsed, or the model's defaults and one problem per bad key."""
    try:
        return model.from_properties(raw), []
    except SettingsError as err:
        return model(), [f"pack config {p}" for p in err.problems]


def shape_catalog(
    model: type[ShapeTopologiesSettings], raw: Mapping[str, Any]
) -> tuple[ShapeCatalog, list[str]]:
    """The shape catalog with the topologies of a policy's section (the files alone, and the problems,
    if the section does not parse)."""
    settings, problems = read_section(model, raw)
    return settings.catalog(), [*problems, *settings.override_problems()]


def validate_file(config: Mapping[str, Any], rules: Sequence[Rule]) -> list[str]:
    """Problems of a whole pack-config file (what the CLI's schema check refuses), one per line."""
    problems: list[str] = []
    by_name = {rule.name: rule for rule in rules}
    for name, value in config.items():
        if name == ALL_KEY:
            if value not in LEVELS:
                problems.append(f"all: {value!r} is not an enforcement level ({', '.join(LEVELS)})")
            continue
        if name not in by_name:
            problems.append(f"{name}: no such policy in this pack ({', '.join(by_name)})")
            continue
        if isinstance(value, str):
            if value not in LEVELS:
                problems.append(f"{name}: {value!r} is not an enforcement level ({', '.join(LEVELS)})")
            continue
        if not isinstance(value, Mapping):
            problems.append(f"{name}: expected an enforcement level or an object")
            continue
        level = value.get(LEVEL_KEY)
        if level is not None and level not in LEVELS:
            problems.append(f"{name}.{LEVEL_KEY}: {level!r} is not one of {', '.join(LEVELS)}")
        model = by_name[name].settings
        if model is None:
            extra = sorted(k for k in value if k != LEVEL_KEY)
            if extra:
                problems.append(f"{name}.{extra[0]}: unknown key (known: {LEVEL_KEY})")
            continue
        try:
            model.from_properties(value)
        except SettingsError as err:
            problems += err.problems
    return problems
