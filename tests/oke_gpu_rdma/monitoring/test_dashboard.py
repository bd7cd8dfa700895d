"""The Grafana dashboard: every query parses with Prometheus' grammar and reads documented metrics only; GPUs
and rails per node and per job."""

from __future__ import annotations

from oke_gpu_rdma.monitoring import catalog, dashboard

from .promql import parse


def test_every_query_parses_and_names_only_documented_metrics() -> None:
    queries = dashboard.queries(dashboard.dashboard())
    assert len(queries) == 18
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
    ]
    assert [v["name"] for v in model["templating"]["list"]] == ["datasource", "node", "namespace", "pod"]
    ids = [p["id"] for p in model["panels"]]
    assert len(ids) == len(set(ids))
    # The per-job rails: the nodes the chosen pods run on, joined on the node exporter's instance label.
    job_rails = next(p for p in model["panels"] if p["title"].startswith("Job rails"))
    assert 'kube_pod_info{namespace=~"$namespace", pod=~"$pod"}' in job_rails["targets"][0]["expr"]


def test_panels_stay_on_the_grid() -> None:
    for panel in dashboard.dashboard()["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24
