"""Read the stack's Pulumi config into a :class:`StackConfig`, or fail with one message per problem.

This is the edge where raw config becomes typed objects: pydantic's errors and the address-plan
problems are turned into lines like
`stacks/Pulumi.dev.yaml: nodePools[0].count = 0: must be at least 1`, and no resource is declared
until the whole config is valid.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic

from . import address_plan, placement_plan, region_checks, system_pool_checks
from .claim_plan import ClaimPlan, plan_claims
from .model import PROJECT, StackConfig, config_keys
from .problems import ConfigError, ConfigProblem
from .sriov_plan import SriovPlan, plan_sriov


@dataclass(frozen=True)
class Stack:
    """A valid stack: its config and the claim templates judged for it (emit these, judge nothing again)."""

    config: StackConfig
    claims: ClaimPlan
    sriov: SriovPlan | None = None
    """The SR-IOV objects of the stack's rdma: sriov pools (None without such pools)."""


def _path(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def problems_from_pydantic(err: pydantic.ValidationError) -> list[ConfigProblem]:
    problems = []
    for item in err.errors(include_url=False):
        loc = list(item["loc"])
        message = item["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        if item["type"] == "missing":
            problems.append(ConfigProblem(_path(loc), None, "is missing; it is required"))
            continue
        if item["type"] == "extra_forbidden":
            problems.append(ConfigProblem(_path(loc), None, "is not a known key; check its spelling"))
            continue
        # A model-level check (no single field) is reported on the object it belongs to, without
        # echoing the whole object back.
        value = item.get("input")
        shown = None if isinstance(value, dict) or not loc else value
        problems.append(ConfigProblem(_path(loc) or "(stack)", shown, message))
    return problems


def load_stack(raw: Mapping[str, Any], source: str, region: str | None) -> Stack:
    """Validate raw config values (keys without the project prefix) for a stack in ``region`` (`oci:region`).

    ConfigError lists every problem.
    """
    # Unknown keys, top-level ones included, are reported by the model (extra="forbid").
    try:
        config = StackConfig.model_validate(dict(raw))
    except pydantic.ValidationError as err:
        raise ConfigError(
            source, region_checks.region_name_problems(region) + problems_from_pydantic(err)
        ) from None
    claims = plan_claims(config)
    sriov, sriov_problems = plan_sriov(config)
    found = (
        address_plan.problems(config)
        + region_checks.problems(config, region)
        + system_pool_checks.problems(config)
        + placement_plan.problems(config)
        + list(claims.problems)
        + sriov_problems
    )
    if found:
        raise ConfigError(source, found)
    return Stack(config, claims, sriov)


def parse_stack_config(raw: Mapping[str, Any], source: str, region: str | None) -> StackConfig:
    """The validated StackConfig alone (see :func:`load_stack`)."""
    return load_stack(raw, source, region).config


def decode_config_value(value: str, structured: bool) -> Any:
    """Pulumi hands structured config values to programs as JSON text."""
    if not structured:
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def raw_config(config_map: Mapping[str, str]) -> dict[str, Any]:
    """`oke-gpu-rdma:*` entries of a Pulumi config map (`project:key` -> text), decoded, without the prefix."""
    keys = config_keys()
    raw: dict[str, Any] = {}
    for full_key, value in config_map.items():
        prefix, _, key = full_key.partition(":")
        if prefix == PROJECT:
            # Unknown keys are kept as they are, so parse_stack_config reports them.
            raw[key] = decode_config_value(value, keys.get(key, False)) if isinstance(value, str) else value
    return raw


def stack_source(stack: str) -> str:
    """How messages name the stack's config file."""
    return f"stacks/Pulumi.{stack}.yaml"


def load_program_stack(config_env: Mapping[str, Any], stack: str) -> Stack:
    """The stack of a running Pulumi program, from the config the CLI passes it (`project:key` -> text).

    Everything the CLI passed is read, so misspelt top-level keys are reported too.
    """
    region = config_env.get(region_checks.REGION_KEY)
    return load_stack(
        raw_config(config_env), stack_source(stack), region if isinstance(region, str) else None
    )
