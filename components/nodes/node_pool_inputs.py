"""What both node pools (components/nodes/gpu_node_pool.py, components/nodes/system_pool.py) take and build alike:
the cluster they join (NodePoolTarget), the pod network option of the cluster's CNI, an image source and
the initial node labels.

Inputs follow pulumi-oci's NodePool (terraform-provider-oci `containerengine_node_pool_resource.go`).
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_oci as oci

from components.component_inputs import is_known, value_problems
from stack_config.problems import ConfigProblem
from stack_config.settings_types import CniType, KmsKeyOcid, KubernetesVersion


@dataclass(frozen=True)
class NodePoolTarget:
    """The cluster a node pool joins and the network its nodes and pods take (one per stack)."""

    compartment_id: str
    """Compartment of the node pools (and of the GPU pools' compute clusters)."""
    cluster_id: pulumi.Input[str]
    """The OKE cluster (ENHANCED for the GPU pools)."""
    kubernetes_version: str
    """Kubernetes version of the nodes (the cluster's)."""
    worker_subnet_id: pulumi.Input[str]
    """Regional worker subnet: the nodes' primary VNICs."""
    cni_type: CniType
    """The cluster's CNI; VCN-native pods also need `pod_subnet_id`."""
    pod_subnet_id: pulumi.Input[str] | None = None
    """Pod subnet for OCI_VCN_IP_NATIVE."""
    worker_nsg_ids: tuple[pulumi.Input[str], ...] = ()
    """NSGs of the nodes' primary VNICs (the created VCN's worker NSG)."""
    pod_nsg_ids: tuple[pulumi.Input[str], ...] = ()
    """NSGs of the pods' VNICs (OCI_VCN_IP_NATIVE)."""
    kms_key_id: str | None = None
    """OCI Vault key of the nodes' boot volumes (encryption.kmsKeyId); None: Oracle-managed."""


def target_security(target: NodePoolTarget) -> dict[str, Any]:
    """The Args keys of ``target``'s NSGs and boot volume key that are set (both pools take them alike)."""
    found: dict[str, Any] = {}
    if target.worker_nsg_ids:
        found["nsg_ids"] = list(target.worker_nsg_ids)
    if target.pod_nsg_ids:
        found["pod_nsg_ids"] = list(target.pod_nsg_ids)
    if target.kms_key_id is not None:
        found["kms_key_id"] = target.kms_key_id
    return found


def pod_network_option(
    cni_type: CniType,
    pod_subnet_id: pulumi.Input[str] | None,
    pod_nsg_ids: list[pulumi.Input[str]] | None = None,
) -> oci.containerengine.NodePoolNodeConfigDetailsNodePoolPodNetworkOptionDetailsArgs:
    """The pod network option of the cluster's CNI (OCI_VCN_IP_NATIVE needs the pod subnet, and takes the
    pods' NSGs)."""
    native = cni_type == "OCI_VCN_IP_NATIVE"
    return oci.containerengine.NodePoolNodeConfigDetailsNodePoolPodNetworkOptionDetailsArgs(
        cni_type=cni_type,
        pod_subnet_ids=[pod_subnet_id] if native and pod_subnet_id else None,
        pod_nsg_ids=pod_nsg_ids if native and pod_nsg_ids else None,
    )


def image_source(
    image_id: pulumi.Input[str], boot_volume_size_gbs: int
) -> oci.containerengine.NodePoolNodeSourceDetailsArgs:
    """`node_source_details` of source_type IMAGE."""
    return oci.containerengine.NodePoolNodeSourceDetailsArgs(
        source_type="IMAGE", image_id=image_id, boot_volume_size_in_gbs=str(boot_volume_size_gbs)
    )


def node_labels(labels: Mapping[str, str]) -> list[oci.containerengine.NodePoolInitialNodeLabelArgs]:
    """`initial_node_labels`: the labels every node of the pool starts with."""
    return [oci.containerengine.NodePoolInitialNodeLabelArgs(key=k, value=v) for k, v in labels.items()]


def target_problems(args: Mapping[str, Any]) -> list[ConfigProblem]:
    """What is wrong with the cluster a pool's Args name to join: its Kubernetes version (when plain), its
    CNI, the pod subnet VCN-native pods need, the pod NSGs only they take, and the boot volume key."""
    problems: list[ConfigProblem] = []
    for key, value, annotation in (
        ("kubernetesVersion", args.get("kubernetes_version"), KubernetesVersion),
        ("cniType", args.get("cni_type", "FLANNEL_OVERLAY"), CniType),
    ):
        if is_known(value):
            problems += value_problems(key, value, annotation)
    kms_key_id = args.get("kms_key_id")
    if kms_key_id is not None and is_known(kms_key_id):
        problems += value_problems("kmsKeyId", kms_key_id, KmsKeyOcid)
    if args.get("pod_nsg_ids") and args.get("cni_type") != "OCI_VCN_IP_NATIVE":
        problems.append(
            ConfigProblem(
                "podNsgIds",
                None,
                "is set, but pods take NSGs only with OCI_VCN_IP_NATIVE; remove it or set cniType",
            )
        )
    if args.get("cni_type") == "OCI_VCN_IP_NATIVE" and args.get("pod_subnet_id") is None:
        problems.append(
            ConfigProblem("podSubnetId", None, "is missing; OCI_VCN_IP_NATIVE pods need a pod subnet")
        )
    return problems
