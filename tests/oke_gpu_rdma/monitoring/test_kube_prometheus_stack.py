"""Where kube-prometheus-stack 88.5.3's pods go, from the values as the chart reads them."""

from __future__ import annotations

from oke_gpu_rdma.monitoring import kube_prometheus_stack as kps
from oke_gpu_rdma.scheduling.pod_admission import NodeTaint, PoolNodes, check


def test_with_no_values_nothing_is_selected_or_tolerated_but_the_node_exporter() -> None:
    placed = {p.name.split(" (")[0]: p for p in kps.workloads("kps", {})}
    assert sorted(placed) == [
        "DaemonSet kps-prometheus-node-exporter",
        "Deployment kps-grafana",
        "Deployment kps-kube-state-metrics",
        "Deployment kps-operator",
        "Job kps-admission-create",
        "StatefulSet alertmanager-kps-alertmanager",
        "StatefulSet prometheus-kps-prometheus",
    ]
    for name, pod in placed.items():
        if name.startswith("DaemonSet"):
            assert pod.tolerations == ({"effect": "NoSchedule", "operator": "Exists"},)
            assert pod.node_selector == {"kubernetes.io/os": "linux"}
        else:
            assert (pod.node_selector, pod.tolerations) == ({}, ())


def test_values_place_them_and_switches_drop_them() -> None:
    values = {
        "grafana": {"enabled": False},
        "prometheus": {"prometheusSpec": {"nodeSelector": {"pool": "sys"}}},
    }
    placed = {p.name.split(" (")[0]: p for p in kps.workloads("kps", values)}
    assert "Deployment kps-grafana" not in placed
    assert placed["StatefulSet prometheus-kps-prometheus"].node_selector == {"pool": "sys"}


def test_the_node_exporter_reaches_tainted_gpu_nodes_and_a_no_execute_taint_needs_a_toleration() -> None:
    gpu = PoolNodes(
        "gpu",
        {"kubernetes.io/os": "linux"},
        (
            NodeTaint("nvidia.com/gpu", "present", "NoSchedule"),
            NodeTaint("oke-gpu-rdma/rail-unhealthy", "x", "NoSchedule"),
        ),
    )
    evicting = PoolNodes(
        "evicting", {"kubernetes.io/os": "linux"}, (NodeTaint("dedicated", "ml", "NoExecute"),)
    )
    (exporter,) = [p for p in kps.workloads("kps", {}) if p.daemonset]
    verdict = check([exporter], [gpu, evicting], [])
    assert dict(verdict.placements)[exporter.name] == ("gpu",)
    values = {
        "prometheus-node-exporter": {
            "tolerations": [
                *kps.NODE_EXPORTER_TOLERATIONS,
                {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
            ]
        }
    }
    (exporter,) = [p for p in kps.workloads("kps", values) if p.daemonset]
    assert dict(check([exporter], [gpu, evicting], []).placements)[exporter.name] == ("gpu", "evicting")
