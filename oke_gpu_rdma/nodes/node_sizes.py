"""CPUs and memory of a node of each GPU shape: what Kueue's quotas and its topology-aware scheduling count.

Kueue's TAS places pods by their containers' requests against each node's allocatable, never by DRA devices
(kubernetes-sigs/kueue v0.19.2 pkg/scheduler/flavorassigner/tas_flavorassigner.go l. 111-112 "Use PodSpec
directly for TAS placement": resources.NewRequestsFromPodSpec). A whole-node worker therefore asks for more
than half of the node's CPUs, so that TAS never puts two on one node (docs/tas-and-dra-claims.md).

Source: Oracle Cloud Infrastructure documentation, "Compute Shapes", bare metal GPU shapes
(https://docs.oracle.com/en-us/iaas/Content/Compute/References/computeshapes.htm): OCPUs and memory per
shape. The same page defines an OCPU as two vCPUs (hardware threads) on x86 and one vCPU on Arm; the
kubelet reports vCPUs as CPUs. The node's allocatable is somewhat less (the kubelet's reservations): the
quotas built from these are an upper bound, and a worker's "more than half" request stays far below what a
node has free. A shape listed here with other figures on a tenancy, or a shape not listed, takes its figures
from the stack file (`workloads.scheduling.nodeSizes`, stack_config/model.py), never from an edit here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# vCPUs per OCPU (the same page: "one OCPU is the equal of two vCPUs for x86-based compute", one for Arm).
VCPUS_PER_OCPU_X86: Final = 2
VCPUS_PER_OCPU_ARM: Final = 1


@dataclass(frozen=True)
class NodeSize:
    cpus: int
    """The CPUs the kubelet reports (vCPUs: hardware threads)."""
    memory_gib: int

    @classmethod
    def x86(cls, ocpus: int, memory_gib: int) -> NodeSize:
        return cls(ocpus * VCPUS_PER_OCPU_X86, memory_gib)

    @classmethod
    def arm(cls, ocpus: int, memory_gib: int) -> NodeSize:
        return cls(ocpus * VCPUS_PER_OCPU_ARM, memory_gib)

    @property
    def whole_node_cpus(self) -> int:
        """The CPU request of a whole-node worker: more than half the node's CPUs, so never two per node."""
        return self.cpus // 2 + 1


SIZES: Final[dict[str, NodeSize]] = {
    "BM.GPU.B4.8": NodeSize.x86(64, 2048),
    "BM.GPU.A100-v2.8": NodeSize.x86(128, 2048),
    "BM.GPU.H100.8": NodeSize.x86(112, 2048),
    "BM.GPU.H200.8": NodeSize.x86(112, 3072),
    "BM.GPU.B200.8": NodeSize.x86(128, 4096),
    "BM.GPU.MI300X.8": NodeSize.x86(112, 2048),
    "VM.GPU.A10.1": NodeSize.x86(15, 240),
    # The same page's GB200 row (BM.GPU.GB200.4): 144 OCPUs and 960 GB, the two Grace CPUs of the compute
    # tray (72 Arm Neoverse V2 cores and 480 GB LPDDR5X each, NVIDIA's GB200 NVL72 datasheet). The -v3.4
    # variant is the same tray with ConnectX-8 rails (oke_gpu_rdma/nodes/shapes/BM.GPU.GB200-v3.4.yaml: 2 Grace
    # CPUs, 4 GPUs, 8 rails); Arm, so one CPU per OCPU.
    "BM.GPU.GB200-v3.4": NodeSize.arm(144, 960),
}


def node_size(shape: str) -> NodeSize | None:
    """The size of a node of ``shape`` in OCI's table (None for a shape not listed)."""
    return SIZES.get(shape)
