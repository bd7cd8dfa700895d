"""kube-prometheus-stack (prometheus-community/helm-charts `charts/kube-prometheus-stack`, tag
kube-prometheus-stack-88.5.3): its reference, the values this project sets, and where its pods go.

The chart installs the Prometheus Operator, which runs Prometheus and Alertmanager as StatefulSets from the
Prometheus and Alertmanager objects the chart renders, and the kube-state-metrics (8.4.0, kube-state-metrics
2.20.0), prometheus-node-exporter (4.56.1, node exporter 1.12.1) and grafana (12.11.1, grafana-community)
subcharts.

Placement sources, at 88.5.3 (charts/kube-prometheus-stack/values.yaml): the operator Deployment
(`prometheusOperator.nodeSelector` l. 3434, `tolerations` l. 3439; templates/prometheus-operator/deployment.yaml
l. 241-255), its admission webhook's certificate hook Jobs, pre-install and pre-upgrade
(`prometheusOperator.admissionWebhooks.patch.*` l. 3127-3146; job-patch/job-createSecret.yaml l. 58-69),
Prometheus (`prometheus.prometheusSpec.nodeSelector` l. 4421, `tolerations` l. 4354; templates/prometheus/
prometheus.yaml l. 90-92, l. 343-345), Alertmanager (`alertmanager.alertmanagerSpec.nodeSelector` l. 1160,
`tolerations` l. 1198), kube-state-metrics (its values.yaml l. 360-376: no selector, no toleration), the node
exporter DaemonSet (its values.yaml l. 464-473: `kubernetes.io/os: linux`, tolerates every NoSchedule taint;
templates/_helpers.tpl l. 209-237: a required affinity off Fargate and virtual kubelets, merged with
`affinity`) and Grafana (`grafana.nodeSelector`, `grafana.tolerations`, the grafana chart's values).
`crds.upgradeJob` is off by default (l. 40).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from oke_gpu_rdma.common import chart_placement as values_of
from oke_gpu_rdma.common.release_facts import ReleaseFacts
from oke_gpu_rdma.scheduling.pod_admission import PodPlacement
from oke_gpu_rdma.sriov import network_operator_chart as network_operator

CHART_NAME: Final = "kube-prometheus-stack"
REPO: Final = "https://prometheus-community.github.io/helm-charts"
DEFAULT_VERSION: Final = "88.5.3"
RELEASE: Final = CHART_NAME
NAMESPACE: Final = "monitoring"
# The Prometheus Operator's API and the kinds the stack declares (the chart's crds subchart installs them).
MONITORING_API: Final = "monitoring.coreos.com/v1"
POD_MONITOR_KIND: Final = "PodMonitor"
PROMETHEUS_RULE_KIND: Final = "PrometheusRule"

# With `*SelectorNilUsesHelmValues: true` (values.yaml l. 4451, l. 4476) the Prometheus the chart renders
# selects ServiceMonitors, PodMonitors and PrometheusRules labelled release: <release name>
# (templates/prometheus/prometheus.yaml l. 196-199, l. 280-283), in every namespace (the namespace selectors
# default to {}).
SELECTOR_LABEL: Final = "release"
# Grafana's dashboard sidecar loads ConfigMaps with this label from every namespace (values.yaml l. 1536-1542:
# sidecar.dashboards.label grafana_dashboard, labelValue "1", searchNamespace ALL).
DASHBOARD_LABEL: Final = "grafana_dashboard"
DASHBOARD_LABEL_VALUE: Final = "1"
# kube-state-metrics exports a node label only when allowed (--metric-labels-allowlist; the subchart's
# metricLabelsAllowlist, values.yaml l. 416).
KSM_LABELS_ALLOWLIST_VALUE: Final = "kube-state-metrics.metricLabelsAllowlist"

_PLACED: Final = {
    "operator": "prometheusOperator",
    "webhook_jobs": "prometheusOperator.admissionWebhooks.patch",
    "prometheus": "prometheus.prometheusSpec",
    "alertmanager": "alertmanager.alertmanagerSpec",
    "grafana": "grafana",
    "kube_state_metrics": "kube-state-metrics",
}
NODE_EXPORTER: Final = "prometheus-node-exporter"
# The node exporter's ServiceMonitor relabelings (values.yaml l. 2800 `prometheus-node-exporter.prometheus.
# monitor.relabelings: []`, rendered as they are by prometheus-node-exporter 4.56.1 templates/servicemonitor.yaml
# l. 57): empty, so its targets' `instance` is the pod's address (<node IP>:9100, host network), not the node's
# name that kube-state-metrics' `node` label and the DCGM exporter's `Hostname` carry. The stack sets it to the
# node's name, as the DCGM exporter's ServiceMonitor (stack_config/drivers/gpu_operator_plan.py) and DRANET's PodMonitor
# (components/monitoring/monitoring_stack.py) do.
NODE_EXPORTER_RELABELINGS_VALUE: Final = f"{NODE_EXPORTER}.prometheus.monitor.relabelings"


def node_as_instance() -> list[dict[str, Any]]:
    """The relabeling that names a pod's target by its node (`instance`), a fresh list for each values tree."""
    return [
        {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "instance", "action": "replace"}
    ]


# Alertmanager's configuration from a Secret the user keeps (values.yaml l. 1024-1028 useExistingSecret: the
# chart's own `config`, which routes every alert to the receiver 'null' (l. 553-591), is then not rendered;
# l. 1044-1047 configSecret; templates/alertmanager/alertmanager.yaml l. 67-68, secret.yaml l. 1).
ALERTMANAGER_EXISTING_SECRET_VALUE: Final = "alertmanager.alertmanagerSpec.useExistingSecret"
ALERTMANAGER_CONFIG_SECRET_VALUE: Final = "alertmanager.alertmanagerSpec.configSecret"
VALUE_PATHS: Final = frozenset(
    {
        *(f"{prefix}.{key}" for prefix in _PLACED.values() for key in ("nodeSelector.*", "tolerations")),
        f"{NODE_EXPORTER}.tolerations",
        KSM_LABELS_ALLOWLIST_VALUE,
        NODE_EXPORTER_RELABELINGS_VALUE,
        ALERTMANAGER_EXISTING_SECRET_VALUE,
        ALERTMANAGER_CONFIG_SECRET_VALUE,
    }
)
# prometheus-node-exporter values.yaml l. 464-473 and templates/_helpers.tpl l. 209-222.
NODE_EXPORTER_SELECTOR: Final = {network_operator.OS_LABEL: network_operator.LINUX}
NODE_EXPORTER_TOLERATIONS: Final[tuple[Mapping[str, Any], ...]] = (
    {"effect": "NoSchedule", "operator": "Exists"},
)
NODE_EXPORTER_AFFINITY: Final[dict[str, Any]] = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["fargate"]},
                        {"key": "type", "operator": "NotIn", "values": ["virtual-kubelet"]},
                    ]
                }
            ]
        }
    }
}


def workloads(release: str, values: Mapping[str, Any]) -> list[PodPlacement]:
    """The operator and its webhook hook Jobs, Prometheus, Alertmanager, Grafana, kube-state-metrics and the
    node exporter DaemonSet, as the chart at 88.5.3 places them."""
    where = f"(chart {CHART_NAME}, release {release})"
    names = {
        "operator": ("prometheusOperator.enabled", f"Deployment {release}-operator"),
        "webhook_jobs": (
            "prometheusOperator.admissionWebhooks.patch.enabled",
            f"Job {release}-admission-create (pre-install hook)",
        ),
        "prometheus": ("prometheus.enabled", f"StatefulSet prometheus-{release}-prometheus"),
        "alertmanager": ("alertmanager.enabled", f"StatefulSet alertmanager-{release}-alertmanager"),
        "grafana": ("grafana.enabled", f"Deployment {release}-grafana"),
        "kube_state_metrics": ("kubeStateMetrics.enabled", f"Deployment {release}-kube-state-metrics"),
    }
    found = []
    for part, (switch, name) in names.items():
        if not values_of.switch(values, switch, True):
            continue
        prefix = _PLACED[part]
        found.append(
            PodPlacement(
                f"{name} {where}",
                node_selector=values_of.mapping(values, f"{prefix}.nodeSelector"),
                affinity=values_of.mapping(values, f"{prefix}.affinity"),
                tolerations=values_of.tolerations(values, f"{prefix}.tolerations", ()),
            )
        )
    if values_of.switch(values, "nodeExporter.enabled", True):
        found.append(
            PodPlacement(
                f"DaemonSet {release}-prometheus-node-exporter {where}",
                node_selector=values_of.mapping(
                    values, f"{NODE_EXPORTER}.nodeSelector", NODE_EXPORTER_SELECTOR
                ),
                affinity=NODE_EXPORTER_AFFINITY,
                tolerations=values_of.tolerations(
                    values, f"{NODE_EXPORTER}.tolerations", NODE_EXPORTER_TOLERATIONS
                ),
                daemonset=True,
            )
        )
    return found


FACTS: Final = ReleaseFacts(
    title="kube-prometheus-stack",
    chart_name=CHART_NAME,
    chart=CHART_NAME,
    repository=REPO,
    default_version=DEFAULT_VERSION,
    release=RELEASE,
    namespace=NAMESPACE,
    value_paths=VALUE_PATHS,
    workloads=workloads,
)
