"""The stack config's node pools: the GPU pools (`nodePools`), their taints and node cycling, and the
system pool (`systemPool`)."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import (
    Field,
    StrictBool,
    StrictInt,
    model_validator,
)

from oke_gpu_rdma.drivers.attributes import NVIDIA_GPU_RESOURCE
from oke_gpu_rdma.nodes.labels import (
    DEVICE_PLUGIN_LABEL,
    RDMA_PATH_LABEL,
)
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from oke_gpu_rdma.nodes.topology import DEFAULT_SHAPE
from oke_gpu_rdma.sriov.operator_objects import RdmaPath
from stack_config.settings_types import (
    LABEL_NAME_MAX,
    LABEL_PREFIX_MAX,
    LABEL_VALUE_MAX,
    MAX_NODES_PER_CLUSTER,
    MAX_NODES_PER_POOL,
    VM_SHAPE_PREFIX,
    ComputeClusterOcid,
    ConfigModel,
    DnsLabel,
    ImageOcid,
    ShapeName,
    is_label_key,
    is_label_value,
)
from stack_config.sriov.sriov_settings import SriovPoolConfig

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


class Taint(ConfigModel):
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


class NodeCycling(ConfigModel):
    """How OKE replaces nodes when the pool's image, version or cloud-init changes."""

    enabled: StrictBool = Field(True, description="Replace nodes automatically after a pool change.")
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


class NodePoolConfig(ConfigModel):
    """One OKE managed node pool of GPU nodes: inside a compute cluster with RDMA rails, or (rdma: none) without."""

    name: DnsLabel = Field(description="Pool name (a lowercase DNS label); also names its Pulumi resources.")
    shape: ShapeName = Field(
        DEFAULT_SHAPE,
        description="GPU shape of the catalog (a file in oke_gpu_rdma/nodes/shapes/, or shapeTopologies): bare metal "
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
    in_transit_encryption: StrictBool = Field(False, alias="inTransitEncryption", description=_IN_TRANSIT)
    labels: dict[str, str] = Field(default_factory=dict, description="Extra initial node labels.")
    taints: list[Taint] = Field(
        default_factory=lambda: [GPU_TAINT],
        description="Taints registered by the kubelet; one per key and effect (the API server refuses a node with two).",
    )
    cycling: NodeCycling = Field(
        default_factory=lambda: NodeCycling(),
        description="Node replacement on pool changes (docs/gpu-pool-changes.md, node cycling).",
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
    onboarding: StrictBool = Field(
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


# OKE-supported flexible CPU shapes size a node by OCPUs and memory (node_shape_config); Oracle's limits for
# the E4/E5 Flex shapes: 1 to 64 GB of memory per OCPU ("Flexible Shapes", Compute documentation;
# oracle-terraform-modules/terraform-oci-oke modules/workers/nodepools.tf caps memory at 64 GB per OCPU).
FLEX_SUFFIX = ".Flex"
FLEX_MEMORY_PER_OCPU = (1, 64)


class SystemPoolConfig(ConfigModel):
    """A small CPU node pool for the pods every cluster runs (CoreDNS, the operators' controllers, the MPI
    operator and launcher): GPU pools carry `nvidia.com/gpu=present:NoSchedule`, which those pods do not
    tolerate. OKE's own image and cloud-init: no compute cluster, no RDMA."""

    enabled: StrictBool | None = Field(
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
    in_transit_encryption: StrictBool = Field(False, alias="inTransitEncryption", description=_IN_TRANSIT)

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
