"""Pods that hold a claim, scheduled by the real scheduler, and what the allocator gave them.

A pod here never runs (no kubelet): it is bound (spec.nodeName) or the scheduler says why not (PodScheduled
False). Its claim's allocation is read back from the ResourceClaim's status and each device looked up in the
node's ResourceSlices, so checks see the attributes the drivers publish, not this project's model.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from oke_gpu_rdma.drivers import dranet, nvidia_gpu
from oke_gpu_rdma.nodes import labels
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from oke_gpu_rdma.nodes.topology import Topology
from tests.e2e.kube import Kube

RESOURCE_API = "resource.k8s.io/v1"
# What Pod Security "restricted" asks of a container (pod-security-admission policy checks), so the pods fit
# any namespace the stack labels.
RESTRICTED = {
    "runAsNonRoot": True,
    "runAsUser": 65532,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def claim_pod(
    name: str,
    namespace: str,
    node: str | None,
    claim: Mapping[str, str],
    tolerations: Iterable[Mapping[str, str]] = (),
    node_selector: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A pod with one claim (``claim``: {"resourceClaimTemplateName": ...} or {"resourceClaimName": ...}),
    pinned to ``node`` by its hostname label (the scheduler still decides), tolerating ``tolerations``."""
    selector = dict(node_selector or {})
    if node:
        selector[labels.HOSTNAME_LABEL] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "nodeSelector": selector,
            "tolerations": [dict(t) | {"operator": "Equal"} for t in tolerations],
            "resourceClaims": [{"name": "devices", **claim}],
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"claims": [{"name": "devices"}]},
                    "securityContext": RESTRICTED,
                }
            ],
        },
    }


@dataclass(frozen=True)
class Scheduled:
    pod: str
    node: str | None
    message: str
    devices: tuple[dict[str, Any], ...]
    """Allocated devices: driver, pool, device, request, and the device's published attributes."""


def scheduled(pod: Mapping[str, Any]) -> tuple[str | None, str]:
    """(node, the scheduler's message) once the scheduler has tried the pod: bound, or PodScheduled False
    (Unschedulable, or an error such as the DynamicResources filter's timeout); (None, "") before (not tried
    yet, or held by a scheduling gate: reason SchedulingGated)."""
    conditions = pod["status"].get("conditions") or ()
    condition: Mapping[str, Any] = next((c for c in conditions if c["type"] == "PodScheduled"), {})
    if pod["spec"].get("nodeName"):
        return str(pod["spec"]["nodeName"]), ""
    if condition.get("status") == "False" and condition.get("reason") != "SchedulingGated":
        return None, str(condition.get("message", ""))
    return None, ""


def wait_scheduled(
    kube: Kube, namespace: str, names: Iterable[str], timeout: float = 60
) -> dict[str, Scheduled]:
    """Each pod's outcome once the scheduler has tried it: bound with its claim's devices, or not with the
    scheduler's message."""
    pending = set(names)
    done: dict[str, Scheduled] = {}
    published: dict[tuple[str, str, str], Any] = {}
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for pod in kube.list("v1", "Pod", namespace):
            name = pod["metadata"]["name"]
            if name not in pending:
                continue
            node, message = scheduled(pod)
            if node:
                if not published:
                    published = _published(kube)
                done[name] = Scheduled(name, node, "", _devices(kube, pod, published))
                pending.discard(name)
            elif message:
                done[name] = Scheduled(name, None, message, ())
                pending.discard(name)
        if pending:
            time.sleep(0.3)
    if pending:
        raise AssertionError(f"the scheduler has not tried {sorted(pending)} after {timeout:.0f} s")
    return done


def _claim_name(pod: Mapping[str, Any]) -> str | None:
    for status in pod["status"].get("resourceClaimStatuses") or ():
        return str(status.get("resourceClaimName"))
    for claim in pod["spec"].get("resourceClaims") or ():
        if claim.get("resourceClaimName"):
            return str(claim["resourceClaimName"])
    return None


def _published(kube: Kube) -> dict[tuple[str, str, str], Any]:
    """(driver, pool, device) -> the device's attributes, from every ResourceSlice (read once per wait: the
    slices do not change while pods are scheduled)."""
    return {
        (s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"]): d.get("attributes") or {}
        for s in kube.list(RESOURCE_API, "ResourceSlice")
        for d in s["spec"].get("devices") or ()
    }


def _devices(
    kube: Kube, pod: Mapping[str, Any], published: Mapping[tuple[str, str, str], Any]
) -> tuple[dict[str, Any], ...]:
    name = _claim_name(pod)
    if name is None:
        return ()
    claim = kube.get(f"/apis/{RESOURCE_API}/namespaces/{pod['metadata']['namespace']}/resourceclaims/{name}")
    results = (((claim or {}).get("status") or {}).get("allocation") or {}).get("devices", {}).get(
        "results"
    ) or ()
    return tuple(
        {**r, "attributes": published.get((r["driver"], r["pool"], r["device"]), {})} for r in results
    )


def _value(attributes: Mapping[str, Any], name: str) -> Any:
    found = attributes.get(name) or {}
    return next(iter(found.values()), None)


def alignment_groups(topology: Topology, devices: Iterable[Mapping[str, Any]]) -> tuple[set[str], set[str]]:
    """The alignment groups (PCIe roots, or NUMA nodes where the shape aligns there) of the GPUs and of the
    rails among ``devices``, found by each device's published PCI address in the shape's topology."""
    gpu_root = {g.pci_bus_id: g.root for g in topology.gpus}
    rail_root = {x.pci_address: x.root for x in topology.rails}
    gpus: set[str] = set()
    rails: set[str] = set()
    for device in devices:
        attributes = device["attributes"]
        if device["driver"] == nvidia_gpu.DRIVER:
            root = gpu_root[_value(attributes, "resource.kubernetes.io/pciBusID")]
            gpus.add(group_name(topology, root))
        elif device["driver"] == dranet.DRIVER and _value(attributes, "dra.net/rdma"):
            root = rail_root[_value(attributes, "dra.net/pciAddress")]
            rails.add(group_name(topology, root))
    return gpus, rails


def group_name(topology: Topology, root: str) -> str:
    group = topology.group_of_root(root)
    assert group is not None, f"{topology.shape} has no root {root}"
    return group.name


def topology_of(shape: str) -> Topology:
    topology = CATALOG.info(shape).topology
    assert topology is not None, f"no verified topology for {shape}"
    return topology


def delete_pods(kube: Kube, namespace: str, names: Iterable[str]) -> None:
    """Delete at once (grace period 0: no kubelet would finish a graceful delete) and wait until gone, their
    generated claims with them (the resourceclaim controller deletes those it made for the pod)."""
    names = list(names)
    for name in names:
        kube.delete(f"/api/v1/namespaces/{namespace}/pods/{name}", grace_seconds=0)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        left = {p["metadata"]["name"] for p in kube.list("v1", "Pod", namespace)} & set(names)
        if not left:
            return
        time.sleep(0.3)
    raise AssertionError(f"pods {sorted(left)} not deleted after 60 s")
