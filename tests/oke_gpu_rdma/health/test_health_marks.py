"""The health marks: taint keys, the rail mark by Kubernetes version, what a toleration tolerates
(oke_gpu_rdma/health/health_marks.py)."""

from __future__ import annotations

import pytest

from oke_gpu_rdma.drivers import nvidia_gpu
from oke_gpu_rdma.health import health_marks as health


@pytest.mark.parametrize(
    ("version", "mode"),
    [("v1.34.2", "node"), ("v1.35.0", "node"), ("v1.36.4", "node"), ("v1.37.0", "device")],
)
def test_a_rail_is_marked_on_its_device_only_where_v1_device_taint_rules_are_served(version, mode):
    # 1.36 has DRADeviceTaintRules beta and off (v1beta2 only, kubernetes PR #137170); 1.37 GA and on.
    assert health.rail_mark_mode(version) == mode


@pytest.mark.parametrize(("version", "kept"), [("v1.35.3", False), ("v1.36.0", True), ("v1.37.2", True)])
def test_driver_taints_survive_only_where_dra_device_taints_is_on(version, kept):
    assert health.gpu_health_supported(version) is kept


@pytest.mark.parametrize(
    ("chart", "has"),
    [("0.5.1", True), ("0.4.0", True), ("v0.4.1", True), ("0.3.0", False), ("25.12.0", False), ("x", False)],
)
def test_the_drivers_health_checks_start_at_v0_4_0(chart, has):
    assert health.driver_has_health_checks(chart) is has


def test_the_health_keys_are_the_rail_mark_and_the_gpu_drivers_three():
    assert health.HEALTH_TAINT_KEYS == (
        "oke-gpu-rdma/rail-unhealthy",
        "gpu.nvidia.com/xid",
        "gpu.nvidia.com/gpu-lost",
        "gpu.nvidia.com/unmonitored",
    )
    # The driver never writes NoExecute (device_health.go healthEventToTaint).
    assert all("NoExecute" not in effects for effects in nvidia_gpu.HEALTH_TAINT_EFFECTS.values())


@pytest.mark.parametrize(
    ("toleration", "found"),
    [
        ({"key": "gpu.nvidia.com/xid", "operator": "Exists"}, "gpu.nvidia.com/xid"),
        (
            {"key": "oke-gpu-rdma/rail-unhealthy", "operator": "Equal", "value": "rail-agent"},
            "oke-gpu-rdma/rail-unhealthy",
        ),
        ({"operator": "Exists"}, "every key (operator Exists with no key)"),
        ({"operator": "Exists", "effect": "NoSchedule"}, "every key (operator Exists with no key)"),
        ({"operator": "Exists", "effect": "NoExecute"}, None),
        ({"key": "gpu.nvidia.com/xid", "operator": "Exists", "effect": "None"}, None),
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, None),
        ({"operator": "Equal", "value": ""}, None),
    ],
)
def test_what_a_toleration_tolerates(toleration, found):
    assert health.tolerates_health_taint(toleration) == found
