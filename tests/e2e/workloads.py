"""Kueue's Workloads as the e2e tests read them: the one a job owns, and whether Kueue admitted it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oke_gpu_rdma.scheduling import kueue_chart as kueue
from tests.e2e.kube import Kube

KUEUE_API = kueue.API_VERSION


def workload_of(kube: Kube, namespace: str, owner: str, kind: str | None = None) -> dict[str, Any] | None:
    """The Workload Kueue made for the job named ``owner`` (of ``kind``, if given): the one it owns."""
    for workload in kube.list(KUEUE_API, "Workload", namespace):
        for ref in workload["metadata"].get("ownerReferences") or ():
            if ref["name"] == owner and kind in (None, ref["kind"]):
                found: dict[str, Any] = workload
                return found
    return None


def admitted(workload: Mapping[str, Any] | None) -> bool:
    conditions = ((workload or {}).get("status") or {}).get("conditions") or ()
    return any(c["type"] == "Admitted" and c["status"] == "True" for c in conditions)
