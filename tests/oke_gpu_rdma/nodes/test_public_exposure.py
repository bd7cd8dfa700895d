from __future__ import annotations

from ipaddress import IPv4Network, ip_network

import pytest

from oke_gpu_rdma.nodes import public_exposure
from oke_gpu_rdma.nodes.public_exposure import exposures, too_open


def nets(*cidrs: str) -> list[public_exposure.IPNetwork]:
    return [ip_network(c) for c in cidrs]


def test_the_whole_internet_is_everything_but_the_special_purpose_space() -> None:
    special = sum(n.num_addresses for n in public_exposure.NOT_PUBLIC_V4)
    [whole] = exposures(nets("0.0.0.0/0"))
    assert whole.public == 2**32 - special == 3_702_258_432


@pytest.mark.parametrize(
    "split",
    [
        ("0.0.0.0/1", "128.0.0.0/1"),
        tuple(str(n) for n in IPv4Network("0.0.0.0/0").subnets(new_prefix=4)),
        # the halves, each with a reserved block beside it that counts nothing and changes nothing
        ("0.0.0.0/1", "128.0.0.0/1", "10.0.0.0/8", "240.0.0.0/4"),
    ],
    ids=["halves", "sixteenths", "with-reserved"],
)
def test_no_split_of_the_internet_passes(split: tuple[str, ...]) -> None:
    [found] = too_open(nets(*split))
    assert found.public == 3_702_258_432


def test_overlapping_and_repeated_ranges_count_once() -> None:
    [found] = exposures(nets("198.41.0.0/17", "198.41.0.0/16", "198.41.128.0/17", "198.41.0.0/16"))
    assert (found.public, found.too_open) == (65_536, False)


def test_private_and_shared_space_opens_nothing() -> None:
    [found] = exposures(nets("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"))
    assert found.public == 0


def test_a_range_holding_private_space_counts_only_its_public_part() -> None:
    # 8.0.0.0/5 = 8.0.0.0 - 15.255.255.255 holds 10.0.0.0/8.
    [found] = exposures(nets("8.0.0.0/5"))
    assert found.public == 2**27 - 2**24


@pytest.mark.parametrize(
    ("cidrs", "open_"),
    [
        (("::/0",), True),
        (("2000::/3",), True),
        (("2001:db8::/32",), False),  # documentation
        (("fd00::/8",), False),  # unique local
        (("2603:c020::/48",), False),  # one site: the bar
        (("2603:c020::/47",), True),
    ],
)
def test_ipv6_counts_global_unicast_against_a_site(cidrs: tuple[str, ...], open_: bool) -> None:
    assert bool(too_open(nets(*cidrs))) is open_


def test_the_message_says_how_much_and_the_bar() -> None:
    [found] = too_open(nets("0.0.0.0/1", "128.0.0.0/1"))
    assert found.describe() == (
        "together cover 3,702,258,432 public IPv4 addresses (about a /1's worth), more than the 65,536 of one /16"
    )
