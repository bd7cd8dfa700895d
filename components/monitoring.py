"""Metrics, dashboards and alerts of the GPUs and rails (monitoring.enabled).

- kube-prometheus-stack (prometheus-community), pinned, through the release machinery of the DRA drivers
  (components/dra_drivers.py `_release`), its controllers on the system pool where the stack has one; or an
  existing Prometheus the config names (monitoring.existingPrometheus), whose selector labels our objects carry.
- The DCGM exporter is scraped through the ServiceMonitor the GPU Operator creates itself from its
  ClusterPolicy's dcgmExporter.serviceMonitor (set in the operator's values: stack_config/gpu_operator_plan.py
  service_monitor_values); DRANET through a PodMonitor of its pods, scraped at <pod IP>:9177 (DRANET's
  --bind-address default, cmd/dranet/app.go l. 79). Its pods declare no port (deployments/helm/dranet/templates/
  daemonset.yaml: one container, 9177 only in its probes), so the endpoint names none: a `port` or `portNumber`
  makes the operator keep only targets whose pod declares that port (prometheus-operator v0.93.0
  pkg/prometheus/promcfg.go l. 1570-1581), which would drop every DRANET pod; the address is set by relabelling
  instead (Prometheus' pod discovery gives a container without ports one target, at the pod's IP).
- A PrometheusRule with the alert rules (oke_gpu_rdma/monitoring/rules.py) and a ConfigMap with the Grafana
  dashboard (oke_gpu_rdma/monitoring/dashboard.py), which Grafana's sidecar loads by label.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from oke_gpu_rdma import resource_types
from oke_gpu_rdma.monitoring import dashboard
from oke_gpu_rdma.monitoring.rules import RuleSettings, rule_groups
from oke_gpu_rdma.releases import dranet
from oke_gpu_rdma.releases import kube_prometheus_stack as kps
from stack_config.model import MonitoringConfig, Taint
from stack_config.monitoring_plan import release_values

from .dra_drivers import _documented, _release

# DRANET's metrics port (cmd/dranet/app.go l. 79 --bind-address ":9177"; the chart passes its metricsPort,
# unset here, deployments/helm/dranet/templates/daemonset.yaml l. 55) and its pods' label (the chart's
# selectorLabels, templates/_helpers.tpl l. 30-31: app: dranet).
DRANET_METRICS_PORT = 9177
DRANET_POD_LABELS = {"app": dranet.CHART_NAME}
# Scrape each DRANET pod at its IP (the node's: host network) and DRANET's port.
DRANET_ADDRESS = {
    "sourceLabels": ["__meta_kubernetes_pod_ip"],
    "regex": "(.+)",
    "targetLabel": "__address__",
    "replacement": f"$1:{DRANET_METRICS_PORT}",
    "action": "replace",
}


def stack_values(
    system_pool: str | None, taints: Sequence[Taint], alertmanager_secret: str | None = None
) -> dict[str, Any]:
    """kube-prometheus-stack values (stack_config/monitoring_plan.py release_values), each a path the chart
    documents."""
    return _documented(
        release_values(system_pool, taints, alertmanager_secret), kps.VALUE_PATHS, kps.CHART_NAME
    )


def selector_labels(config: MonitoringConfig) -> dict[str, str]:
    """The labels the Prometheus selects ServiceMonitors, PodMonitors and PrometheusRules by."""
    if config.existing_prometheus is not None:
        return dict(config.existing_prometheus.selector_labels)
    return {kps.SELECTOR_LABEL: kps.RELEASE}


def dashboard_labels(config: MonitoringConfig) -> dict[str, str]:
    if config.existing_prometheus is not None:
        return dict(config.existing_prometheus.dashboard_labels)
    return {kps.DASHBOARD_LABEL: kps.DASHBOARD_LABEL_VALUE}


def objects_namespace(config: MonitoringConfig) -> str:
    return (
        config.existing_prometheus.namespace if config.existing_prometheus is not None else config.namespace
    )


def dranet_pod_monitor() -> dict[str, Any]:
    return {
        "selector": {"matchLabels": dict(DRANET_POD_LABELS)},
        "namespaceSelector": {"matchNames": [dranet.NAMESPACE]},
        # The node's name as `instance`, as the node exporter's targets (kps.node_as_instance): one label joins
        # a node's rails across DRANET, the node exporter and kube-state-metrics.
        "podMetricsEndpoints": [
            {
                "path": "/metrics",
                "relabelings": [DRANET_ADDRESS, *kps.node_as_instance()],
            }
        ],
    }


@dataclass
class MonitoringArgs:
    config: MonitoringConfig
    rules: RuleSettings
    provider: k8s.Provider
    system_pool: str | None
    """The system pool's name, whose nodes run the controllers (None: no system pool)."""
    taints: Sequence[Taint] = ()
    """Taints of the GPU pools, which the node exporter tolerates."""
    scrape_dranet: bool = True
    depends_on: Sequence[pulumi.Resource] = field(default_factory=list)


class Monitoring(pulumi.ComponentResource):
    """kube-prometheus-stack (or an existing Prometheus), DRANET's PodMonitor, the alert rules and the dashboard."""

    def __init__(self, name: str, args: MonitoringArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(resource_types.MONITORING_COMPONENT, name, None, opts)
        config = args.config
        after: list[pulumi.Resource] = list(args.depends_on)
        if config.existing_prometheus is None:
            # The release brings the CRDs the objects below are.
            after = [
                _release(
                    name,
                    self,
                    pulumi.ResourceOptions(provider=args.provider, depends_on=list(args.depends_on)),
                    kps.RELEASE,
                    kps.CHART_NAME,
                    config.chart_version,
                    config.namespace,
                    stack_values(args.system_pool, args.taints, config.alertmanager_config_secret),
                    create_namespace=True,
                    repository=kps.REPO,
                )
            ]
        child = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=after)
        namespace = objects_namespace(config)
        labels = selector_labels(config)
        if args.scrape_dranet:
            k8s.apiextensions.CustomResource(
                f"{name}-dranet-pod-monitor",
                api_version=kps.MONITORING_API,
                kind=kps.POD_MONITOR_KIND,
                metadata=k8s.meta.v1.ObjectMetaArgs(name="dranet", namespace=namespace, labels=labels),
                spec=dranet_pod_monitor(),
                opts=child,
            )
        k8s.apiextensions.CustomResource(
            f"{name}-alert-rules",
            api_version=kps.MONITORING_API,
            kind=kps.PROMETHEUS_RULE_KIND,
            metadata=k8s.meta.v1.ObjectMetaArgs(name="oke-gpu-rdma", namespace=namespace, labels=labels),
            spec={"groups": rule_groups(args.rules)},
            opts=child,
        )
        k8s.core.v1.ConfigMap(
            f"{name}-dashboard",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="oke-gpu-rdma-dashboard", namespace=namespace, labels=dashboard_labels(config)
            ),
            data={dashboard.CONFIGMAP_KEY: json.dumps(dashboard.dashboard(), indent=1)},
            opts=child,
        )
        self.register_outputs({})
