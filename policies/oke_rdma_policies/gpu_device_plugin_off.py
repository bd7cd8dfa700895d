"""gpu-device-plugin-off (stack): GPU node pools the NVIDIA DRA driver serves keep the device plugin off.

With the NVIDIA GPU DRA driver on a node, the GPU Operator's device plugin must not also offer the
same GPUs as `nvidia.com/gpu`: it runs only where `nvidia.com/gpu.deploy.device-plugin` is not
"false" (seed 000 labelled the nodes by hand; the pools here carry it as an initial node label).
A pool is served when it matches the driver's kubelet-plugin nodeSelector; the kubelet sets
`node.kubernetes.io/instance-type` to the pool's shape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import partial
from typing import Any, Final

from pulumi_policy import StackValidationArgs, StackValidationPolicy

from oke_gpu_rdma import charts, resource_types, stack_keys
from oke_gpu_rdma.attributes import NVIDIA_GPU_RESOURCE
from oke_gpu_rdma.labels import DEVICE_PLUGIN_LABEL, DEVICE_PLUGIN_OFF, INSTANCE_TYPE_LABEL
from oke_gpu_rdma.pack_config import PolicyName

from . import settings
from .kube import Res, helm_chart_is, pod_specs
from .report import Reporter, guarded, stack_where
from .stack import StackView
from .values import UNKNOWN, as_list, as_map, dig

_DRIVER_IMAGE: Final = re.compile("(" + "|".join(map(re.escape, charts.NVIDIA_GPU_CHART_NAMES)) + ")[:@]?")


def _drivers(view: StackView, rep: Reporter) -> list[tuple[Res, Any]]:
    """(installation, node selector) of every NVIDIA GPU DRA driver; selector UNKNOWN if unknown."""
    found: list[tuple[Res, Any]] = []
    helm = set()
    for res in view.resources:
        if helm_chart_is(res, charts.NVIDIA_GPU_CHART_NAMES):
            helm.add(res.urn)

            def read_release(res: Res = res) -> None:
                values = res.props.get("values")
                selector = (
                    UNKNOWN if values is UNKNOWN else dig(values, "kubeletPlugin.nodeSelector", "values")
                )
                found.append((res, selector))

            rep.guard(f"Helm release {res.name}", res.urn, read_release)
    for res in view.of_type(resource_types.DAEMONSET):
        if any(a.urn in helm for a in view.ancestors(res)):
            continue

        def read_daemonset(res: Res = res) -> None:
            for pod in pod_specs(res):
                images = [
                    c.get("image")
                    for c in as_list(pod.spec.get("containers"), f"{pod.path}.containers")
                    if isinstance(c, Mapping)
                ]
                if any(isinstance(i, str) and _DRIVER_IMAGE.search(i) for i in images):
                    found.append((res, pod.spec.get("nodeSelector")))

        rep.guard(f"DaemonSet {res.name}", res.urn, read_daemonset)
    return found


def _pool_labels(pool: Res) -> dict[str, Any] | Any:
    items = pool.props.get("initialNodeLabels")
    if items is UNKNOWN:
        return UNKNOWN
    labels: dict[str, Any] = {INSTANCE_TYPE_LABEL: pool.props.get("nodeShape")}
    for i, item in enumerate(as_list(items, "initialNodeLabels")):
        if item is UNKNOWN:
            return UNKNOWN
        item = as_map(item, f"initialNodeLabels[{i}]")
        if item.get("key") is UNKNOWN:
            return UNKNOWN
        labels[str(item.get("key"))] = item.get("value")
    return labels


def check(args: StackValidationArgs, rep: Reporter) -> None:
    view = StackView.of(args)
    drivers = _drivers(view, rep)
    if not drivers:
        return
    for pool in view.gpu_node_pools():
        labels = rep.guard(f"node pool {pool.name}", pool.urn, partial(_pool_labels, pool))
        if labels is None:
            continue
        if labels is UNKNOWN:
            rep.unchecked(f"node pool {pool.name}: initialNodeLabels unknown until apply")
            continue
        for driver, selector in drivers:
            if selector is UNKNOWN:
                rep.unchecked(f"{driver.kind} {driver.name}: nodeSelector unknown until apply")
                continue
            if selector is not None and not isinstance(selector, Mapping):
                rep.violation(
                    f"{driver.kind} {driver.name}: nodeSelector must be an object of labels", driver.urn
                )
                continue
            wanted = dict(selector or {})
            if any(v is UNKNOWN for v in wanted.values()):
                rep.unchecked(f"{driver.kind} {driver.name}: nodeSelector values unknown until apply")
                continue
            if any(labels.get(k) != v for k, v in wanted.items()):
                continue
            value = labels.get(DEVICE_PLUGIN_LABEL)
            if value is UNKNOWN:
                rep.unchecked(f"node pool {pool.name}: label {DEVICE_PLUGIN_LABEL} unknown until apply")
                continue
            if value == DEVICE_PLUGIN_OFF:
                continue
            shown = "is missing" if value is None else f"is {value!r}"
            chosen = ", ".join(f"{k}={v}" for k, v in wanted.items()) or "every node"
            rep.violation(
                f"node pool {pool.name} ({labels.get(INSTANCE_TYPE_LABEL)}) gets GPUs from the NVIDIA DRA driver "
                f"({driver.kind} {driver.name} selects {chosen}) but its initial node label "
                f"{DEVICE_PLUGIN_LABEL} {shown}: the GPU Operator's device plugin then offers the same GPUs as "
                f"{NVIDIA_GPU_RESOURCE}, which the kubelet hands out without regard to the rails (seed 000: 4.27 GB/s "
                "instead of 96.29 GB/s) and which the DRA driver may give to a claim at the same time. Fix: add "
                f'{{key: {DEVICE_PLUGIN_LABEL}, value: "{DEVICE_PLUGIN_OFF}"}} to initialNodeLabels '
                f"({stack_keys.stack_setting(stack_keys.GPU_DRIVER_ENABLED, 'true')} sets it on every pool)",
                pool.urn,
            )


policy = StackValidationPolicy(
    name=PolicyName.DEVICE_PLUGIN_OFF,
    description=(
        "GPU node pools served by the NVIDIA GPU DRA driver must carry the initial node label "
        f"{DEVICE_PLUGIN_LABEL}={DEVICE_PLUGIN_OFF}."
    ),
    validate=guarded(check, stack_where),
    enforcement_level=settings.level(PolicyName.DEVICE_PLUGIN_OFF),
)
