"""Monitoring (components/monitoring.py): kube-prometheus-stack or an existing Prometheus, the GPU Operator's
DCGM ServiceMonitor, DRANET's PodMonitor, the alert rules and the dashboard."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from components.dra_drivers import ChartValuesError, _documented
from oke_gpu_rdma.monitoring import dashboard
from oke_gpu_rdma.releases import kube_prometheus_stack as kps
from stack_config.loading import load_stack
from stack_config.problems import ConfigError
from tests.support import EXAMPLE_REGION, Run, raw_config

RELEASE = "kubernetes:helm.sh/v3:Release"
POD_MONITOR = "kubernetes:monitoring.coreos.com/v1:PodMonitor"
RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
ON_SYSTEM = {"nodeSelector": {"oke-gpu-rdma/node-pool": "system"}}
NODE_AS_INSTANCE = {
    "sourceLabels": ["__meta_kubernetes_pod_node_name"],
    "targetLabel": "instance",
    "action": "replace",
}


def test_the_stack_installs_kube_prometheus_stack_on_the_system_pool(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    release = run.one(RELEASE, "monitoring-release").inputs
    assert (release["chart"], release["version"], release["namespace"]) == (
        "kube-prometheus-stack",
        "88.5.3",
        "monitoring",
    )
    assert release["repositoryOpts"] == {"repo": "https://prometheus-community.github.io/helm-charts"}
    # The component declares its namespace (Pod Security privileged: node exporter uses the host's network and
    # PID namespace), not Helm's createNamespace.
    assert release.get("createNamespace") is None
    own = run.one("kubernetes:core/v1:Namespace", "monitoring-namespace")
    assert own.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert release["values"] == {
        "prometheusOperator": {**ON_SYSTEM, "admissionWebhooks": {"patch": ON_SYSTEM}},
        "prometheus": {"prometheusSpec": ON_SYSTEM},
        "alertmanager": {"alertmanagerSpec": ON_SYSTEM},
        "grafana": ON_SYSTEM,
        # The node labels the GPU-count and check rules join on.
        "kube-state-metrics": {
            **ON_SYSTEM,
            "metricLabelsAllowlist": [
                "nodes=[oke-gpu-rdma/node-pool,oke-gpu-rdma/fabric-check,oke-gpu-rdma/rails-unmarked]"
            ],
        },
        # The chart leaves the node exporter's instance the pod's address (values.yaml l. 2800
        # relabelings: []); the rail rules and panels join it with the node's name.
        "prometheus-node-exporter": {"prometheus": {"monitor": {"relabelings": [NODE_AS_INSTANCE]}}},
    }


def test_alerts_go_where_the_user_s_alertmanager_secret_says(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("full")
    raw["monitoring"]["alertmanagerConfigSecret"] = "alertmanager-receivers"
    values = run_stack("full", raw).one(RELEASE, "monitoring-release").inputs["values"]
    assert values["alertmanager"] == {
        "alertmanagerSpec": {**ON_SYSTEM, "useExistingSecret": True, "configSecret": "alertmanager-receivers"}
    }


def test_an_alertmanager_secret_with_an_existing_prometheus_is_refused() -> None:
    raw = raw_config("full")
    raw["monitoring"] = {
        "enabled": True,
        "existingPrometheus": {"namespace": "observability", "selectorLabels": {"prometheus": "main"}},
        "alertmanagerConfigSecret": "receivers",
    }
    with pytest.raises(ConfigError) as refused:
        load_stack(raw, "full", EXAMPLE_REGION)
    assert str(refused.value).splitlines()[1].strip() == (
        "full: monitoring: alertmanagerConfigSecret configure the kube-prometheus-stack the stack installs, and "
        "with existingPrometheus it installs none; remove them (existingPrometheus.namespace names where the "
        "objects go)"
    )


def test_the_gpu_operator_creates_the_dcgm_service_monitor_prometheus_selects(
    run_stack: Callable[..., Run],
) -> None:
    run = run_stack("full")
    operator = run.one(RELEASE, "gpu-operator-release")
    assert operator.inputs["values"]["dcgmExporter"] == {
        "serviceMonitor": {
            "enabled": True,
            "honorLabels": True,
            "additionalLabels": {"release": "kube-prometheus-stack"},
            "relabelings": [NODE_AS_INSTANCE],
        }
    }
    # The ServiceMonitor CRD comes with the monitoring release: the operator waits for it.
    assert run.one(RELEASE, "monitoring-release").urn in operator.dependencies


def test_dranet_rules_and_dashboard_carry_the_selector_labels(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    monitor = run.one(POD_MONITOR).inputs
    assert monitor["metadata"] == {
        "name": "dranet",
        "namespace": "monitoring",
        "labels": {"release": "kube-prometheus-stack"},
    }
    assert monitor["spec"]["selector"] == {"matchLabels": {"app": "dranet"}}
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["kube-system"]}
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    # DRANET's pods declare no port, and the operator keeps only targets whose pod declares the endpoint's
    # port: the endpoint names none and sets the address to the pod's IP and DRANET's port itself.
    assert "port" not in endpoint and "portNumber" not in endpoint
    assert endpoint == {
        "path": "/metrics",
        "relabelings": [
            {
                "sourceLabels": ["__meta_kubernetes_pod_ip"],
                "regex": "(.+)",
                "targetLabel": "__address__",
                "replacement": "$1:9177",
                "action": "replace",
            },
            NODE_AS_INSTANCE,
        ],
    }
    rule = run.one(RULE).inputs
    assert rule["metadata"]["labels"] == {"release": "kube-prometheus-stack"}
    assert [g["name"] for g in rule["spec"]["groups"]] == [
        "oke-gpu-rdma.gpus",
        "oke-gpu-rdma.rails",
        "oke-gpu-rdma.health",
    ]
    board = run.one(CONFIG_MAP, "monitoring-dashboard").inputs
    assert board["metadata"]["labels"] == {"grafana_dashboard": "1"}
    assert json.loads(board["data"][dashboard.CONFIGMAP_KEY]) == dashboard.dashboard()


def test_an_existing_prometheus_gets_the_objects_and_no_release(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("full")
    raw["monitoring"] = {
        "enabled": True,
        "existingPrometheus": {"namespace": "observability", "selectorLabels": {"prometheus": "main"}},
    }
    run = run_stack("full", raw)
    assert [r.name for r in run.of_type(RELEASE) if r.inputs["chart"] == kps.CHART_NAME] == []
    for kind in (POD_MONITOR, RULE):
        assert run.one(kind).inputs["metadata"]["namespace"] == "observability"
        assert run.one(kind).inputs["metadata"]["labels"] == {"prometheus": "main"}
    additional = run.one(RELEASE, "gpu-operator-release").inputs["values"]["dcgmExporter"]["serviceMonitor"]
    assert additional["additionalLabels"] == {"prometheus": "main"}


def test_monitoring_off_declares_nothing_of_it(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("full")
    del raw["monitoring"]
    run = run_stack("full", raw)
    assert run.of_type(POD_MONITOR) == [] and run.of_type(RULE) == []
    assert "dcgmExporter" not in run.one(RELEASE, "gpu-operator-release").inputs["values"]


def test_values_outside_the_chart_s_documented_paths_are_refused() -> None:
    with pytest.raises(ChartValuesError, match=r"grafana\.nodeSelectr"):
        _documented({"grafana": {"nodeSelectr": {}}}, kps.VALUE_PATHS, kps.CHART_NAME)
