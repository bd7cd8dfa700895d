"""The fleet benchmark stack (issue 19): 64 GPU pools over four shapes plus a CPU pool.

Built from the `full` example (it creates the network and the cluster, so its system pool is the CPU
pool): 16 pools each of BM.GPU.B4.8 (the catalog's verified topology) and BM.GPU.H100.8,
BM.GPU.H200.8, BM.GPU.A100-v2.8, whose pairing the catalog does not verify, so the stack supplies
B4.8-like topologies for them under `shapeTopologies` (the B4.8 layout with each shape's GPU),
spread over three ADs, plus the 2-node CPU system pool.

The claim plan is per shape (stack_config/claims/claim_plan.py): each shape gets its own templates from its
own topology, named by the shape, and the first shape keeps the one-shape names too, so the program
declares five template sets (:data:`TEMPLATE_SETS`).
"""

from __future__ import annotations

import copy
from typing import Any, Final

import yaml

from oke_gpu_rdma.nodes.shape_catalog import CATALOG, SHAPES_DIR
from oke_gpu_rdma.nodes.topology import DEFAULT_SHAPE
from preview.cli import stack_file
from preview.mock_runtime import PROJECT

POOLS_PER_SHAPE: Final = 16
# Shape -> the GPU its B4.8-like supplied topology names (None: the catalog's verified topology).
SHAPES: Final[dict[str, str | None]] = {
    DEFAULT_SHAPE: None,
    "BM.GPU.H100.8": "NVIDIA H100 80GB HBM3",
    "BM.GPU.H200.8": "NVIDIA H200",
    "BM.GPU.A100-v2.8": "NVIDIA A100-SXM4-80GB",
}
ADS: Final = ("Uocm:US-ASHBURN-AD-1", "Uocm:US-ASHBURN-AD-2", "Uocm:US-ASHBURN-AD-3")
# One set per shape, from that shape's topology, and the first shape's again under the one-shape names
# (stack_config/claims/claim_plan.py stable_names).
TEMPLATE_SETS: Final = 5


def b4_like(gpu_product: str) -> dict[str, Any]:
    """A shapeTopologies entry: BM.GPU.B4.8's roots, GPUs and rails with another GPU (80 GiB)."""
    b4 = CATALOG.info(DEFAULT_SHAPE)
    document: dict[str, Any] = yaml.safe_load((SHAPES_DIR / f"{DEFAULT_SHAPE}.yaml").read_text())
    for key in ("evidence", "note"):
        document.pop(key)
    document["source"] = f"benchmark: {DEFAULT_SHAPE}'s layout ({b4.source}) with {gpu_product}"
    document["gpuProduct"] = gpu_product
    document["gpuMemoryBytes"] = 80 << 30
    return document


def fleet_document() -> dict[str, Any]:
    """The stack file of the fleet benchmark."""
    document: dict[str, Any] = yaml.safe_load(stack_file("full").read_text())
    config = document["config"]
    template = config[f"{PROJECT}:nodePools"][0]
    pools = []
    for s, shape in enumerate(SHAPES):
        for i in range(POOLS_PER_SHAPE):
            pool = {**copy.deepcopy(template), "name": f"gpu-{shape.split('.')[2].lower()}-{i:02d}"}
            pool["shape"] = shape
            pool["availabilityDomain"] = ADS[(s * POOLS_PER_SHAPE + i) % len(ADS)]
            pools.append(pool)
    config[f"{PROJECT}:nodePools"] = pools
    config[f"{PROJECT}:shapeTopologies"] = {
        shape: b4_like(gpu) for shape, gpu in SHAPES.items() if gpu is not None
    }
    config[f"{PROJECT}:systemPool"]["availabilityDomains"] = list(ADS)
    # Kueue with topology-aware scheduling on (issue 26: one flavor per shape, the queue over all 64 pools); the
    # full example's acceptance jobs off, as the fleet had them before.
    config[f"{PROJECT}:workloads"] = {"scheduling": {"enabled": True}}
    # Remediation proves a replaced node with the scheduled fabric check, which the fleet does not run.
    config[f"{PROJECT}:health"].pop("remediation", None)
    return document
