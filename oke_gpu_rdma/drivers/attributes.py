"""Attribute and resource names no single DRA driver owns: the standard attributes (domain
resource.kubernetes.io) both drivers publish, and the extended resource a device plugin offers GPUs as.

Each driver's own name, DeviceClasses and attributes live in its facts module under :mod:`oke_gpu_rdma.releases`
(kubernetes-sigs/dranet ``pkg/apis/attributes.go``, kubernetes-sigs/dra-driver-nvidia-gpu
``cmd/gpu-kubelet-plugin/deviceinfo.go``).
"""

from __future__ import annotations

from typing import Final

# The extended resource the NVIDIA device plugin (not DRA) offers GPUs as.
NVIDIA_GPU_RESOURCE: Final = "nvidia.com/gpu"

# Standard attributes (domain resource.kubernetes.io), published by both drivers.
PCIE_ROOT: Final = "resource.kubernetes.io/pcieRoot"
NUMA_NODE: Final = "resource.kubernetes.io/numaNode"
PCI_BUS_ID: Final = "resource.kubernetes.io/pciBusID"
