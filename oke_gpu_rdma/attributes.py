"""Names other modules import: DRA driver names, DeviceClasses with their selectors, attribute names.

Sources: seed 000 (DeviceClass ``dra.net``, the rail selector, the attributes of ``rdma0``),
kubernetes-sigs/dranet ``pkg/apis/attributes.go``, kubernetes-sigs/dra-driver-nvidia-gpu
``cmd/gpu-kubelet-plugin/deviceinfo.go`` and the DeviceClass its chart creates.
"""

from __future__ import annotations

from typing import Final

from oke_gpu_rdma.cidr_rules import DEFAULT_CHILD_RANGE

# Driver names, as they appear in ResourceSlice.spec.driver and in `device.driver`.
DRANET_DRIVER: Final = "dra.net"
NVIDIA_GPU_DRIVER: Final = "gpu.nvidia.com"

# DeviceClass names. The DRANET chart creates no class; seed 000 creates `dra.net`.
DRANET_DEVICE_CLASS: Final = "dra.net"
NVIDIA_GPU_DEVICE_CLASS: Final = "gpu.nvidia.com"

DRANET_CLASS_SELECTOR: Final = 'device.driver == "dra.net"'
NVIDIA_GPU_CLASS_SELECTOR: Final = (
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
)

# DeviceClass name -> its CEL selectors (all must match, together with the request's selectors).
DEVICE_CLASS_SELECTORS: Final[dict[str, tuple[str, ...]]] = {
    DRANET_DEVICE_CLASS: (DRANET_CLASS_SELECTOR,),
    NVIDIA_GPU_DEVICE_CLASS: (NVIDIA_GPU_CLASS_SELECTOR,),
}

# The extended resource the NVIDIA device plugin (not DRA) offers GPUs as.
NVIDIA_GPU_RESOURCE: Final = "nvidia.com/gpu"

# Standard attributes (domain resource.kubernetes.io), published by both drivers.
PCIE_ROOT: Final = "resource.kubernetes.io/pcieRoot"
NUMA_NODE: Final = "resource.kubernetes.io/numaNode"
PCI_BUS_ID: Final = "resource.kubernetes.io/pciBusID"

# DRANET attributes (domain dra.net).
DRANET_IF_NAME: Final = "dra.net/ifName"
DRANET_RDMA: Final = "dra.net/rdma"
DRANET_RDMA_DEVICE: Final = "dra.net/rdmaDevice"
DRANET_PCI_ADDRESS: Final = "dra.net/pciAddress"
DRANET_NUMA_NODE: Final = "dra.net/numaNode"
DRANET_VIRTUAL: Final = "dra.net/virtual"
DRANET_DEVICE_TYPE: Final = "dra.net/type"

# Attributes the OKE provider of DRANET adds (seed 000, seed 003).
OKE_SHAPE: Final = "oke.dra.net/shape"
OKE_RDMA_CHILD_IPV4_CIDR: Final = "oke.dra.net/rdmaChildIpv4Cidr"
OKE_DEFAULT_CHILD_IPV4_CIDR: Final = str(DEFAULT_CHILD_RANGE)  # the range lives in network.py

# NVIDIA GPU driver attributes: published without a domain, so CEL sees them under gpu.nvidia.com.
GPU_TYPE: Final = "type"
GPU_UUID: Final = "uuid"
GPU_PRODUCT_NAME: Final = "productName"
GPU_BRAND: Final = "brand"
GPU_ARCHITECTURE: Final = "architecture"
GPU_CUDA_COMPUTE_CAPABILITY: Final = "cudaComputeCapability"
GPU_DRIVER_VERSION: Final = "driverVersion"
GPU_CUDA_DRIVER_VERSION: Final = "cudaDriverVersion"
GPU_MEMORY_CAPACITY: Final = "memory"

# The rail selector of seed 000: guards with has(), checks the rdma name prefix and the rdma flag, so
# the front-end NIC eth1 and virtual interfaces never match.
RAIL_SELECTOR: Final = (
    'has(device.attributes["dra.net"].ifName) && device.attributes["dra.net"].ifName.startsWith("rdma")'
    ' && device.attributes["dra.net"].rdma'
)
