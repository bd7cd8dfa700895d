"""The OKE cluster (an ENHANCED cluster created here, or an existing one) and its Kubernetes provider."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s
import pulumi_oci as oci

from oke_gpu_rdma import resource_types
from stack_config.cluster_version import ENHANCED_CLUSTER, RunningCluster
from stack_config.model import ClusterConfig

# The cluster type this stack creates and needs (stack_config/cluster_version.py says why).
CLUSTER_TYPE = ENHANCED_CLUSTER


@dataclass
class OkeClusterArgs:
    compartment_id: str
    """Compartment of the cluster."""
    cluster: ClusterConfig
    """Validated cluster config: `create` or `existing`."""
    vcn_id: pulumi.Input[str]
    """VCN of the cluster (used only when creating it)."""
    api_endpoint_subnet_id: pulumi.Input[str] | None
    """Subnet of the API endpoint (used only when creating it)."""
    load_balancer_subnet_id: pulumi.Input[str] | None
    """Subnet for service load balancers (used only when creating it)."""
    api_endpoint_public: bool = False
    """Whether the created endpoint gets a public IP."""
    protect: bool = True
    """Protect a created cluster from deletion."""


def read_existing_cluster(cluster_id: str) -> RunningCluster:
    """The Kubernetes version an existing cluster's control plane runs and its type, read from OCI.

    A plain (blocking) invoke, so the program can refuse a stack before it declares anything; Pulumi
    runs invokes during `pulumi preview` too (pulumi-oci `containerengine.get_cluster`: `kubernetes_version`,
    `type` BASIC_CLUSTER or ENHANCED_CLUSTER).
    """
    found = oci.containerengine.get_cluster(cluster_id=cluster_id)
    return RunningCluster(found.kubernetes_version, found.type)


class OkeCluster(pulumi.ComponentResource):
    """The cluster's OCID, its kubeconfig (secret) and a Kubernetes provider built from it."""

    cluster_id: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider

    def __init__(self, name: str, args: OkeClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(resource_types.CLUSTER_COMPONENT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        new = args.cluster.create
        if new is not None:
            if args.api_endpoint_subnet_id is None:
                raise ValueError("creating a cluster needs an API endpoint subnet")
            cluster = oci.containerengine.Cluster(
                f"{name}-cluster",
                compartment_id=args.compartment_id,
                name=new.name,
                kubernetes_version=new.kubernetes_version,
                type=CLUSTER_TYPE,
                vcn_id=args.vcn_id,
                cluster_pod_network_options=[
                    oci.containerengine.ClusterClusterPodNetworkOptionArgs(cni_type=new.cni_type)
                ],
                endpoint_config=oci.containerengine.ClusterEndpointConfigArgs(
                    subnet_id=args.api_endpoint_subnet_id, is_public_ip_enabled=args.api_endpoint_public
                ),
                options=oci.containerengine.ClusterOptionsArgs(
                    kubernetes_network_config=oci.containerengine.ClusterOptionsKubernetesNetworkConfigArgs(
                        pods_cidr=str(new.pods_cidr), services_cidr=str(new.services_cidr)
                    ),
                    service_lb_subnet_ids=[args.load_balancer_subnet_id]
                    if args.load_balancer_subnet_id
                    else None,
                ),
                opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
            )
            self.cluster_id = cluster.id
            endpoint = "PUBLIC_ENDPOINT" if args.api_endpoint_public else "PRIVATE_ENDPOINT"
        else:
            assert args.cluster.existing is not None  # ClusterConfig guarantees one of the two
            self.cluster_id = pulumi.Output.from_input(args.cluster.existing.id)
            endpoint = args.cluster.existing.kubeconfig_endpoint

        # The same call for a new and an existing cluster: OCI generates the kubeconfig on request.
        # Token v2 kubeconfigs run `oci ce cluster generate-token`: the OCI CLI must be configured
        # wherever Pulumi runs (the workflows install it).
        kubeconfig = oci.containerengine.get_cluster_kube_config_output(
            cluster_id=self.cluster_id,
            endpoint=endpoint,
            token_version="2.0.0",
            opts=pulumi.InvokeOutputOptions(parent=self),
        )
        self.kubeconfig = pulumi.Output.secret(kubeconfig.content)
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=self.kubeconfig, opts=child)
        self.register_outputs({"clusterId": self.cluster_id, "kubeconfig": self.kubeconfig})
