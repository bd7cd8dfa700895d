"""The VCN and subnets the cluster and the GPU nodes use: created here, or existing ones by OCID."""

from dataclasses import replace
from typing import NotRequired, TypedDict

import pulumi
import pulumi_oci as oci

from components.component_inputs import ComponentInputError, is_known, schema_name, validated, value_problems
from oke_gpu_rdma.common import resource_types
from stack_config.nodes import network_rules as rules
from stack_config.nodes.network_settings import NetworkConfig, NewNetwork
from stack_config.problems import ConfigProblem
from stack_config.settings_types import SubnetOcid, VcnOcid

ANYWHERE = "0.0.0.0/0"


class NewNetworkArgs(TypedDict, total=False):
    """A VCN to create, with one regional subnet per role (create-only settings: plain)."""

    vcn_cidr: str
    """VCN CIDR block (default 10.140.0.0/16)."""
    api_endpoint_subnet_cidr: str
    """Kubernetes API endpoint subnet (default 10.140.0.0/28)."""
    load_balancer_subnet_cidr: str
    """Service load balancer subnet (default 10.140.1.0/24)."""
    worker_subnet_cidr: str
    """Worker (primary VNIC) subnet (default 10.140.64.0/19); its size decides the DRANET child range size."""
    pod_subnet_cidr: str
    """Pod subnet, created only with vcnNativePods (default 10.140.128.0/18)."""
    api_endpoint_public: bool
    """Give the API endpoint a public IP, in a public subnet (default false)."""
    api_allowed_cidrs: list[str]
    """Extra CIDRs allowed to reach the API endpoint, on 6443 only (the VCN always is); a /0 is refused."""
    dns_label: str
    """VCN DNS label (default okegpu)."""


class ExistingNetworkArgs(TypedDict):
    """Subnets that already exist, by OCID."""

    vcn_id: pulumi.Input[str]
    """VCN OCID."""
    worker_subnet_id: pulumi.Input[str]
    """Subnet of the GPU nodes' primary VNICs."""
    api_endpoint_subnet_id: NotRequired[pulumi.Input[str]]
    """Subnet of the API endpoint (needed only to create a cluster)."""
    load_balancer_subnet_id: NotRequired[pulumi.Input[str]]
    """Subnet for service load balancers."""
    pod_subnet_id: NotRequired[pulumi.Input[str]]
    """Pod subnet (needed with vcnNativePods)."""


class NetworkArgs(TypedDict):
    """The inputs of the network: ``create`` a VCN, or name ``existing`` subnets."""

    compartment_id: pulumi.Input[str]
    """Compartment for created resources."""
    create: NotRequired[NewNetworkArgs]
    """The VCN and subnets to create."""
    existing: NotRequired[ExistingNetworkArgs]
    """Existing subnets to use instead."""
    vcn_native_pods: NotRequired[bool]
    """The cluster's CNI is OCI_VCN_IP_NATIVE: a pod subnet is created or needed (default false)."""
    display_prefix: NotRequired[str]
    """Prefix of the OCI display names (default: the component's name)."""
    protect: NotRequired[bool]
    """Protect a created VCN from deletion (default true: subnets, gateways and the cluster depend on it)."""


def new_network(name: str, args: NetworkArgs) -> NewNetwork | None:
    """The VCN to create checked by the stack config's model (None for existing subnets), or
    :class:`ComponentInputError` naming each bad input."""
    create, existing = args.get("create"), args.get("existing")
    problems: list[ConfigProblem] = []
    config = None
    if (create is None) == (existing is None):
        problems.append(ConfigProblem("create", None, "set exactly one of create or existing"))
    elif create is not None:
        try:
            config = validated(NewNetwork, {schema_name(k): v for k, v in create.items()}, "Network", name)
        except ComponentInputError as err:
            problems += [replace(p, path=f"create.{p.path}") for p in err.problems]
    else:
        assert existing is not None
        for key in (
            "vcn_id",
            "worker_subnet_id",
            "api_endpoint_subnet_id",
            "load_balancer_subnet_id",
            "pod_subnet_id",
        ):
            value = existing.get(key)
            if value is not None and is_known(value):
                kind = VcnOcid if key == "vcn_id" else SubnetOcid
                problems += value_problems(f"existing.{schema_name(key)}", value, kind)
        if args.get("vcn_native_pods") and existing.get("pod_subnet_id") is None:
            problems.append(
                ConfigProblem("existing.podSubnetId", None, "is missing; vcnNativePods needs a pod subnet")
            )
    if problems:
        raise ComponentInputError("Network", name, problems)
    return config


def network_args(
    compartment_id: str, network: NetworkConfig, vcn_native_pods: bool, display_prefix: str, protect: bool
) -> NetworkArgs:
    """The Args of the stack's validated network config (what __main__.py declares)."""
    args = NetworkArgs(
        compartment_id=compartment_id,
        vcn_native_pods=vcn_native_pods,
        display_prefix=display_prefix,
        protect=protect,
    )
    if network.create is not None:
        new = network.create
        args["create"] = NewNetworkArgs(
            vcn_cidr=str(new.vcn_cidr),
            api_endpoint_subnet_cidr=str(new.api_endpoint_subnet_cidr),
            load_balancer_subnet_cidr=str(new.load_balancer_subnet_cidr),
            worker_subnet_cidr=str(new.worker_subnet_cidr),
            pod_subnet_cidr=str(new.pod_subnet_cidr),
            api_endpoint_public=new.api_endpoint_public,
            api_allowed_cidrs=[str(c) for c in new.api_allowed_cidrs],
            dns_label=new.dns_label,
        )
    else:
        existing = network.existing
        assert existing is not None  # NetworkConfig guarantees one of the two
        refs = ExistingNetworkArgs(vcn_id=existing.vcn_id, worker_subnet_id=existing.worker_subnet.id)
        if existing.api_endpoint_subnet is not None:
            refs["api_endpoint_subnet_id"] = existing.api_endpoint_subnet.id
        if existing.load_balancer_subnet is not None:
            refs["load_balancer_subnet_id"] = existing.load_balancer_subnet.id
        if existing.pod_subnet is not None:
            refs["pod_subnet_id"] = existing.pod_subnet.id
        args["existing"] = refs
    return args


class Network(pulumi.ComponentResource):
    """The VCN and regional subnets an RDMA GPU cluster uses (API endpoint, workers, pods, load balancers)
    with their gateways, route tables and security lists, or existing subnets by OCID."""

    vcn_id: pulumi.Output[str]
    """OCID of the VCN."""
    worker_subnet_id: pulumi.Output[str]
    """The workers' subnet."""
    api_endpoint_subnet_id: pulumi.Output[str] | None
    """The API endpoint's subnet."""
    load_balancer_subnet_id: pulumi.Output[str] | None
    """The load balancers' subnet."""
    pod_subnet_id: pulumi.Output[str] | None
    """The pods' subnet (VCN-native pods)."""
    api_endpoint_nsg_id: pulumi.Output[str] | None
    """NSG of the cluster's API endpoint (a created VCN only)."""
    worker_nsg_id: pulumi.Output[str] | None
    """NSG of the nodes' primary VNICs (a created VCN only)."""
    pod_nsg_id: pulumi.Output[str] | None
    """NSG of the pods' VNICs (a created VCN with VCN-native pods only)."""
    load_balancer_nsg_id: pulumi.Output[str] | None
    """NSG for service load balancers (a created VCN only): name it in a Service's
    `oci.oraclecloud.com/oci-network-security-groups` annotation."""

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(resource_types.NETWORK_COMPONENT, name, None, opts)
        new = new_network(name, args)
        if new is not None:
            self._create(name, args, new)
        else:
            existing = args["existing"]
            self.vcn_id = pulumi.Output.from_input(existing["vcn_id"])
            self.worker_subnet_id = pulumi.Output.from_input(existing["worker_subnet_id"])
            self.api_endpoint_subnet_id = _subnet_id(existing.get("api_endpoint_subnet_id"))
            self.load_balancer_subnet_id = _subnet_id(existing.get("load_balancer_subnet_id"))
            self.pod_subnet_id = _subnet_id(existing.get("pod_subnet_id"))
            # The rules of existing subnets are their owner's (docs/network-security.md says which OKE needs).
            self.api_endpoint_nsg_id = self.worker_nsg_id = self.pod_nsg_id = self.load_balancer_nsg_id = None
        self.register_outputs(
            {
                "vcnId": self.vcn_id,
                "workerSubnetId": self.worker_subnet_id,
                "apiEndpointSubnetId": self.api_endpoint_subnet_id,
                "loadBalancerSubnetId": self.load_balancer_subnet_id,
                "podSubnetId": self.pod_subnet_id,
                "apiEndpointNsgId": self.api_endpoint_nsg_id,
                "workerNsgId": self.worker_nsg_id,
                "podNsgId": self.pod_nsg_id,
                "loadBalancerNsgId": self.load_balancer_nsg_id,
            }
        )

    def _create(self, name: str, args: NetworkArgs, new: NewNetwork) -> None:
        child = pulumi.ResourceOptions(parent=self)
        # Logical names follow the component (URNs); display names the prefix (what the console shows).
        shown = args.get("display_prefix") or name
        compartment = args["compartment_id"]
        vcn = oci.core.Vcn(
            f"{name}-vcn",
            compartment_id=compartment,
            cidr_blocks=[str(new.vcn_cidr)],
            display_name=f"{shown}-vcn",
            dns_label=new.dns_label.replace("-", "")[:15],
            opts=pulumi.ResourceOptions(parent=self, protect=args.get("protect", True)),
        )
        services = oci.core.get_services_output(
            filters=[
                oci.core.GetServicesFilterArgs(
                    name="name", values=["All .* Services In Oracle Services Network"], regex=True
                )
            ],
            opts=pulumi.InvokeOutputOptions(parent=self),
        )
        all_services = services.services[0]
        nat = oci.core.NatGateway(
            f"{name}-nat", compartment_id=compartment, vcn_id=vcn.id, display_name=f"{shown}-nat", opts=child
        )
        sgw = oci.core.ServiceGateway(
            f"{name}-sgw",
            compartment_id=compartment,
            vcn_id=vcn.id,
            display_name=f"{shown}-sgw",
            services=[oci.core.ServiceGatewayServiceArgs(service_id=all_services.id)],
            opts=child,
        )

        def route_table(kind: str, *entries: oci.core.RouteTableRouteRuleArgs) -> oci.core.RouteTable:
            return oci.core.RouteTable(
                f"{name}-{kind}-rt",
                compartment_id=compartment,
                vcn_id=vcn.id,
                display_name=f"{shown}-{kind}",
                route_rules=list(entries),
                opts=child,
            )

        def to_anywhere(
            gateway: oci.core.NatGateway | oci.core.InternetGateway,
        ) -> oci.core.RouteTableRouteRuleArgs:
            return oci.core.RouteTableRouteRuleArgs(
                network_entity_id=gateway.id, destination=ANYWHERE, destination_type="CIDR_BLOCK"
            )

        private_rt = route_table(
            "private",
            to_anywhere(nat),
            oci.core.RouteTableRouteRuleArgs(
                network_entity_id=sgw.id,
                destination=all_services.cidr_block,
                destination_type="SERVICE_CIDR_BLOCK",
            ),
        )
        # The rules live on the NSGs of each role (stack_config/nodes/network_rules.py); every subnet gets this
        # one list instead of the VCN's default one (which lets SSH in from 0.0.0.0/0).
        baseline = oci.core.SecurityList(
            f"{name}-baseline",
            compartment_id=compartment,
            vcn_id=vcn.id,
            display_name=f"{shown}-baseline",
            ingress_security_rules=[
                oci.core.SecurityListIngressSecurityRuleArgs(
                    protocol=rules.ICMP,
                    source=str(new.vcn_cidr),
                    description="path MTU discovery; every other rule is on the NSGs",
                    icmp_options=oci.core.SecurityListIngressSecurityRuleIcmpOptionsArgs(
                        type=rules.PATH_MTU[0], code=rules.PATH_MTU[1]
                    ),
                )
            ],
            egress_security_rules=[],
            opts=child,
        )
        nsgs = _security_groups(
            name,
            shown,
            compartment,
            vcn.id,
            all_services.cidr_block,
            new,
            bool(args.get("vcn_native_pods")),
            child,
        )
        self.api_endpoint_nsg_id = nsgs[rules.NsgRole.API_ENDPOINT]
        self.worker_nsg_id = nsgs[rules.NsgRole.WORKERS]
        self.load_balancer_nsg_id = nsgs[rules.NsgRole.LOAD_BALANCERS]
        self.pod_nsg_id = nsgs.get(rules.NsgRole.PODS)
        endpoint_rt = private_rt.id
        if new.api_endpoint_public:
            igw = oci.core.InternetGateway(
                f"{name}-igw",
                compartment_id=compartment,
                vcn_id=vcn.id,
                display_name=f"{shown}-igw",
                opts=child,
            )
            endpoint_rt = route_table("public", to_anywhere(igw)).id

        def subnet(role: str, cidr: str, public: bool = False) -> oci.core.Subnet:
            return oci.core.Subnet(
                f"{name}-{role}",
                compartment_id=compartment,
                vcn_id=vcn.id,
                cidr_block=cidr,
                display_name=f"{shown}-{role}",
                dns_label=role.replace("-", "")[:15],
                prohibit_public_ip_on_vnic=not public,
                route_table_id=endpoint_rt if public else private_rt.id,
                security_list_ids=[baseline.id],
                opts=child,
            )

        self.vcn_id = vcn.id
        self.api_endpoint_subnet_id = subnet(
            "api-endpoint", str(new.api_endpoint_subnet_cidr), new.api_endpoint_public
        ).id
        self.load_balancer_subnet_id = subnet("load-balancers", str(new.load_balancer_subnet_cidr)).id
        self.worker_subnet_id = subnet("workers", str(new.worker_subnet_cidr)).id
        self.pod_subnet_id = (
            subnet("pods", str(new.pod_subnet_cidr)).id if args.get("vcn_native_pods") else None
        )


def _security_groups(
    name: str,
    shown: str,
    compartment: pulumi.Input[str],
    vcn_id: pulumi.Output[str],
    services_cidr: pulumi.Output[str],
    new: NewNetwork,
    vcn_native_pods: bool,
    child: pulumi.ResourceOptions,
) -> dict[rules.NsgRole, pulumi.Output[str]]:
    """One NSG per role with its rules (stack_config/nodes/network_rules.py), by role."""
    ids: dict[rules.NsgRole, pulumi.Output[str]] = {}
    for role, role_rules in rules.nsg_rules(new, vcn_native_pods).items():
        nsg = oci.core.NetworkSecurityGroup(
            f"{name}-{role}-nsg",
            compartment_id=compartment,
            vcn_id=vcn_id,
            display_name=f"{shown}-{role}",
            opts=child,
        )
        for rule in role_rules:
            _nsg_rule(f"{name}-{role}-{rule.key}", nsg.id, rule, services_cidr, child)
        ids[role] = nsg.id
    return ids


def _nsg_rule(
    logical: str,
    nsg_id: pulumi.Output[str],
    rule: rules.NsgRule,
    services_cidr: pulumi.Output[str],
    child: pulumi.ResourceOptions,
) -> oci.core.NetworkSecurityGroupSecurityRule:
    # terraform-provider-oci core_network_security_group_security_rule_resource.go: source/destination with
    # their type (CIDR_BLOCK, SERVICE_CIDR_BLOCK), tcp/udp options' destination_port_range, icmp_options.
    peer: pulumi.Input[str] = services_cidr if rule.peer_is_services else rule.peer
    peer_type = "SERVICE_CIDR_BLOCK" if rule.peer_is_services else "CIDR_BLOCK"
    ingress = rule.direction == "INGRESS"
    return oci.core.NetworkSecurityGroupSecurityRule(
        logical,
        network_security_group_id=nsg_id,
        direction=rule.direction,
        protocol=rule.protocol,
        description=rule.description,
        stateless=False,
        source=peer if ingress else None,
        source_type=peer_type if ingress else None,
        destination=None if ingress else peer,
        destination_type=None if ingress else peer_type,
        tcp_options=oci.core.NetworkSecurityGroupSecurityRuleTcpOptionsArgs(
            destination_port_range=oci.core.NetworkSecurityGroupSecurityRuleTcpOptionsDestinationPortRangeArgs(
                min=rule.ports[0], max=rule.ports[1]
            )
        )
        if rule.protocol == rules.TCP and rule.ports is not None
        else None,
        udp_options=oci.core.NetworkSecurityGroupSecurityRuleUdpOptionsArgs(
            destination_port_range=oci.core.NetworkSecurityGroupSecurityRuleUdpOptionsDestinationPortRangeArgs(
                min=rule.ports[0], max=rule.ports[1]
            )
        )
        if rule.protocol == rules.UDP and rule.ports is not None
        else None,
        icmp_options=oci.core.NetworkSecurityGroupSecurityRuleIcmpOptionsArgs(
            type=rule.icmp[0], code=rule.icmp[1]
        )
        if rule.icmp is not None
        else None,
        opts=child,
    )


def _subnet_id(subnet_id: pulumi.Input[str] | None) -> pulumi.Output[str] | None:
    return None if subnet_id is None else pulumi.Output.from_input(subnet_id)
