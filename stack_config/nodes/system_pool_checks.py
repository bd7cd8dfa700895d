"""Checks of the system pool against the rest of the stack: its image, its ADs, its name.

The pool itself is a plain OKE node pool (components/nodes/system_pool.py); these checks make a stack that
creates its cluster say what the pool needs before anything is declared.
"""

from __future__ import annotations

from stack_config.model import StackConfig
from stack_config.problems import ConfigProblem


def problems(config: StackConfig) -> list[ConfigProblem]:
    """What keeps the system pool from being declared (nothing when the stack creates none)."""
    if not config.creates_system_pool:
        return []
    pool = config.system_pool
    found: list[ConfigProblem] = []
    why = (
        "set systemPool.enabled: false only when the cluster has other nodes without taints for CoreDNS "
        "and the operators' controllers"
    )
    if pool.image_id is None:
        found.append(
            ConfigProblem(
                "systemPool.imageId",
                None,
                "is missing; the system pool (created with cluster.create) needs an OKE Oracle Linux image "
                "for the cluster's Kubernetes version (oci ce node-pool-options get --node-pool-option-id all); "
                + why,
            )
        )
    if not config.system_pool_ads:
        found.append(
            ConfigProblem(
                "systemPool.availabilityDomains",
                None,
                "is missing; no GPU pool names an availabilityDomain to default to, so list the ADs "
                "(e.g. [Uocm:US-ASHBURN-AD-1])",
            )
        )
    if pool.name in {p.name for p in config.node_pools}:
        found.append(
            ConfigProblem(
                "systemPool.name",
                pool.name,
                "is also a nodePools name; pool names (and their oke-gpu-rdma/node-pool labels) must be unique",
            )
        )
    return found
