"""gpu-device-plugin-off (stack): GPU node pools the NVIDIA DRA driver serves keep the device plugin off.

With the NVIDIA GPU DRA driver on a node, the GPU Operator's device plugin must not also offer the
same GPUs as `nvidia.com/gpu`: it runs only where `nvidia.com/gpu.deploy.device-plugin` is not
"false" (seed 000 labelled the nodes by hand; the pools here carry it as an initial node label).
A pool is served when its nodes match the driver's kubelet-plugin nodeSelector and required node
affinity (:mod:`oke_gpu_rdma.scheduling.node_selection`; the chart's default affinity when its values set none).
A node's labels are the pool's initial labels, `node.kubernetes.io/instance-type` (the kubelet sets it
to the shape) and, on GPU shapes, the labels set at run time: `nvidia.com/gpu.present` by the GPU
Operator (GPU feature discovery) and NFD's `feature.node.kubernetes.io/pci-10de.present`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from pulumi_policy import StackValidationArgs

from oke_gpu_rdma.common import resource_types, stack_keys
from oke_gpu_rdma.drivers import nvidia_gpu
from oke_gpu_rdma.drivers.attributes import NVIDIA_GPU_RESOURCE
from oke_gpu_rdma.nodes.labels import (
    DEVICE_PLUGIN_LABEL,
    DEVICE_PLUGIN_OFF,
    GPU_PRESENT,
    GPU_PRESENT_LABEL,
    INSTANCE_TYPE_LABEL,
)
from oke_gpu_rdma.scheduling.node_selection import SelectionError, affinity_matches, selector_matches
from oke_rdma_policies.helm import helm_values
from oke_rdma_policies.kube import PlainResource, pod_specs
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter, guarded, stack_where
from oke_rdma_policies.stack import StackView, node_labels
from oke_rdma_policies.values import UNKNOWN, PropertyTypeError, as_list, as_map, contains_unknown, dig

_DRIVER_IMAGE: Final = re.compile("(" + "|".join(map(re.escape, nvidia_gpu.CHART_NAMES)) + ")[:@]?")


@dataclass
class Driver:
    """One NVIDIA GPU DRA driver installation and how its kubelet plugin selects nodes."""

    res: PlainResource
    selector: Any  # Mapping, UNKNOWN or None
    affinity: Any  # Mapping, UNKNOWN or None

    @property
    def label(self) -> str:
        return f"{self.res.kind} {self.res.name}"


def _helm_driver(res: PlainResource, reporter: Reporter) -> Driver | None:
    values = helm_values(res, reporter)
    if values is None:
        return None
    selector = dig(values, nvidia_gpu.KUBELET_NODE_SELECTOR_VALUE, "values")
    affinity = dig(values, nvidia_gpu.KUBELET_AFFINITY_VALUE, "values")
    # The chart renders kubeletPlugin.affinity; values that set none keep the chart's default.
    return Driver(res, selector, nvidia_gpu.DEFAULT_KUBELET_AFFINITY if affinity is None else affinity)


def _daemonset_driver(res: PlainResource) -> Driver | None:
    for pod in pod_specs(res):
        images = [
            c.get("image")
            for c in as_list(pod.spec.get("containers"), f"{pod.path}.containers")
            if isinstance(c, Mapping)
        ]
        if any(isinstance(i, str) and _DRIVER_IMAGE.search(i) for i in images):
            return Driver(res, pod.spec.get("nodeSelector"), pod.spec.get("affinity"))
    return None


def _drivers(view: StackView, reporter: Reporter) -> list[Driver]:
    """Every NVIDIA GPU DRA driver: Helm charts of it (by what it is: :meth:`StackView.release_facts`), or
    DaemonSets running its image."""
    found: list[Driver | None] = []
    helm = set()
    for res in view.releases_of([nvidia_gpu.FACTS]):
        helm.add(res.urn)
        found.append(reporter.guard(f"{res.kind} {res.name}", res.urn, partial(_helm_driver, res, reporter)))
    for res in view.of_type(resource_types.DAEMONSET):
        if not any(a.urn in helm for a in view.ancestors(res)):
            found.append(reporter.guard(f"DaemonSet {res.name}", res.urn, partial(_daemonset_driver, res)))
    return [d for d in found if d is not None]


def _selects(driver: Driver, pool: PlainResource, labels: Mapping[str, Any], reporter: Reporter) -> bool:
    """Whether the driver's kubelet plugin runs on the pool's nodes; unknowns are noted (False)."""
    selector, affinity = driver.selector, driver.affinity
    if selector is UNKNOWN or contains_unknown(selector) or affinity is UNKNOWN or contains_unknown(affinity):
        reporter.unchecked(f"{driver.label}: nodeSelector or affinity unknown until apply")
        return False
    if not selector_matches(as_map(selector, "nodeSelector"), labels):
        return False
    try:
        admitted = affinity_matches(as_map(affinity, "affinity"), labels)
    except SelectionError as err:
        raise PropertyTypeError(str(err).split(" ", 1)[0], "a Kubernetes node affinity", affinity) from None
    if admitted is None:
        reporter.unchecked(
            f"{driver.label}: node affinity uses matchFields, node pool {pool.name} not checked"
        )
        return False
    return admitted


def check(args: StackValidationArgs, reporter: Reporter) -> None:
    view = StackView.of(args)
    drivers = _drivers(view, reporter)
    if not drivers:
        return
    for pool in view.gpu_node_pools():
        labels = reporter.guard(f"node pool {pool.name}", pool.urn, partial(node_labels, pool))
        if labels is None:
            continue
        if labels is UNKNOWN:
            reporter.unchecked(f"node pool {pool.name}: initialNodeLabels unknown until apply")
            continue
        for driver in drivers:
            if not reporter.guard(
                driver.label, driver.res.urn, partial(_selects, driver, pool, labels, reporter)
            ):
                continue
            value = labels.get(DEVICE_PLUGIN_LABEL)
            if value is UNKNOWN:
                reporter.unchecked(f"node pool {pool.name}: label {DEVICE_PLUGIN_LABEL} unknown until apply")
                continue
            if value == DEVICE_PLUGIN_OFF:
                continue
            shown = "is missing" if value is None else f"is {value!r}"
            wanted = driver.selector if isinstance(driver.selector, Mapping) else {}
            chosen = ", ".join(f"{k}={v}" for k, v in wanted.items()) or "every node"
            how = " and its node affinity" if driver.affinity else ""
            reporter.violation(
                f"node pool {pool.name} ({labels.get(INSTANCE_TYPE_LABEL)}) gets GPUs from the NVIDIA DRA driver "
                f"({driver.label} selects {chosen}{how}, which the pool's nodes match once the GPU Operator "
                f"labels them {GPU_PRESENT_LABEL}={GPU_PRESENT}) but its initial node label "
                f"{DEVICE_PLUGIN_LABEL} {shown}: the GPU Operator's device plugin then offers the same GPUs as "
                f"{NVIDIA_GPU_RESOURCE}, which the kubelet hands out without regard to the rails (seed 000: 4.27 GB/s "
                "instead of 96.29 GB/s) and which the DRA driver may give to a claim at the same time. Fix: add "
                f'{{key: {DEVICE_PLUGIN_LABEL}, value: "{DEVICE_PLUGIN_OFF}"}} to initialNodeLabels '
                f"({stack_keys.stack_setting(stack_keys.GPU_DRIVER_ENABLED, 'true')} sets it on every pool)",
                pool.urn,
            )


RULE = stack_rule(
    name="gpu-device-plugin-off",
    level="mandatory",
    description=(
        "GPU node pools served by the NVIDIA GPU DRA driver must carry the initial node label "
        f"{DEVICE_PLUGIN_LABEL}={DEVICE_PLUGIN_OFF}."
    ),
    validate=guarded(check, stack_where),
)
