"""What the scheduled fabric check (components/health/fabric_checks.py, components/health/scripts/fabric-check.sh) needs to
know that is not Pulumi: how it marks what it finds, and which API it marks rails with at a Kubernetes version.

Rails: `DeviceTaintRule` is served from resource.k8s.io/v1 from Kubernetes 1.37 (GA; in 1.36 only
v1beta2, off by default with the DRADeviceTaintRules gate, kubernetes PR #137170, which OKE's managed control
plane cannot turn on). Below 1.37 the check taints the node instead: whole-node, honestly.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final, Literal

from oke_gpu_rdma.monitoring.rules import FABRIC_CHECK_CONDITION, FABRIC_CHECK_TAINT_VALUE

DEVICE_TAINT_RULE_V1_MINOR: Final = 37
TaintMode = Literal["node", "device"]
# The node annotation listing the rails the last check measured below the threshold (node mode).
RAILS_ANNOTATION: Final = "oke-gpu-rdma/fabric-check-rails"
# Labels the check's MPIJobs (and DeviceTaintRules, by node) carry.
RUN_LABEL: Final = "oke-gpu-rdma/fabric-check-run"
RULE_NODE_LABEL: Final = "oke-gpu-rdma/fabric-check-node"
CONDITION: Final = FABRIC_CHECK_CONDITION
TAINT_VALUE: Final = FABRIC_CHECK_TAINT_VALUE
# The check's own copies of the claim templates its jobs use (device mode), named with this prefix.
CLAIM_PREFIX: Final = "fabric-check-"


def taint_mode(kubernetes_minor: int) -> TaintMode:
    """How the check marks a rail on a cluster of this minor: a DeviceTaintRule where v1 serves it."""
    return "device" if kubernetes_minor >= DEVICE_TAINT_RULE_V1_MINOR else "node"


def own_mark_toleration(key: str) -> dict[str, str]:
    """The one device taint the check's own claims tolerate: its own mark (``key``=TAINT_VALUE:NoSchedule).

    A DeviceTaintRule keeps the allocator from giving a tainted device to a claim that does not tolerate it
    (KEP-5055; DeviceToleration in resource.k8s.io/v1 ExactDeviceRequest and DeviceSubRequest). The rail job
    claims every rail of a node, so once the check marked one, the same claim could never be allocated on that
    node again and the rail never re-measured, nor its mark lifted. The rail agent's mark (another value) and
    the GPU driver's stay untolerated: a rail the agent marked bad is not the check's to judge.
    """
    return {"key": key, "operator": "Equal", "value": TAINT_VALUE, "effect": "NoSchedule"}


def tolerating_claim_spec(spec: Mapping[str, Any], key: str) -> dict[str, Any]:
    """A ResourceClaimSpec (Kubernetes JSON) whose every device request, and every ``firstAvailable``
    subrequest, also tolerates the check's own mark; nothing else changes."""
    out: dict[str, Any] = copy.deepcopy(dict(spec))
    toleration = own_mark_toleration(key)
    for request in out.get("devices", {}).get("requests", []):
        for target in ([request["exactly"]] if "exactly" in request else []) + request.get(
            "firstAvailable", []
        ):
            target["tolerations"] = [*target.get("tolerations", []), toleration]
    return out
