"""Schedulability before anything is declared: the controllers every stack starts need a pool that admits them.

CoreDNS, the GPU Operator's operator, NFD master/gc and the chart's hook Jobs, the Network Operator's
Deployments, Kueue's controller manager and the MPI operator keep their charts' placement (the project sets none of it), so whether a stack's pools admit them
follows from the config alone (oke_gpu_rdma/common/chart_workloads.py, oke_gpu_rdma/scheduling/pod_admission.py). The program
checks it while the config loads, so `pulumi preview` and `pulumi up` stop before the first resource;
`make preview` then checks every pod template the run declared (preview/schedulability.py).
"""

from __future__ import annotations

from oke_gpu_rdma.common import chart_workloads
from oke_gpu_rdma.drivers import gpu_operator_chart
from oke_gpu_rdma.scheduling import kueue_chart as kueue
from oke_gpu_rdma.scheduling import mpi_operator
from oke_gpu_rdma.scheduling.pod_admission import PodPlacement, check
from oke_gpu_rdma.sriov import network_operator_chart as network_operator
from stack_config.model import StackConfig
from stack_config.monitoring import monitoring_plan
from stack_config.problems import ConfigProblem
from stack_config.scheduling.pool_nodes import planned_pools, unseen_pools
from stack_config.sriov.network_operator_values import release_values


def controllers(config: StackConfig) -> list[PodPlacement]:
    """The Deployments and hook Jobs the stack starts whose placement is their chart's (DaemonSets and the
    operators' workloads are judged at preview, against the objects the run declares)."""
    pods = [chart_workloads.COREDNS]
    if config.deploys_gpu_operator:
        pods += [
            p for p in gpu_operator_chart.workloads(gpu_operator_chart.CHART_NAME, {}) if not p.daemonset
        ]
    if config.sriov_pools:
        values = release_values(
            config.network_operator, list({t: None for p in config.sriov_pools for t in p.taints})
        )
        pods += [
            p for p in network_operator.release_workloads(network_operator.RELEASE, values) if not p.daemonset
        ]
    if config.workloads.scheduling.enabled:
        # The chart's placement (no nodeSelector, no toleration: oke_gpu_rdma/scheduling/kueue_chart.py), as the
        # component's values leave it.
        pods += kueue.workloads(kueue.RELEASE, kueue.values([]))
    acceptance = config.workloads.acceptance_jobs
    if acceptance.active and (acceptance.nccl or acceptance.schedule is not None):
        pods.append(mpi_operator.release(acceptance.mpi_operator_version).placement())
    pods += monitoring_plan.controllers(config)
    return pods


def problems(config: StackConfig) -> list[ConfigProblem]:
    """The controllers that no pool of the stack admits (an existing cluster's other pools may), one problem per
    reason, naming the controllers it applies to."""
    fix = (
        "turn the system pool on (systemPool.enabled: true, with its imageId)"
        if not config.creates_system_pool
        else "give the system pool no taints it does not need"
    )
    verdict = check(controllers(config), planned_pools(config), unseen_pools(config), fix=fix)
    return [ConfigProblem("systemPool", None, line) for line in verdict.problems]
