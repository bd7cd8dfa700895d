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

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_oci as oci

from oke_gpu_rdma import resource_types
from stack_config.model import SystemPoolConfig
from stack_config.pool_nodes import system_pool_labels

from .node_pool_inputs import NodePoolTarget, image_source, node_labels, pod_network_option


@dataclass
class SystemNodePoolArgs:
    target: NodePoolTarget
    """The cluster the pool joins and its network."""
    pool: SystemPoolConfig
    """Validated system pool config (image set, checked by stack_config/system_pool_checks.py)."""
    availability_domains: list[str]
    """Where to place the nodes, one placement config each."""
    protect: bool = True
    """Protect it from deletion: without it CoreDNS and the controllers have no node."""


class SystemNodePool(pulumi.ComponentResource):
    """The untainted CPU node pool."""

    node_pool_id: pulumi.Output[str]

    def __init__(
        self, name: str, args: SystemNodePoolArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.SYSTEM_POOL_COMPONENT, name, None, opts)
        pool = args.pool
        target = args.target
        assert pool.image_id is not None  # stack_config/system_pool_checks.py requires it
        node_pool = oci.containerengine.NodePool(
            f"{name}-nodes",
            compartment_id=target.compartment_id,
            cluster_id=target.cluster_id,
            name=pool.name,
            kubernetes_version=target.kubernetes_version,
            node_shape=pool.shape,
            node_shape_config=oci.containerengine.NodePoolNodeShapeConfigArgs(
                ocpus=float(pool.ocpus), memory_in_gbs=float(pool.memory_gbs)
            )
            if pool.flexible
            else None,
            node_source_details=image_source(pool.image_id, pool.boot_volume_size_gbs),
            node_config_details=oci.containerengine.NodePoolNodeConfigDetailsArgs(
                size=pool.count,
                placement_configs=[
                    oci.containerengine.NodePoolNodeConfigDetailsPlacementConfigArgs(
                        availability_domain=ad, subnet_id=target.worker_subnet_id
                    )
                    for ad in args.availability_domains
                ],
                node_pool_pod_network_option_details=pod_network_option(
                    target.cni_type, target.pod_subnet_id
                ),
            ),
            initial_node_labels=node_labels(system_pool_labels(pool)),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        self.node_pool_id = node_pool.id
        self.register_outputs({"nodePoolId": self.node_pool_id})
