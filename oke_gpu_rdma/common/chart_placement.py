"""Reading a chart's placement values as its templates do, and the tolerations several charts share.

A chart's facts module (dranet.py, nvidia_gpu.py, ...) places its pods with these: a value the stack sets
and the chart's default where it sets none are judged the same way (:mod:`oke_gpu_rdma.scheduling.pod_admission`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from oke_gpu_rdma.drivers import attributes
from oke_gpu_rdma.scheduling.pod_admission import SYSTEM_PRIORITY_CLASSES

CONTROL_PLANE_TOLERATIONS: Final[tuple[Mapping[str, Any], ...]] = (
    {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {
        "key": "node-role.kubernetes.io/control-plane",
        "operator": "Equal",
        "value": "",
        "effect": "NoSchedule",
    },
)
GPU_TAINT_TOLERATION: Final[Mapping[str, Any]] = {
    "key": attributes.NVIDIA_GPU_RESOURCE,
    "operator": "Exists",
    "effect": "NoSchedule",
}
CRITICAL_ADDONS_TOLERATION: Final[Mapping[str, Any]] = {"key": "CriticalAddonsOnly", "operator": "Exists"}
# gpu-operator values.yaml l. 83-87 (operator.tolerations) and the NFD subchart's master.tolerations
# (l. 122-126): the control-plane taint alone.
CONTROL_PLANE_ONLY_TOLERATIONS: Final[tuple[Mapping[str, Any], ...]] = (CONTROL_PLANE_TOLERATIONS[1],)
SYSTEM_NODE_CRITICAL: Final = "system-node-critical"
SYSTEM_CLUSTER_CRITICAL: Final = "system-cluster-critical"
assert {SYSTEM_NODE_CRITICAL, SYSTEM_CLUSTER_CRITICAL} == SYSTEM_PRIORITY_CLASSES


def preferred(key: str, operator: str, values: list[str] | None = None, weight: int = 1) -> dict[str, Any]:
    """A preferred node affinity on one expression (it never keeps a pod off a node)."""
    expression: dict[str, Any] = {"key": key, "operator": operator}
    if values is not None:
        expression["values"] = values
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": weight, "preference": {"matchExpressions": [expression]}}
            ]
        }
    }


def required_term(key: str, value: str) -> dict[str, Any]:
    """A node selector term requiring ``key`` In [``value``]."""
    return {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}


# gpu-operator values.yaml l. 90-98 and the NFD subchart's master.affinity (l. 135-143).
CONTROL_PLANE_PREFERRED_AFFINITY: Final = preferred("node-role.kubernetes.io/control-plane", "In", [""])


def get(values: Mapping[str, Any], path: str) -> Any:
    node: Any = values
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def tolerations(
    values: Mapping[str, Any], path: str, default: tuple[Mapping[str, Any], ...]
) -> tuple[Any, ...]:
    value = get(values, path)
    return tuple(value) if isinstance(value, list) else default


def mapping(values: Mapping[str, Any], path: str, default: Mapping[str, Any] | None = None) -> dict[str, Any]:
    value = get(values, path)
    return dict(value) if isinstance(value, Mapping) and value else dict(default or {})


def string(values: Mapping[str, Any], path: str, default: str | None) -> str | None:
    value = get(values, path)
    return value if isinstance(value, str) and value else default


def switch(values: Mapping[str, Any], path: str, default: bool) -> bool:
    value = get(values, path)
    return default if value is None else value is True
