"""The Grafana dashboard: every query parses with Prometheus' grammar and reads documented metrics only; GPUs
and rails per node and per job."""

from __future__ import annotations

import re

from oke_gpu_rdma.monitoring import catalog, dashboard

from .promql import parse


def test_every_query_parses_and_names_only_documented_metrics() -> None:
    queries = dashboard.queries(dashboard.dashboard())
    assert len(queries) == 20
    for query, parsed in zip(queries, parse(queries), strict=True):
        assert parsed.error is None, f"{query}: {parsed.error}"
        assert parsed.metrics, f"{query}: selects no metric"
        assert [m for m in parsed.metrics if catalog.exporter_of(m) is None] == [], query


def test_the_rows_are_gpus_and_rails_per_node_and_per_job() -> None:
    model = dashboard.dashboard()
    assert [p["title"] for p in model["panels"] if p["type"] == "row"] == [
        "GPUs per node",
        "Rails per node",
        "Per job",
        "Remediation",
    ]
    assert [v["name"] for v in model["templating"]["list"]] == ["datasource", "node", "namespace", "pod"]
    ids = [p["id"] for p in model["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"]: v for v in model["templating"]["list"]}
    # The DCGM exporter labels no DRA-allocated GPU with its pod here, so the job's pods come from
    # kube-state-metrics, and the job is followed through the nodes they run on.
    assert variables["pod"]["definition"] == 'label_values(kube_pod_info{namespace=~"$namespace"}, pod)'


def test_a_job_s_gpus_and_rails_are_those_of_the_nodes_its_pods_run_on() -> None:
    by_title = {p["title"]: p for p in dashboard.dashboard()["panels"]}
    nodes = 'label_replace(max by (node) (kube_pod_info{namespace=~"$namespace", pod=~"$pod"}), '
    gpus = by_title["GPU utilisation, nodes of the job"]["targets"][0]["expr"]
    assert (
        gpus == f'DCGM_FI_DEV_GPU_UTIL * on (Hostname) group_left () {nodes}"Hostname", "$1", "node", "(.*)")'
    )
    rails = by_title["Rails transmit (Gb/s), nodes of the job"]["targets"][0]["expr"]
    assert rails.endswith(f' * on (instance) group_left () {nodes}"instance", "$1", "node", "(.*)")')
    # No query reads a pod label off the DCGM series.
    dcgm_by_pod = re.compile(r"DCGM_FI_\w+\{[^}]*\b(pod|namespace)=")
    assert [q for q in dashboard.queries(dashboard.dashboard()) if dcgm_by_pod.search(q)] == []


def test_panels_stay_on_the_grid() -> None:
    for panel in dashboard.dashboard()["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24
