"""Metrics, dashboards and alerts of the GPUs and rails (monitoring.enabled).

- kube-prometheus-stack (prometheus-community), pinned, through the release machinery of the DRA drivers
  (components/drivers/dra_drivers.py `_release`), its controllers on the system pool where the stack has one; or an
  existing Prometheus the config names (monitoring.existingPrometheus), whose selector labels our objects carry.
- The DCGM exporter is scraped through the ServiceMonitor the GPU Operator creates itself from its
  ClusterPolicy's dcgmExporter.serviceMonitor (set in the operator's values: stack_config/drivers/gpu_operator_plan.py
  service_monitor_values); DRANET through a PodMonitor of its pods, scraped at <pod IP>:9177 (DRANET's
  --bind-address default, cmd/dranet/app.go l. 79). Its pods declare no port (deployments/helm/dranet/templates/
  daemonset.yaml: one container, 9177 only in its probes), so the endpoint names none: a `port` or `portNumber`
  makes the operator keep only targets whose pod declares that port (prometheus-operator v0.93.0
  pkg/prometheus/promcfg.go l. 1570-1581), which would drop every DRANET pod; the address is set by relabelling
  instead (Prometheus' pod discovery gives a container without ports one target, at the pod's IP).
- A PrometheusRule with the alert rules (oke_gpu_rdma/monitoring/rules.py) and a ConfigMap with the Grafana
  dashboard (oke_gpu_rdma/monitoring/dashboard.py), which Grafana's sidecar loads by label.
- Installed, the chart runs in two namespaces the component declares: monitoring.namespace at Pod Security
  restricted (the operator, Prometheus, Alertmanager, Grafana, kube-state-metrics) and the node exporter's own,
  privileged (host network and PID; the subchart's namespaceOverride); both default-deny ingress, with an allow
  for each flow the monitoring needs (oke_gpu_rdma/common/network_policies.py monitoring_policies). Grafana's admin
  comes from a Secret (the grafana chart's admin.existingSecret), so the chart renders no admin password; a
  one-off Job creates that Secret in the cluster when it is missing (oke_gpu_rdma/monitoring/grafana_admin.py;
  chart_pods.py says what the chart does without it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.common.access_control import admission_policy, role_with_binding
from components.common.namespaces import declare_network_policies, labelled_namespace
from components.drivers.dra_drivers import RELEASE_TIMEOUT_SECONDS, _documented, _release
from components.health import node_remediation as remediation
from components.typed_inputs import to_input_type
from oke_gpu_rdma.common import charts, network_policies, pod_security, resource_types
from oke_gpu_rdma.drivers import dranet, nvidia_gpu
from oke_gpu_rdma.monitoring import chart_pods, dashboard, grafana_admin
from oke_gpu_rdma.monitoring import kube_prometheus_stack as kps
from oke_gpu_rdma.monitoring.rules import RuleSettings, rule_groups
from oke_gpu_rdma.nodes.labels import POOL_LABEL
from stack_config.monitoring.monitoring_plan import release_values
from stack_config.monitoring.monitoring_settings import MonitoringConfig
from stack_config.nodes.pool_settings import Taint, tolerations

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
    system_pool: str | None,
    taints: Sequence[Taint],
    alertmanager_secret: str | None = None,
    grafana_admin_secret: str = chart_pods.GRAFANA_ADMIN_SECRET,
    node_exporter_namespace: str = chart_pods.NODE_EXPORTER_NAMESPACE,
) -> dict[str, Any]:
    """kube-prometheus-stack values (stack_config/monitoring/monitoring_plan.py release_values), plus Grafana's admin from
    ``grafana_admin_secret`` and the node exporter in ``node_exporter_namespace`` (chart_pods), each a path the
    chart documents."""
    values = release_values(system_pool, taints, alertmanager_secret)
    charts.set_value(values, chart_pods.GRAFANA_ADMIN_SECRET_VALUE, grafana_admin_secret)
    charts.set_value(values, chart_pods.GRAFANA_ADMIN_USER_KEY_VALUE, chart_pods.GRAFANA_ADMIN_USER_KEY)
    charts.set_value(
        values, chart_pods.GRAFANA_ADMIN_PASSWORD_KEY_VALUE, chart_pods.GRAFANA_ADMIN_PASSWORD_KEY
    )
    charts.set_value(values, chart_pods.NODE_EXPORTER_NAMESPACE_VALUE, node_exporter_namespace)
    return _documented(values, chart_pods.VALUE_PATHS, kps.CHART_NAME)


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


def address_at(port: int) -> dict[str, Any]:
    """A relabeling that scrapes a pod at its IP and ``port`` (for pods that declare no port)."""
    return {**DRANET_ADDRESS, "replacement": f"$1:{port}"}


def compute_domain_pod_monitors(namespace: str) -> dict[str, dict[str, Any]]:
    """PodMonitors of the ComputeDomain release (oke_gpu_rdma/drivers/nvidia_gpu.py): its controller, which
    counts ComputeDomains by status, and its kubelet plugin, which counts channel prepare errors, each at its
    pod's IP and port."""
    return {
        f"compute-domain-{component}": {
            "selector": {"matchLabels": {nvidia_gpu.COMPONENT_LABEL: component}},
            "namespaceSelector": {"matchNames": [namespace]},
            "podMetricsEndpoints": [
                {"path": "/metrics", "relabelings": [address_at(port), *kps.node_as_instance()]}
            ],
        }
        for component, port in (
            ("controller", nvidia_gpu.CONTROLLER_METRICS_PORT),
            ("kubelet-plugin", nvidia_gpu.COMPUTE_DOMAIN_PLUGIN_METRICS_PORT),
        )
    }


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
    remediation_namespace: str | None = None
    """The remediation controller's namespace, whose metrics a PodMonitor scrapes (None: not deployed)."""
    compute_domain_namespace: str | None = None
    """The ComputeDomain release's namespace, whose controller and kubelet plugin PodMonitors scrape (None: not
    deployed)."""
    depends_on: Sequence[pulumi.Resource] = field(default_factory=list)


class Monitoring(pulumi.ComponentResource):
    """kube-prometheus-stack (or an existing Prometheus), DRANET's PodMonitor, the alert rules and the dashboard."""

    def __init__(self, name: str, args: MonitoringArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(resource_types.MONITORING_COMPONENT, name, None, opts)
        config = args.config
        after: list[pulumi.Resource] = list(args.depends_on)
        if config.existing_prometheus is None:
            # The release brings the CRDs the objects below are.
            after = [self._install(name, args)]
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
        if args.remediation_namespace is not None:
            k8s.apiextensions.CustomResource(
                f"{name}-remediation-pod-monitor",
                api_version=kps.MONITORING_API,
                kind=kps.POD_MONITOR_KIND,
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=remediation.NAME, namespace=namespace, labels=labels
                ),
                spec=remediation.pod_monitor(args.remediation_namespace),
                opts=child,
            )
        if args.compute_domain_namespace is not None:
            for monitor, spec in compute_domain_pod_monitors(args.compute_domain_namespace).items():
                k8s.apiextensions.CustomResource(
                    f"{name}-{monitor}-pod-monitor",
                    api_version=kps.MONITORING_API,
                    kind=kps.POD_MONITOR_KIND,
                    metadata=k8s.meta.v1.ObjectMetaArgs(name=monitor, namespace=namespace, labels=labels),
                    spec=spec,
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

    def _install(self, name: str, args: MonitoringArgs) -> k8s.helm.v3.Release:
        """The namespaces, their NetworkPolicies, the Job that makes Grafana's admin Secret and the release,
        which waits for them all: Grafana's pod starts only once its Secret exists, and no pod of the chart runs
        before its namespace denies what it does not allow."""
        config = args.config
        own = pulumi.ResourceOptions(parent=self, provider=args.provider)
        namespaces = [
            labelled_namespace(f"{name}-namespace", config.namespace, pod_security.MONITORING_LEVEL, own),
            labelled_namespace(
                f"{name}-node-exporter-namespace",
                config.node_exporter_namespace,
                pod_security.NODE_EXPORTER_LEVEL,
                own,
            ),
        ]
        in_namespaces = pulumi.ResourceOptions.merge(own, pulumi.ResourceOptions(depends_on=namespaces))
        before: list[pulumi.Resource] = [
            *namespaces,
            *declare_network_policies(
                name,
                network_policies.monitoring_policies(config.namespace, config.node_exporter_namespace),
                in_namespaces,
            ),
        ]
        before.append(self._grafana_admin_job(name, args, in_namespaces))
        return _release(
            name,
            self,
            pulumi.ResourceOptions(provider=args.provider, depends_on=[*args.depends_on, *before]),
            kps.RELEASE,
            kps.CHART_NAME,
            config.chart_version,
            config.namespace,
            stack_values(
                args.system_pool,
                args.taints,
                config.alertmanager_config_secret,
                config.grafana_admin_secret,
                config.node_exporter_namespace,
            ),
            repository=kps.REPO,
        )

    def _grafana_admin_job(
        self, name: str, args: MonitoringArgs, opts: pulumi.ResourceOptions
    ) -> k8s.batch.v1.Job:
        """The Job that creates grafanaAdminSecret when it is missing (oke_gpu_rdma/monitoring/grafana_admin.py),
        on the system pool where there is one, tolerating the GPU pools' taints (an existing cluster may have
        only GPU nodes), once its narrow RBAC and admission policy are in place."""
        config = args.config
        job = grafana_admin.NAME
        meta = k8s.meta.v1.ObjectMetaArgs(name=job, namespace=config.namespace)
        account = k8s.core.v1.ServiceAccount(f"{name}-{job}-account", metadata=meta, opts=opts)
        _, binding = role_with_binding(
            f"{name}-{job}-role",
            job,
            config.namespace,
            grafana_admin.rbac_rules(),
            [k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=job, namespace=config.namespace)],
            opts,
            binding_after=[account],
        )
        policy = admission_policy(
            f"{name}-{job}-policy",
            f"{config.namespace}-{job}",
            grafana_admin.admission_policy(config.namespace, config.grafana_admin_secret),
            opts,
        )
        pod = grafana_admin.pod_spec(
            config.grafana_admin_secret,
            config.namespace,
            config.grafana_admin_job_image,
            {POOL_LABEL: args.system_pool} if args.system_pool is not None else {},
            tolerations(list(args.taints)),
        )
        # It needs a node, as the release does: it waits for the same pools, as long as the release may.
        return k8s.batch.v1.Job(
            f"{name}-{job}",
            metadata=meta,
            spec=to_input_type(
                k8s.batch.v1.JobSpecArgs, grafana_admin.job_spec(pod, RELEASE_TIMEOUT_SECONDS), "spec"
            ),
            opts=pulumi.ResourceOptions.merge(
                opts,
                pulumi.ResourceOptions(
                    depends_on=[*args.depends_on, binding, policy],
                    custom_timeouts=pulumi.CustomTimeouts(create=f"{RELEASE_TIMEOUT_SECONDS}s"),
                ),
            ),
        )
