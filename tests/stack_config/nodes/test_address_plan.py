"""Every CIDR key of the plan holds unicast space a network can use (stack_config/nodes/address_plan.py)."""

from __future__ import annotations

from typing import Any

import pytest

from stack_config.loading import load_stack
from stack_config.problems import ConfigError
from tests.support import EXAMPLE_REGION, raw_config

SOURCE = "stacks/Pulumi.dev.yaml"
FIX = "which no network may use; pick a private range (RFC 1918: 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16)"


def lines(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_stack(raw, SOURCE, EXAMPLE_REGION)
    return [f"{SOURCE}: {p.render()}" for p in caught.value.problems]


@pytest.mark.parametrize(
    ("stack", "section", "key", "value", "special"),
    [
        ("dev", "cluster.existing", "podsCidr", "127.0.0.0/8", "loopback 127.0.0.0/8"),
        ("dev", "cluster.existing", "podsCidr", "169.254.0.0/17", "link-local 169.254.0.0/16"),
        ("full", "cluster.create", "podsCidr", "240.0.0.0/12", "reserved 240.0.0.0/4"),
        ("dev", "network", "rdmaCidr", "224.0.0.0/12", "multicast 224.0.0.0/4"),
        ("full", "cluster.create", "servicesCidr", "0.0.0.0/16", "this-network 0.0.0.0/8"),
    ],
)
def test_a_range_in_special_address_space_is_refused(
    stack: str, section: str, key: str, value: str, special: str
) -> None:
    raw = raw_config(stack)
    target = raw
    for part in section.split("."):
        target = target[part]
    target[key] = value
    assert f"{SOURCE}: {section}.{key} = {value!r}: overlaps {special}, {FIX}" in lines(raw)


def test_a_vcn_in_special_space_is_refused_once() -> None:
    raw = raw_config("full")
    raw["network"]["create"]["vcnCidr"] = "127.0.0.0/16"
    assert (
        lines(raw)[0]
        == f"{SOURCE}: network.create.vcnCidr = '127.0.0.0/16': overlaps loopback 127.0.0.0/8, {FIX}"
    )


def test_a_services_range_larger_than_kubernetes_takes_is_refused() -> None:
    raw = raw_config("full")
    raw["cluster"]["create"]["servicesCidr"] = "172.0.0.0/11"
    assert lines(raw) == [
        f"{SOURCE}: cluster.create.servicesCidr = '172.0.0.0/11': is larger than Kubernetes takes: the API server "
        "refuses a services range shorter than /12; use /12 to /24 (e.g. 10.96.0.0/16)"
    ]


def test_a_vcn_takes_five_blocks_none_overlapping() -> None:
    raw = raw_config("dev")
    raw["network"]["existing"]["vcnCidrs"] = ["10.140.0.0/16", "10.140.0.0/16"]
    assert lines(raw) == [
        f"{SOURCE}: network.existing.vcnCidrs[1] = '10.140.0.0/16': overlaps the VCN 10.140.0.0/16 "
        "(network.existing.vcnCidrs[0]); the CIDR blocks of a VCN must not overlap; list each once"
    ]
    raw["network"]["existing"]["vcnCidrs"] = ["10.140.0.0/16"] + [f"10.{i}.0.0/16" for i in range(1, 6)]
    (line,) = lines(raw)
    assert line.endswith("must hold at most 5 items")


def test_the_pods_cidr_holds_a_slash_25_for_every_node() -> None:
    raw = raw_config("full")  # 2 + 2 GPU nodes and 2 system nodes
    raw["cluster"]["create"]["podsCidr"] = "10.240.0.0/23"
    assert lines(raw) == [
        f"{SOURCE}: cluster.create.podsCidr = '10.240.0.0/23': holds the pod blocks of 4 nodes, fewer than the "
        "stack's 6: OKE gives every worker node a /25 of the pods CIDR; use /22 or larger"
    ]
    raw["cluster"]["create"]["podsCidr"] = "10.240.0.0/22"
    load_stack(raw, SOURCE, EXAMPLE_REGION)


def test_the_worker_subnet_holds_every_node() -> None:
    raw = raw_config("full")
    raw["network"]["create"]["workerSubnetCidr"] = "10.140.64.0/30"
    found = lines(raw)
    assert (
        f"{SOURCE}: network.create.workerSubnetCidr = '10.140.64.0/30': has addresses for 1 nodes, fewer than the "
        "stack's 6 (OCI reserves 3 addresses of every subnet); use a larger subnet"
    ) in found
