"""How much of the public internet a set of source ranges lets in, counted as one union of addresses.

A rule that refuses only `0.0.0.0/0` is beaten by its halves (`0.0.0.0/1` and `128.0.0.0/1`) or by any other
split; so the stack (`network.create.apiAllowedCidrs`) and the pack (`public-ingress-exposure`, on NSG rules
and security lists) judge the union of every listed range, less the address space no internet host holds,
against one bar: at most as many public addresses as one /16 holds (65,536), unless configured otherwise.
Private and other special-purpose space is not counted (a `10.0.0.0/8` or `100.64.0.0/10` source opens
nothing to the internet), and counting the union means overlapping or repeated ranges count once.

Sources: the IANA IPv4 Special-Purpose Address Registry (RFC 6890 and the RFCs it lists) and the IPv4
Multicast Address Space Registry (RFC 5771); for IPv6, the IANA IPv6 Global Unicast Address Assignments
(global unicast is 2000::/3, RFC 4291 section 2.4) less the documentation prefix (RFC 3849).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from ipaddress import IPv4Network, IPv6Network, collapse_addresses, ip_network
from typing import Final

IPNetwork = IPv4Network | IPv6Network

# The default bar: no more public addresses than one /16 (IPv4) or one /48, a site (IPv6; RFC 6177).
DEFAULT_MAX_PUBLIC_PREFIX: Final = 16
DEFAULT_MAX_PUBLIC_PREFIX_V6: Final = 48

# IPv4 space that no internet host holds: each entry of the IANA IPv4 Special-Purpose Address Registry whose
# "Globally Reachable" column is False (the /32 exceptions inside 192.0.0.0/24 that are reachable are too
# small to matter and are counted as not public), plus multicast (224.0.0.0/4, RFC 5771).
NOT_PUBLIC_V4: Final = tuple(
    collapse_addresses(
        IPv4Network(c)
        for c in (
            "0.0.0.0/8",  # "this network", RFC 791
            "10.0.0.0/8",  # private, RFC 1918
            "100.64.0.0/10",  # shared address space (carrier-grade NAT), RFC 6598
            "127.0.0.0/8",  # loopback, RFC 1122
            "169.254.0.0/16",  # link local, RFC 3927
            "172.16.0.0/12",  # private, RFC 1918
            "192.0.0.0/24",  # IETF protocol assignments, RFC 6890
            "192.0.2.0/24",  # documentation (TEST-NET-1), RFC 5737
            "192.88.99.0/24",  # deprecated 6to4 relay anycast, RFC 7526
            "192.168.0.0/16",  # private, RFC 1918
            "198.18.0.0/15",  # benchmarking, RFC 2544
            "198.51.100.0/24",  # documentation (TEST-NET-2), RFC 5737
            "203.0.113.0/24",  # documentation (TEST-NET-3), RFC 5737
            "224.0.0.0/4",  # multicast, RFC 5771
            "240.0.0.0/4",  # reserved, RFC 1112 (includes the limited broadcast 255.255.255.255/32)
        )
    )
)
GLOBAL_UNICAST_V6: Final = IPv6Network("2000::/3")
NOT_PUBLIC_V6: Final = (IPv6Network("2001:db8::/32"),)  # documentation, RFC 3849


@dataclass(frozen=True)
class Exposure:
    """The public addresses a set of ranges covers, against the bar."""

    version: int
    public: int
    max_prefix: int

    @property
    def limit(self) -> int:
        bits: int = (32 if self.version == 4 else 128) - self.max_prefix
        return 1 << bits

    @property
    def too_open(self) -> bool:
        return self.public > self.limit

    def describe(self) -> str:
        """`together cover 3,702,258,432 public IPv4 addresses (about a /1's worth), more than the 65,536 of
        one /16`."""
        bits = 32 if self.version == 4 else 128
        widest = bits - (self.public.bit_length() - 1) if self.public else bits
        return (
            f"together cover {self.public:,} public IPv{self.version} addresses (about a /{widest}'s worth), "
            f"more than the {self.limit:,} of one /{self.max_prefix}"
        )


def _overlap(net: IPNetwork, block: IPNetwork) -> int:
    """Addresses ``net`` and ``block`` share (CIDR blocks either nest or are disjoint)."""
    if net.version != block.version:
        return 0
    if net.subnet_of(block):  # type: ignore[arg-type]
        return net.num_addresses
    if block.subnet_of(net):  # type: ignore[arg-type]
        return block.num_addresses
    return 0


def _public_v4(nets: Iterable[IPv4Network]) -> int:
    return sum(n.num_addresses - sum(_overlap(n, b) for b in NOT_PUBLIC_V4) for n in collapse_addresses(nets))


def _public_v6(nets: Iterable[IPv6Network]) -> int:
    total = 0
    for net in collapse_addresses(nets):
        in_global = _overlap(net, GLOBAL_UNICAST_V6)
        if not in_global:
            continue
        # net nests in 2000::/3 or holds it; either way count the shared part less the documentation prefix.
        part = net if net.subnet_of(GLOBAL_UNICAST_V6) else GLOBAL_UNICAST_V6
        total += in_global - sum(_overlap(part, b) for b in NOT_PUBLIC_V6)
    return total


def exposures(
    sources: Iterable[IPNetwork],
    max_prefix: int = DEFAULT_MAX_PUBLIC_PREFIX,
    max_prefix_v6: int = DEFAULT_MAX_PUBLIC_PREFIX_V6,
) -> list[Exposure]:
    """The union of ``sources`` per IP version, in public addresses, against each version's bar."""
    nets = list(sources)
    v4 = [n for n in nets if isinstance(n, IPv4Network)]
    v6 = [n for n in nets if isinstance(n, IPv6Network)]
    found = []
    if v4:
        found.append(Exposure(4, _public_v4(v4), max_prefix))
    if v6:
        found.append(Exposure(6, _public_v6(v6), max_prefix_v6))
    return found


def too_open(
    sources: Iterable[IPNetwork],
    max_prefix: int = DEFAULT_MAX_PUBLIC_PREFIX,
    max_prefix_v6: int = DEFAULT_MAX_PUBLIC_PREFIX_V6,
) -> list[Exposure]:
    """The versions whose union of ``sources`` lets in more of the internet than the bar allows."""
    return [e for e in exposures(sources, max_prefix, max_prefix_v6) if e.too_open]


def parse_source(text: str) -> IPNetwork:
    """A rule's source CIDR (`203.0.113.0/24`, `::/0`); ValueError when it is none."""
    return ip_network(text, strict=False)
