"""What the change plan says of a rollout the remediation controller will make (preview/plan/gpu_impact.py):
the order and how long it may take, from the controller's own config (components/health/node_remediation.py
controller_config) and the bring-up time of a bare-metal GPU node."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from oke_gpu_rdma.nodes.provisioning import BM_GPU_NODE_MINUTES

# The fabric check runs its jobs one after the other (components/health/scripts/fabric-check.sh): the rail job and
# the NCCL job, each bounded by WAIT_SECONDS.
CHECK_JOBS = 2


def check_minutes(config: Mapping[str, Any]) -> int:
    """The longest the fabric check of one node may take, from its Job's WAIT_SECONDS."""
    containers = config["checkJob"]["job"]["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for c in containers for e in c.get("env", [])}
    return math.ceil(int(env.get("WAIT_SECONDS") or 0) * CHECK_JOBS / 60)


def node_minutes(config: Mapping[str, Any]) -> int:
    """The longest one node may be out of service in a rollout: its jobs' window, the drain, OKE's replacement
    (a bare-metal GPU node's bring-up, oke_gpu_rdma/nodes/provisioning.py) and the fabric check."""
    s = config["settings"]
    window = math.ceil((int(s["grace_seconds"]) + int(s["drain_seconds"])) / 60)
    return window + BM_GPU_NODE_MINUTES + check_minutes(config)


def rollout_line(pool: str, nodes: int, shape: str, what: str, config: Mapping[str, Any]) -> str:
    """One plan line: who rolls the pool's nodes onto ``what``, in which order, and for how long at most."""
    s = config["settings"]
    at_once = max(1, min(s["max_per_pool"], nodes - 1))
    per_node = node_minutes(config)
    # Blocks roll one after the other; a block's nodes up to maxNodesPerPool at a time. The fewest rounds is
    # every block as full as the budget allows, the most one node per block.
    fewest, most = math.ceil(nodes / at_once), nodes
    span = f"{fewest * per_node} min" if fewest == most else f"{fewest * per_node} to {most * per_node} min"
    return (
        f"{pool}: {nodes} {shape} nodes rolled onto the new {what} by the remediation controller, one local block "
        f"at a time in the order of their oke-gpu-rdma/rdma-local-block labels, {at_once} node(s) at a time: each "
        f"cordoned, its jobs given {s['grace_seconds'] // 60} min to finish, then evicted and requeued by Kueue, "
        f"drained, replaced by OKE in its node pool (about {BM_GPU_NODE_MINUTES} min) and checked alone by the "
        f"fabric check before it serves; a block starts once the one before passed: up to {per_node} min a node, "
        f"{span} for the pool"
    )
