"""Numbers that must fit together: the nodes of the whole stack, and the acceptance jobs in their pool.

Each value alone is bounded by the model (a pool holds 1 to 1,000 nodes); these checks join them, so a
stack that OKE would refuse halfway through `pulumi up`, or an acceptance job that could never pass, is
refused before anything is declared.
"""

from __future__ import annotations

from stack_config.model import StackConfig
from stack_config.nodes.address_plan import stack_nodes
from stack_config.nodes.pool_settings import NodePoolConfig
from stack_config.problems import ConfigProblem
from stack_config.settings_types import MAX_NODES_PER_CLUSTER


def acceptance_pool(config: StackConfig) -> NodePoolConfig | None:
    """The pool the acceptance jobs run in: the one named, else the first DRANET pool with claim templates (not
    onboarding), else the first SR-IOV pool (as __main__.py places them); None when the jobs are off or no pool
    has rails."""
    jobs = config.workloads.acceptance_jobs
    if not jobs.active:
        return None
    named = [p for p in config.node_pools if p.name == jobs.node_pool]
    candidates = named or config.templated_pools or config.sriov_pools
    return candidates[0] if candidates else None


def problems(config: StackConfig) -> list[ConfigProblem]:
    found: list[ConfigProblem] = []
    nodes = stack_nodes(config)
    if nodes > MAX_NODES_PER_CLUSTER:
        found.append(
            ConfigProblem(
                "nodePools",
                None,
                f"is {nodes} nodes in all (with the system pool); an OKE enhanced cluster takes at most "
                f"{MAX_NODES_PER_CLUSTER} managed nodes (Kubernetes Engine Limits), so lower the counts",
            )
        )
    jobs = config.workloads.acceptance_jobs
    pool = acceptance_pool(config)
    if pool is not None and jobs.nccl and jobs.workers > pool.count:
        found.append(
            ConfigProblem(
                "workloads.acceptanceJobs.workers",
                jobs.workers,
                f"is more than the {pool.count} nodes of pool {pool.name}: the MPIJob runs one worker per node, "
                "so the job would wait for nodes forever and `pulumi up` time out; set at most "
                f"{pool.count}, or add nodes",
            )
        )
    return found
