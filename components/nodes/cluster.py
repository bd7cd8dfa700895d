"""The OKE cluster (an ENHANCED cluster created here, or an existing one) and its Kubernetes provider."""

from dataclasses import replace
from typing import NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s
import pulumi_oci as oci

from components.component_inputs import ComponentInputError, is_known, schema_name, validated, value_problems
from oke_gpu_rdma.common import resource_types
from stack_config.nodes.cluster_version import ENHANCED_CLUSTER, RunningCluster
from stack_config.nodes.network_settings import ClusterConfig, KubeconfigEndpoint, NewCluster
from stack_config.problems import ConfigProblem
from stack_config.settings_types import ClusterOcid, KmsKeyOcid

# The cluster type this stack creates and needs (stack_config/nodes/cluster_version.py says why).
CLUSTER_TYPE = ENHANCED_CLUSTER


class NewClusterArgs(TypedDict):
    """An ENHANCED OKE cluster to create."""

    kubernetes_version: str
    """Kubernetes version of the control plane, v1.34.0 or later (the DRA objects are resource.k8s.io/v1)."""
    name: NotRequired[str]
    """Cluster name (default oke-gpu-rdma)."""
    cni_type: NotRequired[str]
    """Pod networking: FLANNEL_OVERLAY (default) or OCI_VCN_IP_NATIVE."""
    pods_cidr: NotRequired[str]
    """Pod CIDR (flannel)."""
    services_cidr: NotRequired[str]
    """Service CIDR."""


class OkeClusterArgs(TypedDict):
    """The inputs of the cluster: ``create`` one, or name an existing one by ``existingClusterId``."""

    compartment_id: pulumi.Input[str]
    """Compartment of the cluster."""
    create: NotRequired[NewClusterArgs]
    """The cluster to create (create-only settings: plain)."""
    existing_cluster_id: NotRequired[pulumi.Input[str]]
    """OCID of an existing ENHANCED cluster, instead of creating one."""
    kubeconfig_endpoint: NotRequired[str]
    """Which API endpoint the kubeconfig of an existing cluster uses (default PUBLIC_ENDPOINT)."""
    vcn_id: NotRequired[pulumi.Input[str]]
    """VCN of a created cluster."""
    api_endpoint_subnet_id: NotRequired[pulumi.Input[str]]
    """Subnet of a created cluster's API endpoint."""
    load_balancer_subnet_id: NotRequired[pulumi.Input[str]]
    """Subnet for a created cluster's service load balancers."""
    api_endpoint_public: NotRequired[bool]
    """Whether a created cluster's endpoint gets a public IP (default false)."""
    api_endpoint_nsg_ids: NotRequired[list[pulumi.Input[str]]]
    """NSGs of a created cluster's API endpoint (the Network's API endpoint NSG)."""
    kms_key_id: NotRequired[pulumi.Input[str]]
    """OCI Vault key OCID that encrypts a created cluster's Kubernetes secrets at rest (create-only)."""
    protect: NotRequired[bool]
    """Protect a created cluster from deletion (default true)."""


def new_cluster(name: str, args: OkeClusterArgs) -> NewCluster | None:
    """The cluster to create, checked by the stack config's model (None for an existing one), or
    :class:`ComponentInputError` naming each bad input."""
    create = args.get("create")
    problems: list[ConfigProblem] = []
    if (create is None) == (args.get("existing_cluster_id") is None):
        problems.append(ConfigProblem("create", None, "set exactly one of create or existingClusterId"))
    elif create is None:
        existing = args.get("existing_cluster_id")
        if is_known(existing):
            problems += value_problems("existingClusterId", existing, ClusterOcid)
        problems += value_problems(
            "kubeconfigEndpoint", args.get("kubeconfig_endpoint", "PUBLIC_ENDPOINT"), KubeconfigEndpoint
        )
    elif args.get("api_endpoint_subnet_id") is None or args.get("vcn_id") is None:
        problems.append(
            ConfigProblem(
                "apiEndpointSubnetId",
                None,
                "is missing; creating a cluster needs vcnId and apiEndpointSubnetId",
            )
        )
    kms_key_id = args.get("kms_key_id")
    if kms_key_id is not None and create is None:
        problems.append(
            ConfigProblem(
                "kmsKeyId",
                None,
                "is set for an existing cluster; OKE sets a cluster's secrets key when it creates it, so it "
                "cannot be set here: remove it",
            )
        )
    elif kms_key_id is not None and is_known(kms_key_id):
        problems += value_problems("kmsKeyId", kms_key_id, KmsKeyOcid)
    if args.get("api_endpoint_nsg_ids") and create is None:
        problems.append(
            ConfigProblem(
                "apiEndpointNsgIds",
                None,
                "is set for an existing cluster; remove it (its endpoint is its own)",
            )
        )
    config = None
    if create is not None:
        try:
            config = validated(NewCluster, {schema_name(k): v for k, v in create.items()}, "OkeCluster", name)
        except ComponentInputError as err:
            problems += [replace(p, path=f"create.{p.path}") for p in err.problems]
    if problems:
        raise ComponentInputError("OkeCluster", name, problems)
    return config


def cluster_args(
    compartment_id: str,
    cluster: ClusterConfig,
    vcn_id: pulumi.Input[str],
    api_endpoint_subnet_id: pulumi.Input[str] | None,
    load_balancer_subnet_id: pulumi.Input[str] | None,
    api_endpoint_public: bool,
    protect: bool,
    api_endpoint_nsg_id: pulumi.Input[str] | None = None,
    kms_key_id: str | None = None,
) -> OkeClusterArgs:
    """The Args of the stack's validated cluster config on its network (what __main__.py declares)."""
    args = OkeClusterArgs(compartment_id=compartment_id, protect=protect)
    if cluster.create is not None:
        new = cluster.create
        args["create"] = NewClusterArgs(
            name=new.name,
            kubernetes_version=new.kubernetes_version,
            cni_type=new.cni_type,
            pods_cidr=str(new.pods_cidr),
            services_cidr=str(new.services_cidr),
        )
        args["vcn_id"] = vcn_id
        args["api_endpoint_public"] = api_endpoint_public
        if api_endpoint_subnet_id is not None:
            args["api_endpoint_subnet_id"] = api_endpoint_subnet_id
        if load_balancer_subnet_id is not None:
            args["load_balancer_subnet_id"] = load_balancer_subnet_id
        if api_endpoint_nsg_id is not None:
            args["api_endpoint_nsg_ids"] = [api_endpoint_nsg_id]
        if kms_key_id is not None:
            args["kms_key_id"] = kms_key_id
    else:
        assert cluster.existing is not None  # ClusterConfig guarantees one of the two
        args["existing_cluster_id"] = cluster.existing.id
        args["kubeconfig_endpoint"] = cluster.existing.kubeconfig_endpoint
    return args


def read_existing_cluster(cluster_id: str) -> RunningCluster:
    """The Kubernetes version an existing cluster's control plane runs and its type, read from OCI.

    A plain (blocking) invoke, so the program can refuse a stack before it declares anything; Pulumi
    runs invokes during `pulumi preview` too (pulumi-oci `containerengine.get_cluster`: `kubernetes_version`,
    `type` BASIC_CLUSTER or ENHANCED_CLUSTER).
    """
    found = oci.containerengine.get_cluster(cluster_id=cluster_id)
    # options[0].kubernetesNetworkConfigs[0] (pulumi-oci GetClusterOptionKubernetesNetworkConfigResult).
    networks = [n for o in found.options or [] for n in o.kubernetes_network_configs or []]
    pods = networks[0].pods_cidr or None if networks else None
    services = networks[0].services_cidr or None if networks else None
    return RunningCluster(found.kubernetes_version, found.type, pods, services)


class OkeCluster(pulumi.ComponentResource):
    """An ENHANCED OKE cluster (created, or an existing one): its OCID, its kubeconfig (secret) and a
    Kubernetes provider built from it."""

    cluster_id: pulumi.Output[str]
    """OCID of the cluster."""
    kubeconfig: pulumi.Output[str]
    """Kubeconfig of the cluster (token v2: runs `oci ce cluster generate-token`), secret."""
    provider: k8s.Provider
    """A Kubernetes provider for the cluster: pass it in the providers option of the Kubernetes components."""

    def __init__(self, name: str, args: OkeClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(resource_types.CLUSTER_COMPONENT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        new = new_cluster(name, args)
        if new is not None:
            public = args.get("api_endpoint_public", False)
            load_balancer_subnet_id = args.get("load_balancer_subnet_id")
            cluster = oci.containerengine.Cluster(
                f"{name}-cluster",
                compartment_id=args["compartment_id"],
                name=new.name,
                kubernetes_version=new.kubernetes_version,
                type=CLUSTER_TYPE,
                vcn_id=args["vcn_id"],
                cluster_pod_network_options=[
                    oci.containerengine.ClusterClusterPodNetworkOptionArgs(cni_type=new.cni_type)
                ],
                endpoint_config=oci.containerengine.ClusterEndpointConfigArgs(
                    subnet_id=args["api_endpoint_subnet_id"],
                    is_public_ip_enabled=public,
                    nsg_ids=args.get("api_endpoint_nsg_ids"),
                ),
                # Create-only in terraform-provider-oci (kms_key_id ForceNew): the key of etcd's secrets.
                kms_key_id=args.get("kms_key_id"),
                options=oci.containerengine.ClusterOptionsArgs(
                    kubernetes_network_config=oci.containerengine.ClusterOptionsKubernetesNetworkConfigArgs(
                        pods_cidr=str(new.pods_cidr), services_cidr=str(new.services_cidr)
                    ),
                    service_lb_subnet_ids=[load_balancer_subnet_id] if load_balancer_subnet_id else None,
                ),
                opts=pulumi.ResourceOptions(parent=self, protect=args.get("protect", True)),
            )
            self.cluster_id = cluster.id
            endpoint = "PUBLIC_ENDPOINT" if public else "PRIVATE_ENDPOINT"
        else:
            self.cluster_id = pulumi.Output.from_input(args["existing_cluster_id"])
            endpoint = args.get("kubeconfig_endpoint", "PUBLIC_ENDPOINT")

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
