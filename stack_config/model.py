"""The stack configuration: one pydantic model for the whole stack, with the seed cluster's defaults.

Every key a user writes under `oke-gpu-rdma:` in `stacks/Pulumi.<stack>.yaml` is a field here, in
camelCase as in the YAML. The model checks each value alone; :mod:`stack_config.nodes.address_plan` then
checks the values against each other (the DRANET child range against every other range).
Components receive the validated objects, never raw dictionaries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    StrictBool,
    TypeAdapter,
    model_validator,
)

from oke_gpu_rdma.common import pack_settings, resource_types
from oke_gpu_rdma.nodes import node_sizes
from oke_gpu_rdma.nodes.node_sizes import NodeSize
from oke_gpu_rdma.sriov.operator_objects import RdmaPath
from stack_config.claims.claim_settings import ClaimTemplateConfig
from stack_config.drivers.driver_settings import DranetConfig, GpuDriverConfig, GpuOperatorConfig
from stack_config.health.acceptance_settings import AcceptanceJobsConfig
from stack_config.health.health_settings import HealthConfig
from stack_config.monitoring.monitoring_settings import MonitoringConfig
from stack_config.nodes.network_settings import ClusterConfig, NetworkConfig
from stack_config.nodes.pool_settings import NodePoolConfig, SystemPoolConfig
from stack_config.scheduling.scheduling_settings import SchedulingConfig
from stack_config.settings_types import (
    MAX_NODE_POOLS,
    CompartmentOcid,
    ConfigModel,
    ConfigSwitch,
    DnsLabel,
    KmsKeyOcid,
    Region,
)
from stack_config.sriov.sriov_settings import NetworkOperatorConfig


class PolicyPackConfig(ConfigModel):
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


class WorkloadsConfig(ConfigModel):
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
        "shapes that share its name (stack_config/claims/claim_plan.py default_claim_templates).",
    )
    rails_only_template: DnsLabel | None = Field(
        "all-rails", alias="railsOnlyTemplate", description="Name of a template with every rail (null: none)."
    )
    acceptance_jobs: AcceptanceJobsConfig = Field(
        default_factory=lambda: AcceptanceJobsConfig(),
        alias="acceptanceJobs",
        description="Jobs that gate the apply on the fabric's measured bandwidth (docs/acceptance-gates.md).",
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


def _protect_all(value: Any) -> Any:
    """`protect: true|false` (the stack-wide switch it always was) sets every kind at once."""
    if isinstance(value, Mapping):
        return value
    try:
        every = TypeAdapter(ConfigSwitch).validate_python(value)
    except ValueError:
        raise ValueError(
            "takes true, false, or a mapping of {network, cluster, gpuPools, systemPool} to true or false"
        ) from None
    return {"network": every, "cluster": every, "gpuPools": every, "systemPool": every}


class ProtectConfig(ConfigModel):
    """What the program marks `protect` (the engine then refuses to replace or delete it), per kind.

    One switch per component kind, so that a deliberate change to one kind (moving a GPU pool to
    another availability domain) does not unprotect the others (the VCN, the cluster).
    """

    network: StrictBool = Field(True, description="The created VCN, its subnets, gateways and route tables.")
    cluster: StrictBool = Field(True, description="The created OKE cluster.")
    gpu_pools: StrictBool = Field(
        True, alias="gpuPools", description="The GPU node pools and their compute clusters."
    )
    system_pool: StrictBool = Field(True, alias="systemPool", description="The system (CPU) node pool.")


# Which key of `protect` each component of the program takes its flag from (__main__.py passes them):
# how the plan names the setting that lifts a refusal.
PROTECT_KEY_OF_COMPONENT = {
    resource_types.NETWORK_COMPONENT: "network",
    resource_types.CLUSTER_COMPONENT: "cluster",
    resource_types.NODE_POOL_COMPONENT: "gpuPools",
    resource_types.SYSTEM_POOL_COMPONENT: "systemPool",
}


class EncryptionConfig(ConfigModel):
    """Customer-managed keys (OCI Vault) for what the stack stores (docs/configuration.md, Encryption)."""

    kms_key_id: KmsKeyOcid | None = Field(
        None,
        alias="kmsKeyId",
        description="OCI Vault key (ocid1.key.<realm>.<region>...) for the boot volumes of every node pool "
        "(GPU and system) and, on a cluster this stack creates, the cluster's Kubernetes secrets at rest; unset: "
        "Oracle-managed keys. The key must be in oci:region and OKE and Block Volume must be allowed to use it "
        "(README, least privilege). An existing cluster keeps its own secrets encryption.",
    )


class StackConfig(ConfigModel):
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
        "(format: oke_gpu_rdma/nodes/topology.py).",
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
    create_compute_cluster_policy: ConfigSwitch = Field(
        True,
        alias="createComputeClusterPolicy",
        description="Create the IAM policy that lets node pools launch into compute clusters "
        "(turn off where the tenancy already has it; off for stacks deployed from CI, so the deploy identity "
        "needs no IAM write: an administrator creates it once, docs/ci-credentials-and-runners.md).",
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
