"""The system pool: a small CPU node pool for the pods every cluster runs.

GPU nodes register with `nvidia.com/gpu=present:NoSchedule`; CoreDNS, the GPU Operator's operator, NFD's
master and gc, the MPI operator and the MPIJob launcher do not tolerate it, so a cluster of GPU pools
alone never finishes its first apply. This pool has no taints and OKE's own image and cloud-init: no
compute cluster, no RDMA, spread over the availability domains it is given.

Inputs follow pulumi-oci's NodePool (terraform-provider-oci `containerengine_node_pool_resource.go`):
`node_shape_config` (ocpus, memory_in_gbs) only for a flexible shape, `node_source_details` of
source_type IMAGE, one `placement_configs` entry per availability domain on the regional worker subnet,
the pod network option of the cluster's CNI (OCI_VCN_IP_NATIVE needs the pod subnet).
"""

import typing
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_oci as oci

from components.component_inputs import (
    ComponentInputError,
    from_wire,
    known_or,
    schema_name,
    stand_in_ocid,
    validated,
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
from stack_config.nodes.pool_settings import SystemPoolConfig
from stack_config.problems import ConfigProblem
from stack_config.scheduling.pool_nodes import system_pool_labels
from stack_config.settings_types import CniType


class SystemNodePoolArgs(TypedDict):
    """The inputs of the system pool. Its OKE name is the component's name (also its oke-gpu-rdma/node-pool
    label). Plain are the values that decide the resources: the shape (a shape config or not), the sizes,
    the availability domains (one placement each)."""

    compartment_id: pulumi.Input[str]
    """Compartment of the node pool."""
    cluster_id: pulumi.Input[str]
    """The OKE cluster the pool joins."""
    kubernetes_version: pulumi.Input[str]
    """Kubernetes version of the nodes, v1.34.0 or later (the cluster's)."""
    worker_subnet_id: pulumi.Input[str]
    """Regional worker subnet: the nodes' primary VNICs."""
    image_id: pulumi.Input[str]
    """An OKE Oracle Linux image for the cluster's Kubernetes version."""
    availability_domains: list[pulumi.Input[str]]
    """ADs to spread the nodes over, one placement config each."""
    shape: NotRequired[str]
    """An OKE-supported CPU shape (default VM.Standard.E5.Flex)."""
    ocpus: NotRequired[int]
    """OCPUs per node, for flexible shapes (default 2)."""
    memory_gbs: NotRequired[int]
    """Memory per node in GB, for flexible shapes (default 16)."""
    count: NotRequired[int]
    """Nodes (default 2: CoreDNS and the controllers stay up through a node loss)."""
    boot_volume_size_gbs: NotRequired[int]
    """Boot volume size in GB (default 50)."""
    cni_type: NotRequired[str]
    """The cluster's CNI: FLANNEL_OVERLAY (default) or OCI_VCN_IP_NATIVE (which needs podSubnetId)."""
    pod_subnet_id: NotRequired[pulumi.Input[str]]
    """Pod subnet, for OCI_VCN_IP_NATIVE."""
    nsg_ids: NotRequired[list[pulumi.Input[str]]]
    """NSGs of the nodes' primary VNICs (the Network's worker NSG)."""
    pod_nsg_ids: NotRequired[list[pulumi.Input[str]]]
    """NSGs of the pods' VNICs, for OCI_VCN_IP_NATIVE (the Network's pod NSG)."""
    kms_key_id: NotRequired[pulumi.Input[str]]
    """OCI Vault key OCID for the boot volumes (default: Oracle-managed keys)."""
    in_transit_encryption: NotRequired[bool]
    """Encrypt boot volume traffic in transit (default false; VM shapes and a few bare metal CPU shapes)."""
    protect: NotRequired[bool]
    """Protect it from deletion (default true: without it CoreDNS and the controllers have no node)."""


def system_pool_config(name: str, args: SystemNodePoolArgs) -> SystemPoolConfig:
    """The pool's settings checked by the stack config's model (an image that is an Output stands in as a
    well-formed OCID), or :class:`ComponentInputError` naming each bad input."""
    args = typing.cast(SystemNodePoolArgs, from_wire(args))
    data: dict[str, Any] = {
        "name": name,
        "imageId": known_or(args.get("image_id"), stand_in_ocid("image")),
        **{
            schema_name(key): args.get(key)
            for key in (
                "shape",
                "ocpus",
                "memory_gbs",
                "count",
                "boot_volume_size_gbs",
                "in_transit_encryption",
            )
        },
    }
    problems: list[ConfigProblem] = []
    try:
        pool = validated(SystemPoolConfig, data, "SystemNodePool", name)
    except ComponentInputError as err:
        problems += err.problems
    problems += target_problems(args)
    if not args.get("availability_domains"):
        problems.append(
            ConfigProblem("availabilityDomains", None, "is empty; name the ADs to place the nodes in")
        )
    if problems:
        raise ComponentInputError("SystemNodePool", name, problems)
    return pool


def system_pool_args(
    pool: SystemPoolConfig, target: NodePoolTarget, availability_domains: list[str], protect: bool
) -> SystemNodePoolArgs:
    """The Args of the stack's validated system pool joining ``target`` (what __main__.py declares)."""
    assert pool.image_id is not None  # stack_config/nodes/system_pool_checks.py requires it
    args = SystemNodePoolArgs(
        compartment_id=target.compartment_id,
        cluster_id=target.cluster_id,
        kubernetes_version=target.kubernetes_version,
        worker_subnet_id=target.worker_subnet_id,
        image_id=pool.image_id,
        availability_domains=list(availability_domains),
        shape=pool.shape,
        ocpus=pool.ocpus,
        memory_gbs=pool.memory_gbs,
        count=pool.count,
        boot_volume_size_gbs=pool.boot_volume_size_gbs,
        in_transit_encryption=pool.in_transit_encryption,
        cni_type=target.cni_type,
        protect=protect,
    )
    args.update(target_security(target))  # type: ignore[typeddict-item]
    if target.pod_subnet_id is not None:
        args["pod_subnet_id"] = target.pod_subnet_id
    return args


class SystemNodePool(pulumi.ComponentResource):
    """The untainted CPU node pool for the pods every cluster runs (CoreDNS, the operators' controllers):
    OKE's own image and cloud-init, no compute cluster, spread over the given availability domains."""

    node_pool_id: pulumi.Output[str]
    """OCID of the node pool."""

    def __init__(
        self, name: str, args: SystemNodePoolArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.SYSTEM_POOL_COMPONENT, name, None, opts)
        pool = system_pool_config(name, args)
        cni_type = typing.cast(CniType, args.get("cni_type", "FLANNEL_OVERLAY"))
        node_pool = oci.containerengine.NodePool(
            f"{name}-nodes",
            compartment_id=args["compartment_id"],
            cluster_id=args["cluster_id"],
            name=pool.name,
            kubernetes_version=args["kubernetes_version"],
            node_shape=pool.shape,
            node_shape_config=oci.containerengine.NodePoolNodeShapeConfigArgs(
                ocpus=float(pool.ocpus), memory_in_gbs=float(pool.memory_gbs)
            )
            if pool.flexible
            else None,
            node_source_details=image_source(args["image_id"], pool.boot_volume_size_gbs),
            node_config_details=oci.containerengine.NodePoolNodeConfigDetailsArgs(
                size=pool.count,
                placement_configs=[
                    oci.containerengine.NodePoolNodeConfigDetailsPlacementConfigArgs(
                        availability_domain=ad, subnet_id=args["worker_subnet_id"]
                    )
                    for ad in args["availability_domains"]
                ],
                node_pool_pod_network_option_details=pod_network_option(
                    cni_type, args.get("pod_subnet_id"), args.get("pod_nsg_ids")
                ),
                nsg_ids=args.get("nsg_ids"),
                kms_key_id=args.get("kms_key_id"),
                is_pv_encryption_in_transit_enabled=True if pool.in_transit_encryption else None,
            ),
            initial_node_labels=node_labels(system_pool_labels(pool)),
            opts=pulumi.ResourceOptions(parent=self, protect=args.get("protect", True)),
        )
        self.node_pool_id = node_pool.id
        self.register_outputs({"nodePoolId": self.node_pool_id})
