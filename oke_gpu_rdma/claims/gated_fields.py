"""What the API server of a release drops from a claim because a feature gate is off there.

kubernetes ``pkg/api/resourceclaimspec/util.go`` ``DropDisabledFields``, called by the ResourceClaim and
ResourceClaimTemplate strategies on create, drops a field whose gate is off (the fields and their gates:
:data:`~oke_gpu_rdma.claims.feature_gates.CLAIM_FIELD_GATES`). The judge reports each drop instead of
judging a claim that would not do what it says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oke_gpu_rdma.claims import feature_gates


def drop_disabled_fields(
    claim: str, spec: Mapping[str, Any], release: str, problems: list[str]
) -> Mapping[str, Any]:
    """The spec as the API server of ``release`` stores it: a field whose feature gate is off there is
    dropped on create (kubernetes pkg/api/resourceclaimspec/util.go ``DropDisabledFields``: firstAvailable
    for DRAPrioritizedList, tolerations for DRADeviceTaints, exactly.adminAccess for DRAAdminAccess,
    distinctAttribute and capacity for DRAConsumableCapacity). Upstream drops them silently; the claim
    would then not do what it says, so each drop is a problem naming the field and the gate (a request
    left with neither `exactly` nor `firstAvailable`, a constraint without `matchAttribute`, then fails
    validation as upstream's does)."""
    devices = spec.get("devices")
    disabled = feature_gates.disabled_claim_fields(release)
    if not isinstance(devices, Mapping) or not disabled:
        return spec  # nothing to drop: every gated field is served (the newer releases' common case)

    def off(field_name: str) -> str | None:
        return disabled.get(field_name)

    def dropped(where: str, field_name: str, gate: str, then: str) -> None:
        problems.append(
            f"claim {claim}: {where}: {field_name} is dropped by the API server: "
            f"{feature_gates.gate_note(gate, release)}{then}"
        )

    requests = devices.get("requests")
    new_requests: list[Any] = []
    for i, raw in enumerate(requests if isinstance(requests, list) else []):
        if not isinstance(raw, Mapping):
            new_requests.append(raw)
            continue
        request = dict(raw)
        label = f"request {request.get('name') if isinstance(request.get('name'), str) else f'#{i}'}"
        gate = off("firstAvailable")
        if gate and request.get("firstAvailable"):
            dropped(label, "firstAvailable", gate, "; the request is left without devices to ask for")
            request.pop("firstAvailable")
        exactly = request.get("exactly")
        if isinstance(exactly, Mapping):
            exactly = dict(exactly)
            for field_name in ("tolerations", "adminAccess", "capacity"):
                gate = off(field_name)
                if gate and exactly.get(field_name) is not None:
                    dropped(label, field_name, gate, "")
                    exactly.pop(field_name)
            request["exactly"] = exactly
        subs = request.get("firstAvailable")
        if isinstance(subs, list):
            new_subs: list[Any] = []
            for j, sub in enumerate(subs):
                if isinstance(sub, Mapping):
                    sub = dict(sub)
                    sname = sub.get("name") if isinstance(sub.get("name"), str) else f"#{j}"
                    for field_name in ("tolerations", "capacity"):
                        gate = off(field_name)
                        if gate and sub.get(field_name) is not None:
                            dropped(f"{label}/{sname}", field_name, gate, "")
                            sub.pop(field_name)
                new_subs.append(sub)
            request["firstAvailable"] = new_subs
        new_requests.append(request)
    constraints = devices.get("constraints")
    new_constraints: list[Any] = []
    for i, raw in enumerate(constraints if isinstance(constraints, list) else []):
        gate = off("distinctAttribute")
        if gate and isinstance(raw, Mapping) and raw.get("distinctAttribute") is not None:
            then = "" if raw.get("matchAttribute") else "; the constraint is left without an attribute"
            dropped(f"constraint #{i}", "distinctAttribute", gate, then)
            raw = {k: v for k, v in raw.items() if k != "distinctAttribute"}
        new_constraints.append(raw)
    new_devices = dict(devices)
    if isinstance(requests, list):
        new_devices["requests"] = new_requests
    if isinstance(constraints, list):
        new_devices["constraints"] = new_constraints
    return {**spec, "devices": new_devices}
