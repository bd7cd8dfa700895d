"""The NodePool inputs both node pools build alike (components/gpu_node_pool.py, components/system_pool.py):
the pod network option of the cluster's CNI, an image source and the initial node labels.

Inputs follow pulumi-oci's NodePool (terraform-provider-oci `containerengine_node_pool_resource.go`).
"""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pulumi_oci as oci

from stack_config.model import CniType


def pod_network_option(
    cni_type: CniType, pod_subnet_id: pulumi.Input[str] | None
) -> oci.containerengine.NodePoolNodeConfigDetailsNodePoolPodNetworkOptionDetailsArgs:
    """The pod network option of the cluster's CNI (OCI_VCN_IP_NATIVE needs the pod subnet)."""
    return oci.containerengine.NodePoolNodeConfigDetailsNodePoolPodNetworkOptionDetailsArgs(
        cni_type=cni_type,
        pod_subnet_ids=[pod_subnet_id] if cni_type == "OCI_VCN_IP_NATIVE" and pod_subnet_id else None,
    )


def image_source(
    image_id: str, boot_volume_size_gbs: int
) -> oci.containerengine.NodePoolNodeSourceDetailsArgs:
    """`node_source_details` of source_type IMAGE."""
    return oci.containerengine.NodePoolNodeSourceDetailsArgs(
        source_type="IMAGE", image_id=image_id, boot_volume_size_in_gbs=str(boot_volume_size_gbs)
    )


def node_labels(labels: Mapping[str, str]) -> list[oci.containerengine.NodePoolInitialNodeLabelArgs]:
    """`initial_node_labels`: the labels every node of the pool starts with."""
    return [oci.containerengine.NodePoolInitialNodeLabelArgs(key=k, value=v) for k, v in labels.items()]
