"""An OKE managed node pool of RDMA GPU nodes placed inside one compute cluster, ready for DRA.

RDMA between bare-metal GPU nodes needs them in one compute cluster: the pool names the compute
cluster (`node_config_details.compute_cluster_id`, create-only) and is placed in the compute
cluster's availability domain with no fault domains (Oracle documentation, "Using Compute Clusters to
Provision Managed Nodes"; pulumi-oci `NodePoolNodeConfigDetails.compute_cluster_id`).
"""

from __future__ import annotations

import base64
import inspect
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_oci as oci

from oke_gpu_rdma import provisioning, resource_types
from oke_gpu_rdma.cloud_init import NodeBootstrap, render_cloud_init
from oke_gpu_rdma.sriov import RdmaMode, RdmaPath
from stack_config.model import NodePoolConfig
from stack_config.pool_nodes import gpu_pool_labels

from .node_pool_inputs import NodePoolTarget, image_source, node_labels, pod_network_option


def custom_timeouts(timeouts: provisioning.Timeouts) -> pulumi.CustomTimeouts:
    """Pulumi's form of the bare-metal timeouts (oke_gpu_rdma/provisioning.py says why and cites the defaults)."""
    return pulumi.CustomTimeouts(create=timeouts.create, update=timeouts.update, delete=timeouts.delete)


@dataclass
class RdmaGpuNodePoolArgs:
    target: NodePoolTarget
    """The cluster the pool joins and its network."""
    pool: NodePoolConfig
    """Validated pool config."""
    gpus_from_dra: bool = True
    """The NVIDIA DRA driver serves the GPUs: the device plugin is labelled off (DRANET pools only)."""
    sriov_rdma_mode: RdmaMode = "shared"
    """RDMA namespace mode of an rdma: sriov pool's nodes (DRANET pools are always shared)."""
    protect: bool = True
    """Protect the compute cluster and the node pool from deletion (bare-metal GPU capacity)."""


def initial_node_labels(pool: NodePoolConfig, gpus_from_dra: bool) -> dict[str, str]:
    """The labels every node of the pool starts with (stack_config/pool_nodes.py, which the
    schedulability check reads too)."""
    return gpu_pool_labels(pool, gpus_from_dra)


def cloud_init(pool: NodePoolConfig, sriov_rdma_mode: RdmaMode = "shared") -> str:
    """The pool's cloud-init document; exclusive RDMA mode only on SR-IOV pools that ask for it, no RDMA
    preparation on pools without rails."""
    mode: RdmaMode | None = (
        None if pool.rdma is RdmaPath.NONE else sriov_rdma_mode if pool.rdma is RdmaPath.SRIOV else "shared"
    )
    return render_cloud_init(
        NodeBootstrap(taints=tuple(t.kubelet_form() for t in pool.taints), rdma_netns=mode)
    )


class RdmaGpuNodePool(pulumi.ComponentResource):
    """Compute cluster (created or existing) plus the node pool launched into it; a pool without rails
    (rdma: none) gets no compute cluster and is placed in its AD on the worker subnet, as the system pool."""

    compute_cluster_id: pulumi.Output[str] | None
    node_pool_id: pulumi.Output[str]
    availability_domain: pulumi.Output[str]

    def __init__(
        self, name: str, args: RdmaGpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.NODE_POOL_COMPONENT, name, None, opts)
        kept = pulumi.ResourceOptions(parent=self, protect=args.protect)
        pool = args.pool
        target = args.target
        if not pool.in_compute_cluster:
            # A compute cluster is for the RDMA fabric between bare-metal nodes (a VM shape cannot join one).
            assert pool.availability_domain is not None  # NodePoolConfig requires it here
            self.compute_cluster_id = None
            self.availability_domain = pulumi.Output.from_input(pool.availability_domain)
        elif pool.compute_cluster_id is None:
            assert pool.availability_domain is not None  # NodePoolConfig requires it here
            compute_cluster = oci.core.ComputeCluster(
                f"{name}-compute-cluster",
                compartment_id=target.compartment_id,
                availability_domain=pool.availability_domain,
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
            self.compute_cluster_id = pulumi.Output.from_input(pool.compute_cluster_id)
            if pool.availability_domain:
                self.availability_domain = pulumi.Output.from_input(pool.availability_domain)
            else:
                existing = oci.core.get_compute_cluster_output(
                    compute_cluster_id=pool.compute_cluster_id, opts=pulumi.InvokeOutputOptions(parent=self)
                )
                self.availability_domain = existing.availability_domain

        node_pool = oci.containerengine.NodePool(
            f"{name}-nodes",
            compartment_id=target.compartment_id,
            cluster_id=target.cluster_id,
            name=name,
            kubernetes_version=target.kubernetes_version,
            node_shape=pool.shape,
            node_source_details=image_source(pool.image_id, pool.boot_volume_size_gbs),
            node_config_details=oci.containerengine.NodePoolNodeConfigDetailsArgs(
                size=pool.count,
                compute_cluster_id=self.compute_cluster_id,
                # One AD, no fault domains: a compute cluster lives in one AD and places hosts itself (a pool
                # without one is kept in its one AD too).
                placement_configs=[
                    oci.containerengine.NodePoolNodeConfigDetailsPlacementConfigArgs(
                        availability_domain=self.availability_domain, subnet_id=target.worker_subnet_id
                    )
                ],
                node_pool_pod_network_option_details=pod_network_option(
                    target.cni_type, target.pod_subnet_id
                ),
            ),
            initial_node_labels=node_labels(initial_node_labels(pool, args.gpus_from_dra)),
            node_metadata={
                "user_data": base64.b64encode(cloud_init(pool, args.sriov_rdma_mode).encode()).decode()
            },
            node_pool_cycling_details=oci.containerengine.NodePoolNodePoolCyclingDetailsArgs(
                is_node_cycling_enabled=pool.cycling.enabled,
                maximum_surge=str(pool.cycling.maximum_surge),
                maximum_unavailable=str(pool.cycling.maximum_unavailable),
                # Sent only when the stack sets it: unset keeps OKE's default and today's renderings.
                cycle_modes=pool.cycling.cycle_modes,
            ),
            ssh_public_key=pool.ssh_public_key,
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
        self.register_outputs(
            {
                **(
                    {"computeClusterId": self.compute_cluster_id}
                    if self.compute_cluster_id is not None
                    else {}
                ),
                "nodePoolId": self.node_pool_id,
                "availabilityDomain": self.availability_domain,
            }
        )


def is_tenancy(ocid: str) -> bool:
    """Whether an OCID names the tenancy itself, i.e. its root compartment (`ocid1.tenancy.<realm>..<id>`)."""
    return ocid.startswith("ocid1.tenancy.")


def launch_statement(compartment_id: str) -> str:
    """The IAM statement that lets this stack's OKE node pools launch instances into its compute clusters.

    Granted to node pools (the OKE node pool resource principal) of the stack's own compartment only,
    and only on compute clusters in that compartment. OCI's policy language names the root compartment
    `tenancy` (Oracle, "Policy Syntax": location). Narrower is not possible
    with the variables OCI documents: see README, "Least privilege".
    """
    location = "tenancy" if is_tenancy(compartment_id) else f"compartment id {compartment_id}"
    return (
        f"Allow any-user to {{COMPUTE_CLUSTER_LAUNCH_INSTANCE}} in {location} where all "
        f"{{request.principal.type = 'nodepool', request.principal.compartment.id = '{compartment_id}'}}"
    )


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


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
        f"oci:{_camel(name)}"
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
        key = _camel(name)
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
