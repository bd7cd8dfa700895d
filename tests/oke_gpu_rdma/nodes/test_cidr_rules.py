"""Address-plan rules (oke_gpu_rdma/network.py), with the numbers of seed 003 and the seed cluster."""

from __future__ import annotations

from ipaddress import IPv4Network

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oke_gpu_rdma.nodes import cidr_rules as cidr

SEED_PLAN = [
    cidr.NamedRange("VCN", IPv4Network("10.140.0.0/16")),
    cidr.NamedRange("worker subnet", IPv4Network("10.140.64.0/19")),
    cidr.NamedRange("pods CIDR", IPv4Network("10.240.0.0/12")),
    cidr.NamedRange("services CIDR", IPv4Network("10.96.0.0/16")),
    cidr.NamedRange("OCA RDMA network", cidr.DEFAULT_OCA_RDMA_NETWORK),
]
WORKERS = [cidr.NamedRange("worker subnet", IPv4Network("10.140.64.0/19"))]


def test_seed_cluster_plan_accepts_the_default_child_range() -> None:
    assert cidr.child_range_problems(cidr.DEFAULT_CHILD_RANGE, SEED_PLAN, WORKERS) == []


def test_parse_accepts_masked_prefixes_only() -> None:
    assert cidr.parse_ipv4_network("10.208.0.0/12") == IPv4Network("10.208.0.0/12")
    with pytest.raises(cidr.CidrError, match=r"did you mean 10\.208\.0\.0/12\?"):
        cidr.parse_ipv4_network("10.208.1.0/12")
    with pytest.raises(cidr.CidrError, match="no prefix length"):
        cidr.parse_ipv4_network("10.208.0.0")
    with pytest.raises(cidr.CidrError, match="IPv6"):
        cidr.parse_ipv4_network("fd00::/8")
    with pytest.raises(cidr.CidrError, match="expected an IPv4 CIDR string"):
        cidr.parse_ipv4_network(12)


@pytest.mark.parametrize(
    ("subnet", "needed"), [("10.0.0.0/16", 12), ("10.140.64.0/19", 15), ("10.1.2.0/24", 20)]
)
def test_sixteen_rails_need_four_more_bits_than_the_subnet(subnet: str, needed: int) -> None:
    # seed 003: /16 -> /12, /19 -> /15, /24 -> /20
    assert cidr.required_child_prefix(IPv4Network(subnet)) == needed


def test_too_small_child_range_names_the_needed_size() -> None:
    problems = cidr.child_range_problems(IPv4Network("10.192.0.0/16"), [], WORKERS)
    assert problems == [
        "child range 10.192.0.0/16 is too small for 16 rails on worker subnet 10.140.64.0/19: it needs /15 or "
        "larger (4 bits more than the subnet), e.g. 10.192.0.0/15"
    ]


@pytest.mark.parametrize(
    ("child", "label"),
    [
        ("0.0.0.0/8", "this-network"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("224.0.0.0/8", "multicast"),
        ("240.0.0.0/8", "reserved"),
    ],
)
def test_special_ranges_are_refused(child: str, label: str) -> None:
    (problem,) = cidr.child_range_problems(IPv4Network(child))
    assert label in problem


def test_overlap_names_both_ranges() -> None:
    problems = cidr.child_range_problems(IPv4Network("10.224.0.0/12"), SEED_PLAN, WORKERS)
    assert problems == [
        "child range 10.224.0.0/12 overlaps OCA RDMA network 10.224.0.0/12; every pod gets an on-link route "
        "for the whole child range, so traffic to 10.224.0.0/12 would go out of the rails"
    ]


def test_special_and_planned_overlaps_read_the_same_for_child_ranges_and_vf_pools() -> None:
    assert cidr.child_range_problems(IPv4Network("127.0.0.0/8")) == [
        "child range 127.0.0.0/8 overlaps loopback 127.0.0.0/8, which DRANET refuses"
    ]
    assert cidr.vf_pool_problems(IPv4Network("169.254.0.0/16"), SEED_PLAN) == [
        "VF pool 169.254.0.0/16 overlaps link-local 169.254.0.0/16, which no interface may use"
    ]
    assert cidr.vf_pool_problems(IPv4Network("10.224.0.0/12"), SEED_PLAN) == [
        "VF pool 10.224.0.0/12 overlaps OCA RDMA network 10.224.0.0/12: every VF gets an address in the pool "
        "and its pod an on-link route for the whole pool, so traffic to 10.224.0.0/12 would go out of the VFs"
    ]


def test_prefix_bounds() -> None:
    assert "accepts /8 to /30" in cidr.child_range_problems(IPv4Network("10.0.0.0/7"))[0]
    assert "accepts /8 to /30" in cidr.child_range_problems(IPv4Network("10.0.0.0/31"))[0]
    assert cidr.child_range_problems(IPv4Network("10.0.0.0/30")) == []


@given(st.integers(min_value=16, max_value=30), st.integers(min_value=1, max_value=16))
def test_required_prefix_holds_the_rails(subnet_prefix: int, rails: int) -> None:
    subnet = IPv4Network((0x0A000000, subnet_prefix))
    needed = cidr.required_child_prefix(subnet, rails)
    # A child range of that prefix holds `rails` blocks the size of the subnet, and one bit less does not.
    assert 2 ** (subnet_prefix - needed) >= rails
    assert rails == 1 or 2 ** (subnet_prefix - needed - 1) < rails
