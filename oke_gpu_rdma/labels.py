"""Node labels the GPU pools carry and the Kubernetes side selects on."""

from __future__ import annotations

# The GPU Operator's device-plugin DaemonSet runs only where this label is "true" (the operator sets it on GPU
# nodes that do not set it already; oke_gpu_rdma/gpu_operator.py), as does the device plugin chart the stack
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
