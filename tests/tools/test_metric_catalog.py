"""tools/metric_catalog.py: the readers that take each exporter's metric names from its own files, and the
committed catalog they wrote."""

from __future__ import annotations

import json

from oke_gpu_rdma.monitoring.catalog import CATALOG_FILE
from tools import metric_catalog

# Shapes of the upstream files, cut down: dcgm-exporter etc/dcp-metrics-included.csv, DRANET
# pkg/driver/metrics.go, node_exporter collector/infiniband_linux.go, kube-state-metrics docs/metrics tables.
CSV = """\
# Format
# DCGM FIELD, Prometheus metric type, help message
DCGM_FI_DEV_XID_ERRORS,            gauge,   Value of the last XID error encountered.
# DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Total number of double-bit volatile ECC errors.
DCGM_FI_DRIVER_VERSION,        label, Driver Version
"""
GO = """\
	draPluginRequestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "dranet",
		Subsystem: "driver",
		Name:      "dra_plugin_requests_total",
	}, []string{"method", "status"})
	draPluginRequestsLatencySeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "dranet",
		Subsystem: "driver",
		Name:      "dra_plugin_requests_latency_seconds",
	}, []string{"method"})
	lastPublishedTime = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "dranet",
		Subsystem: "driver",
		Name:      "last_published_time_seconds",
	})
"""
INFINIBAND = """\
	descriptions := map[string]string{
		"link_downed_total":                          "Number of times the link failed to recover",
		"state_id":                                   "State of the InfiniBand port (0: no change, 1: down)",
	}
"""
TABLE = """\
| Metric name | Metric type | Description |
| ----------- | ----------- | ----------- |
| kube_node_spec_taint         | Gauge       | The taint of a cluster node. |
"""


def test_the_readers_take_exported_names_only() -> None:
    # A `label` row becomes a label of the others; a commented row is not exported.
    assert metric_catalog.dcgm_counters(CSV) == ["DCGM_FI_DEV_XID_ERRORS"]
    assert metric_catalog.dranet_metrics(GO) == [
        "dranet_driver_dra_plugin_requests_total",
        "dranet_driver_dra_plugin_requests_latency_seconds_bucket",
        "dranet_driver_dra_plugin_requests_latency_seconds_sum",
        "dranet_driver_dra_plugin_requests_latency_seconds_count",
        "dranet_driver_last_published_time_seconds",
    ]
    assert metric_catalog.node_exporter_infiniband(INFINIBAND) == [
        "node_infiniband_link_downed_total",
        "node_infiniband_state_id",
        "node_infiniband_info",
    ]
    assert metric_catalog.kube_state_metrics(TABLE) == ["kube_node_spec_taint"]


def test_the_committed_catalog_names_its_sources_at_their_refs() -> None:
    data = json.loads(CATALOG_FILE.read_text())
    assert sorted(data) == sorted(metric_catalog.SOURCES)
    for exporter, (repo, ref, files, _, why) in metric_catalog.SOURCES.items():
        entry = data[exporter]
        assert (entry["repository"], entry["ref"], entry["file"], entry["why"]) == (repo, ref, files, why)
        assert entry["metrics"] == sorted(set(entry["metrics"])) and entry["metrics"]
    # The GPU Operator v26.3.3's dcgm-exporter and its counters file.
    assert data["dcgm-exporter"]["ref"] == "4.5.3-4.8.2"
    assert len(data["dcgm-exporter"]["metrics"]) == 25
