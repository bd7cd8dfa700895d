"""oke_gpu_rdma/common/network_policies.py: the monitoring namespaces' and the agents' NetworkPolicies, as manifests
the Kubernetes 1.36 schema takes, and the flows they let through (issue 36, finding 10)."""

from __future__ import annotations

import pytest

from oke_gpu_rdma.common import network_policies as np
from oke_gpu_rdma.common.network_policies import Endpoint, connects
from oke_gpu_rdma.monitoring import chart_pods
from preview import schema_check

MONITORING = "monitoring"
NODE_EXPORTER = "monitoring-node-exporter"
POLICIES = np.monitoring_policies(MONITORING, NODE_EXPORTER)


def pod(chart_pod: chart_pods.ChartPod, namespace: str = MONITORING) -> Endpoint:
    return Endpoint(namespace, chart_pod.labels)


PROMETHEUS = pod(chart_pods.PROMETHEUS)
ALERTMANAGER = pod(chart_pods.ALERTMANAGER)
GRAFANA = pod(chart_pods.GRAFANA)
# A training pod, and a pod someone starts in the monitoring namespace itself.
TRAINING = Endpoint("rdma-dranet", {"app": "train"})
STRAY = Endpoint(MONITORING, {"app": "curl"})


def test_every_policy_is_a_valid_networkpolicy_of_kubernetes_1_36() -> None:
    policies = [*POLICIES, np.api_server_only("api-server-only", "rail-health")]
    report = schema_check.check([p.manifest() for p in policies], "v1.36.4")
    assert report.errors == [] and report.validated == len(policies)


def test_both_monitoring_namespaces_deny_ingress_by_default() -> None:
    denies = {
        (p.namespace, p.name) for p in POLICIES if p.spec == {"podSelector": {}, "policyTypes": ["Ingress"]}
    }
    assert denies == {(MONITORING, np.DEFAULT_DENY_INGRESS), (NODE_EXPORTER, np.DEFAULT_DENY_INGRESS)}


@pytest.mark.parametrize("client", [TRAINING, STRAY], ids=["training pod", "other pod in monitoring"])
def test_no_other_pod_reaches_alertmanager_prometheus_or_grafana(client: Endpoint) -> None:
    # Alertmanager's API (9093) is where alerts are silenced.
    assert not connects(POLICIES, client, ALERTMANAGER, 9093)
    assert not connects(POLICIES, client, PROMETHEUS, 9090)
    assert not connects(POLICIES, client, GRAFANA, 3000)
    assert not connects(POLICIES, client, pod(chart_pods.NODE_EXPORTER, NODE_EXPORTER), 9100)


def test_prometheus_scrapes_every_target_in_both_namespaces() -> None:
    targets = [
        *((pod(p), p.ports) for p in chart_pods.MONITORING_PODS),
        (pod(chart_pods.NODE_EXPORTER, NODE_EXPORTER), chart_pods.NODE_EXPORTER.ports),
    ]
    for target, ports in targets:
        for port in ports:
            assert connects(POLICIES, PROMETHEUS, target, port), (target, port)


def test_prometheus_alerts_alertmanager_and_grafana_queries_both() -> None:
    assert connects(POLICIES, PROMETHEUS, ALERTMANAGER, 9093)
    assert connects(POLICIES, GRAFANA, PROMETHEUS, 9090)
    assert connects(POLICIES, GRAFANA, ALERTMANAGER, 9093)
    # Grafana is no path to the node exporter, and Alertmanager none to Prometheus.
    assert not connects(POLICIES, GRAFANA, pod(chart_pods.NODE_EXPORTER, NODE_EXPORTER), 9100)
    assert not connects(POLICIES, ALERTMANAGER, PROMETHEUS, 9090)


def test_the_api_server_reaches_the_operator_webhook_only() -> None:
    operator = pod(chart_pods.OPERATOR)
    assert connects(POLICIES, None, operator, 10250)
    assert not connects(POLICIES, None, operator, 8080)
    assert not connects(POLICIES, None, ALERTMANAGER, 9093)


def test_an_agent_reaches_the_api_server_and_nothing_else() -> None:
    labels = {"app.kubernetes.io/name": "fabric-check"}
    policies = [np.api_server_only("fabric-check-api-server-only", "rdma-dranet", labels)]
    check = Endpoint("rdma-dranet", labels)
    # The kubernetes Service (443) before kube-proxy's DNAT, OKE's API endpoint (6443) after it.
    assert connects(policies, check, None, 443) and connects(policies, check, None, 6443)
    assert not connects(policies, check, None, 53)  # its scripts resolve no name
    assert not connects(policies, check, TRAINING, 22)
    assert not connects(policies, TRAINING, check, 8080)
    # The other pods of the workload namespace are not selected: the training jobs keep their network.
    assert connects(policies, TRAINING, Endpoint("rdma-dranet", {"app": "worker"}), 2222)
    assert connects(policies, TRAINING, None, 443)


def test_an_agent_policy_without_labels_selects_its_whole_namespace() -> None:
    (policy,) = [np.api_server_only("api-server-only", "rail-health")]
    assert policy.spec["podSelector"] == {}
    assert not connects([policy], Endpoint("rail-health", {"any": "pod"}), None, 80)
