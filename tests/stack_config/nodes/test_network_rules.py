"""The NSGs of a created VCN and their rules (stack_config/nodes/network_rules.py)."""

from __future__ import annotations

from ipaddress import IPv4Network

import pytest

from stack_config.nodes.network_rules import (
    ANYWHERE,
    HTTPS_PORT,
    ORACLE_SERVICES,
    TCP,
    NsgRole,
    NsgRule,
    nsg_rules,
)
from stack_config.nodes.network_settings import NewNetwork

WORKERS = "10.140.64.0/19"


def network(**changes: object) -> NewNetwork:
    return NewNetwork.model_validate({"apiAllowedCidrs": ["203.0.113.0/24", "198.51.100.7/32"], **changes})


def every_rule(native: bool) -> list[tuple[NsgRole, NsgRule]]:
    return [(role, rule) for role, rules in nsg_rules(network(), native).items() for rule in rules]


@pytest.mark.parametrize("native", [False, True])
def test_nothing_comes_in_from_anywhere(native: bool) -> None:
    assert [r.key for _, r in every_rule(native) if r.direction == "INGRESS" and r.peer == ANYWHERE] == []
    # And every ingress peer is inside the VCN or one of the allowed CIDRs.
    vcn = IPv4Network("10.140.0.0/16")
    allowed = {"203.0.113.0/24", "198.51.100.7/32"}
    for _, rule in every_rule(native):
        if rule.direction == "INGRESS":
            assert IPv4Network(rule.peer).subnet_of(vcn) or rule.peer in allowed, rule


@pytest.mark.parametrize("native", [False, True])
def test_the_bootstrap_port_is_open_to_the_worker_subnet_only(native: bool) -> None:
    endpoint = nsg_rules(network(), native)[NsgRole.API_ENDPOINT]
    opening = [r for r in endpoint if r.direction == "INGRESS" and r.opens(12250)]
    assert [(r.peer, r.ports) for r in opening] == [(WORKERS, (12250, 12250))]


def test_allowed_cidrs_open_the_api_server_port_only() -> None:
    endpoint = nsg_rules(network(), False)[NsgRole.API_ENDPOINT]
    from_allowed = [r for r in endpoint if r.peer in {"203.0.113.0/24", "198.51.100.7/32"}]
    assert [(r.peer, r.direction, r.protocol, r.ports) for r in from_allowed] == [
        ("203.0.113.0/24", "INGRESS", TCP, (6443, 6443)),
        ("198.51.100.7/32", "INGRESS", TCP, (6443, 6443)),
    ]


def test_an_allowed_cidr_inside_the_vcn_adds_no_rule() -> None:
    # The VCN already reaches 6443; a duplicate rule would only be noise in the plan.
    endpoint = nsg_rules(network(apiAllowedCidrs=["10.140.5.0/24"]), False)[NsgRole.API_ENDPOINT]
    assert not any(r.peer == "10.140.5.0/24" for r in endpoint)


@pytest.mark.parametrize("native", [False, True])
def test_the_internet_is_reached_on_https_only(native: bool) -> None:
    out = [(role, r.protocol, r.ports) for role, r in every_rule(native) if r.peer == ANYWHERE]
    assert out and all(protocol == TCP and ports == (HTTPS_PORT, HTTPS_PORT) for _, protocol, ports in out)
    assert {role for role, *_ in out} == ({NsgRole.WORKERS, NsgRole.PODS} if native else {NsgRole.WORKERS})


def test_nodes_reach_oci_services_through_the_service_gateway() -> None:
    workers = nsg_rules(network(), False)[NsgRole.WORKERS]
    (services,) = [r for r in workers if r.peer == ORACLE_SERVICES]
    assert services.direction == "EGRESS" and services.protocol == TCP and services.ports is None


def test_a_pod_nsg_exists_only_with_vcn_native_pods() -> None:
    assert set(nsg_rules(network(), False)) == {NsgRole.API_ENDPOINT, NsgRole.WORKERS, NsgRole.LOAD_BALANCERS}
    native = nsg_rules(network(), True)
    assert NsgRole.PODS in native
    pods = "10.140.128.0/18"
    assert any(r.peer == pods and r.direction == "INGRESS" for r in native[NsgRole.WORKERS])
    # Pods reach the API server through the VCN rule, not the bootstrap port.
    endpoint_in = [r for r in native[NsgRole.API_ENDPOINT] if r.direction == "INGRESS"]
    assert any(IPv4Network(pods).subnet_of(IPv4Network(r.peer)) and r.opens(6443) for r in endpoint_in)


def test_load_balancers_reach_node_ports_and_the_health_check() -> None:
    balancers = nsg_rules(network(), False)[NsgRole.LOAD_BALANCERS]
    assert {(r.protocol, r.ports) for r in balancers if r.peer == WORKERS and r.ports} == {
        ("6", (30000, 32767)),
        ("17", (30000, 32767)),
        ("6", (10256, 10256)),
    }


@pytest.mark.parametrize("native", [False, True])
def test_rule_keys_are_unique_per_nsg(native: bool) -> None:
    # Each key ends a logical name: a repeat would be a duplicate URN.
    for rules in nsg_rules(network(), native).values():
        keys = [r.key for r in rules]
        assert len(keys) == len(set(keys))


def test_no_rule_admits_the_bootstrap_port_from_outside_the_worker_subnet_with_flannel() -> None:
    # On any NSG: the control plane reaches the nodes on every TCP port but 12250.
    opening = [
        (role, r.key, r.peer)
        for role, r in every_rule(False)
        if r.direction == "INGRESS" and r.opens(12250) and r.peer != WORKERS
    ]
    assert opening == []
    workers = nsg_rules(network(), False)[NsgRole.WORKERS]
    from_endpoint = [r.ports for r in workers if r.peer == "10.140.0.0/28" and r.direction == "INGRESS"]
    assert from_endpoint == [(1, 12249), (12251, 65535)]
