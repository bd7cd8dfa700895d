"""NVIDIA's device plugin chart's workloads as its templates and values render them at the pinned version
(oke_gpu_rdma/drivers/device_plugin.py)."""

from __future__ import annotations

from oke_gpu_rdma.drivers import device_plugin

GPU = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def test_device_plugin_chart_offers_gpus_where_it_runs() -> None:
    plugin, mps = device_plugin.workloads("nvidia-device-plugin", {"nodeSelector": {"a": "b"}})
    assert plugin.provides_resources == {"nvidia.com/gpu"} and plugin.node_selector == {"a": "b"}
    assert plugin.tolerations == ({"key": "CriticalAddonsOnly", "operator": "Exists"}, GPU)
    assert mps.node_selector == {"nvidia.com/mps.capable": "true", "a": "b"} and mps.may_select_none
    assert device_plugin.workloads("p", {"devicePlugin": {"enabled": False}}) == []
