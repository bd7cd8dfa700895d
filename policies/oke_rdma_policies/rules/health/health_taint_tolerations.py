"""health-taint-tolerations (resource): no ResourceClaim or ResourceClaimTemplate tolerates a health taint.

A bad GPU or rail is taken out of scheduling by a NoSchedule device taint: the GPU DRA driver's own
(gpu.nvidia.com/xid, gpu-lost, unmonitored; kubernetes-sigs/dra-driver-nvidia-gpu
cmd/gpu-kubelet-plugin/device_health.go) or the rail health agent's oke-gpu-rdma/rail-unhealthy
(:mod:`oke_gpu_rdma.health.health_marks`). A request that tolerates one of those keys, or every taint (operator Exists with
no key), is handed the bad device again. The tolerations are read where the scheduler reads them
(resource.k8s.io/v1: ``spec.devices.requests[].exactly.tolerations`` and
``requests[].firstAvailable[].tolerations``; v1beta1 ``requests[].tolerations``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from oke_gpu_rdma.health import health_marks as health
from oke_rdma_policies.kube import PlainResource, resource_claim_spec_v1
from oke_rdma_policies.registry import resource_rule
from oke_rdma_policies.report import Reporter
from oke_rdma_policies.stack import claim_validation
from oke_rdma_policies.values import UNKNOWN

FIX = (
    "a bad device stays out of new claims only while no claim tolerates its taint (effect NoSchedule: pods "
    "already holding it keep running). Fix: remove the toleration; to use a marked device on purpose (a "
    "diagnostic), create a claim for it by hand outside the stack"
)


def _tolerations(spec: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    devices = spec.get("devices")
    requests = devices.get("requests") if isinstance(devices, Mapping) else None
    if not isinstance(requests, list):
        return
    for i, request in enumerate(requests):
        if not isinstance(request, Mapping):
            continue
        where = f"spec.devices.requests[{i}]"
        exactly = request.get("exactly")
        if isinstance(exactly, Mapping):
            yield f"{where}.exactly.tolerations", exactly.get("tolerations")
        for j, sub in enumerate(request.get("firstAvailable") or []):
            if isinstance(sub, Mapping):
                yield f"{where}.firstAvailable[{j}].tolerations", sub.get("tolerations")


def check(res: PlainResource, reporter: Reporter) -> None:
    spec = resource_claim_spec_v1(res)
    if spec is UNKNOWN:
        reporter.unchecked(f"{res.label}: spec unknown until apply")
        return
    if not isinstance(spec, Mapping):
        return
    prefix = "spec." if res.kind == "ResourceClaimTemplate" else ""
    for where, tolerations in _tolerations(spec):
        if tolerations is UNKNOWN:
            reporter.unchecked(f"{res.label}: {prefix}{where} unknown until apply")
            continue
        if not isinstance(tolerations, list):
            continue
        for k, toleration in enumerate(tolerations):
            if toleration is UNKNOWN:
                reporter.unchecked(f"{res.label}: {prefix}{where}[{k}] unknown until apply")
                continue
            if not isinstance(toleration, Mapping):
                continue
            if any(v is UNKNOWN for v in toleration.values()):
                reporter.unchecked(f"{res.label}: {prefix}{where}[{k}] unknown until apply")
                continue
            key = health.tolerates_health_taint(toleration)
            if key is None:
                continue
            reporter.violation(
                f"{res.label}: {prefix}{where}[{k}] tolerates the health taint {key}, so a GPU or rail marked "
                f"bad ({', '.join(health.HEALTH_TAINT_KEYS)}) is given to this claim again: {FIX}",
                res.urn,
            )


RULE = resource_rule(
    name="health-taint-tolerations",
    level="mandatory",
    description=(
        "No ResourceClaim or ResourceClaimTemplate tolerates a health taint (oke-gpu-rdma/rail-unhealthy, the GPU "
        "DRA driver's gpu.nvidia.com/xid, gpu-lost, unmonitored, or every taint with operator Exists and no key)."
    ),
    validate=claim_validation(check),
)
