"""The alert rules: every expression parses with Prometheus' own grammar and reads only metric names the pinned
exporters document; the thresholds come from the seeds and the stack."""

from __future__ import annotations

import pytest

from oke_gpu_rdma.health.acceptance import SEED_RAIL_GBPS
from oke_gpu_rdma.monitoring import catalog
from oke_gpu_rdma.monitoring.rules import RuleSettings, expressions, rule_groups
from stack_config.loading import load_stack
from stack_config.monitoring.monitoring_plan import rule_settings
from tests.support import EXAMPLE_REGION, raw_config

from .promql import parse


def full_settings() -> RuleSettings:
    return rule_settings(load_stack(raw_config("full"), "full", EXAMPLE_REGION).config)


def rules_by_alert() -> dict[str, list[dict[str, object]]]:
    found: dict[str, list[dict[str, object]]] = {}
    for group in rule_groups(full_settings()):
        for rule in group["rules"]:
            found.setdefault(str(rule["alert"]), []).append(rule)
    return found


def test_every_expression_parses_and_names_only_documented_metrics() -> None:
    exprs = expressions(rule_groups(full_settings()))
    assert len(exprs) == 15
    for expr, parsed in zip(exprs, parse(exprs), strict=True):
        assert parsed.error is None, f"{expr}: {parsed.error}"
        assert parsed.metrics, f"{expr}: selects no metric"
        undocumented = [m for m in parsed.metrics if catalog.exporter_of(m) is None]
        assert undocumented == [], f"{expr}: {undocumented} are documented by no pinned exporter"


@pytest.mark.parametrize(
    "broken",
    [
        "max by (Hostname) (DCGM_FI_DEV_XID_ERRORS > 0",  # an unclosed parenthesis
        "increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[1h) > 0",  # an unclosed range
        "DCGM_FI_DEV_GPU_TEMP >",  # a dangling operator
    ],
)
def test_the_parser_refuses_broken_promql(broken: str) -> None:
    """The harness reports the grammar's errors, so the test above can fail."""
    (parsed,) = parse([broken])
    assert parsed.error is not None and parsed.error.startswith("syntax error at offset")


def test_a_metric_no_exporter_documents_is_caught() -> None:
    # The GPU Operator's counters file (dcp-metrics-included.csv) comments the ECC counters out.
    assert catalog.exporter_of("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL") is None
    assert catalog.exporter_of("DCGM_FI_DEV_XID_ERRORS") == "dcgm-exporter"
    assert catalog.exporter_of("node_infiniband_link_downed_total") == "node-exporter"
    assert catalog.exporter_of("dranet_driver_published_devices_total") == "dranet"
    assert catalog.exporter_of("kube_node_spec_taint") == "kube-state-metrics"


def test_the_issue_s_alerts_are_all_there() -> None:
    assert sorted(rules_by_alert()) == [
        "DranetDevicesLost",
        "FabricCheckFailed",
        "GpuLost",
        "GpuRowRemapFailure",
        "GpuUncorrectableEccRowRemap",
        "GpuXidError",
        "HealthTaintTooLong",
        "NodeRemediationHeld",
        "NodeRemediationStalled",
        "RailBelowThresholdInCheck",
        "RailDown",
        "RailFlapping",
        "RailMarkedForADay",
        "RailRateBelowSeed",
    ]


def test_a_rail_mark_held_for_a_day_alerts_whichever_kind_it_is() -> None:
    """Issue 35: a mark that outlives its cause is found. On 1.36 the node taint, on 1.37+ the agent's
    rails-unmarked=false (kube-state-metrics exports no DeviceTaintRule), each held for 24 hours."""
    (rule,) = rules_by_alert()["RailMarkedForADay"]
    assert rule["for"] == "24h"
    assert rule["expr"] == (
        'max by (node) (kube_node_labels{label_oke_gpu_rdma_rails_unmarked="false"}) > 0 or max by (node) '
        '(kube_node_spec_taint{key="oke-gpu-rdma/rail-unhealthy", effect="NoSchedule"}) > 0'
    )


def test_lost_gpus_are_counted_per_pool_against_the_shape() -> None:
    lost = rules_by_alert()["GpuLost"]
    # Two BM.GPU.B4.8 pools: 8 GPUs each.
    assert [r["labels"] for r in lost] == [
        {"severity": "critical", "pool": "gpu-b4-a"},
        {"severity": "critical", "pool": "gpu-b4-b"},
    ]
    assert lost[0]["expr"] == (
        '((count by (node) (label_replace(DCGM_FI_DEV_GPU_TEMP, "node", "$1", "Hostname", "(.*)")) or on (node) '
        '(0 * kube_node_labels{label_oke_gpu_rdma_node_pool="gpu-b4-a"})) < 8) and on (node) '
        'kube_node_labels{label_oke_gpu_rdma_node_pool="gpu-b4-a"}'
    )


def test_rails_are_held_to_the_seed_s_figure_and_the_stack_s_settings() -> None:
    rules = rules_by_alert()
    # seed 000's lowest rail, 96.87 Gb/s, in bytes per second (the node exporter's unit).
    assert SEED_RAIL_GBPS["dranet"] == 96.87
    assert "node_infiniband_rate_bytes_per_second) < 12108750000)" in str(
        rules["RailRateBelowSeed"][0]["expr"]
    )
    assert ">= 3)" in str(rules["RailFlapping"][0]["expr"])
    assert rules["HealthTaintTooLong"][0]["for"] == "60m"
    raw = raw_config("full")
    raw["monitoring"] |= {"taintedAlertMinutes": 15, "railFlapsPerHour": 5}
    raw["workloads"]["acceptanceJobs"]["railGbps"] = 90
    settings = rule_settings(load_stack(raw, "full", EXAMPLE_REGION).config)
    alerts = {r["alert"]: r for g in rule_groups(settings) for r in g["rules"]}
    assert alerts["HealthTaintTooLong"]["for"] == "15m"
    assert ">= 5)" in str(alerts["RailFlapping"]["expr"])
    assert "< 11250000000)" in str(alerts["RailRateBelowSeed"]["expr"])


def test_an_xid_alerts_when_it_is_new_not_for_as_long_as_the_exporter_keeps_it() -> None:
    # DCGM_FI_DEV_XID_ERRORS keeps the last XID until the exporter restarts (NVIDIA/dcgm-exporter#500).
    (xid,) = rules_by_alert()["GpuXidError"]
    assert xid["expr"] == "max by (Hostname, gpu, UUID) (changes(DCGM_FI_DEV_XID_ERRORS[5m])) > 0"


def test_the_link_rate_rule_holds_only_ports_that_reached_the_rail_figure() -> None:
    # The infiniband collector also reports the front-end NIC; a port that never linked at a rail's speed is
    # not a rail that slowed down.
    (rate,) = rules_by_alert()["RailRateBelowSeed"]
    assert str(rate["expr"]).startswith(
        "(max by (instance, device, port) (node_infiniband_rate_bytes_per_second) < 12108750000) "
        "and on (instance, device, port) (max by (instance, device, port) "
        "(max_over_time(node_infiniband_rate_bytes_per_second[1d])) >= 12108750000) and on (instance) "
    )


def test_the_rail_rules_watch_the_dranet_pools_only() -> None:
    expr = str(rules_by_alert()["RailDown"][0]["expr"])
    assert expr.endswith(
        'and on (instance) label_replace(kube_node_labels{label_oke_gpu_rdma_node_pool=~"gpu-b4-a|gpu-b4-b"}, '
        '"instance", "$1", "node", "(.*)")'
    )


def test_rules_are_what_prometheus_rulefmt_accepts() -> None:
    """prometheus/prometheus model/rulefmt/rulefmt.go (RuleNode validation): an alert name is a valid metric
    name, `for` a Prometheus duration, label names valid label names; group names are unique."""
    import re

    metric_name = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
    label_name = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
    duration = re.compile(r"^((\d+)y)?((\d+)w)?((\d+)d)?((\d+)h)?((\d+)m)?((\d+)s)?((\d+)ms)?$")
    groups = rule_groups(full_settings())
    assert len({g["name"] for g in groups}) == len(groups)
    for group in groups:
        for rule in group["rules"]:
            assert metric_name.match(str(rule["alert"])), rule["alert"]
            assert duration.match(str(rule["for"])) and rule["for"], rule["for"]
            assert all(label_name.match(name) for name in rule["labels"])
            assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}


def test_a_held_node_and_a_stalled_controller_alert_where_remediation_runs() -> None:
    """Issue 37: a node that failed remediation twice stays cordoned with an alert; the series are the
    controller's own (oke_gpu_rdma/health/remediation/controller.py), which the catalog lists as this project's."""
    rules = rules_by_alert()
    [held] = rules["NodeRemediationHeld"]
    assert held["expr"] == 'max by (pool) (oke_gpu_rdma_remediation_nodes{state="held"}) > 0'
    assert held["labels"] == {"severity": "critical"}
    [stalled] = rules["NodeRemediationStalled"]
    assert "absent(oke_gpu_rdma_remediation_last_round_timestamp_seconds)" in str(stalled["expr"])
    assert catalog.exporter_of("oke_gpu_rdma_remediation_nodes") == catalog.OWN_EXPORTER
    raw = raw_config("full")
    del raw["health"]["remediation"]
    quiet = rule_settings(load_stack(raw, "full", EXAMPLE_REGION).config)
    assert not any(g["name"] == "oke-gpu-rdma.remediation" for g in rule_groups(quiet))
