"""The stack configuration: one pydantic model for the whole stack, with the seed cluster's defaults.

Every key a user writes under `oke-gpu-rdma:` in `stacks/Pulumi.<stack>.yaml` is a field here, in
camelCase as in the YAML. The model checks each value alone; :mod:`stack_config.address_plan` then
checks the values against each other (the DRANET child range against every other range).
Components receive the validated objects, never raw dictionaries.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from ipaddress import IPv4Address, IPv4Network
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    TypeAdapter,
    ValidationInfo,
    field_validator,
    model_validator,
)

from oke_gpu_rdma import cidr_rules as cidr
from oke_gpu_rdma import (
    cron,
    health,
    images,
    mpi_operator,
    node_sizes,
    pack_settings,
    public_exposure,
    resource_types,
)
from oke_gpu_rdma.acceptance import SEED_NCCL_BUSBW_GBS, SEED_RAIL_GBPS
from oke_gpu_rdma.attributes import NVIDIA_GPU_RESOURCE
from oke_gpu_rdma.labels import (
    DEVICE_PLUGIN_LABEL,
    FABRIC_LEVEL_LABELS,
    HOSTNAME_LABEL,
    RDMA_NETWORK_BLOCK_LABEL,
    RDMA_PATH_LABEL,
)
from oke_gpu_rdma.monitoring import chart_pods as monitoring_chart_pods
from oke_gpu_rdma.monitoring import grafana_admin as monitoring_grafana_admin
from oke_gpu_rdma.node_sizes import NodeSize
from oke_gpu_rdma.oci_regions import is_known_region, parse_ocid, unknown_region
from oke_gpu_rdma.releases import dranet, kube_prometheus_stack, kueue, network_operator, nvidia_gpu
from oke_gpu_rdma.releases import gpu_operator as gpu_operator_chart
from oke_gpu_rdma.shape_catalog import CATALOG
from oke_gpu_rdma.sriov import MAX_VFS_PER_PF, RdmaMode, RdmaPath
from oke_gpu_rdma.topology import DEFAULT_SHAPE

PROJECT = "oke-gpu-rdma"
# OCI names VM shapes VM.<family>...; a compute cluster is "a remote direct memory access (RDMA) network group"
# of HPC, GPU or optimized instances (OCI API, core model ComputeCluster), which the RDMA GPU shapes join as bare
# metal (BM.); a VM GPU shape such as VM.GPU.A10.1 has no RDMA rails.
VM_SHAPE_PREFIX = "VM."

_K8S_VERSION = re.compile(r"^v1\.(\d+)\.\d+$")
# Every DRA object here is resource.k8s.io/v1, served from Kubernetes 1.34 on (KEP-4381: DRA GA in 1.34).
MIN_KUBERNETES_MINOR = 34
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
# Kubernetes' label limits (apimachinery pkg/util/validation/validation.go: IsQualifiedName, a name part
# of at most 63 characters and a DNS-1123 subdomain prefix of at most 253; IsValidLabelValue, at most 63).
LABEL_NAME_MAX = 63
LABEL_PREFIX_MAX = 253
LABEL_VALUE_MAX = 63


def is_label_key(key: str) -> bool:
    """Whether ``key`` is a Kubernetes label (or taint) key, lengths included."""
    prefix, _, name = key.rpartition("/")
    return bool(_LABEL_KEY.match(key)) and len(name) <= LABEL_NAME_MAX and len(prefix) <= LABEL_PREFIX_MAX


def is_label_value(value: str) -> bool:
    """Whether ``value`` is a Kubernetes label (or taint) value."""
    return bool(_LABEL_VALUE.match(value)) and len(value) <= LABEL_VALUE_MAX


# OKE's node limits for enhanced clusters (Oracle, "Considerations when Defining Enhanced Clusters with Large
# Numbers of Managed Nodes" and "Kubernetes Engine Limits"): at most 1,000 managed nodes in a node pool and
# 2,000 in a cluster. The node pools of a stack therefore number at most 2,000 as well (each has a node).
MAX_NODES_PER_POOL = 1000
MAX_NODES_PER_CLUSTER = 2000
MAX_NODE_POOLS = MAX_NODES_PER_CLUSTER


def _a(word: str) -> str:
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


def _ocid_of(*kinds: str, regional: bool) -> AfterValidator:
    """An OCID of one of ``kinds`` (resource types); with a region exactly when the kind is ``regional``.

    Oracle, "Resource Identifiers": ocid1.<RESOURCE TYPE>.<REALM>.[REGION][.FUTURE USE].<UNIQUE ID>; the
    region is empty for tenancy-wide resources (tenancy, compartments) and set for regional ones (VCNs,
    subnets, clusters, images, compute clusters). OCI answers a wrong kind with 404 NotAuthorizedOrNotFound
    only after some resources exist.
    """
    example = f"ocid1.{kinds[0]}.oc1.{'<region>' if regional else ''}.<unique id>"
    wanted = " or ".join(kinds)

    def check(value: str) -> str:
        parsed = parse_ocid(value)
        if parsed is None:
            raise ValueError(f"is not an OCI OCID (expected {example})")
        if parsed.kind not in kinds:
            raise ValueError(f"is {_a(parsed.kind)} OCID; this key takes {_a(wanted)} OCID ({example})")
        if regional and parsed.region is None:
            raise ValueError(
                f"has no region, but {_a(parsed.kind)} OCID is regional ({example}); copy it whole from OCI"
            )
        if not regional and parsed.region is not None:
            raise ValueError(
                f"has a region, but {_a(parsed.kind)} OCID is tenancy-wide ({example}); copy it whole from OCI"
            )
        return value

    return AfterValidator(check)


def kubernetes_minor(version: str) -> int | None:
    """The minor of a `v1.X.Y` version (34 for v1.34.1); None for text of another form."""
    match = _K8S_VERSION.match(version)
    return int(match.group(1)) if match else None


def _k8s_version(value: str) -> str:
    minor = kubernetes_minor(value)
    if minor is None:
        raise ValueError("is not a Kubernetes version of the form v1.X.Y (for example v1.34.1)")
    if minor < MIN_KUBERNETES_MINOR:
        raise ValueError(
            f"is older than v1.{MIN_KUBERNETES_MINOR}: the claim templates and DeviceClasses are "
            f"resource.k8s.io/v1, which Kubernetes serves from v1.{MIN_KUBERNETES_MINOR}; use an OKE "
            f"version v1.{MIN_KUBERNETES_MINOR}.x or later"
        )
    return value


def _dns_label(value: str) -> str:
    if len(value) > 40 or not _DNS_LABEL.match(value):
        raise ValueError(
            "must be lowercase letters, digits and '-', start with a letter, at most 40 characters"
        )
    return value


def _cidr(value: Any) -> IPv4Network:
    try:
        return cidr.parse_ipv4_network(value)
    except cidr.CidrError as err:
        raise ValueError(str(err)) from None


def _oci_block(value: IPv4Network) -> IPv4Network:
    if not cidr.OCI_PREFIX_MIN <= value.prefixlen <= cidr.OCI_PREFIX_MAX:
        raise ValueError(
            f"OCI accepts VCN and subnet blocks from /{cidr.OCI_PREFIX_MIN} to /{cidr.OCI_PREFIX_MAX}"
        )
    return value


def _child_prefix(value: IPv4Network) -> IPv4Network:
    if not cidr.CHILD_PREFIX_MIN <= value.prefixlen <= cidr.CHILD_PREFIX_MAX:
        raise ValueError(
            f"has prefix /{value.prefixlen}; DRANET accepts child ranges from /{cidr.CHILD_PREFIX_MIN} "
            f"to /{cidr.CHILD_PREFIX_MAX}"
        )
    return value


def _not_everywhere(value: IPv4Network) -> IPv4Network:
    if value.prefixlen == 0:
        raise ValueError(
            "opens the Kubernetes API to every address on the internet; list the networks that need it "
            "(your office or VPN egress CIDR, a /32 per admin host), or keep the endpoint private "
            "(apiEndpointPublic: false) and reach it from inside the VCN"
        )
    return value


def _region(value: str) -> str:
    if not is_known_region(value):
        raise ValueError(unknown_region(value))
    return value


def _shape(value: str) -> str:
    names = CATALOG.names
    if value not in names:
        by_case = [n for n in names if n.lower() == value.lower()]
        close = by_case or difflib.get_close_matches(value, list(names), n=1, cutoff=0.6)
        guess = f"did you mean {close[0]}? (shape names are case-sensitive) " if close else ""
        raise ValueError(f"is not a known RDMA GPU shape; {guess}known shapes: {', '.join(sorted(names))}")
    return value


CompartmentOcid = Annotated[str, _ocid_of("compartment", "tenancy", regional=False)]
VcnOcid = Annotated[str, _ocid_of("vcn", regional=True)]
SubnetOcid = Annotated[str, _ocid_of("subnet", regional=True)]
ClusterOcid = Annotated[str, _ocid_of("cluster", regional=True)]
ImageOcid = Annotated[str, _ocid_of("image", regional=True)]
ComputeClusterOcid = Annotated[str, _ocid_of("computecluster", regional=True)]
KmsKeyOcid = Annotated[str, _ocid_of("key", regional=True)]
KubernetesVersion = Annotated[str, AfterValidator(_k8s_version)]
Cidr = Annotated[IPv4Network, BeforeValidator(_cidr)]
OciBlock = Annotated[IPv4Network, BeforeValidator(_cidr), AfterValidator(_oci_block)]
ApiAllowedCidr = Annotated[IPv4Network, BeforeValidator(_cidr), AfterValidator(_not_everywhere)]
ChildRange = Annotated[IPv4Network, BeforeValidator(_cidr), AfterValidator(_child_prefix)]
DnsLabel = Annotated[str, AfterValidator(_dns_label)]
ShapeName = Annotated[str, AfterValidator(_shape)]
Region = Annotated[str, AfterValidator(_region)]
CniType = Literal["FLANNEL_OVERLAY", "OCI_VCN_IP_NATIVE"]


# Oracle, "Block Volume Encryption" (docs.oracle.com/iaas/Content/Block/Concepts/overview.htm#BlockVolumeEncryption):
# in-transit encryption of boot and block volumes is available on virtual machine instances, and on bare
# metal instances only of these shapes; no other bare metal shape (no BM.GPU shape) supports it.
IN_TRANSIT_BARE_METAL_SHAPES: Final = frozenset(
    {"BM.Standard.E3.128", "BM.Standard.E4.128", "BM.DenseIO.E4.128"}
)


def supports_in_transit_encryption(shape: str) -> bool:
    """Whether OCI encrypts a ``shape`` instance's boot volume traffic in transit (on request)."""
    return shape.startswith("VM.") or shape in IN_TRANSIT_BARE_METAL_SHAPES


def in_transit_problem(shape: str) -> str:
    """Why ``shape`` cannot take inTransitEncryption, with the fix."""
    return (
        f"inTransitEncryption is true, but {shape} is a bare metal shape and OCI encrypts boot volume traffic in transit only on VM "
        f"shapes and {', '.join(sorted(IN_TRANSIT_BARE_METAL_SHAPES))} (Oracle, Block Volume Encryption); "
        "remove it for this pool (the boot volume stays encrypted at rest, with encryption.kmsKeyId if set)"
    )


_IN_TRANSIT = (
    "Encrypt the boot volume's traffic between host and storage (is_pv_encryption_in_transit_enabled); only "
    "on VM shapes and BM.Standard.E3.128, BM.Standard.E4.128, BM.DenseIO.E4.128 (no BM.GPU shape supports it)."
)


class _Model(BaseModel):
    """Strict about unknown keys, so a misspelt key is an error and not a silent default."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)


class SubnetRef(_Model):
    """An existing subnet: its OCID for the resources, its CIDR for the address-plan checks."""

    id: SubnetOcid = Field(description="Subnet OCID.")
    cidr: OciBlock = Field(description="The subnet's IPv4 CIDR, as OCI shows it.")


class NewNetwork(_Model):
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
    api_endpoint_public: bool = Field(
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
        # One union against one bar, so that no split of 0.0.0.0/0 passes (oke_gpu_rdma/public_exposure.py).
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


class ExistingNetwork(_Model):
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


class NetworkConfig(_Model):
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


class NewCluster(_Model):
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


class ExistingCluster(_Model):
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


class ClusterConfig(_Model):
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


class Taint(_Model):
    """A taint the kubelet registers the node with."""

    key: str = Field(description="A Kubernetes label key.")
    value: str = Field("", description="A Kubernetes label value (may be empty).")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(
        "NoSchedule", description="PreferNoSchedule never keeps a pod off the node; the other two do."
    )

    @model_validator(mode="after")
    def _valid(self) -> Taint:
        if not is_label_key(self.key):
            raise ValueError(f"taint key {self.key!r} is not a valid Kubernetes label key")
        if not is_label_value(self.value):
            raise ValueError(f"taint value {self.value!r} is not a valid Kubernetes label value")
        return self

    def kubelet_form(self) -> str:
        """`key=value:Effect`, as --register-with-taints takes it."""
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


def tolerations(taints: list[Taint]) -> list[dict[str, str]]:
    """Pod tolerations for `taints` (any value), one per key and effect, in order."""
    return [
        {"key": key, "operator": "Exists", "effect": effect}
        for key, effect in dict.fromkeys((t.key, t.effect) for t in taints)
    ]


# The taint OKE GPU nodes carry (the seeds' pods tolerate it); the key is the device plugin's resource name.
GPU_TAINT = Taint(key=NVIDIA_GPU_RESOURCE, value="present", effect="NoSchedule")


# OKE's cycle modes (OCI API reference, CycleMode; NodePoolCyclingDetails.cycleModes, an ordered list):
# BOOT_VOLUME_REPLACE swaps the boot volume on the same instance, so a bare-metal node keeps its host,
# but it can change only the image, Kubernetes version, boot volume size, node metadata (cloud-init),
# SSH key and boot volume KMS key; INSTANCE_REPLACE terminates the node and launches a new one.
CycleMode = Literal["BOOT_VOLUME_REPLACE", "INSTANCE_REPLACE"]
BOOT_VOLUME_REPLACE: CycleMode = "BOOT_VOLUME_REPLACE"
INSTANCE_REPLACE: CycleMode = "INSTANCE_REPLACE"


class NodeCycling(_Model):
    """How OKE replaces nodes when the pool's image, version or cloud-init changes."""

    enabled: bool = Field(True, description="Replace nodes automatically after a pool change.")
    maximum_surge: StrictInt = Field(
        0,
        ge=0,
        alias="maximumSurge",
        description="Extra nodes during cycling (bare metal capacity is scarce).",
    )
    maximum_unavailable: StrictInt = Field(
        1, ge=0, alias="maximumUnavailable", description="Nodes taken down at once: one at a time."
    )

    cycle_modes: list[CycleMode] | None = Field(
        None,
        alias="cycleModes",
        min_length=1,
        description="OKE's cycle modes in order (unset: OKE's default, not sent): BOOT_VOLUME_REPLACE "
        "keeps each bare-metal host and changes only image, Kubernetes version, boot volume, "
        "cloud-init and SSH key; INSTANCE_REPLACE replaces the node.",
    )

    @model_validator(mode="after")
    def _progress(self) -> NodeCycling:
        if self.enabled and self.maximum_surge == 0 and self.maximum_unavailable == 0:
            raise ValueError(
                "maximumSurge and maximumUnavailable cannot both be 0: cycling could never start"
            )
        return self


# How `pulumi up` replaces a GPU node pool when a change forces a new one (a new compute cluster,
# cluster or AD): the engine's default creates the new pool first, which needs the pool's bare-metal
# hosts twice over in its AD while both exist; deleting first needs them once, at the price of the
# pool's downtime (Pulumi resource option deleteBeforeReplace).
ReplaceOrder = Literal["deleteFirst", "createFirst"]
DELETE_FIRST: ReplaceOrder = "deleteFirst"
CREATE_FIRST: ReplaceOrder = "createFirst"


class SriovPoolConfig(_Model):
    """How an SR-IOV pool's rails become VFs (seed 001)."""

    vfs_per_pf: StrictInt = Field(
        2,
        ge=1,
        le=MAX_VFS_PER_PF,
        alias="vfsPerPf",
        description="VFs per rail PF (numVfs): 1 for one RDMA pod per node, 2 for two (Oracle Cloud allows at most 2).",
    )
    resource_per_rail: bool = Field(
        True,
        alias="resourcePerRail",
        description="One node policy, network and resource per rail (rdma-vf-0 ... rdma-vf-15); false: one "
        "resource rdma-vf over every rail, only with vfsPerPf 1.",
    )

    @model_validator(mode="after")
    def _per_rail_with_two_vfs(self) -> SriovPoolConfig:
        if self.vfs_per_pf > 1 and not self.resource_per_rail:
            raise ValueError(
                f"vfsPerPf {self.vfs_per_pf} needs resourcePerRail: true: one resource over "
                f"{self.vfs_per_pf * 16} VFs lets the kubelet give a pod both VFs of some rails and none of others "
                "(seed 001: pods got 2 VFs on 4 or 5 rails and none on 4 or 5 others); set resourcePerRail: true"
            )
        return self


class NodePoolConfig(_Model):
    """One OKE managed node pool of GPU nodes: inside a compute cluster with RDMA rails, or (rdma: none) without."""

    name: DnsLabel = Field(description="Pool name (a lowercase DNS label); also names its Pulumi resources.")
    shape: ShapeName = Field(
        DEFAULT_SHAPE,
        description="GPU shape of the catalog (a file in oke_gpu_rdma/shapes/, or shapeTopologies): bare metal "
        "for a pool with rails, a VM shape only with rdma: none.",
    )
    count: StrictInt = Field(
        ge=1,
        le=MAX_NODES_PER_POOL,
        description=f"Number of nodes (OKE: at most {MAX_NODES_PER_POOL:,} a pool; all pools and the system pool "
        f"at most {MAX_NODES_PER_CLUSTER:,}).",
    )
    image_id: ImageOcid = Field(
        alias="imageId", description="Custom image OCID (Ubuntu with DOCA-OFED and the GPU driver)."
    )
    availability_domain: str | None = Field(
        None,
        alias="availabilityDomain",
        description="AD of the compute cluster and the nodes, in oci:region as OCI names it (<prefix>:US-ASHBURN-AD-1, "
        "<prefix>:PHX-AD-2, <prefix>:EU-FRANKFURT-1-AD-3; AD 1 only in single-AD regions). Required when the "
        "compute cluster is created here, and always with rdma: none.",
    )
    compute_cluster_id: ComputeClusterOcid | None = Field(
        None,
        alias="computeClusterId",
        description="Use this compute cluster instead of creating one (its AD is looked up).",
    )
    boot_volume_size_gbs: StrictInt = Field(
        500, ge=50, le=32768, alias="bootVolumeSizeGbs", description="Boot volume in GB, 50 to 32768."
    )
    in_transit_encryption: bool = Field(False, alias="inTransitEncryption", description=_IN_TRANSIT)
    labels: dict[str, str] = Field(default_factory=dict, description="Extra initial node labels.")
    taints: list[Taint] = Field(
        default_factory=lambda: [GPU_TAINT],
        description="Taints registered by the kubelet; one per key and effect (the API server refuses a node with two).",
    )
    cycling: NodeCycling = Field(
        default_factory=lambda: NodeCycling(),
        description="Node replacement on pool changes (docs/plan-and-upgrades.md, node cycling).",
    )
    ssh_public_key: str | None = Field(
        None, alias="sshPublicKey", description="Public key for the node user."
    )
    rdma: RdmaPath = Field(
        RdmaPath.DRANET,
        description="Where pods get the rails: dranet (DRA claims, GPUs from the GPU DRA driver), sriov (one VF "
        "per rail per pod from the NVIDIA Network Operator, GPUs from the GPU Operator's device plugin) or none (no "
        "rails: GPUs only, from the device plugin, e.g. an A10 inference pool VM.GPU.A10.1 or a GPU pool DRANET does "
        "not select). A none pool gets no compute cluster (placed in its availabilityDomain on the worker subnet; no "
        "computeClusterId), no RDMA cloud-init (only the OKE bootstrap with its taints), no claim templates and no DRA "
        "driver, and its shape needs no topology.",
    )
    sriov: SriovPoolConfig | None = Field(
        None,
        description="SR-IOV settings of a pool with rdma: sriov (defaults: 2 VFs per PF, a resource per rail).",
    )
    onboarding: bool = Field(
        False,
        description="Onboard the pool's shape (rdma: dranet only): DRANET and the GPU DRA driver run on its nodes, "
        "but its shape gets no claim templates, so it needs no topology; the other pools keep theirs. Once the "
        "drivers run there, `make topology` prints the shape's shapeTopologies entry from the live "
        "ResourceSlices and nodes; add it and remove onboarding (docs/onboarding-a-shape.md). Every pool of one "
        "shape onboards or none: claim templates are per shape.",
    )
    replace_order: ReplaceOrder = Field(
        DELETE_FIRST,
        alias="replaceOrder",
        description="How pulumi up replaces the pool when a change forces a new one (its compute cluster, the OKE "
        "cluster or the AD replaced): deleteFirst (default) deletes the old pool first, so its nodes are down "
        "until the new ones join but no more hosts than the pool's are needed; createFirst keeps the old nodes "
        "until the new ones run, which needs free hosts of the shape for both pools in the AD at once.",
    )

    @property
    def delete_before_replace(self) -> bool:
        """The Pulumi resource option for this pool's replacement order."""
        return self.replace_order == DELETE_FIRST

    @property
    def sriov_settings(self) -> SriovPoolConfig | None:
        """The pool's SR-IOV settings when it is an SR-IOV pool (defaults when the block is omitted)."""
        if self.rdma is not RdmaPath.SRIOV:
            return None
        return self.sriov or SriovPoolConfig()

    @model_validator(mode="after")
    def _one_rdma_path(self) -> NodePoolConfig:
        if self.sriov is not None and self.rdma is not RdmaPath.SRIOV:
            raise ValueError(
                f"asks for both RDMA paths: rdma is {self.rdma} but an sriov block is set. A pool uses either "
                "DRANET or SR-IOV, never both: DRANET's oke-rdma profile needs the shared RDMA mode and the GPU "
                "DRA driver, and the GPU DRA driver cannot run beside the device plugin that SR-IOV pods get "
                "their GPUs from. Set rdma: sriov, or remove the sriov block"
            )
        if RDMA_PATH_LABEL in self.labels:
            raise ValueError(f"label {RDMA_PATH_LABEL} is set from rdma; remove it from labels")
        if self.onboarding and self.rdma is not RdmaPath.DRANET:
            raise ValueError(
                f"onboarding is set but rdma is {self.rdma}: onboarding runs DRANET and the GPU DRA driver on the "
                "pool so that `make topology` can read its shape from their ResourceSlices; set rdma: dranet, or "
                "remove onboarding"
            )
        return self

    @property
    def in_compute_cluster(self) -> bool:
        """Whether the pool is placed in a compute cluster: every pool with RDMA rails, never an rdma: none one."""
        return self.rdma is not RdmaPath.NONE

    @model_validator(mode="after")
    def _in_transit(self) -> NodePoolConfig:
        if self.in_transit_encryption and not supports_in_transit_encryption(self.shape):
            raise ValueError(in_transit_problem(self.shape))
        return self

    @model_validator(mode="after")
    def _placement(self) -> NodePoolConfig:
        if self.in_compute_cluster and self.shape.startswith(VM_SHAPE_PREFIX):
            raise ValueError(
                f"shape {self.shape} is a VM shape but rdma is {self.rdma}: the RDMA rails need the pool in a "
                "compute cluster, which takes bare-metal shapes only. Set rdma: none for a pool without rails, or "
                "use a bare-metal (BM.) shape"
            )
        if not self.in_compute_cluster:
            if self.compute_cluster_id is not None:
                raise ValueError(
                    f"computeClusterId is set but rdma is {self.rdma}: a compute cluster is for the RDMA fabric "
                    "between bare-metal nodes, and a pool without rails is not placed in one. Remove "
                    "computeClusterId, or set rdma: dranet or sriov"
                )
            if not self.availability_domain:
                raise ValueError(
                    f"availabilityDomain is required with rdma: {self.rdma}: the pool is placed in that AD on "
                    "the worker subnet"
                )
        if self.compute_cluster_id is None and not self.availability_domain:
            raise ValueError(
                "availabilityDomain is required when the stack creates the compute cluster "
                "(or set computeClusterId to use an existing one)"
            )
        if DEVICE_PLUGIN_LABEL in self.labels:
            raise ValueError(
                f"label {DEVICE_PLUGIN_LABEL} is set from gpuDriver.enabled (false on every rdma: dranet pool "
                "when the GPU DRA driver is on); remove it from labels"
            )
        for key, value in self.labels.items():
            if not is_label_key(key) or not is_label_value(value):
                raise ValueError(
                    f"label {key}={value!r} is not a valid Kubernetes label (key: an optional DNS prefix of at "
                    f"most {LABEL_PREFIX_MAX} characters and '/', then at most {LABEL_NAME_MAX} letters, digits, "
                    f"'-', '_' or '.'; value: at most {LABEL_VALUE_MAX} of those)"
                )
        # The API server refuses a Node with two taints of one key and effect (kubernetes
        # pkg/apis/core/validation/validation.go validateNodeTaints: "taints must be unique by key and effect
        # pair"), so the node would never register.
        seen: set[tuple[str, str]] = set()
        for taint in self.taints:
            if (taint.key, taint.effect) in seen:
                raise ValueError(
                    f"taints: {taint.key}:{taint.effect} is given twice; Kubernetes refuses a node whose taints "
                    "repeat a key and effect, so keep one"
                )
            seen.add((taint.key, taint.effect))
        # OCI's node cycling takes 0 to the pool's size for both (OCI API NodePoolCyclingDetails:
        # maximumSurge and maximumUnavailable "Ranges from 0 to Nodepool size").
        for setting, nodes in (
            ("maximumSurge", self.cycling.maximum_surge),
            ("maximumUnavailable", self.cycling.maximum_unavailable),
        ):
            if nodes > self.count:
                raise ValueError(
                    f"cycling.{setting} {nodes} is more than the pool's {self.count} nodes; OKE takes 0 to the pool "
                    "size"
                )
        return self


class DranetConfig(_Model):
    """DRANET, the DRA driver for the rails (Helm chart in kube-system)."""

    enabled: bool = Field(True, description="Deploy DRANET and its DeviceClass.")
    chart_version: str = Field(
        dranet.DEFAULT_VERSION, alias="chartVersion", description="Version of the dranet Helm chart."
    )
    image_tag: str | None = Field(
        None, alias="imageTag", description="DRANET image tag; defaults to chartVersion."
    )
    child_range: ChildRange = Field(
        cidr.DEFAULT_CHILD_RANGE,
        alias="childRange",
        description=f"{dranet.CHILD_RANGE_OPTION}: the IPvlan child range of the rails (DRANET default "
        f"{cidr.DEFAULT_CHILD_RANGE}); passed to the chart only when not the default.",
    )
    native_infiniband: bool = Field(
        False, alias="nativeInfiniband", description="Rails are native InfiniBand: moveIBInterfaces false."
    )
    mount_oca_config: bool = Field(
        False,
        alias="mountOcaConfig",
        description="Mount the Oracle Cloud Agent RDMA config read-only (images that use another RDMA network).",
    )


class ComputeDomainsConfig(_Model):
    """The driver's ComputeDomains (multi-node NVLink through IMEX channels) on the pools of shapes whose shape
    file states multi-node NVLink (docs/compute-domains.md)."""

    enabled: bool | None = Field(
        None,
        description="A second release of the driver with only its ComputeDomain controller (on the system pool) "
        "and kubelet plugin (on those pools); default: on when the stack has such a pool.",
    )


class GpuDriverConfig(_Model):
    """The NVIDIA DRA driver for GPUs; the GPU pools then carry the label that turns the device plugin off."""

    enabled: bool = Field(
        True, description=f"Deploy the driver; GPUs then come from DRA claims, not {NVIDIA_GPU_RESOURCE}."
    )
    chart_version: str = Field(
        nvidia_gpu.DEFAULT_VERSION,
        alias="chartVersion",
        description="Version of dra-driver-nvidia-gpu.",
    )
    namespace: DnsLabel = Field(nvidia_gpu.NAMESPACE, description="Namespace of the driver.")
    compute_domains: ComputeDomainsConfig = Field(
        default_factory=ComputeDomainsConfig,
        alias="computeDomains",
        description="ComputeDomains for multi-node NVLink.",
    )


class GpuOperatorConfig(_Model):
    """The NVIDIA GPU Operator: GPU feature discovery (`nvidia.com/gpu.present`), the container toolkit, and
    the device plugin, which stays off on the DRA pools through their initial node label."""

    enabled: bool | None = Field(
        None,
        description="Deploy the GPU Operator; default: on when the stack creates the cluster, off for an "
        "existing cluster (which usually runs one already, as the seed cluster did).",
    )
    chart_version: str = Field(
        gpu_operator_chart.DEFAULT_VERSION,
        alias="chartVersion",
        description="Version of the gpu-operator chart.",
    )
    namespace: DnsLabel = Field(
        gpu_operator_chart.NAMESPACE, description="Namespace of the operator (created)."
    )


_COUNTER = re.compile(r"^(counters|hw_counters)/[a-z0-9_]+$")


def _error_counters(names: list[str]) -> list[str]:
    bad = [n for n in names if not _COUNTER.match(n)]
    if bad:
        raise ValueError(
            f"{', '.join(repr(n) for n in bad)} names no file of a port's counters/ or hw_counters/ directory "
            "(/sys/class/infiniband/<device>/ports/1/); write counters/<name> or hw_counters/<name>, e.g. "
            "counters/symbol_error"
        )
    return list(dict.fromkeys(names))


class RailHealthConfig(_Model):
    """The rail health agent: a DaemonSet on every DRANET pool that checks each rail and marks a bad one
    (docs/health.md)."""

    enabled: bool = Field(False, description="Run the rail health agent on the DRANET pools.")
    image: str = Field(
        health.RAIL_AGENT_IMAGE,
        description="Image with bash and kubectl the agent runs in (Kubernetes' own).",
    )
    namespace: DnsLabel = Field("rail-health", description="Namespace of the agent (created).")
    interval_seconds: StrictInt = Field(
        30, ge=5, le=3600, alias="intervalSeconds", description="Seconds between two checks of the rails."
    )
    recovery_checks: StrictInt = Field(
        5,
        ge=1,
        le=1000,
        alias="recoveryChecks",
        description="Good checks in a row a marked rail needs before its mark is lifted.",
    )
    recovery_minutes: StrictInt = Field(
        10,
        ge=0,
        le=1440,
        alias="recoveryMinutes",
        description="Minutes since its last bad check a marked rail needs before its mark is lifted (a "
        "flapping link stays marked).",
    )
    error_threshold: StrictInt = Field(
        0,
        ge=0,
        alias="errorThreshold",
        description="Growth of an error counter between two checks above which the rail is bad (0: any).",
    )
    error_counters: Annotated[list[str], AfterValidator(_error_counters)] = Field(
        default_factory=lambda: list(health.DEFAULT_ERROR_COUNTERS),
        alias="errorCounters",
        description="The port's error counters the agent watches, as counters/<name> or hw_counters/<name>.",
    )


class RemediationConfig(_Model):
    """Closed-loop remediation (docs/health.md, "Remediation"): a node of a listed pool whose GPU, rail or
    fabric-check mark lasts is cordoned, its Kueue jobs evicted and requeued, drained, replaced in its node
    pool, checked alone and returned."""

    pools: list[DnsLabel] = Field(
        default_factory=list,
        description="GPU pools remediated (opt-in per pool; none by default). Each needs the scheduled fabric "
        "check on it (workloads.acceptanceJobs.schedule and nodePool) to prove a replacement.",
    )
    after_minutes: StrictInt = Field(
        15,
        ge=0,
        le=10080,
        alias="afterMinutes",
        description="Minutes a mark must last before the node is cordoned.",
    )
    grace_minutes: StrictInt = Field(
        30,
        ge=0,
        le=1440,
        alias="graceMinutes",
        description="Minutes a cordoned node's jobs keep running (to checkpoint) before Kueue evicts them.",
    )
    drain_minutes: StrictInt = Field(
        30,
        ge=1,
        le=1440,
        alias="drainMinutes",
        description="Minutes eviction and drain may take before the repair.",
    )
    replace_minutes: StrictInt = Field(
        90,
        ge=10,
        le=1440,
        alias="replaceMinutes",
        description="Minutes OKE may take to remove the node and bring its replacement.",
    )
    max_nodes_per_pool: StrictInt = Field(
        1, ge=1, le=64, alias="maxNodesPerPool", description="Nodes of one pool in remediation at once."
    )
    max_attempts: StrictInt = Field(
        2,
        ge=1,
        le=10,
        alias="maxAttempts",
        description="Failed repairs or checks before a node is held cordoned.",
    )
    keep_schedulable: StrictInt = Field(
        2,
        ge=0,
        le=1000,
        alias="keepSchedulable",
        description="Schedulable nodes a pool keeps: no node is taken out while fewer others would serve.",
    )
    interval_seconds: StrictInt = Field(
        30,
        ge=5,
        le=3600,
        alias="intervalSeconds",
        description="Seconds between two rounds of the controller.",
    )
    namespace: DnsLabel = Field("node-remediation", description="Namespace of the controller (created).")
    image: str = Field(
        images.PYTHON_IMAGE,
        description="Python 3 image the controller and its repair Jobs run in (the standard library is enough "
        "for the controller; a repair Job installs the OCI SDK from a hashed lock).",
    )

    @property
    def enabled(self) -> bool:
        return bool(self.pools)


class HealthConfig(_Model):
    """Day-2 health: bad GPUs and rails taken out of scheduling (docs/health.md)."""

    gpu: bool = Field(
        False,
        description="The NVIDIA DRA driver's NVML health checks (feature gate NVMLDeviceHealthCheck): a GPU "
        "with a fatal XID or lost is tainted NoSchedule in its ResourceSlice. Needs driver v0.4.0+ and "
        "Kubernetes 1.36+ (DRADeviceTaints).",
    )
    rails: RailHealthConfig = Field(default_factory=lambda: RailHealthConfig())
    remediation: RemediationConfig = Field(default_factory=lambda: RemediationConfig())


class VfPoolConfig(_Model):
    """The NVIDIA IPAM IPPool the VFs get their addresses from (seed 001 ip-pool.yaml)."""

    name: DnsLabel = Field("sriov-pool", description="IPPool name; every SriovNetwork's ipam names it.")
    subnet: Cidr = Field(
        cidr.DEFAULT_VF_POOL,
        description="VF address range; must overlap no VCN, subnet, pods or services CIDR, the OCA RDMA "
        "network or the DRANET child range.",
    )
    gateway: IPv4Address | None = Field(
        IPv4Address("192.168.0.1"), description="Gateway of the pool, inside subnet (null: none)."
    )
    per_node_block_size: StrictInt = Field(
        100, ge=2, alias="perNodeBlockSize", description="Addresses NVIDIA IPAM gives each node."
    )

    @model_validator(mode="after")
    def _gateway_inside(self) -> VfPoolConfig:
        if self.gateway is not None and (
            self.gateway not in self.subnet
            or self.gateway in (self.subnet.network_address, self.subnet.broadcast_address)
        ):
            raise ValueError(f"gateway {self.gateway} is not a host address of subnet {self.subnet}")
        if self.per_node_block_size > self.subnet.num_addresses:
            raise ValueError(
                f"perNodeBlockSize {self.per_node_block_size} is larger than subnet {self.subnet} "
                f"({self.subnet.num_addresses} addresses)"
            )
        return self


# The namespace of the SR-IOV path's RDMA pods: the stack creates it and labels it Pod Security baseline.
SRIOV_JOBS_NAMESPACE = "rdma-sriov"


def _own_namespace(name: str) -> str:
    # Namespaces every cluster has: the stack would take over (and on destroy delete) what it does not own,
    # and `default` cannot carry the workloads' Pod Security level for them alone (issue 28).
    if name == "default" or name.startswith("kube-"):
        raise ValueError(
            f"{name} is a namespace every cluster has, whose Pod Security level the stack does not set; the "
            f"SR-IOV pods need one the stack creates and labels baseline: use {SRIOV_JOBS_NAMESPACE} (the "
            "default) or another name"
        )
    return name


class NetworkOperatorConfig(_Model):
    """The NVIDIA Network Operator for pools with rdma: sriov (deployed only when a pool has it)."""

    chart_version: str = Field(
        network_operator.DEFAULT_VERSION,
        alias="chartVersion",
        description="network-operator chart version; the NicClusterPolicy images use network-operator-v<version>.",
    )
    namespace: DnsLabel = Field(network_operator.NAMESPACE, description="Namespace of the operator.")
    deploy_nfd: bool = Field(
        False,
        alias="deployNfd",
        description="Deploy the chart's Node Feature Discovery (off: the cluster already runs NFD, e.g. the GPU "
        "Operator's; the release then waits for the GPU Operator's NFD, whose CRD its NodeFeatureRule needs, and a "
        "cluster the stack creates without the GPU Operator is refused).",
    )
    rdma_mode: RdmaMode = Field(
        "shared",
        alias="rdmaMode",
        description="RDMA namespace mode of the SR-IOV pools: shared (no RDMA CNI) or exclusive (netns_mode=0 "
        "on the nodes, the RDMA CNI with rdmaQoS in every network).",
    )
    network_namespace: Annotated[DnsLabel, AfterValidator(_own_namespace)] = Field(
        SRIOV_JOBS_NAMESPACE,
        alias="networkNamespace",
        description="Namespace of the NetworkAttachmentDefinitions, i.e. of the pods that use the VFs (the "
        "acceptance jobs among them). The stack creates it with Pod Security baseline; not `default` nor a "
        "kube- namespace, which the stack does not own.",
    )
    vf_pool: VfPoolConfig = Field(
        default_factory=lambda: VfPoolConfig(),
        alias="vfPool",
        description="The NVIDIA IPAM IPPool of the VFs.",
    )


class ClaimTemplateConfig(_Model):
    """A ResourceClaimTemplate pairing GPUs with the rails on their PCIe roots (or NUMA node)."""

    name: DnsLabel = Field(description="Template name; pods reference it in resourceClaims.")
    gpus_per_worker: StrictInt = Field(
        alias="gpusPerWorker", ge=1, description="GPUs one pod gets (with their rails)."
    )
    namespace: DnsLabel | None = Field(None, description="Defaults to workloads.namespace.")
    shapes: list[ShapeName] | None = Field(
        None,
        min_length=1,
        description="The shapes of the stack's rdma: dranet pools it is made for, each of which must hold it; "
        "default: every such shape whose nodes can align gpusPerWorker GPUs (the preview lists which shapes got "
        "it), refused when none can.",
    )

    @field_validator("shapes")
    @classmethod
    def _distinct_shapes(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            repeated = sorted({s for s in value if value.count(s) > 1})
            raise ValueError(f"names a shape twice ({', '.join(repeated)}); list each once")
        return value


def _known_mpi_operator(version: str) -> str:
    # The facts of each release the stack can install (oke_gpu_rdma/mpi_operator_releases.json).
    known = mpi_operator.releases()
    if version not in known:
        raise ValueError(
            f"MPI operator {version} has no facts in oke_gpu_rdma/mpi_operator_releases.json (known: "
            f"{', '.join(sorted(known))}); use one of those, or add it with "
            f"`python -m tools.mpi_operator_facts <its {mpi_operator.MANIFEST_PATH}> --version {version} "
            "--commit <the tag's commit>`"
        )
    return version


# pulumi-kubernetes reads pulumi.com/timeoutSeconds into a Go time.Duration (int64 nanoseconds), which holds
# at most 2^63 ns, about 292 years: 153,722,867 minutes.
MAX_TIMEOUT_MINUTES = (2**63 - 1) // (60 * 10**9)


def _cron_schedule(value: str) -> str:
    found = cron.problem(value)
    if found is not None:
        raise ValueError(found)
    return value


class AcceptanceJobsConfig(_Model):
    """Jobs that measure what the setup delivers (off by default: they hold whole nodes)."""

    enabled: bool = Field(False, description="Deploy the acceptance jobs chosen below.")
    nccl: bool = Field(True, description="The MPI operator and the NCCL all_reduce MPIJob.")
    rail_bandwidth: bool = Field(
        False,
        alias="railBandwidth",
        description="The rail test MPIJob (ib_write_bw on every rail); not together with nccl (both take every rail).",
    )
    image: str = Field(
        "iad.ocir.io/idxzjcdglx2s/nccl-tests:cuda-13.4.1-ubuntu-24.04-nccl-2.32.3-100526.0",
        description="Image with NCCL tests, perftest and sshd (the seed's).",
    )
    workers: StrictInt = Field(
        2, ge=2, le=MAX_NODES_PER_POOL, description="MPIJob workers, one per node of the jobs' pool."
    )
    claim_template: DnsLabel | None = Field(
        None,
        alias="claimTemplate",
        description="Template the NCCL workers use; default: the one made for the jobs' pool's shape with all of "
        "a node's GPUs (aligned-8gpu-16rails on BM.GPU.B4.8, aligned-4gpu-8rails on BM.GPU.GB200-v3.4).",
    )
    mpi_operator_version: Annotated[str, AfterValidator(_known_mpi_operator)] = Field(
        mpi_operator.DEFAULT_VERSION,
        alias="mpiOperatorVersion",
        description="Kubeflow MPI operator release; its manifest is applied from the release's commit at "
        "apply time; its facts must be in oke_gpu_rdma/mpi_operator_releases.json (tools/mpi_operator_facts.py).",
    )
    node_pool: DnsLabel | None = Field(
        None,
        alias="nodePool",
        description="Pool the jobs run in (default: the first pool): one compute cluster, one RDMA fabric.",
    )
    rail_gbps: float | None = Field(
        None,
        alias="railGbps",
        gt=0,
        allow_inf_nan=False,
        description="Minimum ib_write_bw per rail in Gb/s; a rail below it fails the job and `pulumi up`. "
        f"Default: the seed's lowest rail, DRANET {SEED_RAIL_GBPS['dranet']} (seed 000), SR-IOV "
        f"{SEED_RAIL_GBPS['sriov']} (seed 001).",
    )
    nccl_busbw_gbs: float | None = Field(
        None,
        alias="ncclBusbwGBs",
        gt=0,
        allow_inf_nan=False,
        description="Minimum NCCL all_reduce busbw at 8 GiB (out of place) in GB/s of each NCCL job; below "
        "it the job fails and `pulumi up` with it. Default: the seed's figure for the job's GPUs per worker "
        f"on 2 nodes, DRANET {SEED_NCCL_BUSBW_GBS['dranet']} (seed 000), SR-IOV "
        f"{SEED_NCCL_BUSBW_GBS['sriov']} (seed 001); required for other GPU counts.",
    )
    timeout_minutes: StrictInt = Field(
        30,
        alias="timeoutMinutes",
        ge=1,
        le=MAX_TIMEOUT_MINUTES,
        description="How long `pulumi up` waits for a job to succeed (pulumi.com/timeoutSeconds): a job that "
        "fails shows as this timeout, since the job's Succeeded condition never comes; the scheduled checks "
        "give up on a job (skipped, no mark) after as long.",
    )
    schedule: Annotated[str, AfterValidator(_cron_schedule)] | None = Field(
        None,
        description="Run the checks chosen by nccl and railBandwidth again on this CronJob schedule (e.g. "
        "'0 3 * * *'), one after the other, only on pairs of nodes of the jobs' pool that no pod with a "
        "ResourceClaim holds, with the same claim templates and thresholds (components/fabric_checks.py); a "
        "rail below railGbps is tainted oke-gpu-rdma/rail-unhealthy, a node pair below ncclBusbwGBs labelled "
        "oke-gpu-rdma/fabric-check=fail with the node condition FabricCheckFailed. Independent of enabled "
        "(the apply-time gate). Off (null) by default: a small stack rarely has two idle nodes.",
    )
    check_image: str = Field(
        images.KUBECTL_SHELL_IMAGE,
        alias="checkImage",
        description="Image of the scheduled checks' controller: bash, kubectl and jq (alpine/k8s, the kubectl "
        "release of the cluster's minor).",
    )

    @property
    def active(self) -> bool:
        """Whether the stack runs these jobs at all: as the apply-time gate, on a schedule, or both."""
        return self.enabled or self.schedule is not None

    @model_validator(mode="after")
    def _one_at_a_time(self) -> AcceptanceJobsConfig:
        # The scheduled checks run their jobs one after the other, so both may be on there.
        if self.enabled and self.nccl and self.rail_bandwidth:
            raise ValueError(
                "nccl and railBandwidth both hold every rail of their nodes, so one would wait for the other "
                "forever; enable one at a time"
            )
        return self


def _fabric_level(level: str) -> str:
    # A job's whole pod set within one domain of this level (the Topology's levels, oke_gpu_rdma/labels.py); the
    # acceptance job has at least two workers, one per node, so one host is never enough.
    levels = [label for label in FABRIC_LEVEL_LABELS if label != HOSTNAME_LABEL]
    if level not in levels:
        raise ValueError(f"{level!r} is not a fabric level of the Topology; use one of {', '.join(levels)}")
    return level


class NodeSizeConfig(_Model):
    """What the kubelet of one node of a shape reports: `kubectl get node <node> -o jsonpath='{.status.capacity}'`."""

    cpus: StrictInt = Field(ge=1, description="The node's CPUs (status.capacity.cpu).")
    memory_gib: StrictInt = Field(
        alias="memoryGiB", ge=1, description="The node's memory in GiB (status.capacity.memory)."
    )


class SchedulingConfig(_Model):
    """Kueue with topology-aware scheduling over the RDMA fabric (docs/scheduling.md): the chart, one Topology with
    the fabric levels, a ResourceFlavor per RDMA shape, a ClusterQueue with the pools' GPUs, rails, CPUs and memory,
    and a LocalQueue in each workload namespace."""

    enabled: bool = Field(
        False, description="Install Kueue and the queue; the acceptance jobs then run through it."
    )
    chart_version: str = Field(
        kueue.DEFAULT_VERSION, alias="chartVersion", description="Version of the kueue Helm chart."
    )
    namespace: DnsLabel = Field(kueue.NAMESPACE, description="Namespace of Kueue (created).")
    topology: DnsLabel = Field("rdma-fabric", description="Name of the Topology (the RDMA fabric's levels).")
    cluster_queue: DnsLabel = Field(
        "rdma-gpus", alias="clusterQueue", description="Name of the ClusterQueue."
    )
    local_queue: DnsLabel = Field(
        "rdma-gpus",
        alias="localQueue",
        description="Name of the LocalQueue in each workload namespace (the jobs' kueue.x-k8s.io/queue-name).",
    )
    acceptance_level: Annotated[str, AfterValidator(_fabric_level)] = Field(
        RDMA_NETWORK_BLOCK_LABEL,
        alias="acceptanceLevel",
        description="The Topology level the NCCL acceptance job's workers must share "
        "(kueue.x-k8s.io/podset-required-topology).",
    )
    node_sizes: dict[ShapeName, NodeSizeConfig] = Field(
        default_factory=dict,
        alias="nodeSizes",
        description="CPUs and memory of a node per shape, for a shape OCI's table in oke_gpu_rdma/node_sizes.py "
        "lacks or where the tenancy's nodes differ: the flavors' quotas and the whole-node workers' CPU requests "
        "are built from them.",
    )
    pods_ready_timeout_minutes: int = Field(
        kueue.DEFAULT_PODS_READY_TIMEOUT_MINUTES,
        ge=1,
        alias="podsReadyTimeoutMinutes",
        description="Minutes an admitted job's pods have to become Ready (image pulls included) before Kueue evicts "
        "the job, frees its quota and requeues it (waitForPodsReady; backoff from 60 s doubling to an hour).",
    )


class PolicyPackConfig(_Model):
    """What the stack tells the policy pack beyond what it declares: claims judged elsewhere."""

    managed_device_classes: Annotated[tuple[str, ...], AfterValidator(pack_settings.device_class_names)] = (
        Field(
            (),
            alias="managedDeviceClasses",
            description="DeviceClasses another stack or an operator manages (and judges the claims of): a claim on "
            "one this stack does not declare, or whose selectors the pack cannot evaluate, is then a note; "
            "otherwise it is a mandatory finding (pack config gpu-rail-claims-aligned.managedDeviceClasses).",
        )
    )
    managed_helm_releases: Annotated[tuple[str, ...], AfterValidator(pack_settings.release_names)] = Field(
        (),
        alias="managedHelmReleases",
        description="helm.sh/v3 Releases of charts the pack does not know (Pulumi resource name or Helm release "
        "name) whose claims are judged elsewhere, or that hold none; any other such release is a mandatory "
        "finding, since Helm installs its objects outside the stack (pack config "
        "gpu-rail-claims-aligned.managedHelmReleases).",
    )


class WorkloadsConfig(_Model):
    """Where RDMA training pods run and the claim templates they use."""

    namespace: DnsLabel = Field(
        "rdma-dranet", description="Namespace for RDMA workloads (Pod Security baseline)."
    )
    claim_templates: list[ClaimTemplateConfig] | None = Field(
        None,
        alias="claimTemplates",
        description="Aligned GPU/rail claim templates; a template's namespace of its own is created like "
        "workloads.namespace. Default (unset): for each shape of the rdma: dranet pools, a whole-node template "
        "and a half-node one, named aligned-<GPUs>gpu-<rails>rails (aligned-8gpu-16rails and aligned-4gpu-8rails "
        "on BM.GPU.B4.8; aligned-4gpu-8rails and aligned-2gpu-4rails on BM.GPU.GB200-v3.4), each made for the "
        "shapes that share its name (stack_config/claim_plan.py default_claim_templates).",
    )
    rails_only_template: DnsLabel | None = Field(
        "all-rails", alias="railsOnlyTemplate", description="Name of a template with every rail (null: none)."
    )
    acceptance_jobs: AcceptanceJobsConfig = Field(
        default_factory=lambda: AcceptanceJobsConfig(),
        alias="acceptanceJobs",
        description="Jobs that gate the apply on the fabric's measured bandwidth (docs/kubernetes.md).",
    )
    scheduling: SchedulingConfig = Field(
        default_factory=lambda: SchedulingConfig(),
        description="Kueue topology-aware scheduling of the training jobs (docs/scheduling.md).",
    )

    @model_validator(mode="after")
    def _unique_templates(self) -> WorkloadsConfig:
        names = [t.name for t in self.claim_templates or []] + (
            [self.rails_only_template] if self.rails_only_template else []
        )
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"claim template names must be unique; repeated: {', '.join(duplicates)}")
        return self


# OKE-supported flexible CPU shapes size a node by OCPUs and memory (node_shape_config); Oracle's limits for
# the E4/E5 Flex shapes: 1 to 64 GB of memory per OCPU ("Flexible Shapes", Compute documentation;
# oracle-terraform-modules/terraform-oci-oke modules/workers/nodepools.tf caps memory at 64 GB per OCPU).
FLEX_SUFFIX = ".Flex"
FLEX_MEMORY_PER_OCPU = (1, 64)


class SystemPoolConfig(_Model):
    """A small CPU node pool for the pods every cluster runs (CoreDNS, the operators' controllers, the MPI
    operator and launcher): GPU pools carry `nvidia.com/gpu=present:NoSchedule`, which those pods do not
    tolerate. OKE's own image and cloud-init: no compute cluster, no RDMA."""

    enabled: bool | None = Field(
        None,
        description="Create the pool; default: on when the stack creates the cluster (an existing cluster "
        "already has somewhere to run them).",
    )
    name: DnsLabel = Field("system", description="Pool name (also its oke-gpu-rdma/node-pool label).")
    shape: str = Field(
        "VM.Standard.E5.Flex", description="An OKE-supported CPU shape (a GPU shape is refused)."
    )
    ocpus: StrictInt = Field(
        2,
        ge=1,
        le=94,
        description="OCPUs per node: nodeShapeConfig of a flexible shape (a fixed shape gets none).",
    )
    memory_gbs: StrictInt = Field(
        16, ge=1, alias="memoryGbs", description="Memory per node in GB, 1 to 64 per OCPU (flexible shapes)."
    )
    count: StrictInt = Field(
        2,
        ge=1,
        le=MAX_NODES_PER_POOL,
        description="Nodes: two keep CoreDNS and the controllers up through a node loss.",
    )
    image_id: ImageOcid | None = Field(
        None,
        alias="imageId",
        description="An OKE Oracle Linux image for the cluster's Kubernetes version (`oci ce node-pool-options "
        "get --node-pool-option-id all`); required when the pool is created.",
    )
    availability_domains: list[str] = Field(
        default_factory=list,
        alias="availabilityDomains",
        description="ADs to spread the nodes over, one placement per AD on the worker subnet (default: the GPU "
        "pools' availability domains; list them, so removing a GPU pool does not move the system pool).",
    )
    boot_volume_size_gbs: StrictInt = Field(
        50, ge=50, le=32768, alias="bootVolumeSizeGbs", description="Boot volume in GB, 50 to 32768."
    )
    in_transit_encryption: bool = Field(False, alias="inTransitEncryption", description=_IN_TRANSIT)

    @property
    def flexible(self) -> bool:
        return self.shape.endswith(FLEX_SUFFIX)

    @model_validator(mode="after")
    def _cpu_shape(self) -> SystemPoolConfig:
        if self.shape in CATALOG.names:
            raise ValueError(
                f"shape {self.shape} is a GPU shape; the system pool is for CPU pods (e.g. VM.Standard.E5.Flex)"
            )
        if self.in_transit_encryption and not supports_in_transit_encryption(self.shape):
            raise ValueError(in_transit_problem(self.shape))
        low, high = FLEX_MEMORY_PER_OCPU
        if self.flexible and not low * self.ocpus <= self.memory_gbs <= high * self.ocpus:
            raise ValueError(
                f"memoryGbs {self.memory_gbs} is outside {low * self.ocpus}-{high * self.ocpus} GB for "
                f"{self.ocpus} OCPUs: flexible shapes take {low} to {high} GB per OCPU"
            )
        return self


class ExistingPrometheusConfig(_Model):
    """A Prometheus (and Grafana) the cluster already runs, as the Prometheus Operator's custom resources."""

    namespace: DnsLabel = Field(
        description="Namespace the ServiceMonitor, PrometheusRule and dashboard ConfigMap go to: one the "
        "Prometheus watches (its serviceMonitorNamespaceSelector and ruleNamespaceSelector)."
    )
    selector_labels: dict[str, str] = Field(
        alias="selectorLabels",
        min_length=1,
        description="Labels its serviceMonitorSelector and ruleSelector match (kube-prometheus-stack: "
        "{release: <its release name>}).",
    )
    dashboard_labels: dict[str, str] = Field(
        default_factory=lambda: {
            kube_prometheus_stack.DASHBOARD_LABEL: kube_prometheus_stack.DASHBOARD_LABEL_VALUE
        },
        alias="dashboardLabels",
        description="Labels Grafana's dashboard sidecar loads ConfigMaps by (kube-prometheus-stack's default "
        "grafana_dashboard: '1').",
    )

    @model_validator(mode="after")
    def _valid_labels(self) -> ExistingPrometheusConfig:
        for key, value in [*self.selector_labels.items(), *self.dashboard_labels.items()]:
            if not is_label_key(key) or not is_label_value(value):
                raise ValueError(f"label {key}={value!r} is not a valid Kubernetes label")
        return self


class MonitoringConfig(_Model):
    """Metrics, dashboards and alerts of the GPUs and rails (components/monitoring.py, docs/monitoring.md)."""

    enabled: bool = Field(
        False,
        description="Scrape the GPU Operator's DCGM exporter (its ServiceMonitor) and DRANET's metrics, and "
        "ship the GPU and rail dashboard and alert rules.",
    )
    existing_prometheus: ExistingPrometheusConfig | None = Field(
        None,
        alias="existingPrometheus",
        description="Use this Prometheus instead of installing kube-prometheus-stack (null: the stack "
        "installs it).",
    )
    chart_version: str = Field(
        kube_prometheus_stack.DEFAULT_VERSION,
        alias="chartVersion",
        description="kube-prometheus-stack chart version (prometheus-community); its placement facts are "
        "read at this version (oke_gpu_rdma/releases/kube_prometheus_stack.py).",
    )
    namespace: DnsLabel = Field(
        kube_prometheus_stack.NAMESPACE,
        description="Namespace of kube-prometheus-stack but its node exporter (created, Pod Security restricted).",
    )
    node_exporter_namespace: DnsLabel = Field(
        monitoring_chart_pods.NODE_EXPORTER_NAMESPACE,
        alias="nodeExporterNamespace",
        description="Namespace of the node exporter alone (created, Pod Security privileged: it uses the host's "
        "network and PID namespace), apart from Prometheus, Alertmanager and Grafana.",
    )
    grafana_admin_secret: DnsLabel = Field(
        monitoring_chart_pods.GRAFANA_ADMIN_SECRET,
        alias="grafanaAdminSecret",
        description="The Secret in the monitoring namespace Grafana's admin comes from (keys admin-user and "
        "admin-password; the grafana chart's admin.existingSecret), so the chart renders no admin password. A "
        "one-off Job creates it in the cluster when it is missing (user admin, a random password that never "
        "leaves the cluster) and leaves one you made or rotated untouched.",
    )
    grafana_admin_job_image: str = Field(
        monitoring_grafana_admin.DEFAULT_IMAGE,
        alias="grafanaAdminJobImage",
        min_length=1,
        description="Image of that Job: sh, head, base64, tr, grep and kubectl (alpine/k8s, as the scheduled "
        "checks' controller).",
    )
    alertmanager_config_secret: DnsLabel | None = Field(
        None,
        alias="alertmanagerConfigSecret",
        description="A Secret in the monitoring namespace, kept outside the stack (its receivers hold "
        "credentials), whose key alertmanager.yaml configures the Alertmanager the stack installs: where the "
        "alerts go. Unset, the chart's own configuration routes every alert to its 'null' receiver: they show "
        "in Alertmanager and Grafana only.",
    )
    tainted_alert_minutes: StrictInt = Field(
        60,
        alias="taintedAlertMinutes",
        ge=1,
        le=7 * 24 * 60,
        description="Alert when a node has carried a health taint (rail or GPU) this long.",
    )
    rail_flaps_per_hour: StrictInt = Field(
        3,
        alias="railFlapsPerHour",
        ge=1,
        description="Alert when a rail's link goes down this many times in an hour (flapping).",
    )

    @model_validator(mode="after")
    def _pinned_chart(self) -> MonitoringConfig:
        installed_only = {
            "chart_version": "chartVersion",
            "namespace": "namespace",
            "alertmanager_config_secret": "alertmanagerConfigSecret",
            "node_exporter_namespace": "nodeExporterNamespace",
            "grafana_admin_secret": "grafanaAdminSecret",
            "grafana_admin_job_image": "grafanaAdminJobImage",
        }
        unused = sorted(installed_only[name] for name in self.model_fields_set & set(installed_only))
        if self.existing_prometheus is not None and unused:
            raise ValueError(
                f"{' and '.join(unused)} configure the kube-prometheus-stack the stack installs, and with "
                "existingPrometheus it installs none; remove them (existingPrometheus.namespace names where the "
                "objects go)"
            )
        if self.existing_prometheus is None and self.chart_version != kube_prometheus_stack.DEFAULT_VERSION:
            raise ValueError(
                f"chartVersion {self.chart_version}: the placement of kube-prometheus-stack's pods is known at "
                f"{kube_prometheus_stack.DEFAULT_VERSION} only (oke_gpu_rdma/releases/kube_prometheus_stack.py); "
                "use it, or read the new version's values and update the facts"
            )
        if self.existing_prometheus is None and self.node_exporter_namespace == self.namespace:
            raise ValueError(
                f"nodeExporterNamespace {self.node_exporter_namespace!r} is monitoring.namespace too: the node "
                "exporter needs Pod Security privileged (host network and PID), the namespace of Prometheus, "
                "Alertmanager and Grafana is restricted; give it one of its own (default "
                f"{monitoring_chart_pods.NODE_EXPORTER_NAMESPACE})"
            )
        return self

    @field_validator("namespace", "node_exporter_namespace")
    @classmethod
    def _own_monitoring_namespace(cls, name: str) -> str:
        # The stack labels (and on destroy deletes) the namespaces it creates: not one every cluster has.
        if name == "default" or name.startswith("kube-"):
            raise ValueError(
                f"{name} is a namespace every cluster has; the stack would label it with its own Pod Security "
                "level and take it over: use a namespace of its own"
            )
        return name


def _protect_all(value: Any) -> Any:
    """`protect: true|false` (the stack-wide switch it always was) sets every kind at once."""
    if isinstance(value, Mapping):
        return value
    try:
        every = TypeAdapter(bool).validate_python(value)
    except ValueError:
        raise ValueError(
            "takes true, false, or a mapping of {network, cluster, gpuPools, systemPool} to true or false"
        ) from None
    return {"network": every, "cluster": every, "gpuPools": every, "systemPool": every}


class ProtectConfig(_Model):
    """What the program marks `protect` (the engine then refuses to replace or delete it), per kind.

    One switch per component kind, so that a deliberate change to one kind (moving a GPU pool to
    another availability domain) does not unprotect the others (the VCN, the cluster).
    """

    network: bool = Field(True, description="The created VCN, its subnets, gateways and route tables.")
    cluster: bool = Field(True, description="The created OKE cluster.")
    gpu_pools: bool = Field(
        True, alias="gpuPools", description="The GPU node pools and their compute clusters."
    )
    system_pool: bool = Field(True, alias="systemPool", description="The system (CPU) node pool.")


# Which key of `protect` each component of the program takes its flag from (__main__.py passes them):
# how the plan names the setting that lifts a refusal.
PROTECT_KEY_OF_COMPONENT = {
    resource_types.NETWORK_COMPONENT: "network",
    resource_types.CLUSTER_COMPONENT: "cluster",
    resource_types.NODE_POOL_COMPONENT: "gpuPools",
    resource_types.SYSTEM_POOL_COMPONENT: "systemPool",
}


class EncryptionConfig(_Model):
    """Customer-managed keys (OCI Vault) for what the stack stores (docs/configuration.md, Encryption)."""

    kms_key_id: KmsKeyOcid | None = Field(
        None,
        alias="kmsKeyId",
        description="OCI Vault key (ocid1.key.<realm>.<region>...) for the boot volumes of every node pool "
        "(GPU and system) and, on a cluster this stack creates, the cluster's Kubernetes secrets at rest; unset: "
        "Oracle-managed keys. The key must be in oci:region and OKE and Block Volume must be allowed to use it "
        "(README, least privilege). An existing cluster keeps its own secrets encryption.",
    )


class StackConfig(_Model):
    """Everything one stack declares."""

    compartment_id: CompartmentOcid = Field(
        alias="compartmentId",
        description="Compartment OCID of every resource (ocid1.compartment.<realm>..<id>); a tenancy OCID means "
        "the root compartment (the IAM statement then says `in tenancy`).",
    )
    network: NetworkConfig
    cluster: ClusterConfig
    node_pools: list[NodePoolConfig] = Field(alias="nodePools", min_length=1, max_length=MAX_NODE_POOLS)
    dranet: DranetConfig = Field(default_factory=lambda: DranetConfig())
    gpu_driver: GpuDriverConfig = Field(default_factory=lambda: GpuDriverConfig(), alias="gpuDriver")
    network_operator: NetworkOperatorConfig = Field(
        default_factory=lambda: NetworkOperatorConfig(), alias="networkOperator"
    )
    workloads: WorkloadsConfig = Field(default_factory=lambda: WorkloadsConfig())
    policy_pack: PolicyPackConfig = Field(
        default_factory=lambda: PolicyPackConfig(),
        alias="policyPack",
        description="Settings the stack passes to the policy pack's config.",
    )
    shape_topologies: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        alias="shapeTopologies",
        description="PCIe topology per shape for shapes the catalog has not verified "
        "(format: oke_gpu_rdma/topology.py).",
    )
    gpu_operator: GpuOperatorConfig = Field(
        default_factory=lambda: GpuOperatorConfig(),
        alias="gpuOperator",
        description="Its driver stays off: the custom image has it.",
    )
    home_region: Region | None = Field(
        None,
        alias="homeRegion",
        description="The tenancy's home region (e.g. us-ashburn-1): OCI writes IAM policies only there. "
        "Required when createComputeClusterPolicy is on.",
    )
    protect: Annotated[ProtectConfig, BeforeValidator(_protect_all)] = Field(
        default_factory=lambda: ProtectConfig(),
        description="Protect what is expensive to lose from replacement and deletion: `true` (the default) "
        "or `false` for every kind, or per kind `{network, cluster, gpuPools, systemPool}` (each true "
        "unless set false), e.g. `{gpuPools: false}` to move a GPU pool while the VCN and cluster stay "
        "protected; set false for a deliberate teardown.",
    )
    system_pool: SystemPoolConfig = Field(default_factory=lambda: SystemPoolConfig(), alias="systemPool")
    encryption: EncryptionConfig = Field(default_factory=lambda: EncryptionConfig())
    health: HealthConfig = Field(default_factory=lambda: HealthConfig())
    monitoring: MonitoringConfig = Field(
        default_factory=lambda: MonitoringConfig(),
        description="Metrics, the GPU and rail dashboard and alert rules (docs/monitoring.md).",
    )
    create_compute_cluster_policy: bool = Field(
        True,
        alias="createComputeClusterPolicy",
        description="Create the IAM policy that lets node pools launch into compute clusters "
        "(turn off where the tenancy already has it; off for stacks deployed from CI, so the deploy identity "
        "needs no IAM write: an administrator creates it once, docs/ci.md).",
    )

    @property
    def deploys_gpu_operator(self) -> bool:
        """The GPU Operator's switch, defaulting to on exactly where the stack creates the cluster."""
        if self.gpu_operator.enabled is not None:
            return self.gpu_operator.enabled
        return self.cluster.create is not None

    @property
    def creates_system_pool(self) -> bool:
        """The system pool's switch, defaulting to on exactly where the stack creates the cluster."""
        if self.system_pool.enabled is not None:
            return self.system_pool.enabled
        return self.cluster.create is not None

    @property
    def system_pool_ads(self) -> list[str]:
        """The system pool's availability domains: its own, or the GPU pools' (in pool order)."""
        if self.system_pool.availability_domains:
            return list(dict.fromkeys(self.system_pool.availability_domains))
        return list(dict.fromkeys(p.availability_domain for p in self.node_pools if p.availability_domain))

    @model_validator(mode="after")
    def _unique_pool_names(self) -> StackConfig:
        names = [p.name for p in self.node_pools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"node pool names must be unique; repeated: {', '.join(duplicates)}")
        return self

    @property
    def sriov_pools(self) -> list[NodePoolConfig]:
        return [p for p in self.node_pools if p.rdma is RdmaPath.SRIOV]

    @property
    def dra_pools(self) -> list[NodePoolConfig]:
        return [p for p in self.node_pools if p.rdma is RdmaPath.DRANET]

    def node_size(self, shape: str) -> NodeSize | None:
        """A node of ``shape``: the stack's workloads.scheduling.nodeSizes entry, else OCI's table."""
        given = self.workloads.scheduling.node_sizes.get(shape)
        if given is not None:
            return NodeSize(given.cpus, given.memory_gib)
        return node_sizes.node_size(shape)

    @property
    def templated_pools(self) -> list[NodePoolConfig]:
        """The rdma: dranet pools whose shape gets claim templates: all but the onboarding ones."""
        return [p for p in self.dra_pools if not p.onboarding]

    @property
    def railless_pools(self) -> list[NodePoolConfig]:
        """The rdma: none pools: GPUs from the device plugin, no rails, no DRA driver."""
        return [p for p in self.node_pools if p.rdma is RdmaPath.NONE]


def config_keys() -> dict[str, bool]:
    """The top-level keys of the stack config, each mapped to whether its value is structured."""
    keys: dict[str, bool] = {}
    for name, field in StackConfig.model_fields.items():
        annotation = field.annotation
        structured = not (annotation is str or annotation is bool)
        keys[field.alias or name] = structured
    return keys
