"""The health settings against the rest of the stack, and the node mark (stack_config/health/health_plan.py)."""

from __future__ import annotations

from typing import Any

import pytest

from stack_config.health import health_plan
from stack_config.loading import load_stack
from stack_config.model import StackConfig
from stack_config.nodes.pool_settings import Taint
from stack_config.problems import ConfigError
from stack_config.scheduling.pool_nodes import planned_pools
from tests.support import EXAMPLE_REGION, raw_config, without_remediation

SOURCE = "examples/Pulumi.full.yaml"


def problems_of(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_stack(raw, SOURCE, EXAMPLE_REGION)
    return [line.strip() for line in str(caught.value).splitlines()[1:]]


def config_of(raw: dict[str, Any]) -> StackConfig:
    return load_stack(raw, SOURCE, EXAMPLE_REGION).config


def test_the_full_example_marks_whole_nodes_on_1_36_and_its_dranet_pools_show_it() -> None:
    config = config_of(raw_config("full"))
    assert config.health.gpu and config.health.rails.enabled
    assert health_plan.mark_taints(config) == [
        Taint(key="oke-gpu-rdma/rail-unhealthy", value="rail-agent", effect="NoSchedule")
    ]
    marks = {p.name: [str(m) for m in p.marks] for p in planned_pools(config)}
    assert marks == {
        "gpu-b4-a": ["oke-gpu-rdma/rail-unhealthy=rail-agent:NoSchedule"],
        "gpu-b4-b": ["oke-gpu-rdma/rail-unhealthy=rail-agent:NoSchedule"],
        "system": [],
    }


def test_on_1_37_no_node_is_marked() -> None:
    raw = raw_config("full")
    raw["cluster"]["create"]["kubernetesVersion"] = "v1.37.0"
    assert health_plan.mark_taints(config_of(raw)) == []


def test_gpu_health_on_1_35_is_refused_with_the_gate() -> None:
    raw = raw_config("full")
    raw["cluster"]["create"]["kubernetesVersion"] = "v1.35.2"
    assert problems_of(raw) == [
        f"{SOURCE}: health.gpu = true: the API server drops the device taints the driver writes: feature gate "
        "DRADeviceTaints is alpha and off at v1.35; on from v1.36 (OKE turns no gate on); set health.gpu: false or "
        "run Kubernetes v1.36 or later"
    ]


def test_gpu_health_needs_the_driver_and_a_version_that_has_it() -> None:
    raw = raw_config("full")
    raw["gpuDriver"] = {"chartVersion": "25.12.0"}
    assert problems_of(raw) == [
        f"{SOURCE}: gpuDriver.chartVersion = '25.12.0': has no NVML health checks (feature gate "
        "NVMLDeviceHealthCheck, from v0.4.0); set gpuDriver.chartVersion: 0.5.1, or health.gpu: false"
    ]
    raw["gpuDriver"] = {"enabled": False}
    raw["workloads"] = {"claimTemplates": []}
    without_remediation(raw)  # it needs the scheduled fabric check, which goes with the workloads
    assert problems_of(raw) == [
        f"{SOURCE}: health.gpu = true: needs the NVIDIA DRA driver on a DRANET pool (gpuDriver.enabled: true and a "
        "pool with rdma: dranet); turn it on, or set health.gpu: false"
    ]


def test_rail_health_needs_dranet() -> None:
    raw = raw_config("full")
    raw["dranet"] = {"enabled": False}
    raw["health"] = {"rails": {"enabled": True}}
    raw["workloads"] = {"claimTemplates": [], "railsOnlyTemplate": None}
    assert problems_of(raw) == [
        f"{SOURCE}: health.rails.enabled = true: checks DRANET's rails, and the stack runs DRANET on no pool "
        "(dranet.enabled: true and a pool with rdma: dranet); turn DRANET on, or set health.rails.enabled: false"
    ]


def test_the_agents_settings_are_checked() -> None:
    raw = raw_config("full")
    raw["health"] = {
        "rails": {"enabled": True, "errorCounters": ["counters/symbol_error", "../../etc/passwd"]}
    }
    assert problems_of(raw) == [
        f'{SOURCE}: health.rails.errorCounters = ["counters/symbol_error", "../../etc/passwd"]: '
        "'../../etc/passwd' names no file of a port's counters/ or hw_counters/ directory "
        "(/sys/class/infiniband/<device>/ports/1/); write counters/<name> or hw_counters/<name>, e.g. "
        "counters/symbol_error"
    ]
    raw["health"] = {"rails": {"enabled": True, "intervalSeconds": 1}}
    assert problems_of(raw) == [f"{SOURCE}: health.rails.intervalSeconds = 1: must be at least 5"]


def test_the_stacks_claim_templates_tolerate_no_health_taint() -> None:
    stack = load_stack(raw_config("full"), SOURCE, EXAMPLE_REGION)
    templates = [*stack.claims.aligned, *stack.claims.rails_only_templates]
    assert templates

    def tolerations(value: object) -> list[object]:
        if isinstance(value, dict):
            return [*value.get("tolerations", []), *(t for v in value.values() for t in tolerations(v))]
        if isinstance(value, list):
            return [t for v in value for t in tolerations(v)]
        return []

    # A new claim never gets a GPU or rail a health mark took out (docs/health.md).
    assert [tolerations(t.spec) for t in templates] == [[] for _ in templates]
