"""Pulumi type tokens: the ones this program declares and the ones the policy pack looks for.

pulumi-oci names a resource `oci:<Module>/<resource>:<Resource>`; pulumi-kubernetes names an object of
kind K in group/version G `kubernetes:G:K` (the core group as `core/v1`). The program's own components
are `oke-gpu-rdma:index:<Name>`; a token is part of every URN, so changing one replaces resources.
"""

from __future__ import annotations

from typing import Final

# OCI (pulumi-oci).
VCN: Final = "oci:Core/vcn:Vcn"
SUBNET: Final = "oci:Core/subnet:Subnet"
COMPUTE_CLUSTER: Final = "oci:Core/computeCluster:ComputeCluster"
CLUSTER: Final = "oci:ContainerEngine/cluster:Cluster"
NODE_POOL: Final = "oci:ContainerEngine/nodePool:NodePool"
IAM_POLICY: Final = "oci:Identity/policy:Policy"
NSG: Final = "oci:Core/networkSecurityGroup:NetworkSecurityGroup"
NSG_RULE: Final = "oci:Core/networkSecurityGroupSecurityRule:NetworkSecurityGroupSecurityRule"
SECURITY_LIST: Final = "oci:Core/securityList:SecurityList"
DEFAULT_SECURITY_LIST: Final = "oci:Core/defaultSecurityList:DefaultSecurityList"

# Kubernetes (pulumi-kubernetes).
NAMESPACE: Final = "kubernetes:core/v1:Namespace"
NAMESPACE_PATCH: Final = "kubernetes:core/v1:NamespacePatch"
CONFIG_MAP: Final = "kubernetes:core/v1:ConfigMap"
SECRET: Final = "kubernetes:core/v1:Secret"
DAEMONSET: Final = "kubernetes:apps/v1:DaemonSet"
HELM_RELEASE: Final = "kubernetes:helm.sh/v3:Release"
HELM_CHART_V3: Final = "kubernetes:helm.sh/v3:Chart"
HELM_CHART_V4: Final = "kubernetes:helm.sh/v4:Chart"
HELM_TYPES: Final = (HELM_RELEASE, HELM_CHART_V4, HELM_CHART_V3)
DRA_GROUP_PREFIX: Final = "kubernetes:resource.k8s.io/"

# The SR-IOV path: NVIDIA Network Operator, SR-IOV Network Operator, NVIDIA IPAM, Multus (custom resources).
NIC_CLUSTER_POLICY: Final = "kubernetes:mellanox.com/v1alpha1:NicClusterPolicy"
IP_POOL: Final = "kubernetes:nv-ipam.nvidia.com/v1alpha1:IPPool"
SRIOV_NODE_POLICY: Final = "kubernetes:sriovnetwork.openshift.io/v1:SriovNetworkNodePolicy"
SRIOV_NETWORK: Final = "kubernetes:sriovnetwork.openshift.io/v1:SriovNetwork"
SRIOV_POOL_CONFIG: Final = "kubernetes:sriovnetwork.openshift.io/v1:SriovNetworkPoolConfig"
NETWORK_ATTACHMENT: Final = "kubernetes:k8s.cni.cncf.io/v1:NetworkAttachmentDefinition"

# This program's components (type oke-gpu-rdma:index:<Name>), which the component package (provider/)
# serves under the same tokens.
PACKAGE: Final = "oke-gpu-rdma"
_COMPONENT: Final = PACKAGE + ":index:"
NETWORK_COMPONENT: Final = _COMPONENT + "Network"
CLUSTER_COMPONENT: Final = _COMPONENT + "OkeCluster"
NODE_POOL_COMPONENT: Final = _COMPONENT + "RdmaGpuNodePool"
SYSTEM_POOL_COMPONENT: Final = _COMPONENT + "SystemNodePool"
LAUNCH_POLICY_COMPONENT: Final = _COMPONENT + "ComputeClusterLaunchPolicy"
DRANET_COMPONENT: Final = _COMPONENT + "Dranet"
GPU_DRIVER_COMPONENT: Final = _COMPONENT + "NvidiaGpuDraDriver"
COMPUTE_DOMAIN_DRIVER_COMPONENT: Final = _COMPONENT + "NvidiaComputeDomainDriver"
JOB_COMPUTE_DOMAIN_COMPONENT: Final = _COMPONENT + "JobComputeDomain"
GPU_OPERATOR_COMPONENT: Final = _COMPONENT + "GpuOperator"
DEVICE_PLUGIN_COMPONENT: Final = _COMPONENT + "NvidiaDevicePlugin"
WORKLOAD_NAMESPACE_COMPONENT: Final = _COMPONENT + "RdmaWorkloadNamespace"
CLAIM_TEMPLATES_COMPONENT: Final = _COMPONENT + "GpuRailClaimTemplates"
RAIL_HEALTH_COMPONENT: Final = _COMPONENT + "RailHealthAgent"
ACCEPTANCE_JOBS_COMPONENT: Final = _COMPONENT + "AcceptanceJobs"
MPI_OPERATOR_COMPONENT: Final = _COMPONENT + "MpiOperator"
MONITORING_COMPONENT: Final = _COMPONENT + "Monitoring"
NETWORK_OPERATOR_COMPONENT: Final = _COMPONENT + "NetworkOperator"
SRIOV_NETWORKS_COMPONENT: Final = _COMPONENT + "SriovRailNetworks"
SRIOV_ACCEPTANCE_COMPONENT: Final = _COMPONENT + "SriovAcceptanceJobs"
KUEUE_COMPONENT: Final = _COMPONENT + "Kueue"
REMEDIATION_COMPONENT: Final = _COMPONENT + "NodeRemediation"
