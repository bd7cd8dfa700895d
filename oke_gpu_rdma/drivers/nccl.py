"""NCCL settings for jobs over DRANET rails (seed 000's jobs, `nccl-dranet-aligned.yaml`)."""

from __future__ import annotations

from typing import Final

# What the seed's all_reduce jobs ran with (190.63 GB/s busbw at 8 GiB on 16 GPUs).
NCCL_SETTINGS: Final[dict[str, str]] = {
    "NCCL_IB_QPS_PER_CONNECTION": "4",
    "NCCL_IB_SPLIT_DATA_ON_QPS": "0",
    "NCCL_IB_TC": "41",
    "NCCL_IB_SL": "0",
    "NCCL_IB_TIMEOUT": "22",
    "UCX_TLS": "tcp",
    "UCX_NET_DEVICES": "eth0",
}

# Never set with DRANET children: the child's RoCE v2 GID index differs from the parent's (it was 5
# on the seed nodes) and NCCL finds it; NCCL also finds the claimed devices itself.
NCCL_GID_INDEX_VARIABLE: Final = "NCCL_IB_GID_INDEX"
NCCL_HCA_VARIABLE: Final = "NCCL_IB_HCA"
NCCL_FORBIDDEN_WITH_DRANET: Final[tuple[str, ...]] = (NCCL_GID_INDEX_VARIABLE, NCCL_HCA_VARIABLE)

# Why each one breaks a pod with DRANET rails, for messages (seed 000, DRANET's OKE documentation).
NCCL_FORBIDDEN_REASONS: Final[dict[str, str]] = {
    NCCL_GID_INDEX_VARIABLE: (
        "The oke-rdma profile gives each pod an IPvlan child whose RoCE v2 GID has its own index, not the "
        "parent rail's (it was 5 on the seed nodes), so a fixed index points NCCL at a GID that is not the "
        "pod's address. Fix: remove NCCL_IB_GID_INDEX; NCCL finds the child's GID index itself"
    ),
    NCCL_HCA_VARIABLE: (
        "The pod sees only the rails its claim was allocated, and which HCAs those are is decided by the "
        "scheduler per pod; a fixed HCA list names devices the pod may not have (NCCL then fails or skips "
        "the claimed rails). Fix: remove NCCL_IB_HCA; NCCL uses the RDMA devices DRANET moved into the pod"
    ),
}
