"""Where a claim can land in a mixed fleet: the shapes whose nodes have the devices it asks for.

The scheduler places a pod only on a node where each of its claims can be allocated
(kubernetes `pkg/scheduler/framework/plugins/dynamicresources`: Filter rejects a node whose
ResourceSlices cannot satisfy the claim). A claim for DRANET rails is therefore never placed on an
inference pool of GPUs without rails: its rail request matches no device there. Such a shape says
nothing about the claim, so the claim is judged on the shapes where every request (some subrequest of a
``firstAvailable`` request) has a device that its class and selectors accept.

Which pools publish a driver's devices at all follows from how the stack deploys the driver: a DRA
driver publishes ResourceSlices only on the nodes where its kubelet plugin runs, and that plugin is a
DaemonSet, so it runs where the DaemonSet controller places it: nodes its nodeSelector and required
node affinity select and whose NoSchedule/NoExecute taints it tolerates (kubernetes
`pkg/controller/daemon/daemon_controller.go` `NodeShouldRunDaemonPod`; the rules in
:mod:`oke_gpu_rdma.scheduling.pod_admission`). :func:`drivers_on_pools` reads that from the releases' placement
(:mod:`oke_gpu_rdma.common.chart_workloads`), and :func:`claim_lands` says whether a claim's drivers are all
there. A driver the stack does not deploy (a cluster that already runs it) may be anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any, Final

from oke_gpu_rdma.claims.candidates import ClaimToAllocate
from oke_gpu_rdma.claims.inventory import Device, shape_inventory
from oke_gpu_rdma.claims.spec import parse_claim
from oke_gpu_rdma.common.errors import AllocationAbortedError, ClaimValidationError, SelectorError
from oke_gpu_rdma.drivers import dranet
from oke_gpu_rdma.nodes.topology import Topology
from oke_gpu_rdma.scheduling.pod_admission import NodeTaint, PodPlacement, PoolNodes, rejections

# `device.driver == "dra.net"` in a DeviceClass selector: the class only takes that driver's devices.
_DRIVER_IS: Final = re.compile(r"""device\.driver\s*==\s*(["'])([^"']+)\1""")


def devices_exist(
    claim: Mapping[str, Any],
    topology: Topology,
    device_classes: Mapping[str, Sequence[str]],
    api_version: str | None = None,
    kubernetes_version: str | None = None,
    child_range: str | None = None,
) -> bool:
    """Whether a node of ``topology`` has, for every request of ``claim``, a device the request accepts
    (rails publishing ``child_range``, the claim read as the API server of ``kubernetes_version`` stores it).

    True as well when the question has no answer here (an invalid claim, a CEL error, an unknown
    DeviceClass): the judge reports those on every shape alike.
    """
    try:
        spec = parse_claim(claim, api_version=api_version, kubernetes_version=kubernetes_version)
        inventory = shape_inventory(topology, child_range) if child_range else shape_inventory(topology)
        prepared = ClaimToAllocate(spec, inventory.devices(), device_classes)
    except (ClaimValidationError, SelectorError, AllocationAbortedError):
        return True
    return _every_request_finds(prepared)


@lru_cache(maxsize=64)
def _as_shape(topology: Topology, shape: str, child_range: str | None) -> tuple[Device, ...]:
    """The devices of a node of ``topology`` as if DRANET ran on ``shape``: the rails publish ``shape`` as
    ``oke.dra.net/shape`` (DRANET's OKE provider publishes the node's shape there)."""
    inventory = shape_inventory(topology, child_range) if child_range else shape_inventory(topology)
    return tuple(
        replace(d, attributes={**d.attributes, dranet.OKE_SHAPE: shape})
        if dranet.OKE_SHAPE in d.attributes
        else d
        for d in inventory.devices()
    )


def excluded_on_shape(
    claim: Mapping[str, Any],
    shape: str,
    reference: Topology,
    device_classes: Mapping[str, Sequence[str]],
    api_version: str | None = None,
    kubernetes_version: str | None = None,
    child_range: str | None = None,
) -> bool:
    """Whether the claim can never be allocated on a node of ``shape`` because of the shape alone, known
    without that shape's topology: on a node of ``reference`` some request finds devices, and on the same
    node publishing ``shape`` as ``oke.dra.net/shape`` it finds none (a selector that pins the claim to
    another shape). The scheduler never places the claim there (the DRA plugin's Filter), so such a pool
    says nothing about it. False when that cannot be told (an invalid claim, a CEL error)."""
    try:
        spec = parse_claim(claim, api_version=api_version, kubernetes_version=kubernetes_version)
        inventory = shape_inventory(reference, child_range) if child_range else shape_inventory(reference)
        own = ClaimToAllocate(spec, inventory.devices(), device_classes)
        there = ClaimToAllocate(spec, _as_shape(reference, shape, child_range), device_classes)
    except (ClaimValidationError, SelectorError, AllocationAbortedError):
        return False
    return any(
        any(alt.candidates for alt in mine) and not any(alt.candidates for alt in theirs)
        for mine, theirs in zip(own.requests, there.requests, strict=True)
    )


def pinned_elsewhere(
    claim: Mapping[str, Any],
    topology: Topology,
    shapes: Iterable[str],
    device_classes: Mapping[str, Sequence[str]],
    api_version: str | None = None,
    kubernetes_version: str | None = None,
    child_range: str | None = None,
) -> bool:
    """Whether the claim's selectors pin it to one of ``shapes`` (known without their topologies): on a node of
    ``topology`` some request finds no device, and on the same node publishing one of ``shapes`` as
    ``oke.dra.net/shape`` every request finds one. The scheduler's DRA Filter never places it on ``topology``'s
    nodes then (kubernetes v1.36.4 pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go l. 848-879:
    the node is unschedulable for the pod when its claims cannot all be allocated there), so that shape's verdict
    says nothing about it. False when that cannot be told (an invalid claim, a CEL error)."""
    try:
        spec = parse_claim(claim, api_version=api_version, kubernetes_version=kubernetes_version)
        inventory = shape_inventory(topology, child_range) if child_range else shape_inventory(topology)
        if _every_request_finds(ClaimToAllocate(spec, inventory.devices(), device_classes)):
            return False
        return any(
            _every_request_finds(
                ClaimToAllocate(spec, _as_shape(topology, shape, child_range), device_classes)
            )
            for shape in shapes
            if shape != topology.shape
        )
    except (ClaimValidationError, SelectorError, AllocationAbortedError):
        return False


def _every_request_finds(prepared: ClaimToAllocate) -> bool:
    """Every request (one of its firstAvailable alternatives) has a device its class and selectors accept."""
    return all(any(alt.candidates for alt in alts) for alts in prepared.requests)


def class_driver(selectors: Iterable[str]) -> str | None:
    """The driver a DeviceClass's CEL selectors require (``device.driver == "..."``), None if none."""
    for selector in selectors:
        found = _DRIVER_IS.search(selector)
        if found:
            return found.group(2)
    return None


def parse_taint(text: str) -> NodeTaint:
    """``key=value:Effect`` or ``key:Effect`` (the kubelet's ``--register-with-taints`` form)."""
    rest, _, effect = text.rpartition(":")
    key, _, value = rest.partition("=")
    return NodeTaint(key, value, effect)


def plugin_drivers(plugin: PodPlacement, device_classes: Mapping[str, Sequence[str]]) -> frozenset[str]:
    """The drivers whose devices a kubelet plugin publishes, from the classes it serves."""
    return frozenset(
        d
        for cls in plugin.provides_device_classes
        if (d := class_driver(device_classes.get(cls, ()))) is not None
    )


def drivers_on_pools(
    plugins: Sequence[PodPlacement],
    pools: Sequence[PoolNodes],
    device_classes: Mapping[str, Sequence[str]],
) -> dict[str, frozenset[str]]:
    """Pool name -> the drivers whose kubelet plugin the DaemonSet controller runs on its nodes."""
    found: dict[str, frozenset[str]] = {}
    for pool in pools:
        drivers: set[str] = set()
        for plugin in plugins:
            if not rejections(plugin, pool):
                drivers |= plugin_drivers(plugin, device_classes)
        found[pool.name] = frozenset(drivers)
    return found


def claim_lands(
    request_classes: Mapping[str, Iterable[Any]],
    device_classes: Mapping[str, Sequence[str]],
    present: frozenset[str],
    deployed: frozenset[str],
) -> bool:
    """Whether every request (one of its ``firstAvailable`` alternatives) can get devices on a pool where the
    drivers ``present`` publish them. A class whose driver is unknown, or a driver the stack does not deploy
    (``deployed``: the drivers whose placement the stack declares), may be anywhere: it does not exclude.
    """
    for classes in request_classes.values():
        drivers = [class_driver(device_classes.get(c, ())) if isinstance(c, str) else None for c in classes]
        if drivers and not any(d is None or d not in deployed or d in present for d in drivers):
            return False
    return True
