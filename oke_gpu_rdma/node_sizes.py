"""CPUs and memory of a node of each GPU shape: what Kueue's quotas and its topology-aware scheduling count.

Kueue's TAS places pods by their containers' requests against each node's allocatable, never by DRA devices
(kubernetes-sigs/kueue v0.19.2 pkg/scheduler/flavorassigner/tas_flavorassigner.go l. 111-112 "Use PodSpec
directly for TAS placement": resources.NewRequestsFromPodSpec). A whole-node worker therefore asks for more
than half of the node's CPUs, so that TAS never puts two on one node (docs/scheduling.md).

Source: Oracle Cloud Infrastructure documentation, "Compute Shapes", bare metal GPU shapes
(https://docs.oracle.com/en-us/iaas/Content/Compute/References/computeshapes.htm): OCPUs and memory per
shape. One OCPU is two vCPUs (hardware threads) on x86, which the kubelet reports as CPUs. The node's
allocatable is somewhat less (the kubelet's reservations): the quotas built from these are an upper bound,
and a worker's "more than half" request stays far below what a node has free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# vCPUs per OCPU on x86 (the same page: "one OCPU is the equal of two vCPUs for x86-based compute").
VCPUS_PER_OCPU: Final = 2


@dataclass(frozen=True)
class NodeSize:
    ocpus: int
    memory_gib: int

    @property
    def cpus(self) -> int:
        """The CPUs the kubelet reports (hardware threads)."""
        return self.ocpus * VCPUS_PER_OCPU

    @property
    def whole_node_cpus(self) -> int:
        """The CPU request of a whole-node worker: more than half the node's CPUs, so never two per node."""
        return self.cpus // 2 + 1


SIZES: Final[dict[str, NodeSize]] = {
    "BM.GPU.B4.8": NodeSize(64, 2048),
    "BM.GPU.A100-v2.8": NodeSize(128, 2048),
    "BM.GPU.H100.8": NodeSize(112, 2048),
    "BM.GPU.H200.8": NodeSize(112, 3072),
    "BM.GPU.B200.8": NodeSize(128, 4096),
    "BM.GPU.MI300X.8": NodeSize(112, 2048),
    "VM.GPU.A10.1": NodeSize(15, 240),
}


def node_size(shape: str) -> NodeSize | None:
    """The size of a node of ``shape`` (None for a shape not listed)."""
    return SIZES.get(shape)
