"""What the monitoring namespaces' Pod Security levels and NetworkPolicies read of kube-prometheus-stack 88.5.3:
the values that move the node exporter and give Grafana its admin, and each pod's labels, ports and security
fields as the chart renders them with the stack's values.

Sources (tags): prometheus-community/helm-charts kube-prometheus-stack-88.5.3, its subcharts
prometheus-node-exporter-4.56.1 and kube-state-metrics-8.4.0; grafana-community/helm-charts grafana-12.11.1;
prometheus-operator/prometheus-operator v0.93.0 (the chart runs operator v0.93.1, a patch release; v0.93.0 is
the newest tag read), which builds the Prometheus and Alertmanager pods. The pods below were read from `helm
template` of the chart at 88.5.3 with the release values the stack renders (rendered/full/) plus the values
this module adds (admin.existingSecret and namespaceOverride), and checked against the templates cited.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from oke_gpu_rdma.common import pod_security
from oke_gpu_rdma.monitoring import kube_prometheus_stack as kps

# The node exporter in a namespace of its own: the subchart's namespaceOverride (kube-prometheus-stack values.yaml
# l. 2728; prometheus-node-exporter templates/_helpers.tpl l. 98-104 puts the DaemonSet, Service, ServiceAccount
# there, l. 110-118 its ServiceMonitor too). The Prometheus the chart renders selects ServiceMonitors in every
# namespace (serviceMonitorNamespaceSelector {}, values.yaml l. 4489) and reads pods and endpoints cluster-wide
# (templates/prometheus/clusterrole.yaml), so it still scrapes it there.
NODE_EXPORTER_NAMESPACE_VALUE: Final = f"{kps.NODE_EXPORTER}.namespaceOverride"
NODE_EXPORTER_NAMESPACE: Final = "monitoring-node-exporter"

# Grafana's admin from a Secret (grafana values.yaml l. 574-579 admin.existingSecret, userKey admin-user,
# passwordKey admin-password). With existingSecret set, templates/secret.yaml l. 1 renders no Secret (and
# _config.tpl l. 172-178 no admin-user or admin-password): without it the chart writes `adminUser` (admin) and
# `adminPassword` or, since kube-prometheus-stack 79 (UPGRADE.md "From 78.x to 79.x": `prom-operator` removed),
# 40 random characters (_helpers.tpl l. 131-138) into that Secret and the Helm release. The Grafana container
# and its sidecars read the Secret through secretKeyRef without `optional` (templates/_pod.tpl l. 283-297,
# l. 1417-1432): while it is missing they stay in CreateContainerConfigError and the pod never becomes Ready.
GRAFANA_ADMIN_SECRET_VALUE: Final = "grafana.admin.existingSecret"
GRAFANA_ADMIN_USER_KEY_VALUE: Final = "grafana.admin.userKey"
GRAFANA_ADMIN_PASSWORD_KEY_VALUE: Final = "grafana.admin.passwordKey"
GRAFANA_ADMIN_USER_KEY: Final = "admin-user"
GRAFANA_ADMIN_PASSWORD_KEY: Final = "admin-password"
GRAFANA_ADMIN_SECRET: Final = "grafana-admin"
GRAFANA_ADMIN_USER: Final = "admin"

VALUE_PATHS: Final = kps.VALUE_PATHS | {
    NODE_EXPORTER_NAMESPACE_VALUE,
    GRAFANA_ADMIN_SECRET_VALUE,
    GRAFANA_ADMIN_USER_KEY_VALUE,
    GRAFANA_ADMIN_PASSWORD_KEY_VALUE,
}

_RELEASE: Final = kps.RELEASE
# The chart's own restricted-ready contexts, as rendered (values.yaml l. 3468-3489: the operator; l. 3152-3183:
# the webhook hook Jobs; prometheusSpec.securityContext l. 4815, alertmanagerSpec.securityContext
# l. 1219).
_NO_ESCALATION: Final = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}
_RUNTIME_DEFAULT: Final = {"seccompProfile": {"type": "RuntimeDefault"}}


@dataclass(frozen=True)
class ChartPod:
    """One pod the chart runs: its selector labels (the ones its Service selects it by), the ports others reach
    it on (TCP), and the fields of its spec Pod Security admission reads."""

    name: str
    labels: Mapping[str, str]
    ports: tuple[int, ...]
    spec: Mapping[str, Any] = field(default_factory=dict)


# The operator: its Deployment serves the admission webhook and its metrics on one TLS port (values.yaml
# l. 2846 prometheusOperator.tls.internalPort 10250); selected by templates/prometheus-operator/service.yaml
# l. 57-59.
OPERATOR: Final = ChartPod(
    f"Deployment {_RELEASE}-operator",
    {"app": f"{_RELEASE}-operator", "release": _RELEASE},
    (10250,),
    {
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, **_RUNTIME_DEFAULT},
        "containers": [{"name": _RELEASE, "securityContext": _NO_ESCALATION}],
        "volumes": [{"name": "tls-secret", "secret": {}}],
    },
)
# Prometheus: web 9090 and the config reloader's 8080 (prometheus-operator pkg/operator/config_reloader.go l. 30,
# l. 228 reloader-web); selected by templates/prometheus/service.yaml l. 73-80. The operator gives every
# container no escalation, a read-only root and no capabilities (pkg/prometheus/server/statefulset.go l. 347-351,
# config_reloader.go l. 368-372); storage is an emptyDir without prometheusSpec.storageSpec.
PROMETHEUS: Final = ChartPod(
    f"StatefulSet prometheus-{_RELEASE}-prometheus",
    {"app.kubernetes.io/name": "prometheus", "operator.prometheus.io/name": f"{_RELEASE}-prometheus"},
    (9090, 8080),
    {
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, **_RUNTIME_DEFAULT},
        "initContainers": [{"name": "init-config-reloader", "securityContext": _NO_ESCALATION}],
        "containers": [
            {"name": "prometheus", "securityContext": _NO_ESCALATION},
            {"name": "config-reloader", "securityContext": _NO_ESCALATION},
        ],
        "volumes": [
            {"name": "config", "secret": {}},
            {"name": "tls-assets", "projected": {}},
            {"name": "config-out", "emptyDir": {}},
            {"name": "rules", "configMap": {}},
            {"name": "db", "emptyDir": {}},
        ],
    },
)
# Alertmanager: web 9093 (pkg/alertmanager/statefulset.go l. 65) and the reloader's 8080; one replica, so no
# cluster mesh listener (l. 254-258: cluster.listen-address empty); selected by templates/alertmanager/
# service.yaml l. 56-58.
ALERTMANAGER: Final = ChartPod(
    f"StatefulSet alertmanager-{_RELEASE}-alertmanager",
    {"app.kubernetes.io/name": "alertmanager", "alertmanager": f"{_RELEASE}-alertmanager"},
    (9093, 8080),
    {
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, **_RUNTIME_DEFAULT},
        "initContainers": [{"name": "init-config-reloader", "securityContext": _NO_ESCALATION}],
        "containers": [
            {"name": "alertmanager", "securityContext": _NO_ESCALATION},
            {"name": "config-reloader", "securityContext": _NO_ESCALATION},
        ],
        "volumes": [
            {"name": "config-volume", "secret": {}},
            {"name": "tls-assets", "projected": {}},
            {"name": "config-out", "emptyDir": {}},
            {"name": "alertmanager-db", "emptyDir": {}},
        ],
    },
)
# Grafana: 3000 (grafana values.yaml l. 262 service.targetPort); selected by templates/_helpers.tpl l. 81-84.
# Pod context values.yaml l. 159-163, the container's l. 165-172, the sidecars' l. 1055-1061; no init container
# (initChownData runs only with persistence, templates/_pod.tpl l. 31-40, which the stack leaves off).
GRAFANA: Final = ChartPod(
    f"Deployment {_RELEASE}-grafana",
    {"app.kubernetes.io/name": "grafana", "app.kubernetes.io/instance": _RELEASE},
    (3000,),
    {
        "securityContext": {"runAsNonRoot": True, "runAsUser": 472},
        "containers": [
            {"name": name, "securityContext": {**_NO_ESCALATION, **_RUNTIME_DEFAULT}}
            for name in ("grafana-sc-dashboard", "grafana-sc-datasources", "grafana")
        ],
        "volumes": [
            {"name": "config", "configMap": {}},
            {"name": "storage", "emptyDir": {}},
            {"name": "sc-dashboard-volume", "emptyDir": {}},
            {"name": "sc-datasources-volume", "emptyDir": {}},
        ],
    },
)
# kube-state-metrics: 8080 (its values.yaml l. 64; selfMonitor off, l. 530-531); selected by its
# templates/_helpers.tpl selectorLabels.
KUBE_STATE_METRICS: Final = ChartPod(
    f"Deployment {_RELEASE}-kube-state-metrics",
    {"app.kubernetes.io/name": "kube-state-metrics", "app.kubernetes.io/instance": _RELEASE},
    (8080,),
    {
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, **_RUNTIME_DEFAULT},
        "containers": [{"name": "kube-state-metrics", "securityContext": _NO_ESCALATION}],
    },
)
# The admission webhook's certificate hook Jobs (job-patch/job-createSecret.yaml, job-patchWebhook.yaml): no
# port, only the API server to call.
WEBHOOK_JOBS: Final = ChartPod(
    f"Jobs {_RELEASE}-admission-create and -patch (hooks)",
    {"app.kubernetes.io/component": "prometheus-operator-webhook"},
    (),
    {
        "securityContext": {"runAsNonRoot": True, "runAsUser": 2000, **_RUNTIME_DEFAULT},
        "containers": [{"name": "create", "securityContext": _NO_ESCALATION}],
    },
)
# The node exporter: host network and host PID (prometheus-node-exporter values.yaml l. 382, l. 390), hostPath
# mounts of /proc, /sys and / (templates/daemonset.yaml), port 9100 (values.yaml l. 131); selected by its
# templates/_helpers.tpl l. 57-60.
NODE_EXPORTER: Final = ChartPod(
    f"DaemonSet {_RELEASE}-prometheus-node-exporter",
    {"app.kubernetes.io/name": "prometheus-node-exporter", "app.kubernetes.io/instance": _RELEASE},
    (9100,),
    {
        "hostNetwork": True,
        "hostPID": True,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65534},
        "containers": [{"name": "node-exporter", "securityContext": {"readOnlyRootFilesystem": True}}],
        "volumes": [{"name": n, "hostPath": {}} for n in ("proc", "sys", "root")],
    },
)

# What runs in monitoring.namespace once the node exporter has its own. The grafana chart's test Pod
# (templates/tests/, a `helm.sh/hook: test`) runs only under `helm test`, which the stack never runs.
MONITORING_PODS: Final = (OPERATOR, PROMETHEUS, ALERTMANAGER, GRAFANA, KUBE_STATE_METRICS, WEBHOOK_JOBS)


def least_strict(pods: tuple[ChartPod, ...]) -> pod_security.Level:
    """The strictest Pod Security level every one of ``pods`` passes."""
    return min((pod_security.strictest(p.spec) for p in pods), key=pod_security.LEVELS.index)
