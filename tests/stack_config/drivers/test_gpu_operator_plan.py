"""The GPU Operator settings a stack's pools need, and the separately placed device plugin
(stack_config/drivers/gpu_operator_plan.py)."""

from __future__ import annotations

from typing import Any

from oke_gpu_rdma.common import charts
from oke_gpu_rdma.drivers import device_plugin
from oke_gpu_rdma.drivers.gpu_operator_operands import device_plugin_gaps, operand_problems
from stack_config.drivers import gpu_operator_plan as plan
from stack_config.loading import load_stack
from stack_config.model import StackConfig
from stack_config.nodes.pool_settings import GPU_TAINT, Taint
from stack_config.scheduling.pool_nodes import planned_pools
from tests.support import EXAMPLE_REGION, raw_config


def config_of(raw: dict[str, Any]) -> StackConfig:
    return load_stack(raw, "stack", EXAMPLE_REGION).config


def mixed_fleet() -> dict[str, Any]:
    """The full example's DRANET pools plus an rdma: none A10 pool (issue 19's mixed fleet)."""
    raw = raw_config("full")
    b4 = raw["nodePools"][0]
    raw["nodePools"].append({**b4, "name": "infer-a10", "shape": "VM.GPU.A10.1", "count": 3, "rdma": "none"})
    return raw


def test_dra_pools_turn_the_operator_device_plugin_off_without_a_separate_one() -> None:
    config = config_of(raw_config("full"))
    assert [p.name for p in plan.dra_served_pools(config)] == ["gpu-b4-a", "gpu-b4-b"]
    assert not plan.operator_device_plugin(config) and not plan.separate_device_plugin(config)
    assert plan.stack_operator_values(config) == {
        "driver": {"enabled": False},
        "devicePlugin": {"enabled": False},
        "daemonsets": {
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                # The full example runs the rail health agent on v1.36, which marks whole nodes: the operands
                # must come back on a marked node.
                {"key": "oke-gpu-rdma/rail-unhealthy", "operator": "Exists", "effect": "NoSchedule"},
            ]
        },
        "node-feature-discovery": {
            "worker": {
                "tolerations": [
                    {
                        "key": "node-role.kubernetes.io/control-plane",
                        "operator": "Equal",
                        "value": "",
                        "effect": "NoSchedule",
                    },
                    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                    {"key": "oke-gpu-rdma/rail-unhealthy", "operator": "Exists", "effect": "NoSchedule"},
                ]
            }
        },
    }
    assert plan.required_settings(config) == []  # the stack installs the operator


def test_device_plugin_pools_alone_keep_the_operator_device_plugin() -> None:
    config = config_of(raw_config("sriov"))
    assert plan.operator_device_plugin(config) and not plan.separate_device_plugin(config)
    assert "devicePlugin" not in plan.stack_operator_values(config)
    assert plan.required_settings(config) == [
        "the cluster's GPU Operator (not managed by this stack, gpuOperator.enabled: false) needs its device "
        "plugin on (Helm value devicePlugin.enabled=true, the chart default): pool(s) gpu-b4-vf take GPUs as "
        "nvidia.com/gpu from it"
    ]


def test_a_mixed_fleet_gets_the_device_plugin_chart_for_its_rail_less_pool() -> None:
    config = config_of(mixed_fleet())
    assert not plan.operator_device_plugin(config) and plan.separate_device_plugin(config)
    assert [p.name for p in plan.device_plugin_pools(config)] == ["infer-a10"]
    values = plan.device_plugin_values([GPU_TAINT])
    # Placed where the operator would place its own device plugin, configured as the operator configures it.
    assert values == {
        "nodeSelector": {"nvidia.com/gpu.deploy.device-plugin": "true"},
        "runtimeClassName": "nvidia",
        "deviceListStrategy": "cdi-annotations,cdi-cri",
        "migStrategy": "single",
        "cdi": {"nvidiaHookPath": "/usr/local/nvidia/toolkit/nvidia-cdi-hook"},
    }
    assert charts.undocumented_value_paths(values, device_plugin.VALUE_PATHS) == []
    pools = planned_pools(config)
    operator = plan.stack_operator_values(config)
    assert operand_problems(operator, pools) == []
    assert device_plugin_gaps(pools, device_plugin.workloads(device_plugin.RELEASE, values)) == []


def test_the_device_plugin_chart_keeps_its_default_tolerations_and_adds_other_taints() -> None:
    dedicated = Taint(key="dedicated", value="infer", effect="NoExecute")
    values = plan.device_plugin_values([GPU_TAINT, dedicated])
    assert values["tolerations"] == [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
    ]


def test_an_existing_cluster_with_dra_pools_is_told_to_turn_its_operator_device_plugin_off() -> None:
    config = config_of(raw_config("dev"))
    (line,) = plan.required_settings(config)
    assert line.startswith(
        "the cluster's GPU Operator (not managed by this stack, gpuOperator.enabled: false) needs its device "
        "plugin off: Helm value devicePlugin.enabled=false (ClusterPolicy spec.devicePlugin.enabled: false). "
        "Pool(s) gpu-b4 take GPUs from the NVIDIA DRA driver"
    )
    raw = mixed_fleet()
    raw["gpuOperator"] = {"enabled": False}
    tainted = raw["nodePools"][2]
    tainted["taints"] = [{"key": "dedicated", "value": "infer", "effect": "NoSchedule"}]
    lines = plan.required_settings(config_of(raw))
    assert len(lines) == 3
    assert lines[1] == (
        "pool(s) infer-a10 then take nvidia.com/gpu from the nvidia-device-plugin chart this stack installs on "
        "the nodes labelled nvidia.com/gpu.deploy.device-plugin=true"
    )
    assert lines[2].startswith("its operands need daemonsets.tolerations [")
    assert "'key': 'dedicated'" in lines[2]
