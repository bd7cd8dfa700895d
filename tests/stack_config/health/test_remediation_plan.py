"""The remediation settings against the rest of the stack (stack_config/health/remediation_plan.py): one problem per
thing that would keep the loop from closing, each naming the key, the value and the fix."""

from __future__ import annotations

from typing import Any

import pytest

from stack_config.loading import load_stack
from stack_config.problems import ConfigError
from tests.support import EXAMPLE_REGION, raw_config

SOURCE = "examples/Pulumi.full.yaml"
KEY = "health"


def problems_of(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_stack(raw, SOURCE, EXAMPLE_REGION)
    return [line.strip().removeprefix(f"{SOURCE}: ") for line in str(caught.value).splitlines()[1:]]


def with_remediation(**remediation: Any) -> dict[str, Any]:
    raw = raw_config("full")
    raw[KEY] = {**raw[KEY], "remediation": remediation}
    return raw


def test_the_full_example_remediates_its_first_pool() -> None:
    config = load_stack(raw_config("full"), SOURCE, EXAMPLE_REGION).config
    assert config.health.remediation.pools == ["gpu-b4-a"] and config.health.remediation.enabled


def test_a_pool_oke_cycles_is_refused_with_the_fix() -> None:
    assert problems_of(with_remediation(pools=["gpu-b4-b"])) == [
        "nodePools[1].cycling.enabled = true: OKE would cycle pool gpu-b4-b's nodes on a spec change while the "
        "remediation controller rolls them one local block at a time (health.remediation); set cycling.enabled: "
        "false, or leave the pool out of health.remediation.pools"
    ]


def test_a_pool_the_fabric_check_does_not_run_on_is_refused_with_the_fix() -> None:
    raw = with_remediation(pools=["gpu-b4-b"])
    raw["nodePools"][1]["cycling"] = {"enabled": False}
    assert problems_of(raw) == [
        "health.remediation.pools[0] = 'gpu-b4-b': a replaced node must pass the fabric check before it serves, "
        "and the check runs on pool gpu-b4-a; set workloads.acceptanceJobs.schedule and nodePool: gpu-b4-b, or "
        "leave the pool out"
    ]


def test_an_unknown_pool_is_refused_with_the_stacks_pools() -> None:
    [problem] = problems_of(with_remediation(pools=["gpu-b4-z"]))
    assert (
        problem
        == "health.remediation.pools[0] = 'gpu-b4-z': is no node pool; the stack's pools: gpu-b4-a, gpu-b4-b"
    )


def test_settings_without_a_pool_would_do_nothing_and_are_refused() -> None:
    [problem] = problems_of(with_remediation(graceMinutes=5))
    assert "lists no pool, so grace_minutes would do nothing" in problem


def test_remediation_without_any_mark_is_refused() -> None:
    raw = with_remediation(pools=["gpu-b4-a"])
    raw[KEY] = {**raw[KEY], "gpu": False, "rails": {"enabled": False}}
    assert any("the stack writes none" in p for p in problems_of(raw))


def test_a_scalar_of_the_wrong_type_is_one_clear_line() -> None:
    [problem] = problems_of(with_remediation(pools=["gpu-b4-a"], afterMinutes="soon"))
    assert "afterMinutes" in problem
