"""What the acceptance jobs must measure: the seeds' figures, the default thresholds of the gate.

These are measurements on real hardware (two BM.GPU.B4.8 nodes), used as expectations and never
computed: a run below its threshold fails the job, and `pulumi up` with it. Each path has its own
seed: DRANET rails and DRA GPUs seed 000, SR-IOV VFs seed 001.
"""

from __future__ import annotations

from typing import Final, Literal

Path = Literal["dranet", "sriov"]

# ib_write_bw per rail, one rail at a time (Gb/s): the lowest rail of the seed.
# seed 000: "Every rail gave 96.87 or 96.88 Gb/s"; seed 001: "Every rail gave 96.86 to 96.88 Gb/s".
SEED_RAIL_GBPS: Final[dict[Path, float]] = {"dranet": 96.87, "sriov": 96.86}

# NCCL all_reduce_perf busbw at 8 GiB, out of place (GB/s), by GPUs per worker on 2 nodes.
# seed 000: 190.13 for 16 GPUs with aligned claims; 96.29 / 96.34 for two 4-GPU jobs sharing the nodes
# (a 4-GPU job alone gets at least that). seed 001: 190.55 with 1 VF per PF; 96.28 / 96.35 for the
# two 4-GPU jobs with 2 VFs per PF.
SEED_NCCL_BUSBW_GBS: Final[dict[Path, dict[int, float]]] = {
    "dranet": {8: 190.13, 4: 96.29},
    "sriov": {8: 190.55, 4: 96.28},
}


def rail_threshold(path: Path, configured: float | None) -> float:
    """The per-rail minimum: the stack's setting, else the path's seed figure."""
    return SEED_RAIL_GBPS[path] if configured is None else configured


def nccl_threshold(path: Path, gpus_per_worker: int, configured: float | None) -> float | None:
    """The busbw minimum of one NCCL job: the stack's setting, else the seed's figure for that many
    GPUs per worker (None: the seed measured no such job, the stack must set one)."""
    return SEED_NCCL_BUSBW_GBS[path].get(gpus_per_worker) if configured is None else configured


# Multi-node NVLink (a ComputeDomain job on a shape whose file states it, oke_gpu_rdma/drivers/compute_domains.py): no seed
# measured one, so the gate is drawn from the vendor's figure. NCCL's bus bandwidth is the figure to compare with
# the hardware's peak per GPU and direction (NVIDIA/nccl-tests doc/PERFORMANCE.md, "Bus bandwidth"); the gate
# asks for this share of the shape's NVLink figure (BM.GPU.GB200-v3.4: NVIDIA's 1.8 TB/s per GPU both ways, so 900
# GB/s each way, gives 720 GB/s). Over the rails alone a GPU has at most its share of the node's rails (GB200-v3.4:
# 2 x 400 Gb/s, 100 GB/s), so a pass cannot come from a job that fell back to RDMA.
NVLINK_BUSBW_SHARE: Final = 0.8


def nvlink_threshold(nvlink_gbps: float, configured: float | None) -> float:
    """The busbw minimum of a multi-node NVLink job: the stack's setting, else NVLINK_BUSBW_SHARE of the shape's
    NVLink figure per GPU and direction."""
    return round(nvlink_gbps * NVLINK_BUSBW_SHARE, 1) if configured is None else configured


def rail_ceiling_gbs(rails: int, gpus: int, rail_gbps: float) -> float:
    """What one GPU's share of its node's rails carries at most (GB/s): the figure a job over the rails alone cannot
    pass."""
    return round(rails * rail_gbps / 8 / gpus, 1) if gpus else 0.0
