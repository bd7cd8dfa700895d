"""Taints, tolerations and pool admission (oke_gpu_rdma/scheduling/pod_admission.py), as Kubernetes decides them."""

from __future__ import annotations

from typing import Any

import pytest

from oke_gpu_rdma.nodes.labels import POOL_LABEL
from oke_gpu_rdma.scheduling.pod_admission import (
    SYSTEM_PRIORITY_CLASSES,
    NodeTaint,
    PodPlacement,
    PoolNodes,
    check,
    from_pod_spec,
    rejections,
    tolerates_taint,
    untolerated_taint,
)

GPU = NodeTaint("nvidia.com/gpu", "present", "NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        # k8s.io/api/core/v1/toleration.go ToleratesTaint and its test table (toleration_test.go).
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, True),
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, True),  # empty effect: every effect
        ({"operator": "Exists"}, True),  # empty key with Exists: every taint
        ({"operator": "Exists", "effect": "NoSchedule"}, True),
        ({"operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}, True),
        ({"key": "nvidia.com/gpu", "value": "present"}, True),  # empty operator is Equal
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "absent"}, False),
        ({"key": "nvidia.com/gpu", "operator": "Equal"}, False),  # value "" differs from "present"
        ({"key": "other", "operator": "Exists"}, False),
        ({"key": "nvidia.com/gpu", "operator": "Gt", "value": "1"}, False),
    ],
)
def test_tolerates_taint(toleration: dict[str, Any], tolerated: bool) -> None:
    assert tolerates_taint(toleration, GPU) is tolerated


def test_prefer_no_schedule_never_filters() -> None:
    soft = NodeTaint("soft", "", "PreferNoSchedule")
    assert untolerated_taint([soft], []) is None
    hard = NodeTaint("hard", "", "NoExecute")
    assert untolerated_taint([soft, hard, GPU], [{"key": "nvidia.com/gpu", "operator": "Exists"}]) == hard


GPU_POOL = PoolNodes(
    "gpu-b4", {POOL_LABEL: "gpu-b4"}, (GPU,), frozenset(), frozenset({"dra.net", "gpu.nvidia.com"})
)
SYSTEM = PoolNodes("system", {POOL_LABEL: "system"})


def test_rejections_name_selection_taint_and_devices() -> None:
    pinned = from_pod_spec(
        "Pod rdma/p",
        {
            "nodeSelector": {POOL_LABEL: "gpu-b4"},
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 8, "cpu": "2"}}}],
        },
    )
    assert rejections(pinned, SYSTEM) == [f"nodeSelector {POOL_LABEL}=gpu-b4 does not match its labels"]
    assert rejections(pinned, GPU_POOL) == [
        "taint nvidia.com/gpu=present:NoSchedule is not tolerated",
        "no device plugin offers nvidia.com/gpu there",
    ]
    claims = PodPlacement(
        "Pod rdma/q", tolerations=({"operator": "Exists"},), device_classes=frozenset({"dra.net"})
    )
    assert rejections(claims, GPU_POOL) == []
    assert rejections(claims, SYSTEM) == ["no DRA driver serves device class dra.net there"]


def test_a_pod_no_pool_admits_is_one_line_naming_each_pool() -> None:
    coredns = PodPlacement("Deployment kube-system/coredns")
    verdict = check([coredns], [GPU_POOL])
    assert verdict.problems == (
        "Deployment kube-system/coredns fits no node pool of the stack: "
        "gpu-b4: taint nvidia.com/gpu=present:NoSchedule is not tolerated",
    )
    assert check([coredns], [GPU_POOL, SYSTEM]).problems == ()


def test_a_reason_many_pods_share_is_said_once_with_the_pods() -> None:
    coredns = PodPlacement("Deployment kube-system/coredns")
    metrics = PodPlacement("Deployment kube-system/metrics-server")
    pinned = PodPlacement("Pod rdma/p", node_selector={POOL_LABEL: "gpu-b4"})
    verdict = check([coredns, pinned, metrics], [GPU_POOL], unseen="the other pools")
    assert verdict.notes == (
        "2 pods fit no node pool of the stack: gpu-b4: taint nvidia.com/gpu=present:NoSchedule is not tolerated; "
        "they may run on the other pools, which the check cannot see:\n"
        "- Deployment kube-system/coredns\n"
        "- Deployment kube-system/metrics-server",
    )
    assert check([coredns, metrics], []).problems == (
        "2 pods: the stack has no node pool:\n- Deployment kube-system/coredns\n- Deployment kube-system/metrics-server",
    )


def test_an_existing_cluster_may_host_unpinned_pods_elsewhere() -> None:
    coredns = PodPlacement("Deployment kube-system/coredns")
    pinned = PodPlacement("Pod rdma/p", node_selector={POOL_LABEL: "gpu-b4"})
    verdict = check([coredns, pinned], [GPU_POOL], unseen="the other pools")
    assert verdict.notes == (
        "Deployment kube-system/coredns fits no node pool of the stack: gpu-b4: taint "
        "nvidia.com/gpu=present:NoSchedule is not tolerated; it may run on the other pools, which the check cannot see",
    )
    assert verdict.problems == (
        "Pod rdma/p fits no node pool of the stack: gpu-b4: taint nvidia.com/gpu=present:NoSchedule is not tolerated",
    )


def test_device_classes_come_from_where_the_kubelet_plugins_run() -> None:
    pool = PoolNodes("gpu-b4", {POOL_LABEL: "gpu-b4"}, (GPU,))
    plugin = PodPlacement("DaemonSet dranet", daemonset=True, provides_device_classes=frozenset({"dra.net"}))
    worker = PodPlacement(
        "Pod w", tolerations=({"operator": "Exists"},), device_classes=frozenset({"dra.net"})
    )
    # The plugin does not tolerate the GPU taint: it selects the pool but gets no pod there, so no class.
    verdict = check([plugin, worker], [pool])
    assert verdict.problems == (
        "DaemonSet dranet selects pool(s) gpu-b4 but gets no pod there: gpu-b4: taint "
        "nvidia.com/gpu=present:NoSchedule is not tolerated",
        "Pod w fits no node pool of the stack: gpu-b4: no DRA driver serves device class dra.net there",
    )
    tolerant = PodPlacement(
        "DaemonSet dranet",
        tolerations=({"operator": "Exists", "effect": "NoSchedule"},),
        daemonset=True,
        provides_device_classes=frozenset({"dra.net"}),
    )
    assert check([tolerant, worker], [pool]).problems == ()


def test_a_pod_naming_a_priority_class_the_cluster_lacks_is_a_problem() -> None:
    spec = {"containers": [{"name": "c"}], "priorityClassName": "training-high"}
    pod = from_pod_spec("Job default/train", spec)
    assert pod.priority_class == "training-high"
    pool = PoolNodes("cpu", {})
    assert check([pod], [pool]).problems == (
        "Job default/train: the API server refuses its pods: priorityClassName training-high names no "
        "PriorityClass of the cluster (known: system-cluster-critical, system-node-critical)",
    )
    declared = frozenset({*SYSTEM_PRIORITY_CLASSES, "training-high"})
    assert check([pod], [pool], priority_classes=declared).problems == ()
    # The API server creates the system classes; a pod without one takes the global default.
    system = PodPlacement("Deployment kube-system/x", priority_class="system-node-critical")
    assert check([system, PodPlacement("Pod default/p")], [pool]).problems == ()


def test_a_daemonset_that_does_not_tolerate_the_rail_mark_is_refused_where_nodes_are_marked() -> None:
    from oke_gpu_rdma.scheduling.pod_admission import NodeTaint, PodPlacement, PoolNodes, check

    mark = NodeTaint("oke-gpu-rdma/rail-unhealthy", "rail-agent", "NoSchedule")
    pools = [PoolNodes("gpu", {"oke-gpu-rdma/node-pool": "gpu"}, marks=(mark,)), PoolNodes("system", {})]
    plugin = PodPlacement("DaemonSet plugin", daemonset=True)
    verdict = check([plugin], pools)
    assert verdict.problems == (
        "DaemonSet plugin gets no new pod on a node the health agent marked in pool(s) gpu (it does not tolerate "
        "oke-gpu-rdma/rail-unhealthy=rail-agent:NoSchedule): tolerate that taint, NoSchedule only",
    )
    tolerant = PodPlacement(
        "DaemonSet plugin",
        daemonset=True,
        tolerations=({"key": "oke-gpu-rdma/rail-unhealthy", "operator": "Exists", "effect": "NoSchedule"},),
    )
    assert check([tolerant], pools).problems == ()
    # A training pod is meant to keep off marked nodes: the pool's other nodes still admit it.
    job = PodPlacement("Job train")
    assert check([job], pools).problems == () and dict(check([job], pools).placements) == {
        "Job train": ("gpu", "system")
    }
