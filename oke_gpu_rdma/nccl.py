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
NCCL_FORBIDDEN_WITH_DRANET: Final[tuple[str, ...]] = (NCCL_GID_INDEX_VARIABLE, "NCCL_IB_HCA")
