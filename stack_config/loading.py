"""Read the stack's Pulumi config into a :class:`StackConfig`, or fail with one message per problem.

This is the edge where raw config becomes typed objects: pydantic's errors and the address-plan
problems are turned into lines like
`stacks/Pulumi.dev.yaml: nodePools[0].count = 0: must be at least 1`, and no resource is declared
until the whole config is valid.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic

from stack_config import config_namespaces
from stack_config.claims.claim_plan import ClaimPlan, plan_claims
from stack_config.drivers import compute_domain_plan
from stack_config.health import health_plan, remediation_plan
from stack_config.monitoring import monitoring_plan
from stack_config.nodes import address_plan, capacity, region_checks, system_pool_checks
from stack_config.scheduling import placement_plan, scheduling_plan
from stack_config.scheduling.scheduling_plan import SchedulingPlan, plan_scheduling
from stack_config.sriov.sriov_plan import SriovPlan, plan_sriov

from .config_namespaces import closest
from .model import StackConfig, config_keys
from .problems import ConfigError, ConfigProblem
from .settings_types import PROJECT
from .type_messages import bound_message, field_at, model_in, wrong_type_message


@dataclass(frozen=True)
class Stack:
    """A valid stack: its config and the claim templates judged for it (emit these, judge nothing again)."""

    config: StackConfig
    claims: ClaimPlan
    sriov: SriovPlan | None = None
    """The SR-IOV objects of the stack's rdma: sriov pools (None without such pools)."""
    scheduling: SchedulingPlan | None = None
    """The Kueue release and objects (None unless workloads.scheduling.enabled)."""

    @property
    def workload_namespaces(self) -> tuple[str, ...]:
        """The workloads' namespace and every other namespace a claim template lives in."""
        return workload_namespaces(self.config, self.claims)


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
            guess = closest(str(loc[-1]), known_keys(loc[:-1]))
            fix = f"did you mean {guess}?" if guess else "check its spelling"
            problems.append(ConfigProblem(_path(loc), None, f"is not a known key; {fix}"))
            continue
        if item["type"] == "model_type":
            # A block of settings given a single value (`monitoring: true`): pydantic's text names its class.
            keys = known_keys(loc)
            problems.append(
                ConfigProblem(
                    _path(loc),
                    item.get("input"),
                    f"is a block of settings, not a single value; write it as {loc[-1]}: {{{keys[0]}: ...}} "
                    f"(its keys: {', '.join(keys)})"
                    if keys
                    else "is a block of settings, not a single value",
                )
            )
            continue
        # A model-level check (no single field) is reported on the object it belongs to, without
        # echoing the whole object back.
        value = item.get("input")
        shown = None if isinstance(value, dict) or not loc else value
        wrong_type = wrong_type_message(item["type"], loc, value)
        if wrong_type is not None:
            problems.append(ConfigProblem(_path(loc), shown, wrong_type))
            continue
        bound = bound_message(item["type"], item.get("ctx"))
        if bound is not None:
            problems.append(ConfigProblem(_path(loc), shown, bound))
            continue
        if item["type"] in ("literal_error", "enum"):
            # One of a fixed set: named as the file writes them (pydantic quotes them as Python does).
            expected = str(item.get("ctx", {}).get("expected", ""))
            allowed = [
                v.strip().strip("'\"") for v in expected.replace(" or ", ", ").split(", ") if v.strip()
            ]
            guess = closest(str(item.get("input")), allowed)
            hint = f"; did you mean {guess}?" if guess else ""
            problems.append(
                ConfigProblem(_path(loc), item.get("input"), f"takes one of: {', '.join(allowed)}{hint}")
            )
            continue
        problems.append(ConfigProblem(_path(loc) or "(stack)", shown, message))
    return problems


def known_keys(loc: Sequence[int | str]) -> list[str]:
    """The keys the model takes at ``loc`` (a pydantic location: keys and list indexes), [] if unknown."""
    if not any(isinstance(part, str) for part in loc):
        return [f.alias or name for name, f in StackConfig.model_fields.items()]
    field = field_at(loc)
    model = model_in(field.annotation) if field is not None else None
    return [f.alias or name for name, f in model.model_fields.items()] if model is not None else []


def _not_twice(problems: Sequence[ConfigProblem]) -> list[ConfigProblem]:
    """Without the "is missing" of a key another problem already points to (`oci:regoin`: did you mean
    oci:region?): one mistake, one line."""
    meant = {p.suggests for p in problems if p.suggests}
    meant |= {m.removeprefix(f"{PROJECT}:") for m in meant}
    return [p for p in problems if not (p.path in meant and p.message.startswith("is missing"))]


def load_stack(
    raw: Mapping[str, Any], source: str, region: str | None, found_before: Sequence[ConfigProblem] = ()
) -> Stack:
    """Validate raw config values (keys without the project prefix) for a stack in ``region`` (`oci:region`).

    ConfigError lists every problem, ``found_before`` (keys of other namespaces, values that could not be
    decoded) first.
    """
    # Unknown keys, top-level ones included, are reported by the model (extra="forbid").
    try:
        config = StackConfig.model_validate(dict(raw))
    except pydantic.ValidationError as err:
        # A value left out as undecodable is not missing as well.
        said = {p.path for p in found_before}
        from_model = [p for p in problems_from_pydantic(err) if p.path not in said]
        raise ConfigError(
            source,
            _not_twice([*found_before, *region_checks.region_name_problems(region), *from_model]),
        ) from None
    if found_before:
        raise ConfigError(source, _not_twice([*found_before, *region_checks.region_name_problems(region)]))
    claims = plan_claims(config)
    sriov, sriov_problems = plan_sriov(config)
    found = (
        address_plan.problems(config)
        + region_checks.problems(config, region)
        + system_pool_checks.problems(config)
        + capacity.problems(config)
        + monitoring_plan.problems(config)
        + placement_plan.problems(config)
        + health_plan.problems(config)
        + remediation_plan.problems(config)
        + compute_domain_plan.problems(config)
        + list(claims.problems)
        + sriov_problems
        + scheduling_plan.problems(config)
    )
    if found:
        raise ConfigError(source, found)
    return Stack(config, claims, sriov, plan_scheduling(config, workload_namespaces(config, claims)))


def workload_namespaces(config: StackConfig, claims: ClaimPlan) -> tuple[str, ...]:
    """The namespaces the program creates for workloads (__main__.py): workloads.namespace, then the templates'."""
    return tuple(dict.fromkeys([config.workloads.namespace, *claims.namespaces]))


def parse_stack_config(raw: Mapping[str, Any], source: str, region: str | None) -> StackConfig:
    """The validated StackConfig alone (see :func:`load_stack`)."""
    return load_stack(raw, source, region).config


class UndecodableValue(ValueError):
    """A structured config value whose JSON text the program cannot read (the message says why)."""


# Python refuses to convert integers of more digits than this to and from text (CPython's
# int_max_str_digits, 4300 by default): no setting takes such a number, so the value is refused whole.
_MAX_INT_DIGITS = sys.get_int_max_str_digits() or 4300


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        raise UndecodableValue(
            f"is JSON with an integer of {len(text.lstrip('-'))} digits; no setting takes a number that large"
        )
    return int(text)


def decode_config_value(value: str, structured: bool) -> Any:
    """Pulumi hands structured config values to programs as JSON text.

    Text that is no JSON is kept as it is, so the model says what the key takes; UndecodableValue for
    JSON the program cannot hold (a huge integer, nesting deeper than Python recurses).
    """
    if not structured:
        return value
    try:
        return json.loads(value, parse_int=_bounded_int)
    except json.JSONDecodeError:
        return value
    except RecursionError:
        raise UndecodableValue(
            "is JSON nested deeper than Python reads; no setting nests that deep"
        ) from None


def decoded_config(config_map: Mapping[str, object]) -> tuple[dict[str, Any], list[ConfigProblem]]:
    """`oke-gpu-rdma:*` entries of a Pulumi config map (`project:key` -> text), decoded, without the prefix;
    and a problem for each value that could not be decoded (left out of the dict)."""
    keys = config_keys()
    raw: dict[str, Any] = {}
    found: list[ConfigProblem] = []
    for full_key, value in config_map.items():
        prefix, _, key = full_key.partition(":")
        if prefix != PROJECT:
            continue
        try:
            # Unknown keys are kept as they are, so parse_stack_config reports them.
            raw[key] = decode_config_value(value, keys.get(key, False)) if isinstance(value, str) else value
        except UndecodableValue as err:
            found.append(ConfigProblem(key, None, str(err)))
    return raw, found


def raw_config(config_map: Mapping[str, str]) -> dict[str, Any]:
    """`oke-gpu-rdma:*` entries of a Pulumi config map (`project:key` -> text), decoded, without the prefix.

    Values that cannot be decoded are left out (:func:`decoded_config` says which).
    """
    return decoded_config(config_map)[0]


def stack_source(stack: str) -> str:
    """How messages name the stack's config file."""
    return f"stacks/Pulumi.{stack}.yaml"


def load_program_stack(config_env: Mapping[str, Any], stack: str) -> Stack:
    """The stack of a running Pulumi program, from the config the CLI passes it (`project:key` -> text).

    Everything the CLI passed is read, so misspelt top-level keys are reported too, and keys of namespaces
    nothing reads (stack_config/config_namespaces.py).
    """
    region = config_env.get(region_checks.REGION_KEY)
    raw, undecodable = decoded_config(config_env)
    foreign = config_namespaces.problems(config_env, config_keys())
    return load_stack(
        raw, stack_source(stack), region if isinstance(region, str) else None, [*foreign, *undecodable]
    )
