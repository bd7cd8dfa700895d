"""The monitoring and scheduled-check settings checked against the rest of the stack, and the alert rules'
settings taken from it (the pools, their shapes' GPU counts, the rail threshold)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from oke_gpu_rdma.common.errors import TopologyError
from oke_gpu_rdma.health.acceptance import rail_threshold
from oke_gpu_rdma.monitoring import kube_prometheus_stack as kps
from oke_gpu_rdma.monitoring.rules import RuleSettings
from oke_gpu_rdma.nodes.labels import FABRIC_CHECK_LABEL, POOL_LABEL, RAILS_UNMARKED_LABEL
from oke_gpu_rdma.scheduling.pod_admission import PodPlacement
from stack_config.claims.template_requests import shape_catalog
from stack_config.drivers import compute_domain_plan
from stack_config.drivers.gpu_operator_plan import gpu_pool_taints
from stack_config.model import StackConfig
from stack_config.nodes.pool_settings import Taint, tolerations
from stack_config.problems import ConfigProblem


def rule_settings(config: StackConfig) -> RuleSettings:
    """The alert rules of this stack: the GPU count of each GPU pool's shape, the DRANET pools' rails held to
    the scheduled check's threshold (the seed's by default)."""
    catalog = shape_catalog(config)
    monitoring = config.monitoring
    gpus_by_pool: dict[str, int] = {}
    for pool in config.node_pools:
        try:
            topology = catalog.topology(pool.shape)
        except TopologyError:
            continue  # a shape without a known topology: its GPU count is not known, so no rule counts them
        # The DCGM exporter sees NVIDIA GPUs only.
        if topology.gpu_product.startswith("NVIDIA"):
            gpus_by_pool[pool.name] = len(topology.gpus)
    return RuleSettings(
        gpus_by_pool=gpus_by_pool,
        rail_pools=[p.name for p in config.dra_pools],
        rail_gbps=rail_threshold("dranet", config.workloads.acceptance_jobs.rail_gbps),
        tainted_minutes=monitoring.tainted_alert_minutes,
        rail_flaps_per_hour=monitoring.rail_flaps_per_hour,
        remediation_pools=list(config.health.remediation.pools),
        remediation_interval_seconds=config.health.remediation.interval_seconds,
        compute_domains=compute_domain_plan.enabled(config),
    )


def release_values(
    system_pool: str | None, taints: Sequence[Taint], alertmanager_secret: str | None = None
) -> dict[str, Any]:
    """kube-prometheus-stack values: its controllers on the system pool (none selected without one: an
    existing cluster's own nodes), the node exporter tolerating the GPU pools' other effects besides its
    default (every NoSchedule taint, the health taints among them: a bad node is one to watch), its targets
    named by node (`instance`, which the rail rules and panels join on; the chart leaves it the pod's
    address), kube-state-metrics exporting the node labels the alert rules join on, and Alertmanager configured
    from the user's Secret when one is named (kube_prometheus_stack.ALERTMANAGER_*_VALUE)."""
    values: dict[str, Any] = {}
    if system_pool is not None:
        on_system = {"nodeSelector": {POOL_LABEL: system_pool}}
        values = {
            "prometheusOperator": {**on_system, "admissionWebhooks": {"patch": dict(on_system)}},
            "prometheus": {"prometheusSpec": dict(on_system)},
            "alertmanager": {"alertmanagerSpec": dict(on_system)},
            "grafana": dict(on_system),
            "kube-state-metrics": dict(on_system),
        }
    node_exporter: dict[str, Any] = {"prometheus": {"monitor": {"relabelings": kps.node_as_instance()}}}
    others = [t for t in taints if t.effect != "NoSchedule"]
    if others:
        node_exporter["tolerations"] = [*kps.NODE_EXPORTER_TOLERATIONS, *tolerations(others)]
    values["prometheus-node-exporter"] = node_exporter
    if alertmanager_secret is not None:
        spec = values.setdefault("alertmanager", {}).setdefault("alertmanagerSpec", {})
        spec |= {"useExistingSecret": True, "configSecret": alertmanager_secret}
    values.setdefault("kube-state-metrics", {})["metricLabelsAllowlist"] = [
        f"nodes=[{POOL_LABEL},{FABRIC_CHECK_LABEL},{RAILS_UNMARKED_LABEL}]"
    ]
    return values


def controllers(config: StackConfig) -> list[PodPlacement]:
    """kube-prometheus-stack's Deployments, StatefulSets and hook Jobs as this stack places them (none
    without monitoring, or with an existing Prometheus)."""
    monitoring = config.monitoring
    if not monitoring.enabled or monitoring.existing_prometheus is not None:
        return []
    system = config.system_pool.name if config.creates_system_pool else None
    values = release_values(system, gpu_pool_taints(config), monitoring.alertmanager_config_secret)
    return [p for p in kps.workloads(kps.RELEASE, values) if not p.daemonset]


def problems(config: StackConfig) -> list[ConfigProblem]:
    found: list[ConfigProblem] = []
    jobs = config.workloads.acceptance_jobs
    if jobs.schedule is not None and not config.dra_pools:
        found.append(
            ConfigProblem(
                "workloads.acceptanceJobs.schedule",
                jobs.schedule,
                "the scheduled checks run the claim-template jobs on a DRANET pool, and the stack has none "
                "(rdma: sriov pools are checked at apply time only); remove the schedule",
            )
        )
    if jobs.schedule is not None and not (jobs.nccl or jobs.rail_bandwidth):
        found.append(
            ConfigProblem(
                "workloads.acceptanceJobs.schedule",
                jobs.schedule,
                "has no check to run: turn on nccl or railBandwidth (or both: the schedule runs them one after "
                "the other)",
            )
        )
    monitoring = config.monitoring
    if not monitoring.enabled and monitoring.existing_prometheus is not None:
        found.append(
            ConfigProblem(
                "monitoring.existingPrometheus",
                monitoring.existing_prometheus.namespace,
                "is set while monitoring.enabled is false, so nothing would use it; set enabled: true or remove it",
            )
        )
    return found
