"""The monitoring and scheduled-check settings: one message per bad value, naming the key, the value and the
fix (stack_config/model.py, stack_config/monitoring/monitoring_plan.py)."""

from __future__ import annotations

from typing import Any

import pytest

from stack_config.loading import ConfigError, load_stack
from stack_config.monitoring.monitoring_plan import controllers
from tests.support import EXAMPLE_REGION, raw_config

SOURCE = "stacks/Pulumi.full.yaml"


def problems_of(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_stack(raw, SOURCE, EXAMPLE_REGION)
    return [p.render() for p in caught.value.problems]


def with_jobs(stack: str = "full", **jobs: Any) -> dict[str, Any]:
    raw = raw_config(stack)
    raw["workloads"] = {"acceptanceJobs": jobs}
    return raw


@pytest.mark.parametrize(
    ("schedule", "why"),
    [
        ("0 25 * * *", "is not a cron schedule: hour 25 is outside 0-23"),
        ("nightly", "needs five fields: minute hour day-of-month month day-of-week (e.g. '0 3 * * *', daily at 03:00)"),
        ("TZ=UTC 0 3 * * *", "carries a time zone, which a CronJob's schedule may not; the CronJob runs in the "
         "controller's zone"),
    ],
)  # fmt: skip
def test_a_schedule_the_api_server_would_refuse_is_named(schedule: str, why: str) -> None:
    (problem,) = problems_of(with_jobs(schedule=schedule))
    assert problem == f"workloads.acceptanceJobs.schedule = {schedule!r}: {why}"


def test_a_schedule_without_a_dranet_pool_is_refused() -> None:
    raw = with_jobs("sriov", schedule="@daily")
    (problem,) = [p for p in problems_of(raw) if p.startswith("workloads.acceptanceJobs.schedule")]
    assert problem == (
        "workloads.acceptanceJobs.schedule = '@daily': the scheduled checks run the claim-template jobs on a DRANET "
        "pool, and the stack has none (rdma: sriov pools are checked at apply time only); remove the schedule"
    )


def test_a_schedule_with_no_check_is_refused() -> None:
    (problem,) = problems_of(with_jobs(schedule="@daily", nccl=False, railBandwidth=False))
    assert problem.endswith("has no check to run: turn on nccl or railBandwidth (or both: the schedule runs them "
                            "one after the other)")  # fmt: skip


def test_on_a_schedule_both_checks_may_be_on_but_not_at_apply_time() -> None:
    load_stack(with_jobs(schedule="@daily", nccl=True, railBandwidth=True), SOURCE, EXAMPLE_REGION)
    (problem,) = problems_of(with_jobs(enabled=True, nccl=True, railBandwidth=True))
    assert "enable one at a time" in problem


def test_the_scheduled_nccl_check_needs_its_template_like_the_gate() -> None:
    (problem,) = problems_of(with_jobs(schedule="@daily", claimTemplate="no-such-template"))
    assert problem.startswith("workloads.acceptanceJobs.claimTemplate = 'no-such-template': no such template")


def test_monitoring_settings_are_checked() -> None:
    raw = raw_config("full")
    raw["monitoring"] = {"enabled": True, "chartVersion": "80.0.0"}
    (problem,) = problems_of(raw)
    assert "chartVersion 80.0.0" in problem and "88.5.3" in problem
    raw["monitoring"] = {
        "enabled": False,
        "existingPrometheus": {"namespace": "obs", "selectorLabels": {"a": "b"}},
    }
    (problem,) = problems_of(raw)
    assert problem == (
        "monitoring.existingPrometheus = 'obs': is set while monitoring.enabled is false, so nothing would use it; "
        "set enabled: true or remove it"
    )
    raw["monitoring"] = {
        "enabled": True,
        "namespace": "monitoring",
        "existingPrometheus": {"namespace": "obs", "selectorLabels": {"a": "b"}},
    }
    (problem,) = problems_of(raw)
    assert problem.startswith("monitoring: namespace configure the kube-prometheus-stack the stack installs")
    raw["monitoring"] = {"enabled": True, "existingPrometheus": {"namespace": "obs", "selectorLabels": {}}}
    (problem,) = problems_of(raw)
    assert problem.startswith("monitoring.existingPrometheus.selectorLabels:")


def test_kube_prometheus_stack_s_controllers_are_placed_before_anything_is_declared() -> None:
    stack = load_stack(raw_config("full"), SOURCE, EXAMPLE_REGION)
    placed = controllers(stack.config)
    assert {p.name.split(" (")[0] for p in placed} == {
        "Deployment kube-prometheus-stack-operator",
        "Job kube-prometheus-stack-admission-create",
        "StatefulSet prometheus-kube-prometheus-stack-prometheus",
        "StatefulSet alertmanager-kube-prometheus-stack-alertmanager",
        "Deployment kube-prometheus-stack-grafana",
        "Deployment kube-prometheus-stack-kube-state-metrics",
    }
    assert all(p.node_selector == {"oke-gpu-rdma/node-pool": "system"} for p in placed)
