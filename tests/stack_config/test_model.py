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


def _problems(raw: dict) -> list[str]:
    with pytest.raises(ConfigError) as err:
        parse_stack_config(raw, "stacks/Pulumi.full.yaml", "us-ashburn-1")
    return [p.render() for p in err.value.problems]


def test_api_allowed_cidrs_refuse_the_whole_internet() -> None:
    raw = raw_config("full")
    raw["network"]["create"]["apiAllowedCidrs"] = ["203.0.113.0/24", "0.0.0.0/0"]
    assert _problems(raw) == [
        "network.create.apiAllowedCidrs[1] = '0.0.0.0/0': opens the Kubernetes API to every address on the "
        "internet; list the networks that need it (your office or VPN egress CIDR, a /32 per admin host), or "
        "keep the endpoint private (apiEndpointPublic: false) and reach it from inside the VCN"
    ]


def test_api_allowed_cidrs_refuse_the_internet_split_into_halves() -> None:
    raw = raw_config("full")
    raw["network"]["create"]["apiEndpointPublic"] = True
    raw["network"]["create"]["apiAllowedCidrs"] = ["0.0.0.0/1", "128.0.0.0/1"]
    [problem] = _problems(raw)
    assert problem.startswith(
        'network.create.apiAllowedCidrs = ["0.0.0.0/1", "128.0.0.0/1"]: together cover '
        "3,702,258,432 public IPv4 addresses (about a /1's worth), more than the 65,536 of one /16 "
        "(apiMaxPublicPrefix: 16); list only the networks that need the API"
    ), problem


@pytest.mark.parametrize(
    ("cidrs", "prefix", "refused"),
    [
        (["198.41.0.0/16"], None, False),  # one /16 of public space: the bar itself
        (["198.40.0.0/16", "198.41.0.0/16"], None, True),  # two /16s: twice the bar
        (["203.0.113.0/24", "203.0.113.0/24", "203.0.113.128/25"], None, False),  # the union counts once
        (["10.0.0.0/8", "100.64.0.0/10", "192.168.0.0/16"], None, False),  # nothing public
        (["11.0.0.0/8"], None, True),
        (["11.0.0.0/8"], 8, False),  # a configured wider bar
        (["198.41.0.0/16"], 24, True),  # a configured narrower one
    ],
)
def test_api_allowed_cidrs_are_judged_as_one_union_of_public_space(
    cidrs: list[str], prefix: int | None, refused: bool
) -> None:
    raw = raw_config("full")
    raw["network"]["create"]["apiEndpointPublic"] = True
    raw["network"]["create"]["apiAllowedCidrs"] = cidrs
    if prefix is not None:
        raw["network"]["create"]["apiMaxPublicPrefix"] = prefix
    if refused:
        [problem] = _problems(raw)
        assert problem.startswith("network.create.apiAllowedCidrs = "), problem
    else:
        parse_stack_config(raw, "stacks/Pulumi.full.yaml", "us-ashburn-1")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "ocid1.vault.oc1.iad.bbpvrcsjaaaae.abuwcljrexample",
            "is a vault OCID; this key takes a key OCID (ocid1.key.oc1.<region>.<unique id>)",
        ),
        ("not-an-ocid", "is not an OCI OCID (expected ocid1.key.oc1.<region>.<unique id>)"),
    ],
)
def test_the_boot_volume_key_must_be_a_vault_key(value: str, message: str) -> None:
    raw = raw_config("full")
    raw["encryption"] = {"kmsKeyId": value}
    assert _problems(raw) == [f"encryption.kmsKeyId = {value!r}: {message}"]


def test_the_boot_volume_key_must_be_in_the_stacks_region() -> None:
    from stack_config.loading import load_stack

    raw = raw_config("full")
    key = "ocid1.key.oc1.phx.bbpvrcsjaaaae.abuwcljrexample"
    raw["encryption"] = {"kmsKeyId": key}
    with pytest.raises(ConfigError) as err:
        load_stack(raw, "stacks/Pulumi.full.yaml", "us-ashburn-1")
    assert any(
        p.render().startswith(f"encryption.kmsKeyId = {key!r}: belongs to another region than oci:region")
        for p in err.value.problems
    )


def test_in_transit_encryption_is_refused_on_a_bare_metal_gpu_shape() -> None:
    raw = raw_config("full")
    raw["nodePools"][0]["inTransitEncryption"] = True
    assert _problems(raw) == [
        "nodePools[0]: inTransitEncryption is true, but BM.GPU.B4.8 is a bare metal shape and OCI encrypts boot "
        "volume traffic in transit only on VM shapes and BM.DenseIO.E4.128, BM.Standard.E3.128, "
        "BM.Standard.E4.128 (Oracle, Block Volume Encryption); remove it for this pool (the boot volume stays "
        "encrypted at rest, with encryption.kmsKeyId if set)"
    ]


def test_in_transit_encryption_is_taken_on_a_vm_system_pool() -> None:
    raw = raw_config("full")
    raw["systemPool"]["inTransitEncryption"] = True
    config = parse_stack_config(raw, "stacks/Pulumi.full.yaml", "us-ashburn-1")
    assert config.system_pool.in_transit_encryption and not config.node_pools[0].in_transit_encryption


def test_a_block_given_a_single_value_names_its_keys_not_a_class() -> None:
    """`monitoring: true` is a block of settings written as a switch: say how to write it (pydantic's own text
    names the model class)."""
    raw = raw_config("full")
    raw["gpuDriver"] = {"computeDomains": True}
    assert _problems(raw) == [
        "gpuDriver.computeDomains = true: is a block of settings, not a single value; write it as "
        "computeDomains: {enabled: ...} (its keys: enabled)"
    ]


def test_a_switch_given_a_number_takes_true_or_false() -> None:
    raw = raw_config("full")
    raw["gpuDriver"] = {"computeDomains": {"enabled": 3}}
    assert _problems(raw) == ["gpuDriver.computeDomains.enabled = 3: takes true or false, not the number 3"]
