"""The policy pack's config for a stack, derived from the stack config.

The pack sees only the resources a stack declares. What a stack merely references (an existing VCN,
subnets, an existing cluster's pod and service CIDRs) and what it knows about its nodes (the worker
subnet, the RDMA network, user-supplied topologies) reaches the pack through this config: `make
preview` passes it to the pack, and `make render` writes it to `rendered/<stack>/` for CI's
`pulumi preview --policy-pack policies --policy-pack-config ...`.
"""

from __future__ import annotations

from typing import Any

from . import address_plan, claim_plan
from .config import StackConfig

FILENAME = "policy-pack-config.json"


def policy_pack_config(config: StackConfig) -> dict[str, Any]:
    """Pack config keyed by policy name, as `--policy-pack-config` takes it."""
    # Ranges the stack creates reach the pack as resources; the ones it only references, through this list.
    rdma = address_plan.rdma_range(config)
    existing = [r for r in address_plan.plan_ranges(config) if not r.declared and r != rdma]
    return {
        "dranet-child-range": {
            "ocaRdmaNetwork": str(config.network.rdma_cidr),
            "existingCidrs": [{"name": f"{r.role} ({r.path})", "cidr": str(r.network)} for r in existing],
            "workerSubnetCidrs": [str(address_plan.worker_range(config).network)],
        },
        "gpu-rail-claims-aligned": {
            "shape": claim_plan.pool_shapes(config)[0],
            "shapeTopologies": {k: dict(v) for k, v in config.shape_topologies.items()},
        },
    }
