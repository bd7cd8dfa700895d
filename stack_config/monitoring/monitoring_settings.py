"""The stack config's `monitoring` section: kube-prometheus-stack or an existing Prometheus, alerts, dashboards."""

from __future__ import annotations

from pydantic import (
    Field,
    StrictBool,
    StrictInt,
    field_validator,
    model_validator,
)

from oke_gpu_rdma.monitoring import chart_pods as monitoring_chart_pods
from oke_gpu_rdma.monitoring import grafana_admin as monitoring_grafana_admin
from oke_gpu_rdma.monitoring import kube_prometheus_stack
from stack_config.settings_types import ConfigModel, DnsLabel, is_label_key, is_label_value


class ExistingPrometheusConfig(ConfigModel):
    """A Prometheus (and Grafana) the cluster already runs, as the Prometheus Operator's custom resources."""

    namespace: DnsLabel = Field(
        description="Namespace the ServiceMonitor, PrometheusRule and dashboard ConfigMap go to: one the "
        "Prometheus watches (its serviceMonitorNamespaceSelector and ruleNamespaceSelector)."
    )
    selector_labels: dict[str, str] = Field(
        alias="selectorLabels",
        min_length=1,
        description="Labels its serviceMonitorSelector and ruleSelector match (kube-prometheus-stack: "
        "{release: <its release name>}).",
    )
    dashboard_labels: dict[str, str] = Field(
        default_factory=lambda: {
            kube_prometheus_stack.DASHBOARD_LABEL: kube_prometheus_stack.DASHBOARD_LABEL_VALUE
        },
        alias="dashboardLabels",
        description="Labels Grafana's dashboard sidecar loads ConfigMaps by (kube-prometheus-stack's default "
        "grafana_dashboard: '1').",
    )

    @model_validator(mode="after")
    def _valid_labels(self) -> ExistingPrometheusConfig:
        for key, value in [*self.selector_labels.items(), *self.dashboard_labels.items()]:
            if not is_label_key(key) or not is_label_value(value):
                raise ValueError(f"label {key}={value!r} is not a valid Kubernetes label")
        return self


class MonitoringConfig(ConfigModel):
    """Metrics, dashboards and alerts of the GPUs and rails (components/monitoring/monitoring_stack.py, docs/monitoring.md)."""

    enabled: StrictBool = Field(
        False,
        description="Scrape the GPU Operator's DCGM exporter (its ServiceMonitor) and DRANET's metrics, and "
        "ship the GPU and rail dashboard and alert rules.",
    )
    existing_prometheus: ExistingPrometheusConfig | None = Field(
        None,
        alias="existingPrometheus",
        description="Use this Prometheus instead of installing kube-prometheus-stack (null: the stack "
        "installs it).",
    )
    chart_version: str = Field(
        kube_prometheus_stack.DEFAULT_VERSION,
        alias="chartVersion",
        description="kube-prometheus-stack chart version (prometheus-community); its placement facts are "
        "read at this version (oke_gpu_rdma/monitoring/kube_prometheus_stack.py).",
    )
    namespace: DnsLabel = Field(
        kube_prometheus_stack.NAMESPACE,
        description="Namespace of kube-prometheus-stack but its node exporter (created, Pod Security restricted).",
    )
    node_exporter_namespace: DnsLabel = Field(
        monitoring_chart_pods.NODE_EXPORTER_NAMESPACE,
        alias="nodeExporterNamespace",
        description="Namespace of the node exporter alone (created, Pod Security privileged: it uses the host's "
        "network and PID namespace), apart from Prometheus, Alertmanager and Grafana.",
    )
    grafana_admin_secret: DnsLabel = Field(
        monitoring_chart_pods.GRAFANA_ADMIN_SECRET,
        alias="grafanaAdminSecret",
        description="The Secret in the monitoring namespace Grafana's admin comes from (keys admin-user and "
        "admin-password; the grafana chart's admin.existingSecret), so the chart renders no admin password. A "
        "one-off Job creates it in the cluster when it is missing (user admin, a random password that never "
        "leaves the cluster) and leaves one you made or rotated untouched.",
    )
    grafana_admin_job_image: str = Field(
        monitoring_grafana_admin.DEFAULT_IMAGE,
        alias="grafanaAdminJobImage",
        min_length=1,
        description="Image of that Job: sh, head, base64, tr, grep and kubectl (alpine/k8s, as the scheduled "
        "checks' controller).",
    )
    alertmanager_config_secret: DnsLabel | None = Field(
        None,
        alias="alertmanagerConfigSecret",
        description="A Secret in the monitoring namespace, kept outside the stack (its receivers hold "
        "credentials), whose key alertmanager.yaml configures the Alertmanager the stack installs: where the "
        "alerts go. Unset, the chart's own configuration routes every alert to its 'null' receiver: they show "
        "in Alertmanager and Grafana only.",
    )
    tainted_alert_minutes: StrictInt = Field(
        60,
        alias="taintedAlertMinutes",
        ge=1,
        le=7 * 24 * 60,
        description="Alert when a node has carried a health taint (rail or GPU) this long.",
    )
    rail_flaps_per_hour: StrictInt = Field(
        3,
        alias="railFlapsPerHour",
        ge=1,
        description="Alert when a rail's link goes down this many times in an hour (flapping).",
    )

    @model_validator(mode="after")
    def _pinned_chart(self) -> MonitoringConfig:
        installed_only = {
            "chart_version": "chartVersion",
            "namespace": "namespace",
            "alertmanager_config_secret": "alertmanagerConfigSecret",
            "node_exporter_namespace": "nodeExporterNamespace",
            "grafana_admin_secret": "grafanaAdminSecret",
            "grafana_admin_job_image": "grafanaAdminJobImage",
        }
        unused = sorted(installed_only[name] for name in self.model_fields_set & set(installed_only))
        if self.existing_prometheus is not None and unused:
            raise ValueError(
                f"{' and '.join(unused)} configure the kube-prometheus-stack the stack installs, and with "
                "existingPrometheus it installs none; remove them (existingPrometheus.namespace names where the "
                "objects go)"
            )
        if self.existing_prometheus is None and self.chart_version != kube_prometheus_stack.DEFAULT_VERSION:
            raise ValueError(
                f"chartVersion {self.chart_version}: the placement of kube-prometheus-stack's pods is known at "
                f"{kube_prometheus_stack.DEFAULT_VERSION} only (oke_gpu_rdma/monitoring/kube_prometheus_stack.py); "
                "use it, or read the new version's values and update the facts"
            )
        if self.existing_prometheus is None and self.node_exporter_namespace == self.namespace:
            raise ValueError(
                f"nodeExporterNamespace {self.node_exporter_namespace!r} is monitoring.namespace too: the node "
                "exporter needs Pod Security privileged (host network and PID), the namespace of Prometheus, "
                "Alertmanager and Grafana is restricted; give it one of its own (default "
                f"{monitoring_chart_pods.NODE_EXPORTER_NAMESPACE})"
            )
        return self

    @field_validator("namespace", "node_exporter_namespace")
    @classmethod
    def _own_monitoring_namespace(cls, name: str) -> str:
        # The stack labels (and on destroy deletes) the namespaces it creates: not one every cluster has.
        if name == "default" or name.startswith("kube-"):
            raise ValueError(
                f"{name} is a namespace every cluster has; the stack would label it with its own Pod Security "
                "level and take it over: use a namespace of its own"
            )
        return name
