"""The network security groups of a created VCN, one per role, and their rules (no Pulumi here:
components/nodes/network.py declares them, the docs and tests read them).

Sources, for the rules OKE needs per CNI:

- Oracle, "Security Rule Configuration in Network Security Groups" (Container Engine for Kubernetes,
  "Network Resource Configuration for Cluster Creation and Deployment"): the rules of the Kubernetes API
  endpoint, worker node, pod (VCN-native pod networking) and load balancer NSGs.
- oracle-terraform-modules/terraform-oci-oke v5.4.3, modules/network/nsg-controlplane.tf,
  nsg-workers.tf, nsg-pods.tf, nsg-loadbalancers-int.tf (the stateful rule sets) and locals.tf
  (ports: apiserver 6443, oke 12250, kubelet 10250, health check 10256, node ports 30000-32767).

Where this stack is tighter than those sources, and why:

- `apiAllowedCidrs` open 6443 only; 12250 (the nodes' bootstrap and proxymux endpoint) is open only from
  the worker subnet: nothing but a node dials it (the upstream module opens it to the pod NSG as well
  with VCN-native pods; pods reach the API server on 6443).
- The control plane reaches the nodes (and, with VCN-native pods, the pods) on every TCP port but 12250,
  so that no rule anywhere admits 12250 from outside the worker subnet (the upstream module also lets
  the control plane dial the nodes' 12250; the nodes are the clients of that port, on the endpoint).
- No ingress from 0.0.0.0/0 at all: ICMP path-MTU messages (type 3 code 4) are accepted from the VCN
  (the upstream module accepts them from anywhere).
- Egress to the internet is TCP 443 only (through the NAT gateway): the image registries the stack pulls
  from (nvcr.io, ghcr.io, registry.k8s.io, quay.io, docker.io) serve from CDNs that publish no stable
  address list, so no tighter destination exists; OCI services (the OKE image repository, Object
  Storage, OCIR, the yum mirrors) go through the service gateway instead. The upstream module's
  "allow worker internet access" is all protocols to 0.0.0.0/0.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from ipaddress import IPv4Network
from typing import Final, Literal

from stack_config.nodes.network_settings import NewNetwork

API_SERVER_PORT: Final = 6443
OKE_BOOTSTRAP_PORT: Final = 12250
KUBELET_PORT: Final = 10250
LB_HEALTH_CHECK_PORT: Final = 10256
NODE_PORTS: Final = (30000, 32767)
HTTPS_PORT: Final = 443
ANYWHERE: Final = "0.0.0.0/0"
# The "All <region> Services In Oracle Services Network" CIDR label of the service gateway: the
# component puts the label the region's service has (SERVICE_CIDR_BLOCK).
ORACLE_SERVICES: Final = "oracle-services-network"

# IANA protocol numbers, as OCI's security rules take them.
TCP: Final = "6"
UDP: Final = "17"
ICMP: Final = "1"
ALL: Final = "all"
# ICMP "destination unreachable, fragmentation needed": path MTU discovery.
PATH_MTU: Final = (3, 4)


class NsgRole(StrEnum):
    """The NSG of each role; the value is the suffix of its name."""

    API_ENDPOINT = "api-endpoint"
    WORKERS = "workers"
    PODS = "pods"
    LOAD_BALANCERS = "load-balancers"


Direction = Literal["INGRESS", "EGRESS"]


@dataclass(frozen=True)
class NsgRule:
    """A stateful rule of one NSG."""

    key: str
    """Stable short name (the rule's logical name ends in it)."""
    direction: Direction
    protocol: str
    peer: str
    """A CIDR, or ORACLE_SERVICES."""
    description: str
    ports: tuple[int, int] | None = None
    """Destination port range (TCP/UDP); None for every port."""
    icmp: tuple[int, int] | None = None
    """ICMP type and code."""

    @property
    def peer_is_services(self) -> bool:
        return self.peer == ORACLE_SERVICES

    def opens(self, port: int) -> bool:
        """Whether the rule lets TCP ``port`` through."""
        if self.protocol not in (TCP, ALL):
            return False
        return self.ports is None or self.ports[0] <= port <= self.ports[1]


def _tcp(port: int) -> tuple[int, int]:
    return (port, port)


# Every TCP port but the bootstrap one, as the two ranges OCI's rules take.
BELOW_BOOTSTRAP: Final = (1, OKE_BOOTSTRAP_PORT - 1)
ABOVE_BOOTSTRAP: Final = (OKE_BOOTSTRAP_PORT + 1, 65535)


def _tcp_but_bootstrap(key: str, peer: str, description: str) -> list[NsgRule]:
    return [
        NsgRule(f"{key}-low", "INGRESS", TCP, peer, description, BELOW_BOOTSTRAP),
        NsgRule(f"{key}-high", "INGRESS", TCP, peer, description, ABOVE_BOOTSTRAP),
    ]


def nsg_rules(new: NewNetwork, vcn_native_pods: bool) -> dict[NsgRole, list[NsgRule]]:
    """Every NSG of a created VCN with its rules (the pod NSG only with VCN-native pods)."""
    vcn = str(new.vcn_cidr)
    endpoint = str(new.api_endpoint_subnet_cidr)
    workers = str(new.worker_subnet_cidr)
    lbs = str(new.load_balancer_subnet_cidr)
    pods = str(new.pod_subnet_cidr)

    api = [
        NsgRule("api-from-vcn", "INGRESS", TCP, vcn, "Kubernetes API from the VCN", _tcp(API_SERVER_PORT)),
        NsgRule(
            "bootstrap-from-workers",
            "INGRESS",
            TCP,
            workers,
            "OKE node bootstrap and proxymux from the worker nodes only",
            _tcp(OKE_BOOTSTRAP_PORT),
        ),
        NsgRule("mtu-from-vcn", "INGRESS", ICMP, vcn, "path MTU discovery", icmp=PATH_MTU),
        *[
            NsgRule(
                f"api-from-{_slug(cidr)}",
                "INGRESS",
                TCP,
                str(cidr),
                f"Kubernetes API from {cidr} (apiAllowedCidrs)",
                _tcp(API_SERVER_PORT),
            )
            for cidr in _outside(new.api_allowed_cidrs, new.vcn_cidr)
        ],
        NsgRule("to-services", "EGRESS", TCP, ORACLE_SERVICES, "control plane to OCI services"),
        # The kubelets (10250) and webhooks served by nodes; not 12250, which no node accepts from it.
        NsgRule("tcp-to-workers-low", "EGRESS", TCP, workers, "control plane to the nodes", BELOW_BOOTSTRAP),
        NsgRule("tcp-to-workers-high", "EGRESS", TCP, workers, "control plane to the nodes", ABOVE_BOOTSTRAP),
        NsgRule("mtu-to-workers", "EGRESS", ICMP, workers, "path MTU discovery", icmp=PATH_MTU),
    ]
    node = [
        NsgRule("all-from-workers", "INGRESS", ALL, workers, "node to node (CNI, DNS, metrics)"),
        *_tcp_but_bootstrap(
            "tcp-from-api-endpoint", endpoint, "control plane to the nodes (kubelet, webhooks)"
        ),
        NsgRule("nodeports-from-lbs", "INGRESS", TCP, lbs, "load balancers to node ports", NODE_PORTS),
        NsgRule(
            "udp-nodeports-from-lbs", "INGRESS", UDP, lbs, "load balancers to UDP node ports", NODE_PORTS
        ),
        NsgRule(
            "health-from-lbs", "INGRESS", TCP, lbs, "load balancer health checks", _tcp(LB_HEALTH_CHECK_PORT)
        ),
        NsgRule("mtu-from-vcn", "INGRESS", ICMP, vcn, "path MTU discovery", icmp=PATH_MTU),
        NsgRule("all-to-workers", "EGRESS", ALL, workers, "node to node"),
        NsgRule("api-to-endpoint", "EGRESS", TCP, endpoint, "Kubernetes API", _tcp(API_SERVER_PORT)),
        NsgRule(
            "bootstrap-to-endpoint", "EGRESS", TCP, endpoint, "OKE node bootstrap", _tcp(OKE_BOOTSTRAP_PORT)
        ),
        NsgRule("kubelet-to-endpoint", "EGRESS", TCP, endpoint, "OKE health checks", _tcp(KUBELET_PORT)),
        NsgRule("to-services", "EGRESS", TCP, ORACLE_SERVICES, "OCI services through the service gateway"),
        NsgRule(
            "https-to-registries", "EGRESS", TCP, ANYWHERE, "image registries through NAT", _tcp(HTTPS_PORT)
        ),
        NsgRule("mtu-to-vcn", "EGRESS", ICMP, vcn, "path MTU discovery", icmp=PATH_MTU),
    ]
    balancers = [
        NsgRule("nodeports-to-workers", "EGRESS", TCP, workers, "to node ports", NODE_PORTS),
        NsgRule("udp-nodeports-to-workers", "EGRESS", UDP, workers, "to UDP node ports", NODE_PORTS),
        NsgRule("health-to-workers", "EGRESS", TCP, workers, "health checks", _tcp(LB_HEALTH_CHECK_PORT)),
        NsgRule("mtu-to-workers", "EGRESS", ICMP, workers, "path MTU discovery", icmp=PATH_MTU),
    ]
    rules = {NsgRole.API_ENDPOINT: api, NsgRole.WORKERS: node, NsgRole.LOAD_BALANCERS: balancers}
    if vcn_native_pods:
        api.append(NsgRule("to-pods", "EGRESS", TCP, pods, "control plane to pods (webhooks)"))
        node += [
            NsgRule("all-from-pods", "INGRESS", ALL, pods, "pods to nodes (hostNetwork, node ports)"),
            NsgRule("all-to-pods", "EGRESS", ALL, pods, "nodes to pods"),
        ]
        balancers.append(NsgRule("to-pods", "EGRESS", ALL, pods, "to pods (native load balancing)"))
        rules[NsgRole.PODS] = [
            NsgRule("all-from-pods", "INGRESS", ALL, pods, "pod to pod"),
            NsgRule("all-from-workers", "INGRESS", ALL, workers, "nodes to pods"),
            *_tcp_but_bootstrap("tcp-from-api-endpoint", endpoint, "control plane to pods (webhooks)"),
            NsgRule("all-from-lbs", "INGRESS", ALL, lbs, "load balancers to pods"),
            NsgRule("mtu-from-vcn", "INGRESS", ICMP, vcn, "path MTU discovery", icmp=PATH_MTU),
            NsgRule("all-to-pods", "EGRESS", ALL, pods, "pod to pod"),
            NsgRule("all-to-workers", "EGRESS", ALL, workers, "pods to nodes"),
            NsgRule("api-to-endpoint", "EGRESS", TCP, endpoint, "Kubernetes API", _tcp(API_SERVER_PORT)),
            NsgRule(
                "to-services", "EGRESS", TCP, ORACLE_SERVICES, "OCI services through the service gateway"
            ),
            NsgRule("https-out", "EGRESS", TCP, ANYWHERE, "HTTPS through NAT", _tcp(HTTPS_PORT)),
            NsgRule("mtu-to-vcn", "EGRESS", ICMP, vcn, "path MTU discovery", icmp=PATH_MTU),
        ]
    return rules


def _outside(cidrs: list[IPv4Network], vcn: IPv4Network) -> list[IPv4Network]:
    """The allowed CIDRs the VCN rule does not already cover (in the order given, once each)."""
    seen: list[IPv4Network] = []
    for cidr in cidrs:
        if not cidr.subnet_of(vcn) and cidr not in seen:
            seen.append(cidr)
    return seen


def _slug(cidr: IPv4Network) -> str:
    return str(cidr).replace(".", "-").replace("/", "-")
