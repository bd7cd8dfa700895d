"""Placement looked up by chart through the registry, and the cluster's own add-ons
(oke_gpu_rdma/common/chart_workloads.py)."""

from __future__ import annotations

from oke_gpu_rdma.common.chart_workloads import COREDNS, release_workloads
from oke_gpu_rdma.drivers import dranet, nvidia_gpu
from oke_gpu_rdma.scheduling.pod_admission import NodeTaint, PodPlacement, PoolNodes, check


def test_a_release_is_placed_by_any_name_of_its_chart() -> None:
    for chart in (*nvidia_gpu.CHART_NAMES, nvidia_gpu.CHART):
        assert release_workloads(chart, "gpu", {}) == nvidia_gpu.workloads("gpu", {})
    assert release_workloads(dranet.CHART, "dranet", {}) == dranet.workloads("dranet", {})
    assert release_workloads("some-other-chart", "x", {}) == []


def test_coredns_tolerates_critical_addons_only() -> None:
    assert COREDNS.tolerations == ({"key": "CriticalAddonsOnly", "operator": "Exists"},)
    assert COREDNS.priority_class == "system-cluster-critical"


def test_a_priority_class_the_cluster_lacks_is_refused() -> None:
    pool = PoolNodes(
        "system", {"oke-gpu-rdma/node-pool": "system"}, (NodeTaint("x", "", "PreferNoSchedule"),)
    )
    ok = PodPlacement("Deployment a", priority_class="system-cluster-critical")
    missing = PodPlacement("Deployment b", priority_class="high")
    verdict = check([ok, missing], [pool])
    assert verdict.problems == (
        "Deployment b: the API server refuses its pods: priorityClassName high names no PriorityClass of the "
        "cluster (known: system-cluster-critical, system-node-critical)",
    )
    assert check([missing], [pool], priority_classes=frozenset({"high"})).problems == ()
