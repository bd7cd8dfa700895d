"""The API versions a claim is written in, and the conversion of a spec to the v1 form.

``resource.k8s.io/v1``, ``v1beta2`` and ``v1beta1`` are served (the ``api_version`` argument, else the
object's ``apiVersion``, else v1). v1 and v1beta2 put a request's device fields under ``exactly``;
v1beta1 puts them on the request itself and has no ``exactly`` field, so a v1beta1 claim written with
``exactly`` is rejected at admission. :func:`claim_spec_to_v1` converts a spec to the v1 form (what the
conversion in ``pkg/apis/resource/v1beta1/conversion.go`` does via the internal type). The policy pack and
the preview read these through :mod:`oke_gpu_rdma.claims.spec`, the judge's open seam for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oke_gpu_rdma.common.errors import ClaimValidationError

API_V1 = "resource.k8s.io/v1"
API_V1BETA2 = "resource.k8s.io/v1beta2"
API_V1BETA1 = "resource.k8s.io/v1beta1"
API_VERSIONS = (API_V1, API_V1BETA2, API_V1BETA1)
# v1beta1 DeviceRequest fields that v1beta2 and v1 moved under `exactly` (ExactDeviceRequest).
V1BETA1_EXACT_FIELDS = (
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
)


def resolve_api_version(obj: Mapping[str, Any], api_version: str | None = None) -> str:
    """The API version to validate with: the argument, else the object's ``apiVersion``, else v1."""
    found = obj.get("apiVersion") if isinstance(obj, Mapping) else None
    version = api_version or (found if isinstance(found, str) else None) or API_V1
    if "/" not in version:
        version = f"resource.k8s.io/{version}"
    if version not in API_VERSIONS:
        raise ClaimValidationError(
            [f"apiVersion {version!r} is not served for claims; use one of {', '.join(API_VERSIONS)}"]
        )
    return version


def claim_spec_to_v1(spec: Mapping[str, Any], api_version: str) -> dict[str, Any]:
    """A ResourceClaimSpec of ``api_version`` in the v1 form (v1beta2 has the v1 form already).

    v1beta1 -> v1 as ``pkg/apis/resource/v1beta1/conversion.go`` does: a request with a
    ``deviceClassName`` gets its device fields under ``exactly``; ``firstAvailable`` stays. A v1beta1
    request that already has ``exactly`` (invalid in v1beta1) is left as is;
    :func:`~oke_gpu_rdma.claims.spec.parse_claim` with ``api_version`` reports it.
    """
    version = resolve_api_version({}, api_version)
    if version != API_V1BETA1:
        return dict(spec)
    devices = spec.get("devices")
    if not isinstance(devices, Mapping) or not isinstance(devices.get("requests"), list):
        return dict(spec)
    requests = []
    for request in devices["requests"]:
        if isinstance(request, Mapping) and "exactly" not in request and request.get("deviceClassName"):
            exactly = {k: request[k] for k in V1BETA1_EXACT_FIELDS if k in request}
            rest = {k: v for k, v in request.items() if k not in V1BETA1_EXACT_FIELDS}
            requests.append({**rest, "exactly": exactly})
        elif isinstance(request, Mapping) and "exactly" not in request:
            requests.append({k: v for k, v in request.items() if k not in V1BETA1_EXACT_FIELDS})
        else:
            requests.append(request)
    return {**spec, "devices": {**devices, "requests": requests}}


def v1beta1_spec(claim: str, spec: Mapping[str, Any], problems: list[str]) -> Mapping[str, Any]:
    """A v1beta1 spec in the v1 form, or no devices after a problem per request written with ``exactly``
    (unknown in v1beta1, so the API server rejects the claim)."""
    devices = spec.get("devices")
    if isinstance(devices, Mapping) and isinstance(devices.get("requests"), list):
        for i, request in enumerate(devices["requests"]):
            if isinstance(request, Mapping) and "exactly" in request:
                label = request.get("name") if isinstance(request.get("name"), str) else f"#{i}"
                problems.append(
                    f"claim {claim}: request {label}: unknown field `exactly` in resource.k8s.io/v1beta1 "
                    "(v1beta1 puts deviceClassName, selectors, allocationMode and count on the request; "
                    "`exactly` exists in v1beta2 and v1): set apiVersion resource.k8s.io/v1 or move the "
                    "fields up"
                )
    return claim_spec_to_v1(spec, API_V1BETA1) if not problems else {"devices": {}}
