"""The alert rules of the GPUs and rails, as PromQL over the metrics the pinned exporters document
(oke_gpu_rdma/monitoring/metric_catalog.json): the GPU Operator's DCGM exporter, DRANET, the node exporter's
infiniband collector and kube-state-metrics (the scheduled checks' results and the health taints live on the
Node objects, which kube-state-metrics exports).

Metric facts the expressions follow:
- DCGM_FI_DEV_XID_ERRORS is a gauge holding the last XID the GPU reported (dcgm-exporter
  etc/dcp-metrics-included.csv: "Value of the last XID error encountered"), and it keeps that value until the
  exporter restarts (NVIDIA/dcgm-exporter#500): a rule on its value would fire forever after one XID, so the
  rule fires on a change of it (a new XID; the same XID again is not seen, the dashboard shows the last one). The
  counters file the GPU Operator
  uses lists no ECC counter (the DCGM_FI_DEV_ECC_* rows are commented out); an A100 retires memory with
  uncorrectable ECC errors by row remapping, which it does list: DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS
  (counter) and DCGM_FI_DEV_ROW_REMAP_FAILURE (gauge). Its labels: gpu, UUID, Hostname (the node), modelName,
  and with DCGM_EXPORTER_KUBERNETES the pod, namespace and container holding the GPU (internal/pkg/
  transformation/const.go).
- node_infiniband_state_id: 4 is ACTIVE; node_infiniband_link_downed_total counts the link going down
  (node_exporter collector/infiniband_linux.go l. 69, l. 86); labels device and port. The collector reports
  every RDMA device of the node, the front-end NIC's too, and nothing in its labels tells a rail from it; so
  the link-rate rule holds to the rails' figure only the ports that reached it in the last day (a rail that
  renegotiated down), not a front-end port that never runs that fast.
- dranet_driver_published_devices_total: devices DRANET publishes on its node (pkg/driver/metrics.go).
- kube_node_spec_taint{key, value, effect}, kube_node_status_condition{condition, status} and kube_node_labels
  (label_<name> for the labels kube-state-metrics is allowed to export), per node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from oke_gpu_rdma.drivers import compute_domains
from oke_gpu_rdma.health.remediation import controller as remediation_controller
from oke_gpu_rdma.nodes.labels import (
    FABRIC_CHECK_LABEL,
    POOL_LABEL,
    RAIL_UNHEALTHY_TAINT_KEY,
    RAILS_UNMARKED_LABEL,
)

# The node condition a failed scheduled NCCL check sets (components/health/scripts/fabric-check.sh).
FABRIC_CHECK_CONDITION: Final = "FabricCheckFailed"
# The value of the rail taint the scheduled check writes, so that it lifts only its own.
FABRIC_CHECK_TAINT_VALUE: Final = "fabric-check"
# The node exporter reports a port's rate in bytes per second; the thresholds are in Gb/s.
BITS_PER_BYTE: Final = 8
GIGA: Final = 1e9
# node_infiniband_state_id of a port that is up (infiniband_linux.go l. 86: 4: active).
PORT_ACTIVE: Final = 4


def prometheus_label(label: str) -> str:
    """How kube-state-metrics names a node label: label_ and the key with every other character as _."""
    return "label_" + "".join(c if c.isalnum() else "_" for c in label)


POOL_SERIES_LABEL: Final = prometheus_label(POOL_LABEL)
FABRIC_CHECK_SERIES_LABEL: Final = prometheus_label(FABRIC_CHECK_LABEL)
RAILS_UNMARKED_SERIES_LABEL: Final = prometheus_label(RAILS_UNMARKED_LABEL)
# A rail mark this old has most likely outlived its cause, or waits for a repair nobody started (issue 35).
MARK_AGE_ALERT: Final = "24h"


@dataclass(frozen=True)
class AlertRule:
    alert: str
    expr: str
    for_: str
    severity: str
    summary: str
    pool: str | None = None
    """The GPU pool a rule of one pool is for (a label: alert names are metric names, rulefmt refuses '-')."""

    def to_spec(self) -> dict[str, Any]:
        labels = {"severity": self.severity} | ({"pool": self.pool} if self.pool else {})
        return {
            "alert": self.alert,
            "expr": self.expr,
            "for": self.for_,
            "labels": labels,
            "annotations": {"summary": self.summary},
        }


@dataclass(frozen=True)
class RuleSettings:
    gpus_by_pool: Mapping[str, int]
    """GPUs per node of each GPU pool whose GPUs the stack checks (the shape's count)."""
    rail_pools: Sequence[str]
    """The DRANET pools, whose rails the rail rules watch."""
    rail_gbps: float
    """The per-rail minimum (the scheduled checks' threshold, the seed's figure by default)."""
    tainted_minutes: int
    rail_flaps_per_hour: int
    remediation_pools: Sequence[str] = ()
    """The pools the remediation controller acts on (health.remediation.pools)."""
    remediation_interval_seconds: int = 30
    compute_domains: bool = False
    """The GPU DRA driver serves ComputeDomains (gpuDriver.computeDomains): IMEX rules."""


def _pool_nodes(pools: Sequence[str]) -> str:
    """kube_node_labels of the nodes of ``pools``, relabelled to `instance`, the node exporter's node label
    in kube-prometheus-stack (its ServiceMonitor sets instance from the pod's node name)."""
    return (
        f'label_replace(kube_node_labels{{{POOL_SERIES_LABEL}=~"{"|".join(pools)}"}}, '
        '"instance", "$1", "node", "(.*)")'
    )


def gpu_rules(settings: RuleSettings) -> list[AlertRule]:
    rules = [
        AlertRule(
            "GpuXidError",
            "max by (Hostname, gpu, UUID) (changes(DCGM_FI_DEV_XID_ERRORS[5m])) > 0",
            "0m",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} reported a new XID in the last 5 minutes (the "
            "dashboard's Last XID panel shows which)",
        ),
        AlertRule(
            "GpuUncorrectableEccRowRemap",
            "max by (Hostname, gpu, UUID) (increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[1h])) > 0",
            "0m",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} remapped memory rows after uncorrectable ECC "
            "errors in the last hour; it needs a reset to use them",
        ),
        AlertRule(
            "GpuRowRemapFailure",
            "max by (Hostname, gpu, UUID) (DCGM_FI_DEV_ROW_REMAP_FAILURE) > 0",
            "0m",
            "critical",
            "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} failed to remap a memory row (uncorrectable ECC "
            "errors it cannot retire): replace the node",
        ),
    ]
    for pool, gpus in settings.gpus_by_pool.items():
        nodes = f'kube_node_labels{{{POOL_SERIES_LABEL}="{pool}"}}'
        # A node whose exporter reports no GPU at all counts 0 (the `or`), not "no series".
        counted = (
            'count by (node) (label_replace(DCGM_FI_DEV_GPU_TEMP, "node", "$1", "Hostname", "(.*)"))'
            f" or on (node) (0 * {nodes})"
        )
        rules.append(
            AlertRule(
                "GpuLost",
                f"(({counted}) < {gpus}) and on (node) {nodes}",
                "10m",
                "critical",
                f"Node {{{{ $labels.node }}}} of pool {pool} shows {{{{ $value }}}} of its {gpus} GPUs",
                pool,
            )
        )
    return rules


def rail_rules(settings: RuleSettings) -> list[AlertRule]:
    if not settings.rail_pools:
        return []
    nodes = _pool_nodes(settings.rail_pools)
    on_rail_nodes = f"and on (instance) {nodes}"
    minimum_bytes = settings.rail_gbps * GIGA / BITS_PER_BYTE
    return [
        AlertRule(
            "RailDown",
            f"(max by (instance, device, port) (node_infiniband_state_id) != {PORT_ACTIVE}) {on_rail_nodes}",
            "2m",
            "critical",
            "RDMA port {{ $labels.device }}/{{ $labels.port }} on {{ $labels.instance }} is not ACTIVE",
        ),
        AlertRule(
            "RailFlapping",
            "(max by (instance, device, port) (increase(node_infiniband_link_downed_total[1h])) >= "
            f"{settings.rail_flaps_per_hour}) {on_rail_nodes}",
            "0m",
            "warning",
            "RDMA port {{ $labels.device }}/{{ $labels.port }} on {{ $labels.instance }} went down "
            "{{ $value }} times in an hour",
        ),
        AlertRule(
            "RailRateBelowSeed",
            f"(max by (instance, device, port) (node_infiniband_rate_bytes_per_second) < {minimum_bytes:.0f}) "
            "and on (instance, device, port) (max by (instance, device, port) "
            f"(max_over_time(node_infiniband_rate_bytes_per_second[1d])) >= {minimum_bytes:.0f}) "
            f"{on_rail_nodes}",
            "5m",
            "warning",
            "RDMA port {{ $labels.device }}/{{ $labels.port }} on {{ $labels.instance }} links at less than "
            f"the {settings.rail_gbps} Gb/s a rail must reach, which it reached in the last day",
        ),
        AlertRule(
            "RailBelowThresholdInCheck",
            f'max by (node) (kube_node_spec_taint{{key="{RAIL_UNHEALTHY_TAINT_KEY}", '
            f'value="{FABRIC_CHECK_TAINT_VALUE}"}}) > 0',
            "0m",
            "warning",
            "The scheduled ib_write_bw check measured a rail of {{ $labels.node }} below "
            f"{settings.rail_gbps} Gb/s; the node is tainted {RAIL_UNHEALTHY_TAINT_KEY} (see its annotations)",
        ),
        AlertRule(
            "DranetDevicesLost",
            "min by (instance, feature) (dranet_driver_published_devices_total) < "
            "max by (instance, feature) (max_over_time(dranet_driver_published_devices_total[1d]))",
            "10m",
            "warning",
            "DRANET on {{ $labels.instance }} publishes fewer {{ $labels.feature }} devices than it did in the "
            "last day: a rail is gone",
        ),
    ]


def health_rules(settings: RuleSettings) -> list[AlertRule]:
    return [
        AlertRule(
            "FabricCheckFailed",
            f'max by (node) (kube_node_status_condition{{condition="{FABRIC_CHECK_CONDITION}", status="true"}}) '
            "> 0",
            "0m",
            "warning",
            "The scheduled NCCL check on {{ $labels.node }} stayed below its busbw threshold (node condition "
            f"{FABRIC_CHECK_CONDITION}, label {FABRIC_CHECK_LABEL}=fail)",
        ),
        AlertRule(
            "HealthTaintTooLong",
            f'max by (node, key) (kube_node_spec_taint{{key="{RAIL_UNHEALTHY_TAINT_KEY}"}}) > 0',
            f"{settings.tainted_minutes}m",
            "warning",
            "{{ $labels.node }} has carried {{ $labels.key }} for more than "
            f"{settings.tainted_minutes} minutes: repair or replace the rail",
        ),
        # A rail mark of either kind (the node taint on 1.36; on 1.37+ a DeviceTaintRule, which kube-state-metrics
        # does not export, shows as the agent's rails-unmarked=false on its node) held for a day.
        AlertRule(
            "RailMarkedForADay",
            f'max by (node) (kube_node_labels{{{RAILS_UNMARKED_SERIES_LABEL}="false"}}) > 0 or max by (node) '
            f'(kube_node_spec_taint{{key="{RAIL_UNHEALTHY_TAINT_KEY}", effect="NoSchedule"}}) > 0',
            MARK_AGE_ALERT,
            "warning",
            "{{ $labels.node }} has had a rail marked for more than a day: the rail needs repair, or the mark "
            "outlived its cause (docs/health.md says which marks are lifted by whom)",
        ),
    ]


def remediation_rules(settings: RuleSettings) -> list[AlertRule]:
    """A node the remediation controller gave up on (held: cordoned, for a person), and a controller that stopped
    its rounds (oke_gpu_rdma/health/remediation/controller.py serves both series)."""
    if not settings.remediation_pools:
        return []
    stalled = 10 * settings.remediation_interval_seconds
    return [
        AlertRule(
            "NodeRemediationHeld",
            f'max by (pool) ({remediation_controller.NODES_METRIC}{{state="held"}}) > 0',
            "0m",
            "critical",
            "{{ $value }} node(s) of pool {{ $labels.pool }} failed remediation twice and stay cordoned: repair "
            "them by hand, then delete their entry in the ConfigMap node-remediation-state (docs/remediation.md)",
        ),
        AlertRule(
            "NodeRemediationStalled",
            f"time() - max({remediation_controller.LAST_ROUND_METRIC}) > {stalled} or "
            f"absent({remediation_controller.LAST_ROUND_METRIC})",
            "10m",
            "warning",
            f"The remediation controller has finished no round for {stalled} s: bad nodes are not taken out",
        ),
    ]


def compute_domain_rules(settings: RuleSettings) -> list[AlertRule]:
    """IMEX health, from the GPU DRA driver's own metrics (kubernetes-sigs/dra-driver-nvidia-gpu pkg/metrics):
    ComputeDomains the controller reports NotReady for long (with numNodes 0 a domain is NotReady exactly while one of
    its IMEX daemons is not ready, and Ready with none yet: cmd/compute-domain-controller/computedomain.go
    calculateGlobalStatus l. 277-299), and a kubelet plugin that keeps failing channel prepares. A channel's prepare fails by
    design until its node's IMEX daemon is ready (device_state.go applyComputeDomainChannelConfigDriverManaged, retried
    by the kubelet), and the daemon's startup probe allows it 20 minutes (templates/compute-domain-daemon.tmpl.yaml):
    so only errors that go on for longer than that count."""
    if not settings.compute_domains:
        return []
    return [
        AlertRule(
            "ComputeDomainNotReady",
            'sum(nvidia_dra_compute_domain_info{status="NotReady"}) > 0',
            "30m",
            "warning",
            "{{ $value }} ComputeDomain(s) have had an IMEX daemon not ready for 30 minutes: their jobs share no GPU "
            "memory over NVLink there (kubectl get computedomains -A -o wide; the daemons' logs in the driver's "
            "namespace)",
        ),
        AlertRule(
            "ComputeDomainChannelPrepareFailing",
            f'sum by (instance) (increase(nvidia_dra_node_prepare_errors_total{{driver="{compute_domains.DRIVER}"}}'
            "[10m])) > 0",
            "30m",
            "warning",
            "The ComputeDomain kubelet plugin on {{ $labels.instance }} has failed IMEX channel prepares for 30 "
            "minutes, longer than an IMEX daemon takes to start: its pods wait in ContainerCreating",
        ),
    ]


def rule_groups(settings: RuleSettings) -> list[dict[str, Any]]:
    """The PrometheusRule's spec.groups."""
    groups = [
        ("oke-gpu-rdma.gpus", gpu_rules(settings)),
        ("oke-gpu-rdma.rails", rail_rules(settings)),
        ("oke-gpu-rdma.health", health_rules(settings)),
        ("oke-gpu-rdma.remediation", remediation_rules(settings)),
        ("oke-gpu-rdma.compute-domains", compute_domain_rules(settings)),
    ]
    return [{"name": name, "rules": [r.to_spec() for r in rules]} for name, rules in groups if rules]


def expressions(groups: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every PromQL expression of ``groups``."""
    return [str(rule["expr"]) for group in groups for rule in group["rules"]]
