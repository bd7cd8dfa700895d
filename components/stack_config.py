"""Read the stack's Pulumi config into a :class:`StackConfig`, or fail with one message per problem.

This is the edge where raw config becomes typed objects: pydantic's errors and the address-plan
problems are turned into lines like
`stacks/Pulumi.dev.yaml: nodePools[0].count = 0: must be at least 1`, and no resource is declared
until the whole config is valid.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pydantic

from . import address_plan, claim_plan
from .address_plan import ConfigProblem
from .config import PROJECT, StackConfig, config_keys


class ConfigError(Exception):
    """The stack config is invalid; `str()` is the full message, one line per problem."""

    def __init__(self, source: str, problems: Sequence[ConfigProblem]) -> None:
        self.source = source
        self.problems = list(problems)
        lines = [f"{source}: {format_problem(p)}" for p in self.problems]
        super().__init__("invalid stack config:\n  " + "\n  ".join(lines))


def format_problem(problem: ConfigProblem) -> str:
    if problem.value is None:
        joiner = " " if problem.message.startswith("is ") else ": "
        return f"{problem.path}{joiner}{problem.message}"
    return f"{problem.path} = {_show(problem.value)}: {problem.message}"


def _show(value: object) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _path(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _problems_from_pydantic(err: pydantic.ValidationError) -> list[ConfigProblem]:
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


def parse_stack_config(raw: Mapping[str, Any], source: str) -> StackConfig:
    """Validate raw config values (keys without the project prefix) into a StackConfig."""
    # Unknown keys, top-level ones included, are reported by the model (extra="forbid").
    try:
        config = StackConfig.model_validate(dict(raw))
    except pydantic.ValidationError as err:
        raise ConfigError(source, _problems_from_pydantic(err)) from None
    found = address_plan.problems(config) + claim_plan.problems(config)
    if found:
        raise ConfigError(source, found)
    return config


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


def load_stack_config() -> StackConfig:
    """Read `oke-gpu-rdma:*` from the running Pulumi program's config."""
    import pulumi
    import pulumi.runtime.config as runtime_config

    # Everything the CLI passed, so that misspelt top-level keys are reported too.
    present = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    return parse_stack_config(raw_config(present), stack_source(pulumi.get_stack()))
