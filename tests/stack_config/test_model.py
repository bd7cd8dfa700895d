"""The stack config model (stack_config/model.py): `protect`, a switch or one per kind of resource."""

from __future__ import annotations

import pytest

from stack_config.loading import parse_stack_config
from stack_config.model import ProtectConfig
from stack_config.problems import ConfigError
from tests.support import raw_config


def _protect(value: object) -> ProtectConfig:
    raw = raw_config("dev")
    raw["protect"] = value
    return parse_stack_config(raw, "stacks/Pulumi.dev.yaml", "us-ashburn-1").protect


def test_protect_defaults_to_every_kind() -> None:
    raw = raw_config("dev")
    raw.pop("protect", None)
    config = parse_stack_config(raw, "stacks/Pulumi.dev.yaml", "us-ashburn-1")
    assert config.protect == ProtectConfig(network=True, cluster=True, gpuPools=True, systemPool=True)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, (True, True, True, True)),
        (False, (False, False, False, False)),
        # As the Pulumi CLI passes a plain value: text.
        ("false", (False, False, False, False)),
        ({"gpuPools": False}, (True, True, False, True)),
        ({"network": False, "cluster": False}, (False, False, True, True)),
    ],
)
def test_protect_is_one_switch_or_one_per_kind(value: object, expected: tuple[bool, ...]) -> None:
    found = _protect(value)
    assert (found.network, found.cluster, found.gpu_pools, found.system_pool) == expected


@pytest.mark.parametrize(
    ("value", "line"),
    [
        (
            "maybe",
            "stacks/Pulumi.dev.yaml: protect = 'maybe': takes true, false, or a mapping of {network, cluster, "
            "gpuPools, systemPool} to true or false",
        ),
        (
            {"gpuPool": False},
            "stacks/Pulumi.dev.yaml: protect.gpuPool is not a known key; did you mean gpuPools?",
        ),
    ],
)
def test_a_bad_protect_is_one_line_naming_the_fix(value: object, line: str) -> None:
    with pytest.raises(ConfigError) as raised:
        _protect(value)
    assert str(raised.value).splitlines()[1:] == [f"  {line}"]
