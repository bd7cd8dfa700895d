"""The VCN and subnets the cluster and the GPU nodes use: created here, or existing ones by OCID."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_oci as oci

from oke_gpu_rdma import resource_types
from stack_config.model import NetworkConfig, NewNetwork, SubnetRef

ALL_TRAFFIC = "all"
ANYWHERE = "0.0.0.0/0"
# The API server (6443) and the OKE worker bootstrap endpoint (12250).
API_PORTS = (6443, 12250)


@dataclass
class NetworkArgs:
    compartment_id: str
    """Compartment for created resources."""
    network: NetworkConfig
    """Validated network config: `create` or `existing`."""
    vcn_native_pods: bool
    """Whether the cluster's CNI is OCI_VCN_IP_NATIVE (then a pod subnet is needed)."""
    display_prefix: str | None = None
    """Prefix of the OCI display names (default: the component's name); the program passes the stack's."""
    protect: bool = True
    """Protect the created VCN from deletion (subnets, gateways and the cluster depend on it)."""


class Network(pulumi.ComponentResource):
    """Subnet OCIDs for the endpoint, the workers, the pods and load balancers."""

    vcn_id: pulumi.Output[str]
    worker_subnet_id: pulumi.Output[str]
    api_endpoint_subnet_id: pulumi.Output[str] | None
    load_balancer_subnet_id: pulumi.Output[str] | None
    pod_subnet_id: pulumi.Output[str] | None

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(resource_types.NETWORK_COMPONENT, name, None, opts)
        if args.network.create is not None:
            self._create(name, args, args.network.create)
        else:
            existing = args.network.existing
            assert existing is not None  # NetworkConfig guarantees one of the two
            self.vcn_id = pulumi.Output.from_input(existing.vcn_id)
            self.worker_subnet_id = pulumi.Output.from_input(existing.worker_subnet.id)
            self.api_endpoint_subnet_id = _subnet_id(existing.api_endpoint_subnet)
            self.load_balancer_subnet_id = _subnet_id(existing.load_balancer_subnet)
            self.pod_subnet_id = _subnet_id(existing.pod_subnet)
        self.register_outputs(
            {
                "vcnId": self.vcn_id,
                "workerSubnetId": self.worker_subnet_id,
                "apiEndpointSubnetId": self.api_endpoint_subnet_id,
                "loadBalancerSubnetId": self.load_balancer_subnet_id,
                "podSubnetId": self.pod_subnet_id,
            }
        )

    def _create(self, name: str, args: NetworkArgs, new: NewNetwork) -> None:
        child = pulumi.ResourceOptions(parent=self)
        # Logical names follow the component (URNs); display names the prefix (what the console shows).
        shown = args.display_prefix or name
        compartment = args.compartment_id
        vcn = oci.core.Vcn(
            f"{name}-vcn",
            compartment_id=compartment,
            cidr_blocks=[str(new.vcn_cidr)],
            display_name=f"{shown}-vcn",
            dns_label=new.dns_label.replace("-", "")[:15],
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
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

        def route_table(kind: str, *rules: oci.core.RouteTableRouteRuleArgs) -> oci.core.RouteTable:
            return oci.core.RouteTable(
                f"{name}-{kind}-rt",
                compartment_id=compartment,
                vcn_id=vcn.id,
                display_name=f"{shown}-{kind}",
                route_rules=list(rules),
                opts=child,
            )

        def to_anywhere(
            gateway: oci.core.NatGateway | oci.core.InternetGateway,
        ) -> oci.core.RouteTableRouteRuleArgs:
            return oci.core.RouteTableRouteRuleArgs(
                network_entity_id=gateway.id, destination=ANYWHERE, destination_type="CIDR_BLOCK"
            )

        def security_list(
            role: str,
            ingress: list[oci.core.SecurityListIngressSecurityRuleArgs],
            egress: list[oci.core.SecurityListEgressSecurityRuleArgs] | None = None,
        ) -> oci.core.SecurityList:
            return oci.core.SecurityList(
                f"{name}-{role}",
                compartment_id=compartment,
                vcn_id=vcn.id,
                display_name=f"{shown}-{role}",
                ingress_security_rules=ingress,
                egress_security_rules=egress,
                opts=child,
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
        # Nodes, pods and the endpoint talk freely inside the VCN; RDMA traffic does not cross the VCN.
        intra_vcn = security_list(
            "intra-vcn",
            [oci.core.SecurityListIngressSecurityRuleArgs(protocol=ALL_TRAFFIC, source=str(new.vcn_cidr))],
            [oci.core.SecurityListEgressSecurityRuleArgs(protocol=ALL_TRAFFIC, destination=ANYWHERE)],
        )
        endpoint_rules = [
            oci.core.SecurityListIngressSecurityRuleArgs(
                protocol="6",
                source=str(cidr),
                tcp_options=oci.core.SecurityListIngressSecurityRuleTcpOptionsArgs(min=port, max=port),
            )
            for cidr in new.api_allowed_cidrs
            for port in API_PORTS
        ]
        endpoint_security = [intra_vcn.id]
        endpoint_rt = private_rt.id
        if endpoint_rules:
            endpoint_security.append(security_list("api-endpoint", endpoint_rules).id)
        if new.api_endpoint_public:
            igw = oci.core.InternetGateway(
                f"{name}-igw",
                compartment_id=compartment,
                vcn_id=vcn.id,
                display_name=f"{shown}-igw",
                opts=child,
            )
            endpoint_rt = route_table("public", to_anywhere(igw)).id

        def subnet(
            role: str, cidr: str, public: bool = False, security: list[pulumi.Output[str]] | None = None
        ) -> oci.core.Subnet:
            return oci.core.Subnet(
                f"{name}-{role}",
                compartment_id=compartment,
                vcn_id=vcn.id,
                cidr_block=cidr,
                display_name=f"{shown}-{role}",
                dns_label=role.replace("-", "")[:15],
                prohibit_public_ip_on_vnic=not public,
                route_table_id=endpoint_rt if public else private_rt.id,
                security_list_ids=security or [intra_vcn.id],
                opts=child,
            )

        self.vcn_id = vcn.id
        self.api_endpoint_subnet_id = subnet(
            "api-endpoint", str(new.api_endpoint_subnet_cidr), new.api_endpoint_public, endpoint_security
        ).id
        self.load_balancer_subnet_id = subnet("load-balancers", str(new.load_balancer_subnet_cidr)).id
        self.worker_subnet_id = subnet("workers", str(new.worker_subnet_cidr)).id
        self.pod_subnet_id = subnet("pods", str(new.pod_subnet_cidr)).id if args.vcn_native_pods else None


def _subnet_id(subnet: SubnetRef | None) -> pulumi.Output[str] | None:
    return None if subnet is None else pulumi.Output.from_input(subnet.id)
