"""Node labels the GPU pools carry and the Kubernetes side selects on."""

from __future__ import annotations

# The GPU Operator's device-plugin DaemonSet runs only where this label is "true" (the operator sets it on GPU
# nodes that do not set it already; oke_gpu_rdma/drivers/gpu_operator_operands.py), as does the device plugin chart the stack
# installs for mixed fleets; "false" leaves the node's GPUs to the NVIDIA DRA driver (the nodes then show 0
# allocatable nvidia.com/gpu; seed 000).
DEVICE_PLUGIN_LABEL = "nvidia.com/gpu.deploy.device-plugin"
DEVICE_PLUGIN_OFF = "false"

# Set by the kubelet from the instance shape; DRANET and the GPU DRA driver select nodes on it.
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"

# Which of this stack's node pools a node belongs to.
POOL_LABEL = "oke-gpu-rdma/node-pool"

# Pools that get their rails from SR-IOV VFs carry this label; the DRA drivers stay off their nodes and,
# when DRA pools share their shape, the SR-IOV node policies select on it.
RDMA_PATH_LABEL = "oke-gpu-rdma/rdma-path"
RDMA_PATH_SRIOV = "sriov"

# Pod Security admission (https://kubernetes.io/docs/concepts/security/pod-security-admission/): the
# namespace label that enforces a level. DRANET pods need no privileges (seed 000 ran every RDMA pod
# under baseline: the nodes set unlimited memlock, so no IPC_LOCK).
POD_SECURITY_ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
POD_SECURITY_BASELINE = "baseline"
# Levels at least as strict as baseline.
POD_SECURITY_ENFORCING = ("baseline", "restricted")

# Set to "true" at run time by the GPU Operator on nodes with NFD's NVIDIA PCI labels (gpu-operator
# controllers/state_manager.go labelGPUNodes); one term of the NVIDIA DRA driver's default kubelet-plugin affinity
# (kubernetes-sigs/dra-driver-nvidia-gpu deployments/helm/.../values.yaml kubeletPlugin.affinity).
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
GPU_PRESENT = "true"

# Set to "true" at run time by Node Feature Discovery (which the GPU Operator deploys) on nodes with an
# NVIDIA PCI device (vendor 10de); the first term of the GPU DRA driver's default kubelet-plugin affinity.
NFD_NVIDIA_PCI_LABEL = "feature.node.kubernetes.io/pci-10de.present"

# kube-apiserver admits a ResourceClaim or ResourceClaimTemplate with `adminAccess: true` only in a namespace
# with this label set to "true" (kubernetes pkg/registry/resource/utils.go AuthorizedForAdmin, tag v1.36.0:
# "admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing
# namespace"; the label was resource.k8s.io/admin-access before v1.34).
ADMIN_ACCESS_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"
ADMIN_ACCESS_ENABLED = "true"

# The RDMA fabric's levels as node labels, outermost first, then the host. Every RDMA pool's boot script
# writes the three fabric labels from the instance metadata's /opc/v2/host/rdmaTopologyData (hashed values:
# an OCID exceeds the 63-character label value limit), Kueue's Topology lists them as its levels, and the
# pack checks topology requests against them. Our own prefix, not OKE's oci.oraclecloud.com/rdma.*: OKE
# writes those itself (hashes of its own) only on some tenancies, and two writers of one key disagree.
# DRANET publishes the same levels on every rail as oke.dra.net/{hpcIslandId,networkBlockId,localBlockId}; each
# label value is the SHA-256 (32 hex digits) of that attribute's value (oke_gpu_rdma/nodes/scripts/rdma-topology-labels.sh,
# docs/gpu-nodes.md "Claim selectors and node labels": a claim selector picks one node's devices, a node label places nodes).
RDMA_HPC_ISLAND_LABEL = "oke-gpu-rdma/rdma-hpc-island"
RDMA_NETWORK_BLOCK_LABEL = "oke-gpu-rdma/rdma-network-block"
RDMA_LOCAL_BLOCK_LABEL = "oke-gpu-rdma/rdma-local-block"
HOSTNAME_LABEL = "kubernetes.io/hostname"
FABRIC_LEVEL_LABELS = (
    RDMA_HPC_ISLAND_LABEL,
    RDMA_NETWORK_BLOCK_LABEL,
    RDMA_LOCAL_BLOCK_LABEL,
    HOSTNAME_LABEL,
)

# The GPU memory fabric (the NVLink domain of a rack of trays) of a node of a multi-node NVLink shape, written by
# the same boot script from rdmaTopologyData's customerGpuMemoryFabric (hashed the same way; DRANET publishes the
# same value as oke.dra.net/gpuMemoryFabricId, kubernetes-sigs/dranet pkg/cloudprovider/oke/oke.go). A fabric lies
# in one local block (pulumi-oci 5.5.0 core.ComputeGpuMemoryFabric has one computeLocalBlockId), so it is the
# level below the local block in the Topology of those shapes' flavors: a ComputeDomain job that requires it is
# placed on one NVLink domain (docs/compute-domains.md).
GPU_MEMORY_FABRIC_LABEL = "oke-gpu-rdma/gpu-memory-fabric"
NVLINK_LEVEL_LABELS = (
    RDMA_HPC_ISLAND_LABEL,
    RDMA_NETWORK_BLOCK_LABEL,
    RDMA_LOCAL_BLOCK_LABEL,
    GPU_MEMORY_FABRIC_LABEL,
    HOSTNAME_LABEL,
)

# Health marks (day 2). A rail found bad (by the rail health agent, or by a scheduled bandwidth check) is
# tainted under this key: on its DRANET device through a DeviceTaintRule where the cluster serves
# resource.k8s.io/v1 DeviceTaintRule (1.37+), otherwise on its node. Effect NoSchedule only: a pod already
# using the rail is never evicted.
RAIL_UNHEALTHY_TAINT_KEY = "oke-gpu-rdma/rail-unhealthy"
# Where rails are marked per device (1.37+), the rail health agent also keeps this label on its node: "true" while
# it marks none of the node's rails, "false" while it marks any. Kueue's topology-aware scheduling does not see
# device taints (its simulator filters nodes by taints, labels and affinity only:
# sigs.k8s.io/kueue pkg/cache/scheduler/scheduling_simulator_default.go l. 72-98), so the shapes' flavors select
# "true" and TAS keeps whole-node jobs off a node with a marked rail. Nodes of such pools start "true".
RAILS_UNMARKED_LABEL = "oke-gpu-rdma/rails-unmarked"
# A node whose scheduled fabric check (NCCL) failed carries this label ("pass" or "fail").
FABRIC_CHECK_LABEL = "oke-gpu-rdma/fabric-check"

# On each GPU/rail ResourceClaimTemplate the stack declares: the level its GPUs and rails share
# (pcieRoot or numaNode, oke_gpu_rdma/nodes/topology.py Topology.alignment) and, on a template that keeps to
# one NUMA node, which one (numa0): a reader of the cluster sees how each template aligns.
ALIGNMENT_ANNOTATION = "oke-gpu-rdma/alignment"
ALIGNMENT_GROUP_ANNOTATION = "oke-gpu-rdma/alignment-group"
