"""The stack config's `network` and `cluster` sections: a created VCN or existing subnets, a created
ENHANCED cluster or an existing one."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Literal

from pydantic import (
    Field,
    StrictBool,
    ValidationInfo,
    field_validator,
    model_validator,
)

from oke_gpu_rdma.common import pack_settings
from oke_gpu_rdma.nodes import cidr_rules as cidr
from oke_gpu_rdma.nodes import public_exposure
from stack_config.settings_types import (
    ApiAllowedCidr,
    Cidr,
    ClusterOcid,
    CniType,
    ConfigModel,
    DnsLabel,
    KubernetesVersion,
    OciBlock,
    SubnetOcid,
    VcnOcid,
)


class SubnetRef(ConfigModel):
    """An existing subnet: its OCID for the resources, its CIDR for the address-plan checks."""

    id: SubnetOcid = Field(description="Subnet OCID.")
    cidr: OciBlock = Field(description="The subnet's IPv4 CIDR, as OCI shows it.")


class NewNetwork(ConfigModel):
    """A VCN this stack creates, with one regional subnet per role."""

    vcn_cidr: OciBlock = Field(
        IPv4Network("10.140.0.0/16"), alias="vcnCidr", description="VCN CIDR block (OCI accepts /16 to /30)."
    )
    api_endpoint_subnet_cidr: OciBlock = Field(
        IPv4Network("10.140.0.0/28"),
        alias="apiEndpointSubnetCidr",
        description="Kubernetes API endpoint subnet.",
    )
    load_balancer_subnet_cidr: OciBlock = Field(
        IPv4Network("10.140.1.0/24"),
        alias="loadBalancerSubnetCidr",
        description="Service load balancer subnet.",
    )
    worker_subnet_cidr: OciBlock = Field(
        IPv4Network("10.140.64.0/19"),
        alias="workerSubnetCidr",
        description="Worker (primary VNIC) subnet. Its size decides the DRANET child range size.",
    )
    pod_subnet_cidr: OciBlock = Field(
        IPv4Network("10.140.128.0/18"),
        alias="podSubnetCidr",
        description="Pod subnet; created only when the cluster's CNI is OCI_VCN_IP_NATIVE.",
    )
    api_endpoint_public: StrictBool = Field(
        False,
        alias="apiEndpointPublic",
        description="Give the API endpoint a public IP (in a public subnet; adds an internet gateway).",
    )
    api_max_public_prefix: int = Field(
        public_exposure.DEFAULT_MAX_PUBLIC_PREFIX,
        ge=8,
        le=32,
        alias="apiMaxPublicPrefix",
        description="How much of the internet apiAllowedCidrs may open, as a prefix length: together (as one "
        "union, private and special-purpose space not counted) they may cover no more public addresses than "
        "one /N holds. The pack's "
        f"{pack_settings.PublicIngressSettings.policy} policy keeps its own bar (its maxPublicPrefix).",
    )
    api_allowed_cidrs: list[ApiAllowedCidr] = Field(
        default_factory=list,
        alias="apiAllowedCidrs",
        description="Extra CIDRs allowed to reach the API endpoint, on 6443 only (the VCN always is; the node "
        "bootstrap port 12250 is open to the worker subnet only); a /0 is refused, and so are ranges that "
        "together open more of the internet than apiMaxPublicPrefix allows (0.0.0.0/1 with 128.0.0.0/1).",
    )

    @field_validator("api_allowed_cidrs")
    @classmethod
    def _not_most_of_the_internet(cls, value: list[IPv4Network], info: ValidationInfo) -> list[IPv4Network]:
        # One union against one bar, so that no split of 0.0.0.0/0 passes (oke_gpu_rdma/nodes/public_exposure.py).
        prefix = info.data.get("api_max_public_prefix", public_exposure.DEFAULT_MAX_PUBLIC_PREFIX)
        for exposure in public_exposure.too_open(value, prefix):
            raise ValueError(
                f"{exposure.describe()} (apiMaxPublicPrefix: {prefix}); list only the networks that "
                "need the API (your office or VPN egress CIDRs, a /32 per admin host), or keep the endpoint "
                "private (apiEndpointPublic: false) and reach it from inside the VCN"
            )
        return value

    dns_label: DnsLabel = Field("okegpu", alias="dnsLabel", description="VCN DNS label.")


# OCI, "VCNs and Subnets" (Networking documentation, "VCN CIDR blocks"): a VCN has at most five IPv4 CIDR
# blocks, and they must not overlap one another.
MAX_VCN_CIDRS = 5


class ExistingNetwork(ConfigModel):
    """Subnets that already exist; their CIDRs feed the address-plan checks and the policy pack."""

    vcn_id: VcnOcid = Field(alias="vcnId", description="VCN OCID.")
    vcn_cidrs: list[OciBlock] = Field(
        alias="vcnCidrs",
        min_length=1,
        max_length=MAX_VCN_CIDRS,
        description=f"All CIDR blocks of the VCN (OCI: at most {MAX_VCN_CIDRS}, none overlapping another).",
    )
    worker_subnet: SubnetRef = Field(
        alias="workerSubnet", description="Subnet of the GPU nodes' primary VNICs."
    )
    api_endpoint_subnet: SubnetRef | None = Field(
        None, alias="apiEndpointSubnet", description="Needed only when this stack creates the cluster."
    )
    load_balancer_subnet: SubnetRef | None = Field(
        None, alias="loadBalancerSubnet", description="Service load balancer subnet."
    )
    pod_subnet: SubnetRef | None = Field(
        None, alias="podSubnet", description="Needed when the CNI is OCI_VCN_IP_NATIVE."
    )


class NetworkConfig(ConfigModel):
    """Either `create` a VCN or name `existing` subnets; plus the RDMA network of the rails."""

    create: NewNetwork | None = Field(None, description="Create a VCN and its subnets.")
    existing: ExistingNetwork | None = Field(None, description="Use existing subnets.")
    rdma_cidr: Cidr = Field(
        cidr.DEFAULT_OCA_RDMA_NETWORK,
        alias="rdmaCidr",
        description="The RDMA network Oracle Cloud Agent puts on the rails (OCA default 10.224.0.0/12).",
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> NetworkConfig:
        if (self.create is None) == (self.existing is None):
            raise ValueError("set exactly one of network.create or network.existing")
        return self


_CNI = "Pod networking: FLANNEL_OVERLAY, or OCI_VCN_IP_NATIVE (pods on the pod subnet)."
_PODS_CIDR = (
    "Pods CIDR (flannel); OKE gives each node a /25 of it, so it must hold one for every node of the stack."
)
_SERVICES_CIDR = "Services CIDR, /12 or smaller (the API server's limit)."


class NewCluster(ConfigModel):
    """An ENHANCED OKE cluster this stack creates."""

    name: DnsLabel = Field("oke-gpu-rdma", description="Cluster name.")
    kubernetes_version: KubernetesVersion = Field(
        alias="kubernetesVersion",
        description="v1.X.Y, v1.34 or later (every DRA object is resource.k8s.io/v1); the node pools use it too.",
    )
    cni_type: CniType = Field("FLANNEL_OVERLAY", alias="cniType", description=_CNI)
    pods_cidr: Cidr = Field(cidr.SEED_PODS_CIDR, alias="podsCidr", description=_PODS_CIDR)
    services_cidr: Cidr = Field(
        cidr.OKE_DEFAULT_SERVICES_CIDR, alias="servicesCidr", description=_SERVICES_CIDR
    )


KubeconfigEndpoint = Literal["PUBLIC_ENDPOINT", "PRIVATE_ENDPOINT", "VCN_HOSTNAME", "LEGACY_KUBERNETES"]


class ExistingCluster(ConfigModel):
    """An existing ENHANCED cluster; its CIDRs feed the address-plan checks."""

    id: ClusterOcid = Field(
        description="Existing cluster OCID. Its version and type are read from OCI: the version must equal "
        "kubernetesVersion, the type be ENHANCED_CLUSTER (the stack is sized by enhanced clusters' limits; a basic "
        "cluster is refused with the `oci ce cluster update --type ENHANCED_CLUSTER` that upgrades it)."
    )
    kubeconfig_endpoint: KubeconfigEndpoint = Field(
        "PUBLIC_ENDPOINT",
        alias="kubeconfigEndpoint",
        description="Which API endpoint the generated kubeconfig uses (PRIVATE_ENDPOINT needs a machine in the VCN); "
        "a created cluster uses its own (network.create.apiEndpointPublic).",
    )
    kubernetes_version: KubernetesVersion = Field(
        alias="kubernetesVersion", description="The node pools' Kubernetes version."
    )
    cni_type: CniType = Field("FLANNEL_OVERLAY", alias="cniType", description=_CNI)
    pods_cidr: Cidr = Field(cidr.SEED_PODS_CIDR, alias="podsCidr", description=_PODS_CIDR)
    services_cidr: Cidr = Field(
        cidr.OKE_DEFAULT_SERVICES_CIDR, alias="servicesCidr", description=_SERVICES_CIDR
    )


class ClusterConfig(ConfigModel):
    """Either `create` an OKE cluster or use an `existing` one."""

    create: NewCluster | None = None
    existing: ExistingCluster | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> ClusterConfig:
        if (self.create is None) == (self.existing is None):
            raise ValueError("set exactly one of cluster.create or cluster.existing")
        return self

    @property
    def spec(self) -> NewCluster | ExistingCluster:
        """The one that is set."""
        spec = self.create or self.existing
        assert spec is not None  # guaranteed by _exactly_one
        return spec
