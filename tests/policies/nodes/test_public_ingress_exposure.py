"""public-ingress-exposure: each NSG's and security list's CIDR ingress, as one union of public space."""

from __future__ import annotations

from typing import Any

import pytest

from oke_gpu_rdma.common import resource_types
from preview.policy_check import PackConfigError
from tests.policies.policy_helpers import UNKNOWN, analyze, notes, resource, urn, violations

POLICY = "public-ingress-exposure"
NSG_URN = urn(resource_types.NSG, "api-nsg")


def nsg() -> Any:
    return resource(resource_types.NSG, "api-nsg", {"compartmentId": "ocid1.compartment.oc1..x"})


def nsg_rule(name: str, source: Any, **props: Any) -> Any:
    body = {
        "direction": "INGRESS",
        "protocol": "6",
        "source": source,
        "sourceType": "CIDR_BLOCK",
        "networkSecurityGroupId": "ocid1.networksecuritygroup.oc1.iad.api",
        **props,
    }
    return resource(resource_types.NSG_RULE, name, body, dependencies=[NSG_URN])


def security_list(*rules: dict[str, Any]) -> Any:
    return resource(resource_types.SECURITY_LIST, "baseline", {"ingressSecurityRules": list(rules)})


def test_the_internet_in_two_halves_is_refused_on_one_nsg() -> None:
    found = violations(analyze([nsg(), nsg_rule("a", "0.0.0.0/1"), nsg_rule("b", "128.0.0.0/1")]), POLICY)
    assert [v.message for v in found] == [
        "NetworkSecurityGroup api-nsg: its ingress sources [0.0.0.0/1 (a), 128.0.0.0/1 (b)] together cover "
        "3,702,258,432 public IPv4 addresses (about a /1's worth), more than the 65,536 of one /16 (pack config "
        "maxPublicPrefix). Split or not, these ranges open it to most of the internet: list only the networks "
        "that need it (office or VPN egress CIDRs, a /32 per admin host), or keep the endpoint private and "
        "reach it from inside the VCN"
    ]


def test_rules_of_different_nsgs_are_judged_apart() -> None:
    other = urn(resource_types.NSG, "lb-nsg")
    rules = [
        nsg(),
        resource(resource_types.NSG, "lb-nsg", {}),
        nsg_rule("a", "198.40.0.0/16"),
        resource(
            resource_types.NSG_RULE,
            "b",
            {"direction": "INGRESS", "source": "198.41.0.0/16", "sourceType": "CIDR_BLOCK"},
            dependencies=[other],
        ),
    ]
    assert violations(analyze(rules), POLICY) == []
    assert violations(analyze([*rules, nsg_rule("c", "198.41.0.0/16")]), POLICY)


@pytest.mark.parametrize(
    "rule",
    [
        {"sourceType": "SERVICE_CIDR_BLOCK", "source": "all-iad-services-in-oracle-services-network"},
        {"sourceType": "NETWORK_SECURITY_GROUP", "source": "ocid1.networksecuritygroup.oc1.iad.x"},
        {"direction": "EGRESS", "source": None, "destination": "0.0.0.0/0"},
        {"source": "10.0.0.0/8"},
    ],
    ids=["services", "nsg", "egress", "private"],
)
def test_what_names_no_internet_range_passes(rule: dict[str, Any]) -> None:
    assert violations(analyze([nsg(), nsg_rule("a", **{"source": "203.0.113.0/24", **rule})]), POLICY) == []


def test_a_security_list_is_judged_as_a_whole_and_its_absent_type_is_a_cidr() -> None:
    wide = security_list({"protocol": "6", "source": "0.0.0.0/1"}, {"protocol": "6", "source": "128.0.0.0/1"})
    [v] = violations(analyze([wide]), POLICY)
    assert v.message.startswith(
        "SecurityList baseline: its ingress sources [0.0.0.0/1, 128.0.0.0/1] together"
    )
    narrow = security_list({"protocol": "1", "source": "10.140.0.0/16"})
    assert violations(analyze([narrow]), POLICY) == []


def test_ipv6_everywhere_is_refused() -> None:
    [v] = violations(analyze([nsg(), nsg_rule("a", "::/0")]), POLICY)
    assert "public IPv6 addresses" in v.message and "(pack config maxPublicPrefixV6)" in v.message


def test_the_bar_is_the_pack_configs() -> None:
    rules = [nsg(), nsg_rule("a", "11.0.0.0/8")]
    assert violations(analyze(rules), POLICY)
    assert violations(analyze(rules, {POLICY: {"maxPublicPrefix": 8}}), POLICY) == []
    # A bad bar is refused before any policy runs, as the CLI refuses a file its schema rejects.
    with pytest.raises(PackConfigError, match=f"{POLICY}.maxPublicPrefix: "):
        analyze(rules, {POLICY: {"maxPublicPrefix": 40}})


def test_a_source_known_only_at_apply_is_said() -> None:
    found = analyze([nsg(), nsg_rule("a", UNKNOWN)])
    assert violations(found, POLICY) == []
    assert any("known only at apply" in n.message for n in notes(found, POLICY))


def test_not_a_cidr_is_a_violation() -> None:
    [v] = violations(analyze([nsg(), nsg_rule("a", "203.0.113.0/33")]), POLICY)
    assert "ingress source '203.0.113.0/33' is not a CIDR block" in v.message
