"""The pack config as the policies read it: levels, the schemas the CLI validates, parsed sections.

The contract itself (policy names, each section's model, the file format) is
:mod:`oke_gpu_rdma.pack_settings`, which the program uses to write the file; this module adds what only
the pack needs: the SDK's level and schema objects, and the shape catalog with the topologies a
section supplies.
A section that does not fit its model becomes a violation naming the key, never a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pulumi_policy import EnforcementLevel, PolicyConfigSchema

from oke_gpu_rdma.pack_settings import (
    DEFAULT_LEVELS,
    ClaimsSettings,
    PolicyName,
    PolicySettings,
    SettingsError,
    ShapeTopologiesSettings,
    json_schema,
)
from oke_gpu_rdma.shape_catalog import ShapeCatalog

S = TypeVar("S", bound=PolicySettings)


def level(name: PolicyName) -> EnforcementLevel:
    """The policy's default enforcement level."""
    return EnforcementLevel(DEFAULT_LEVELS[name])


def schema(name: PolicyName) -> PolicyConfigSchema | None:
    """The policy's config schema for GetAnalyzerInfo (None for policies without properties)."""
    properties = json_schema(name)
    return PolicyConfigSchema(properties=properties) if properties else None


def read_section(model: type[S], raw: Mapping[str, Any]) -> tuple[S, list[str]]:
    """The section parsed, or the model's defaults and one problem per bad key."""
    try:
        return model.from_properties(raw), []
    except SettingsError as err:
        return model(), [f"pack config {p}" for p in err.problems]


@dataclass
class ClaimsConfig:
    """The claims section: the shape without pools, the catalog with its topologies, its problems."""

    shape: str
    catalog: ShapeCatalog
    problems: list[str] = field(default_factory=list)


def claims_config(raw: Mapping[str, Any]) -> ClaimsConfig:
    settings, problems = read_section(ClaimsSettings, raw)
    return ClaimsConfig(settings.shape, settings.catalog(), problems)


def shape_catalog(
    model: type[ShapeTopologiesSettings], raw: Mapping[str, Any]
) -> tuple[ShapeCatalog, list[str]]:
    """The shape catalog with the topologies of a policy's section (the files alone, and the problems,
    if the section does not parse)."""
    settings, problems = read_section(model, raw)
    return settings.catalog(), problems
