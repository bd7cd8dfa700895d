"""Address-plan rules for RDMA GPU clusters on OKE, on top of :mod:`ipaddress`.

The facts come from the DRANET OKE provider page (seed 003) and the seed cluster's plan
(seed 000; oracle-quickstart/oci-hpc-oke's plan; OKE's documented default CIDRs). Both the stack config and the policy pack check the DRANET child
range with :func:`child_range_problems`, so a plan is judged the same way before and after it
becomes Pulumi resources.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterable
from dataclasses import dataclass
from ipaddress import IPv4Network

# DRANET's OKE provider: default child range, and the RDMA network Oracle Cloud Agent configures
# on the rails when its own config file is not mounted (seed 003).
DEFAULT_CHILD_RANGE = IPv4Network("10.208.0.0/12")
DEFAULT_OCA_RDMA_NETWORK = IPv4Network("10.224.0.0/12")
# The seed cluster's pods CIDR (oci-hpc-oke's choice), this project's default.
SEED_PODS_CIDR = IPv4Network("10.240.0.0/12")
# The SR-IOV VF address pool of seed 001 (NVIDIA IPAM IPPool `sriov-pool`, gateway 192.168.0.1).
DEFAULT_VF_POOL = IPv4Network("192.168.0.0/16")
# OKE's defaults when a cluster is created without explicit CIDRs.
OKE_DEFAULT_PODS_CIDR = IPv4Network("10.244.0.0/16")
OKE_DEFAULT_SERVICES_CIDR = IPv4Network("10.96.0.0/16")

# DRANET refuses a rail index above 15, so a child range never needs to hold more than 16 rails.
MAX_RAILS = 16
CHILD_PREFIX_MIN = 8
CHILD_PREFIX_MAX = 30
# OCI accepts VCN and subnet blocks from /16 to /30.
OCI_PREFIX_MIN = 16
OCI_PREFIX_MAX = 30

# The IPv4 ranges the OKE provider refuses to overlap (seed 003: "this-network, loopback,
# link-local, multicast, or reserved").
SPECIAL_RANGES: tuple[tuple[str, IPv4Network], ...] = (
    ("this-network 0.0.0.0/8", IPv4Network("0.0.0.0/8")),
    ("loopback 127.0.0.0/8", IPv4Network("127.0.0.0/8")),
    ("link-local 169.254.0.0/16", IPv4Network("169.254.0.0/16")),
    ("multicast 224.0.0.0/4", IPv4Network("224.0.0.0/4")),
    ("reserved 240.0.0.0/4", IPv4Network("240.0.0.0/4")),
)


class CidrError(ValueError):
    """A CIDR string that is not a masked IPv4 prefix; the message says how to fix it."""


def parse_ipv4_network(value: object) -> IPv4Network:
    """Parse `a.b.c.d/n` strictly: IPv4 only, prefix length present, no host bits set."""
    if isinstance(value, IPv4Network):
        return value
    if not isinstance(value, str):
        raise CidrError(f"expected an IPv4 CIDR string like 10.208.0.0/12, got {type(value).__name__}")
    text = value.strip()
    if "/" not in text:
        raise CidrError(f"{value!r} has no prefix length; write it as a CIDR like {text}/16")
    try:
        network = ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise CidrError(f"{value!r} is not an IPv4 CIDR (expected a.b.c.d/n, n from 0 to 32)") from None
    if not isinstance(network, IPv4Network):
        raise CidrError(f"{value!r} is IPv6; this plan needs an IPv4 CIDR")
    if str(network) != text:
        raise CidrError(f"{value!r} is not a network address (host bits set); did you mean {network}?")
    return network


@dataclass(frozen=True)
class NamedRange:
    """A CIDR in the address plan and where it comes from, for messages."""

    label: str
    network: IPv4Network


def rail_bits(rails: int = MAX_RAILS) -> int:
    """How many more prefix bits a child range needs than the worker subnet to hold `rails` rails."""
    return math.ceil(math.log2(rails)) if rails > 1 else 0


def required_child_prefix(worker_subnet: IPv4Network, rails: int = MAX_RAILS) -> int:
    """The longest child-range prefix that still holds `rails` rails for nodes in `worker_subnet`."""
    return worker_subnet.prefixlen - rail_bits(rails)


def overlapping(network: IPv4Network, ranges: Iterable[NamedRange]) -> list[NamedRange]:
    """The ranges of `ranges` that share at least one address with `network`."""
    return [r for r in ranges if r.network.overlaps(network)]


def overlap_problems(
    what: str, network: IPv4Network, plan: Iterable[NamedRange], refused: str, consequence: str
) -> list[str]:
    """Why `network` (a `what`) may not overlap the SPECIAL_RANGES (`refused`) or a range of `plan`.

    `consequence` says what an overlap with a planned range does, `{hit}` standing for that range.
    """
    subject = f"{what} {network} overlaps"
    return [
        f"{subject} {label}, {refused}" for label, special in SPECIAL_RANGES if special.overlaps(network)
    ] + [
        f"{subject} {hit.label} {hit.network}{consequence.format(hit=hit.network)}"
        for hit in overlapping(network, plan)
    ]


def child_range_problems(
    child: IPv4Network,
    plan: Iterable[NamedRange] = (),
    worker_subnets: Iterable[NamedRange] = (),
    rails: int = MAX_RAILS,
) -> list[str]:
    """Every reason the DRANET child range `child` is unusable in this address plan.

    `plan` holds every range the child range must not touch (VCNs, subnets, pod and service CIDRs,
    the OCA RDMA network); `worker_subnets` the primary VNIC subnets of the RDMA nodes, whose size
    decides how large the child range must be. An empty list means the range is fine.
    """
    problems: list[str] = []
    if not CHILD_PREFIX_MIN <= child.prefixlen <= CHILD_PREFIX_MAX:
        problems.append(
            f"child range {child} has prefix /{child.prefixlen}; DRANET accepts /{CHILD_PREFIX_MIN} "
            f"to /{CHILD_PREFIX_MAX}"
        )
    problems += overlap_problems(
        "child range",
        child,
        plan,
        "which DRANET refuses",
        "; every pod gets an on-link route for the whole child range, so traffic to {hit} would go out "
        "of the rails",
    )
    for subnet in worker_subnets:
        needed = required_child_prefix(subnet.network, rails)
        if needed < 0:
            problems.append(
                f"no IPv4 range holds {rails} rails for {subnet.label} {subnet.network}: a child range "
                f"needs {rail_bits(rails)} bits more than the subnet, and /{subnet.network.prefixlen} leaves "
                f"none; OCI subnets are /{OCI_PREFIX_MIN} to /{OCI_PREFIX_MAX}"
            )
            continue
        if child.prefixlen > needed:
            problems.append(
                f"child range {child} is too small for {rails} rails on {subnet.label} "
                f"{subnet.network}: it needs /{needed} or larger ({rail_bits(rails)} bits more "
                f"than the subnet), e.g. {IPv4Network((int(child.network_address), needed), strict=False)}"
            )
    return problems


def within(inner: IPv4Network, outer: Iterable[IPv4Network]) -> bool:
    """Whether `inner` lies entirely inside one of `outer`."""
    return any(inner.subnet_of(o) for o in outer)


def vf_pool_problems(pool: IPv4Network, plan: Iterable[NamedRange] = ()) -> list[str]:
    """Every reason the SR-IOV VF address pool `pool` clashes with the address plan (empty: fine).

    `plan` holds the ranges the VFs' addresses must stay clear of: VCNs, subnets, pods and services
    CIDRs, the OCA RDMA network and DRANET child ranges. Each VF interface gets an address in the pool
    with an on-link route for the whole pool in its pod, so an overlap sends that traffic out of a VF.
    """
    return overlap_problems(
        "VF pool",
        pool,
        plan,
        "which no interface may use",
        ": every VF gets an address in the pool and its pod an on-link route for the whole pool, so traffic "
        "to {hit} would go out of the VFs",
    )
