"""Checks across stack config values: subnets inside the VCN, CIDRs that must not meet, the child range.

Each check yields a :class:`ConfigProblem` naming the key path to change, so the loader can print
one message per problem. The rules themselves live in :mod:`oke_gpu_rdma.nodes.cidr_rules`, shared with the
policy pack.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from ipaddress import IPv4Network

from oke_gpu_rdma.nodes import cidr_rules as cidr
from stack_config.model import StackConfig
from stack_config.problems import ConfigProblem


class Role(StrEnum):
    """What a range of the plan is; the value is how messages name it."""

    VCN = "VCN"
    API_ENDPOINT_SUBNET = "API endpoint subnet"
    LOAD_BALANCER_SUBNET = "load balancer subnet"
    WORKER_SUBNET = "worker subnet"
    POD_SUBNET = "pod subnet"
    PODS_CIDR = "pods CIDR"
    SERVICES_CIDR = "services CIDR"
    OCA_RDMA_NETWORK = "OCA RDMA network"


@dataclass(frozen=True)
class PlannedRange:
    """A CIDR of the plan with the config key it comes from."""

    path: str
    role: Role
    network: IPv4Network
    declared: bool = False
    """Whether the stack creates it (then the policy pack sees it as a resource)."""

    @property
    def label(self) -> str:
        return f"{self.role} ({self.path})"

    def named(self) -> cidr.NamedRange:
        return cidr.NamedRange(self.label, self.network)

    def overlap_problem(self, other: PlannedRange, why: str) -> ConfigProblem:
        """This range overlaps ``other``, which it must not (``why``)."""
        return ConfigProblem(
            self.path, str(self.network), f"overlaps the {other.role} {other.network} ({other.path}); {why}"
        )


def vcn_ranges(config: StackConfig) -> list[PlannedRange]:
    """The VCN blocks."""
    if config.network.create is not None:
        return [
            PlannedRange("network.create.vcnCidr", Role.VCN, config.network.create.vcn_cidr, declared=True)
        ]
    assert config.network.existing is not None
    return [
        PlannedRange(f"network.existing.vcnCidrs[{i}]", Role.VCN, block)
        for i, block in enumerate(config.network.existing.vcn_cidrs)
    ]


def subnet_ranges(config: StackConfig) -> list[PlannedRange]:
    """Every subnet the stack creates or names, with its role."""
    native = config.cluster.spec.cni_type == "OCI_VCN_IP_NATIVE"
    new = config.network.create
    if new is not None:
        roles = [
            ("apiEndpointSubnetCidr", Role.API_ENDPOINT_SUBNET, new.api_endpoint_subnet_cidr),
            ("loadBalancerSubnetCidr", Role.LOAD_BALANCER_SUBNET, new.load_balancer_subnet_cidr),
            ("workerSubnetCidr", Role.WORKER_SUBNET, new.worker_subnet_cidr),
        ]
        if native:
            roles.append(("podSubnetCidr", Role.POD_SUBNET, new.pod_subnet_cidr))
        return [
            PlannedRange(f"network.create.{key}", role, block, declared=True) for key, role, block in roles
        ]
    existing = config.network.existing
    assert existing is not None
    named = [
        ("apiEndpointSubnet", Role.API_ENDPOINT_SUBNET, existing.api_endpoint_subnet),
        ("loadBalancerSubnet", Role.LOAD_BALANCER_SUBNET, existing.load_balancer_subnet),
        ("workerSubnet", Role.WORKER_SUBNET, existing.worker_subnet),
        ("podSubnet", Role.POD_SUBNET, existing.pod_subnet),
    ]
    return [
        PlannedRange(f"network.existing.{key}.cidr", role, ref.cidr)
        for key, role, ref in named
        if ref is not None
    ]


def worker_range(config: StackConfig) -> PlannedRange:
    """The primary VNIC subnet of the GPU nodes."""
    return next(r for r in subnet_ranges(config) if r.role is Role.WORKER_SUBNET)


def cluster_ranges(config: StackConfig) -> list[PlannedRange]:
    """The cluster's pod and service CIDRs."""
    created = config.cluster.create is not None
    kind = "create" if created else "existing"
    spec = config.cluster.spec
    ranges = [
        PlannedRange(f"cluster.{kind}.servicesCidr", Role.SERVICES_CIDR, spec.services_cidr, declared=created)
    ]
    if spec.cni_type == "FLANNEL_OVERLAY":
        ranges.insert(
            0, PlannedRange(f"cluster.{kind}.podsCidr", Role.PODS_CIDR, spec.pods_cidr, declared=created)
        )
    return ranges


def plan_ranges(config: StackConfig) -> list[PlannedRange]:
    """Every range the DRANET child range must stay clear of."""
    return [*vcn_ranges(config), *subnet_ranges(config), *cluster_ranges(config), rdma_range(config)]


def rdma_range(config: StackConfig) -> PlannedRange:
    """The RDMA network Oracle Cloud Agent configures on the rails."""
    return PlannedRange("network.rdmaCidr", Role.OCA_RDMA_NETWORK, config.network.rdma_cidr)


def problems(config: StackConfig) -> list[ConfigProblem]:
    """Every cross-value problem of the config, in key order."""
    return (
        list(_structure(config))
        + list(_special(config))
        + list(_vcn_blocks(config))
        + list(_sizes(config))
        + list(_subnets(config))
        + list(_cluster(config))
        + list(_child(config))
    )


# The largest services CIDR Kubernetes takes: kube-apiserver refuses a --service-cluster-ip-range with more
# than 20 host bits ("specified --service-cluster-ip-range is too large; for 32-bit addresses, the mask must
# be >= 12": kubernetes cmd/kube-apiserver/app/options/validation.go, maxCIDRBits = 20).
MIN_SERVICES_PREFIX = 12


def _special(config: StackConfig) -> Iterator[ConfigProblem]:
    """Every range of the plan is unicast address space a network can hold: none of them may touch this-network,
    loopback, link-local, multicast or reserved space (IANA IPv4 Special-Purpose Address Registry, RFC 6890;
    the same SPECIAL_RANGES the child range and the VF pool are held to)."""
    for planned in [*vcn_ranges(config), *subnet_ranges(config), *cluster_ranges(config), rdma_range(config)]:
        for label, special in cidr.SPECIAL_RANGES:
            if special.overlaps(planned.network):
                yield ConfigProblem(
                    planned.path,
                    str(planned.network),
                    f"overlaps {label}, which no network may use; pick a private range (RFC 1918: 10.0.0.0/8, "
                    "172.16.0.0/12 or 192.168.0.0/16)",
                )
                break
        if planned.role is Role.SERVICES_CIDR and planned.network.prefixlen < MIN_SERVICES_PREFIX:
            yield ConfigProblem(
                planned.path,
                str(planned.network),
                f"is larger than Kubernetes takes: the API server refuses a services range shorter than "
                f"/{MIN_SERVICES_PREFIX}; use /{MIN_SERVICES_PREFIX} to /24 (e.g. 10.96.0.0/16)",
            )


def _structure(config: StackConfig) -> Iterator[ConfigProblem]:
    existing = config.network.existing
    if existing is None:
        return
    if config.cluster.create is not None and existing.api_endpoint_subnet is None:
        yield ConfigProblem(
            "network.existing.apiEndpointSubnet",
            None,
            "is required when the stack creates the cluster (cluster.create); add {id, cidr} of the endpoint subnet",
        )
    if config.cluster.spec.cni_type == "OCI_VCN_IP_NATIVE" and existing.pod_subnet is None:
        yield ConfigProblem(
            "network.existing.podSubnet",
            None,
            "is required with cniType OCI_VCN_IP_NATIVE; add {id, cidr} of the pod subnet",
        )


# OKE gives every worker node a /25 of a flannel cluster's pods CIDR, so the pods CIDR bounds the nodes
# (Oracle, "CIDR Blocks and Kubernetes Engine (OKE)": "allocates a /25 CIDR block of network addresses for each
# worker node"). OCI reserves the first two and the last address of every subnet (Oracle, "VCNs and Subnets":
# reserved IP addresses), so a subnet of N addresses holds N - 3 nodes.
NODE_POD_BLOCK_PREFIX = 25
SUBNET_RESERVED_ADDRESSES = 3


def stack_nodes(config: StackConfig) -> int:
    """The nodes the stack runs: its GPU pools' and, when it creates one, the system pool's."""
    return sum(p.count for p in config.node_pools) + (
        config.system_pool.count if config.creates_system_pool else 0
    )


def _sizes(config: StackConfig) -> Iterator[ConfigProblem]:
    """The pods CIDR and the worker subnet hold every node of the stack."""
    nodes = stack_nodes(config)
    needed = NODE_POD_BLOCK_PREFIX - math.ceil(math.log2(nodes)) if nodes > 1 else NODE_POD_BLOCK_PREFIX
    for planned in cluster_ranges(config):
        if planned.role is not Role.PODS_CIDR:
            continue
        blocks = (
            2 ** (NODE_POD_BLOCK_PREFIX - planned.network.prefixlen) if planned.network.prefixlen <= 25 else 0
        )
        if blocks < nodes:
            yield ConfigProblem(
                planned.path,
                str(planned.network),
                f"holds the pod blocks of {blocks} nodes, fewer than the stack's {nodes}: OKE gives every worker "
                f"node a /{NODE_POD_BLOCK_PREFIX} of the pods CIDR; use /{needed} or larger",
            )
    worker = worker_range(config)
    room = worker.network.num_addresses - SUBNET_RESERVED_ADDRESSES
    if room < nodes:
        yield ConfigProblem(
            worker.path,
            str(worker.network),
            f"has addresses for {max(room, 0)} nodes, fewer than the stack's {nodes} (OCI reserves "
            f"{SUBNET_RESERVED_ADDRESSES} addresses of every subnet); use a larger subnet",
        )


def _vcn_blocks(config: StackConfig) -> Iterator[ConfigProblem]:
    """A VCN's CIDR blocks must not overlap one another (OCI, "VCNs and Subnets")."""
    blocks = vcn_ranges(config)
    for i, block in enumerate(blocks):
        for other in blocks[:i]:
            if other.network.overlaps(block.network):
                yield block.overlap_problem(
                    other, "the CIDR blocks of a VCN must not overlap; list each once"
                )
                break


def _subnets(config: StackConfig) -> Iterator[ConfigProblem]:
    vcns = [r.network for r in vcn_ranges(config)]
    subnets = subnet_ranges(config)
    for i, subnet in enumerate(subnets):
        if not cidr.within(subnet.network, vcns):
            yield ConfigProblem(
                subnet.path,
                str(subnet.network),
                f"lies outside the VCN ({', '.join(map(str, vcns))}); pick a block inside it",
            )
        for other in subnets[:i]:
            if other.network.overlaps(subnet.network):
                yield subnet.overlap_problem(other, "subnets of a VCN must not overlap")


def _cluster(config: StackConfig) -> Iterator[ConfigProblem]:
    vcns = vcn_ranges(config)
    subnets = subnet_ranges(config)
    for planned in cluster_ranges(config):
        # OKE: the pods CIDR must not overlap a VCN subnet, the services CIDR not the VCN itself.
        against = subnets if planned.role is Role.PODS_CIDR else vcns
        for hit in against:
            if hit.network.overlaps(planned.network):
                yield planned.overlap_problem(hit, "OKE needs them disjoint")


def _child(config: StackConfig) -> Iterator[ConfigProblem]:
    child = config.dranet.child_range
    plan = [r.named() for r in plan_ranges(config)]
    worker = worker_range(config)
    for message in cidr.child_range_problems(child, plan, [worker.named()]):
        yield ConfigProblem("dranet.childRange", str(child), message)
