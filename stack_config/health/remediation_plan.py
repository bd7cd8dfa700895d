"""The remediation settings against the rest of the stack (docs/remediation.md): what each listed
pool needs for the loop to close, said before anything is declared."""

from __future__ import annotations

from stack_config.model import StackConfig
from stack_config.nodes.capacity import acceptance_pool
from stack_config.problems import ConfigProblem


def checked_pool(config: StackConfig) -> str | None:
    """The pool the scheduled fabric check runs on (the acceptance jobs' pool, capacity.acceptance_pool), where
    it is scheduled at all."""
    if config.workloads.acceptance_jobs.schedule is None:
        return None
    pool = acceptance_pool(config)
    return pool.name if pool is not None else None


def problems(config: StackConfig) -> list[ConfigProblem]:
    remediation = config.health.remediation
    found: list[ConfigProblem] = []
    if not remediation.enabled:
        set_keys = sorted(remediation.model_fields_set - {"pools"})
        if set_keys:
            found.append(
                ConfigProblem(
                    "health.remediation.pools",
                    [],
                    f"lists no pool, so {', '.join(set_keys)} would do nothing; list the GPU pools to remediate, "
                    "or remove the other keys",
                )
            )
        return found
    health = config.health
    if not (health.gpu or health.rails.enabled):
        found.append(
            ConfigProblem(
                "health.remediation.pools",
                list(remediation.pools),
                "acts on GPU and rail marks, and the stack writes none; turn on health.gpu or health.rails.enabled",
            )
        )
    dra = {p.name for p in config.dra_pools}
    names = [p.name for p in config.node_pools]
    checked = checked_pool(config)
    for index, name in enumerate(remediation.pools):
        key = f"health.remediation.pools[{index}]"
        if name not in names:
            found.append(ConfigProblem(key, name, f"is no node pool; the stack's pools: {', '.join(names)}"))
        elif name not in dra:
            found.append(
                ConfigProblem(
                    key, name, "is not a DRANET pool (rdma: dranet): the stack marks no GPU or rail there"
                )
            )
        elif next(p for p in config.node_pools if p.name == name).cycling.enabled:
            found.append(
                ConfigProblem(
                    f"nodePools[{names.index(name)}].cycling.enabled",
                    True,
                    f"OKE would cycle pool {name}'s nodes on a spec change while the remediation controller rolls "
                    "them one local block at a time (health.remediation); set cycling.enabled: false, or leave "
                    "the pool out of health.remediation.pools",
                )
            )
        elif checked != name:
            where = (
                f"runs on pool {checked}"
                if checked
                else "is not scheduled (workloads.acceptanceJobs.schedule)"
            )
            found.append(
                ConfigProblem(
                    key,
                    name,
                    f"a replaced node must pass the fabric check before it serves, and the check {where}; "
                    f"set workloads.acceptanceJobs.schedule and nodePool: {name}, or leave the pool out",
                )
            )
    if len(set(remediation.pools)) != len(remediation.pools):
        found.append(ConfigProblem("health.remediation.pools", list(remediation.pools), "names a pool twice"))
    return found
