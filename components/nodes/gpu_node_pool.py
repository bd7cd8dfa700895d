"""An OKE managed node pool of RDMA GPU nodes placed inside one compute cluster, ready for DRA.

RDMA between bare-metal GPU nodes needs them in one compute cluster: the pool names the compute
cluster (`node_config_details.compute_cluster_id`, create-only) and is placed in the compute
cluster's availability domain with no fault domains (Oracle documentation, "Using Compute Clusters to
Provision Managed Nodes"; pulumi-oci `NodePoolNodeConfigDetails.compute_cluster_id`).
"""

import base64
import hashlib
import inspect
import json
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_oci as oci

from components.component_inputs import (
    ComponentInputError,
    PoolTaint,
    from_wire,
    is_known,
    known_or,
    schema_name,
    stand_in_ocid,
    taint_inputs,
    validated,
    value_problems,
)
from components.nodes.node_pool_inputs import (
    NodePoolTarget,
    image_source,
    node_labels,
    pod_network_option,
    target_problems,
    target_security,
)
from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.nodes import provisioning
from oke_gpu_rdma.nodes.cloud_init import NodeBootstrap, render_cloud_init
from oke_gpu_rdma.nodes.shape_catalog import multi_node_nvlink
from oke_gpu_rdma.sriov.operator_objects import RdmaMode, RdmaPath
from stack_config.nodes.pool_settings import NodePoolConfig
from stack_config.problems import ConfigProblem
from stack_config.scheduling.pool_nodes import gpu_pool_labels
from stack_config.settings_types import CniType


def custom_timeouts(timeouts: provisioning.Timeouts) -> pulumi.CustomTimeouts:
    """Pulumi's form of the bare-metal timeouts (oke_gpu_rdma/nodes/provisioning.py says why and cites the defaults)."""
    return pulumi.CustomTimeouts(create=timeouts.create, update=timeouts.update, delete=timeouts.delete)


class PoolCycling(TypedDict, total=False):
    """How OKE replaces the pool's nodes when its image, version or cloud-init changes."""

    enabled: bool
    """Replace nodes automatically after a pool change (default true)."""
    maximum_surge: int
    """Extra nodes during cycling (default 0: bare-metal capacity is scarce)."""
    maximum_unavailable: int
    """Nodes taken down at once (default 1)."""
    cycle_modes: list[str]
    """OKE's cycle modes in order (unset: OKE's default): BOOT_VOLUME_REPLACE keeps each bare-metal host,
    INSTANCE_REPLACE replaces the node."""


class RdmaGpuNodePoolArgs(TypedDict):
    """The inputs of an RDMA GPU node pool. The pool's OKE name is the component's name.

    Plain (not Input) are the values that decide which resources exist or their options: the shape and
    rdma path (a compute cluster or not), the node count and cycling (the create and update timeouts),
    the taints and labels (the cloud-init and initial labels, checked before anything is declared).
    """

    compartment_id: pulumi.Input[str]
    """Compartment of the node pool and of its compute cluster."""
    cluster_id: pulumi.Input[str]
    """The OKE cluster the pool joins (an ENHANCED cluster)."""
    kubernetes_version: pulumi.Input[str]
    """Kubernetes version of the nodes, v1.34.0 or later (the cluster's)."""
    worker_subnet_id: pulumi.Input[str]
    """Regional worker subnet: the nodes' primary VNICs."""
    image_id: pulumi.Input[str]
    """Custom image OCID (Ubuntu with DOCA-OFED and the GPU driver)."""
    count: int
    """Number of nodes."""
    shape: NotRequired[str]
    """GPU shape (default BM.GPU.B4.8): bare metal for a pool with rails, a VM shape only with rdma none."""
    rdma: NotRequired[RdmaPath]
    """Where pods get the rails: dranet (default), sriov or none (no rails, no compute cluster)."""
    availability_domain: NotRequired[pulumi.Input[str]]
    """AD of the compute cluster and the nodes, e.g. Uocm:US-ASHBURN-AD-1; required unless computeClusterId
    is set (and with rdma none)."""
    compute_cluster_id: NotRequired[pulumi.Input[str]]
    """An existing compute cluster to launch into, instead of creating one."""
    cni_type: NotRequired[str]
    """The cluster's CNI: FLANNEL_OVERLAY (default) or OCI_VCN_IP_NATIVE (which needs podSubnetId)."""
    pod_subnet_id: NotRequired[pulumi.Input[str]]
    """Pod subnet, for OCI_VCN_IP_NATIVE."""
    nsg_ids: NotRequired[list[pulumi.Input[str]]]
    """NSGs of the nodes' primary VNICs (the Network's worker NSG)."""
    pod_nsg_ids: NotRequired[list[pulumi.Input[str]]]
    """NSGs of the pods' VNICs, for OCI_VCN_IP_NATIVE (the Network's pod NSG)."""
    boot_volume_size_gbs: NotRequired[int]
    """Boot volume size in GB (default 500)."""
    kms_key_id: NotRequired[pulumi.Input[str]]
    """OCI Vault key OCID for the boot volumes (default: Oracle-managed keys)."""
    in_transit_encryption: NotRequired[bool]
    """Encrypt boot volume traffic in transit (default false); VM shapes only among the GPU shapes."""
    labels: NotRequired[dict[str, str]]
    """Extra initial node labels."""
    taints: NotRequired[list[PoolTaint]]
    """Taints the kubelet registers the nodes with (default: the GPU taint OKE GPU nodes carry, value present, NoSchedule)."""
    cycling: NotRequired[PoolCycling]
    """Node cycling settings."""
    ssh_public_key: NotRequired[pulumi.Input[str]]
    """Public key for the node user."""
    replace_order: NotRequired[str]
    """How a replacement of the pool goes: deleteFirst (default; needs no extra hosts) or createFirst."""
    gpus_from_dra: NotRequired[bool]
    """The NVIDIA DRA driver serves the GPUs (default true): the device plugin is labelled off (dranet pools)."""
    rails_unmarked_label: NotRequired[bool]
    """The nodes start with oke-gpu-rdma/rails-unmarked: "true", which the rail health agent keeps where it marks
    rails per device (1.37+) and the Kueue flavors select (default false; dranet pools only)."""
    sriov_rdma_mode: NotRequired[str]
    """RDMA namespace mode of an rdma sriov pool's nodes: shared (default) or exclusive."""
    protect: NotRequired[bool]
    """Protect the compute cluster and the node pool from deletion (default true: bare-metal GPU capacity)."""


def pool_config(name: str, args: RdmaGpuNodePoolArgs) -> NodePoolConfig:
    """The pool's settings checked by the stack config's own model (OCIDs that are Outputs stand in as
    well-formed ones), or :class:`ComponentInputError` naming each bad input."""
    args = typing.cast(RdmaGpuNodePoolArgs, from_wire(args))
    cycling = args.get("cycling")
    data: dict[str, Any] = {
        "name": name,
        "shape": args.get("shape"),
        "count": args.get("count"),
        "imageId": known_or(args.get("image_id"), stand_in_ocid("image")),
        "availabilityDomain": known_or(args.get("availability_domain"), "(known after apply)"),
        "computeClusterId": known_or(args.get("compute_cluster_id"), stand_in_ocid("computecluster")),
        "bootVolumeSizeGbs": args.get("boot_volume_size_gbs"),
        "inTransitEncryption": args.get("in_transit_encryption"),
        "labels": args.get("labels"),
        "taints": [dict(t) for t in args["taints"]] if "taints" in args else None,
        "cycling": {schema_name(k): v for k, v in cycling.items()} if cycling is not None else None,
        "sshPublicKey": known_or(args.get("ssh_public_key"), "(known after apply)"),
        "rdma": args.get("rdma"),
        "replaceOrder": args.get("replace_order"),
    }
    problems: list[ConfigProblem] = []
    try:
        pool = validated(NodePoolConfig, data, "RdmaGpuNodePool", name)
    except ComponentInputError as err:
        problems += err.problems  # reported with the checks below, all at once
    problems += target_problems(args)
    if is_known(args.get("sriov_rdma_mode", "shared")):
        problems += value_problems("sriovRdmaMode", args.get("sriov_rdma_mode", "shared"), RdmaMode)
    if problems:
        raise ComponentInputError("RdmaGpuNodePool", name, problems)
    return pool


def initial_node_labels(
    pool: NodePoolConfig, gpus_from_dra: bool, rails_unmarked: bool = False
) -> dict[str, str]:
    """The labels every node of the pool starts with (stack_config/scheduling/pool_nodes.py, which the
    schedulability check reads too)."""
    return gpu_pool_labels(pool, gpus_from_dra, rails_unmarked)


def cloud_init(pool: NodePoolConfig, sriov_rdma_mode: RdmaMode = "shared") -> str:
    """The pool's cloud-init document; exclusive RDMA mode only on SR-IOV pools that ask for it, no RDMA
    preparation on pools without rails."""
    mode: RdmaMode | None = (
        None if pool.rdma is RdmaPath.NONE else sriov_rdma_mode if pool.rdma is RdmaPath.SRIOV else "shared"
    )
    return render_cloud_init(
        NodeBootstrap(
            taints=tuple(t.kubelet_form() for t in pool.taints),
            rdma_netns=mode,
            gpu_memory_fabric=mode is not None and multi_node_nvlink(pool.shape),
        )
    )


class RdmaGpuNodePool(pulumi.ComponentResource):
    """RDMA GPU nodes on OKE: a compute cluster (created, or an existing one) and the node pool launched
    into it, labelled and tainted for the DRA drivers; a pool without rails (rdma none) gets no compute
    cluster and is placed in its AD on the worker subnet."""

    compute_cluster_id: pulumi.Output[str] | None
    """The compute cluster the nodes are placed in (none for an rdma none pool)."""
    node_pool_id: pulumi.Output[str]
    """OCID of the node pool."""
    node_spec: pulumi.Output[str]
    """A digest of what OKE builds a new node of the pool from; its change is a rollout of the pool's nodes
    (oke_gpu_rdma/health/remediation/)."""
    availability_domain: pulumi.Output[str]
    """The AD of the nodes."""

    def __init__(
        self, name: str, args: RdmaGpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.NODE_POOL_COMPONENT, name, None, opts)
        pool = pool_config(name, args)
        protect = args.get("protect", True)
        gpus_from_dra = args.get("gpus_from_dra", True)
        rails_unmarked = args.get("rails_unmarked_label", False)
        sriov_rdma_mode = typing.cast(RdmaMode, args.get("sriov_rdma_mode", "shared"))
        cni_type = typing.cast(CniType, args.get("cni_type", "FLANNEL_OVERLAY"))
        availability_domain = args.get("availability_domain")
        compute_cluster_id = args.get("compute_cluster_id")
        kept = pulumi.ResourceOptions(parent=self, protect=protect)
        if not pool.in_compute_cluster:
            # A compute cluster is for the RDMA fabric between bare-metal nodes (a VM shape cannot join one).
            assert availability_domain is not None  # NodePoolConfig requires it here
            self.compute_cluster_id = None
            self.availability_domain = pulumi.Output.from_input(availability_domain)
        elif compute_cluster_id is None:
            assert availability_domain is not None  # NodePoolConfig requires it here
            compute_cluster = oci.core.ComputeCluster(
                f"{name}-compute-cluster",
                compartment_id=args["compartment_id"],
                availability_domain=availability_domain,
                display_name=f"{name}-compute-cluster",
                opts=pulumi.ResourceOptions.merge(
                    kept,
                    pulumi.ResourceOptions(
                        custom_timeouts=custom_timeouts(provisioning.COMPUTE_CLUSTER_TIMEOUTS)
                    ),
                ),
            )
            self.compute_cluster_id = compute_cluster.id
            self.availability_domain = compute_cluster.availability_domain
        else:
            self.compute_cluster_id = pulumi.Output.from_input(compute_cluster_id)
            if availability_domain:
                self.availability_domain = pulumi.Output.from_input(availability_domain)
            else:
                existing = oci.core.get_compute_cluster_output(
                    compute_cluster_id=compute_cluster_id, opts=pulumi.InvokeOutputOptions(parent=self)
                )
                self.availability_domain = existing.availability_domain

        node_pool = oci.containerengine.NodePool(
            f"{name}-nodes",
            compartment_id=args["compartment_id"],
            cluster_id=args["cluster_id"],
            name=name,
            kubernetes_version=args["kubernetes_version"],
            node_shape=pool.shape,
            node_source_details=image_source(args["image_id"], pool.boot_volume_size_gbs),
            node_config_details=oci.containerengine.NodePoolNodeConfigDetailsArgs(
                size=pool.count,
                compute_cluster_id=self.compute_cluster_id,
                # One AD, no fault domains: a compute cluster lives in one AD and places hosts itself (a pool
                # without one is kept in its one AD too).
                placement_configs=[
                    oci.containerengine.NodePoolNodeConfigDetailsPlacementConfigArgs(
                        availability_domain=self.availability_domain, subnet_id=args["worker_subnet_id"]
                    )
                ],
                node_pool_pod_network_option_details=pod_network_option(
                    cni_type, args.get("pod_subnet_id"), args.get("pod_nsg_ids")
                ),
                nsg_ids=args.get("nsg_ids"),
                kms_key_id=args.get("kms_key_id"),
                # Sent only when on: unset keeps OCI's default (off) and the renderings of pools without it.
                is_pv_encryption_in_transit_enabled=True if pool.in_transit_encryption else None,
            ),
            initial_node_labels=node_labels(initial_node_labels(pool, gpus_from_dra, rails_unmarked)),
            node_metadata={
                "user_data": base64.b64encode(cloud_init(pool, sriov_rdma_mode).encode()).decode()
            },
            node_pool_cycling_details=oci.containerengine.NodePoolNodePoolCyclingDetailsArgs(
                is_node_cycling_enabled=pool.cycling.enabled,
                maximum_surge=str(pool.cycling.maximum_surge),
                maximum_unavailable=str(pool.cycling.maximum_unavailable),
                # Sent only when the stack sets it: unset keeps OKE's default and today's renderings.
                cycle_modes=pool.cycling.cycle_modes,
            ),
            ssh_public_key=args.get("ssh_public_key"),
            # The order a replacement takes is the stack's choice (nodePools[].replaceOrder): capacity
            # against downtime. The compute cluster above is always created first: it holds no hosts.
            opts=pulumi.ResourceOptions.merge(
                kept,
                pulumi.ResourceOptions(
                    delete_before_replace=pool.delete_before_replace,
                    custom_timeouts=custom_timeouts(
                        provisioning.gpu_node_pool_timeouts(
                            pool.count, pool.cycling.maximum_surge, pool.cycling.maximum_unavailable
                        )
                    ),
                ),
            ),
        )
        self.node_pool_id = node_pool.id
        # The inputs a node cycle brings to existing nodes (preview/plan/gpu_impact.py CYCLED_BY) but the
        # placement: OKE builds each new node from them, so nodes launched before they changed are outdated.
        self.node_spec = pulumi.Output.all(
            args["kubernetes_version"],
            pool.shape,
            args["image_id"],
            pool.boot_volume_size_gbs,
            cloud_init(pool, sriov_rdma_mode),
            initial_node_labels(pool, gpus_from_dra, rails_unmarked),
            args.get("ssh_public_key"),
            args.get("nsg_ids"),
            args.get("kms_key_id"),
        ).apply(
            lambda spec: hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()
        )
        self.register_outputs(
            {
                **(
                    {"computeClusterId": self.compute_cluster_id}
                    if self.compute_cluster_id is not None
                    else {}
                ),
                "nodePoolId": self.node_pool_id,
                "nodeSpec": self.node_spec,
                "availabilityDomain": self.availability_domain,
            }
        )


def pool_args(
    pool: NodePoolConfig,
    target: NodePoolTarget,
    gpus_from_dra: bool,
    sriov_rdma_mode: RdmaMode,
    protect: bool,
    rails_unmarked_label: bool = False,
) -> RdmaGpuNodePoolArgs:
    """The Args of a validated stack-config pool joining ``target`` (what __main__.py declares)."""
    args = RdmaGpuNodePoolArgs(
        compartment_id=target.compartment_id,
        cluster_id=target.cluster_id,
        kubernetes_version=target.kubernetes_version,
        worker_subnet_id=target.worker_subnet_id,
        cni_type=target.cni_type,
        image_id=pool.image_id,
        count=pool.count,
        shape=pool.shape,
        rdma=pool.rdma,
        boot_volume_size_gbs=pool.boot_volume_size_gbs,
        in_transit_encryption=pool.in_transit_encryption,
        labels=dict(pool.labels),
        taints=taint_inputs(pool.taints),
        cycling=PoolCycling(
            enabled=pool.cycling.enabled,
            maximum_surge=pool.cycling.maximum_surge,
            maximum_unavailable=pool.cycling.maximum_unavailable,
        ),
        replace_order=pool.replace_order,
        gpus_from_dra=gpus_from_dra,
        sriov_rdma_mode=sriov_rdma_mode,
        protect=protect,
    )
    if rails_unmarked_label:
        args["rails_unmarked_label"] = True
    if pool.cycling.cycle_modes is not None:
        args["cycling"]["cycle_modes"] = list(pool.cycling.cycle_modes)
    args.update(target_security(target))  # type: ignore[typeddict-item]
    optional: dict[str, pulumi.Input[str] | None] = {
        "pod_subnet_id": target.pod_subnet_id,
        "availability_domain": pool.availability_domain,
        "compute_cluster_id": pool.compute_cluster_id,
        "ssh_public_key": pool.ssh_public_key,
    }
    for key, value in optional.items():
        if value is not None:
            args[key] = value  # type: ignore[literal-required]
    return args


def is_tenancy(ocid: str) -> bool:
    """Whether an OCID names the tenancy itself, i.e. its root compartment (`ocid1.tenancy.<realm>..<id>`)."""
    return ocid.startswith("ocid1.tenancy.")


def launch_statement(compartment_id: str) -> str:
    """The IAM statement that lets this stack's OKE node pools launch instances into its compute clusters.

    Granted to node pools (the OKE node pool resource principal) of the stack's own compartment only,
    and only on compute clusters in that compartment. OCI's policy language names the root compartment
    `tenancy` (Oracle, "Policy Syntax": location), and a statement `in tenancy` covers the root and
    every compartment below it; so for a root compartment the target is pinned to the root itself with
    `target.compartment.id` (Oracle, "General Variables for All Requests"). Narrower is not possible
    with the variables OCI documents: see docs/later-applies.md, "Least privilege".
    """
    principal = f"request.principal.type = 'nodepool', request.principal.compartment.id = '{compartment_id}'"
    if is_tenancy(compartment_id):
        return (
            "Allow any-user to {COMPUTE_CLUSTER_LAUNCH_INSTANCE} in tenancy where all "
            f"{{{principal}, target.compartment.id = '{compartment_id}'}}"
        )
    return (
        f"Allow any-user to {{COMPUTE_CLUSTER_LAUNCH_INSTANCE}} in compartment id {compartment_id} where all "
        f"{{{principal}}}"
    )


def _setting_kind(annotation: Any) -> str:
    """`str`, `bool`, `int` or `list`: what a pulumi-oci ProviderArgs input holds (``Input[Optional[...]]``)."""
    if typing.get_origin(annotation) is Sequence:
        return "list"
    for arg in typing.get_args(annotation):
        kind = _setting_kind(arg)
        if kind != "str":
            return kind
    return {bool: "bool", int: "int"}.get(annotation, "str")


def typed_provider_settings() -> frozenset[str]:
    """The `oci:` keys whose value the program reads as a bool, int or list (the rest are text)."""
    parameters = inspect.signature(oci.ProviderArgs.__init__).parameters.items()
    return frozenset(
        f"oci:{schema_name(name)}"
        for name, parameter in parameters
        if name != "__self__" and _setting_kind(parameter.annotation) != "str"
    )


def oci_provider_settings() -> dict[str, pulumi.Input[Any]]:
    """Every `oci:*` provider setting the stack sets, as keyword arguments of `oci.Provider`.

    The settings are the parameters of pulumi-oci's own `ProviderArgs` (auth, config_file_profile,
    private_key, tenancy_ocid, ...; config key `oci:<camelCase>`), read from the config the program sees
    with their types. A setting the stack keeps as a secret stays one; pulumi-oci marks the private key,
    its password and the token-exchange client secret secret whatever the stack does.
    """
    config = pulumi.Config("oci")
    settings: dict[str, pulumi.Input[Any]] = {}
    for name, parameter in inspect.signature(oci.ProviderArgs.__init__).parameters.items():
        if name == "__self__":
            continue
        key = schema_name(name)
        if config.get(key) is None:
            continue
        kind = _setting_kind(parameter.annotation)
        value: Any = (
            config.get_bool(key)
            if kind == "bool"
            else config.get_int(key)
            if kind == "int"
            else config.get_object(key)
            if kind == "list"
            else config.get(key)
        )
        settings[name] = (
            pulumi.Output.secret(value) if pulumi.runtime.is_config_secret(f"oci:{key}") else value
        )
    return settings


@dataclass
class ComputeClusterLaunchPolicyArgs:
    compartment_id: str
    """Compartment of the compute clusters; the policy lives there too."""
    home_region: str
    """The tenancy's home region: OCI writes IAM policies only there (403 NotAllowed elsewhere)."""
    policy_name: str
    """The policy's name, unique in the tenancy (the program prefixes it with the stack name)."""
    provider_settings: Mapping[str, pulumi.Input[Any]] = field(default_factory=dict)
    """The stack's other `oci:*` provider settings (auth, profile, keys; see :func:`oci_provider_settings`), so
    the home-region provider authenticates as the default one does."""


class ComputeClusterLaunchPolicy(pulumi.ComponentResource):
    """The IAM policy without which node pools cannot launch into a compute cluster.

    It is written through a provider for the home region, whatever the stack's `oci:region`. The engine
    configures only the default provider from the stack's `oci:*` settings; this explicit one gets them
    from `provider_settings`, with the home region in place of `oci:region`.
    """

    policy_id: pulumi.Output[str]

    def __init__(
        self, name: str, args: ComputeClusterLaunchPolicyArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.LAUNCH_POLICY_COMPONENT, name, None, opts)
        settings = {key: value for key, value in args.provider_settings.items() if key != "region"}
        home = oci.Provider(
            f"{name}-home-region",
            region=args.home_region,
            opts=pulumi.ResourceOptions(parent=self),
            **settings,
        )
        policy = oci.identity.Policy(
            f"{name}-policy",
            compartment_id=args.compartment_id,
            name=args.policy_name,
            description="Lets OKE node pools launch bare-metal GPU nodes into compute clusters (RDMA placement).",
            statements=[launch_statement(args.compartment_id)],
            # `name` and `compartmentId` are not updatable and the name is unique in the tenancy
            # (pulumi-oci identity.Policy; terraform-provider-oci internal/service/identity/identity_policy_resource.go: ForceNew),
            # so a replacement created first would collide with the policy it replaces.
            opts=pulumi.ResourceOptions(parent=self, provider=home, delete_before_replace=True),
        )
        self.policy_id = policy.id
        self.register_outputs({"policyId": self.policy_id})
