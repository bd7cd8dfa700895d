"""ResourceClaim specs: unwrap, default, validate and parse them like the API server does, per version.

Input is the Kubernetes JSON form (camelCase) as written: a ResourceClaimSpec ``{"devices": {...}}``, a
ResourceClaim (``spec``) or a ResourceClaimTemplate (``spec.spec``), in ``resource.k8s.io/v1``,
``v1beta2`` or ``v1beta1`` (the ``api_version`` argument, else the object's ``apiVersion``, else v1).
v1 and v1beta2 put a request's device fields under ``exactly``; v1beta1 puts them on the request itself
and has no ``exactly`` field, so a v1beta1 claim written with ``exactly`` is rejected at admission.
:func:`claim_spec_to_v1` converts a spec to the v1 form (what the conversion in
``pkg/apis/resource/v1beta1/conversion.go`` does via the internal type).

Defaulting (``pkg/apis/resource/v1/defaults.go``, ``v1beta2/defaults.go``, ``v1beta1/defaults.go``):
``allocationMode`` defaults to ExactCount and an ExactCount request with ``count`` 0 or unset gets 1
(in v1beta1 only when ``deviceClassName`` is set). Validation (``pkg/apis/resource/validation/
validation.go``): at most 32 requests, 32 constraints, 32 config entries, 32 selectors per request and
8 subrequests; request names are DNS labels and unique; each request has exactly one of ``exactly`` and
``firstAvailable``; a device class name is required (DNS subdomain); ExactCount needs ``count`` > 0
after defaulting, All no ``count``; a CEL expression is at most 10 Ki characters and must compile and
type-check to bool (``validateCELExpression`` -> ``dynamic-resource-allocation/cel/compile.go``); a
constraint needs ``matchAttribute``, a fully qualified name ``domain/name``, and its ``requests`` must
name requests (or ``request/subrequest``) of the claim. Every problem gets one message naming the request
or constraint.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from oke_gpu_rdma.claims import feature_gates
from oke_gpu_rdma.claims.device_cel import compile_selector
from oke_gpu_rdma.errors import ClaimValidationError, SelectorError

MAX_REQUESTS = 32
MAX_CONSTRAINTS = 32
MAX_CONFIG = 32
MAX_SELECTORS = 32
MAX_SUBREQUESTS = 8
MAX_CEL_LENGTH = 10 * 1024
MAX_DEVICES_PER_CLAIM = 32  # AllocationResultsMaxSize, enforced by the allocator

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

AllocationMode = Literal["ExactCount", "All"]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class DeviceSelection:
    """What one request (``exactly``) or one subrequest asks for. ``name`` is ``req`` or ``req/sub``."""

    name: str
    device_class: str
    selectors: tuple[str, ...]
    mode: AllocationMode
    count: int  # 0 for All

    @property
    def request(self) -> str:
        return self.name.split("/")[0]

    @property
    def subrequest(self) -> str | None:
        return self.name.split("/")[1] if "/" in self.name else None


@dataclass(frozen=True)
class DeviceRequest:
    """A request: one selection for ``exactly``, the alternatives in order for ``firstAvailable``."""

    name: str
    alternatives: tuple[DeviceSelection, ...]
    first_available: bool = False


@dataclass(frozen=True)
class MatchAttribute:
    """A matchAttribute constraint; empty ``requests`` means all requests of the claim."""

    index: int
    requests: tuple[str, ...]
    attribute: str

    def applies_to(self, selection: DeviceSelection) -> bool:
        return not self.requests or selection.request in self.requests or selection.name in self.requests

    @property
    def label(self) -> str:
        target = "[" + ", ".join(self.requests) + "]" if self.requests else "all requests"
        return f"constraint #{self.index} ({target}, matchAttribute {self.attribute})"


@dataclass(frozen=True)
class ClaimSpec:
    """A validated claim spec. ``unevaluated`` names selectors that are valid but use a Kubernetes CEL
    function this model does not evaluate (see :mod:`oke_gpu_rdma.claims.device_cel`)."""

    name: str
    requests: tuple[DeviceRequest, ...]
    constraints: tuple[MatchAttribute, ...]
    api_version: str = API_V1
    unevaluated: tuple[str, ...] = ()
    distinct: tuple[MatchAttribute, ...] = ()
    """distinctAttribute constraints (served where DRAConsumableCapacity is on): the devices of their
    requests must all have the attribute, each with a value no other of them has."""

    @property
    def request_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.requests)


def unwrap_claim(obj: Mapping[str, Any], name: str | None = None) -> tuple[str, Mapping[str, Any]]:
    """The claim name and its ResourceClaimSpec from a spec, a ResourceClaim or a template."""
    if not isinstance(obj, Mapping):
        raise ClaimValidationError([f"claim: expected a mapping, got {type(obj).__name__}"])
    meta = obj.get("metadata")
    found = meta.get("name") if isinstance(meta, Mapping) else None
    claim_name = name or (found if isinstance(found, str) else None) or "claim"
    spec: Any = obj
    if "devices" not in obj and "spec" in obj:
        spec = obj["spec"]
        if isinstance(spec, Mapping) and "devices" not in spec and "spec" in spec:
            spec = spec["spec"]  # ResourceClaimTemplate: spec.spec
    if not isinstance(spec, Mapping):
        raise ClaimValidationError([f"claim {claim_name}: spec must be a mapping"])
    return claim_name, spec


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


def parse_claim(
    obj: Mapping[str, Any],
    name: str | None = None,
    api_version: str | None = None,
    kubernetes_version: str | None = None,
) -> ClaimSpec:
    """Default, validate and parse as the API server of ``kubernetes_version`` (default
    :data:`~oke_gpu_rdma.claims.feature_gates.DEFAULT_KUBERNETES_VERSION`) does for ``api_version`` (see the
    module docstring); :class:`ClaimValidationError` lists every problem."""
    version = resolve_api_version(obj, api_version)
    claim_name, spec = unwrap_claim(obj, name)
    problems: list[str] = []
    unevaluated: list[str] = []
    if version == API_V1BETA1:
        spec = _v1beta1_spec(claim_name, spec, problems)
    release = kubernetes_version or feature_gates.DEFAULT_KUBERNETES_VERSION
    try:
        feature_gates.release(release)
    except feature_gates.KubernetesVersionError as err:
        raise ClaimValidationError([str(err)]) from None
    spec = _drop_disabled_fields(claim_name, spec, release, problems)
    parsed = _parse_spec(claim_name, spec, problems, unevaluated, release)
    if problems:
        raise ClaimValidationError(problems)
    return ClaimSpec(
        parsed.name, parsed.requests, parsed.constraints, version, tuple(unevaluated), parsed.distinct
    )


def claim_spec_to_v1(spec: Mapping[str, Any], api_version: str) -> dict[str, Any]:
    """A ResourceClaimSpec of ``api_version`` in the v1 form (v1beta2 has the v1 form already).

    v1beta1 -> v1 as ``pkg/apis/resource/v1beta1/conversion.go`` does: a request with a
    ``deviceClassName`` gets its device fields under ``exactly``; ``firstAvailable`` stays. A v1beta1
    request that already has ``exactly`` (invalid in v1beta1) is left as is; :func:`parse_claim` with
    ``api_version`` reports it.
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


def request_classes(spec: Any, unknown: object = None) -> dict[str, set[Any]]:
    """Request name -> the DeviceClass names it can use: its ``exactly`` class, or each ``firstAvailable``
    subrequest's (any one of them serves the request), for a spec in the v1 form (:func:`claim_spec_to_v1`).

    Read the same way by the policy pack and the preview's schedulability check. A class of the wrong type
    is None here (the claim's validation names the field); ``unknown`` (the pack's sentinel for a value
    unknown during preview) stays as it is.
    """
    found: dict[str, set[Any]] = {}
    if not isinstance(spec, Mapping):
        return found
    devices = spec.get("devices")
    if not isinstance(devices, Mapping) or not isinstance(devices.get("requests"), list):
        return found
    for request in devices["requests"]:
        if not isinstance(request, Mapping):
            continue
        classes: set[Any] = set()
        exactly = request.get("exactly")
        if isinstance(exactly, Mapping):
            classes.add(_class_name(exactly.get("deviceClassName"), unknown))
        subs = request.get("firstAvailable")
        if isinstance(subs, list):
            for sub in subs:
                if isinstance(sub, Mapping):
                    classes.add(_class_name(sub.get("deviceClassName"), unknown))
        found[str(request.get("name"))] = classes
    return found


def admin_access_requests(spec: Any) -> list[str]:
    """Requests of a spec in the v1 form that ask for admin access (`exactly.adminAccess: true`; a
    subrequest has no such field)."""
    found: list[str] = []
    devices = spec.get("devices") if isinstance(spec, Mapping) else None
    requests = devices.get("requests") if isinstance(devices, Mapping) else None
    for i, request in enumerate(requests if isinstance(requests, list) else []):
        exactly = request.get("exactly") if isinstance(request, Mapping) else None
        if isinstance(exactly, Mapping) and exactly.get("adminAccess") is True:
            name = request.get("name")
            found.append(name if isinstance(name, str) else f"#{i}")
    return found


def _class_name(value: Any, unknown: object) -> Any:
    """A DeviceClass name (a string) or ``unknown``; None for anything else."""
    return value if isinstance(value, str) or (unknown is not None and value is unknown) else None


# pkg/apis/resource/validation/validation.go (tag v1.36.0): the operators and effects of a DeviceToleration.
TOLERATION_OPERATORS = ("Equal", "Exists")
TOLERATION_EFFECTS = ("NoSchedule", "NoExecute")
# `None` (a taint that only informs) joined the effects with the DeviceTaintRule status in v1.35.
TOLERATION_EFFECT_NONE = "None"
TOLERATION_EFFECT_NONE_SINCE = (1, 35)
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _label_name_problems(key: str) -> list[str]:
    """apimachinery validation ``IsQualifiedName`` (metav1validation.ValidateLabelName): an optional DNS
    subdomain prefix of at most 253 characters and `/`, then a name of at most 63 characters, alphanumeric
    at both ends, with `-`, `_`, `.` inside."""
    prefix, sep, name = key.rpartition("/")
    found = []
    if sep and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        found.append("its prefix must be a DNS subdomain (lower case) of at most 253 characters")
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        found.append(
            "its name must be at most 63 characters, alphanumeric at both ends, with '-', '_' or '.' inside"
        )
    return found


def toleration_problems(raw: Any, where: str, release: str) -> list[str]:
    """A DeviceToleration as kube-apiserver of ``release`` validates it (validation.go
    ``validateDeviceToleration``): `key` (optional) a qualified name; `operator` Equal (the v1 default when
    unset) with a label value as `value`, or Exists with no `value`; `effect` optional, else NoSchedule or
    NoExecute (and None from v1.35); `tolerationSeconds` an integer."""
    if not isinstance(raw, Mapping):
        return [f"{where}: must be a mapping"]
    found: list[str] = []
    key = raw.get("key")
    if key is not None and not isinstance(key, str):
        found.append(f"{where}: key must be a string")
    elif key:
        found += [f"{where}: key {key!r}: {p}" for p in _label_name_problems(key)]
    operator = raw.get("operator") or "Equal"  # k8s.io/api/resource/v1 types.go: +default="Equal"
    value = raw.get("value") or ""
    if not isinstance(value, str):
        found.append(f"{where}: value must be a string")
    elif operator == "Exists":
        if value:
            found.append(f"{where}: value {value!r}: must be empty for operator `Exists`")
    elif operator == "Equal":
        if len(value) > 63 or not _LABEL_VALUE.match(value):
            found.append(
                f"{where}: value {value!r}: a label value must be at most 63 characters, empty or "
                "alphanumeric at both ends with '-', '_' or '.' inside"
            )
    else:
        found.append(
            f"{where}: operator {operator!r}: Unsupported value; supported values: "
            + ", ".join(f'"{o}"' for o in TOLERATION_OPERATORS)
        )
    effect = raw.get("effect") or ""
    effects = list(TOLERATION_EFFECTS)
    if feature_gates.release(release) >= TOLERATION_EFFECT_NONE_SINCE:
        effects.append(TOLERATION_EFFECT_NONE)
    if effect and effect not in effects:
        found.append(
            f"{where}: effect {effect!r}: Unsupported value; supported values: "
            + ", ".join(f'"{e}"' for e in sorted(effects))
        )
    seconds = raw.get("tolerationSeconds")
    if seconds is not None and not _is_int(seconds):
        found.append(f"{where}: tolerationSeconds must be an integer (got {seconds!r})")
    return found


def _drop_disabled_fields(
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
    if not isinstance(devices, Mapping):
        return spec

    def off(field_name: str) -> str | None:
        gate = feature_gates.CLAIM_FIELD_GATES[field_name]
        return None if feature_gates.enabled(gate, release) else gate

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


def _v1beta1_spec(claim: str, spec: Mapping[str, Any], problems: list[str]) -> Mapping[str, Any]:
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


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _list(value: Any, where: str, problems: list[str]) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append(f"{where} must be a list")
        return []
    return value


def _check_label(value: Any, where: str, problems: list[str]) -> str:
    if not isinstance(value, str) or not value:
        problems.append(f"{where}: name is required")
        return ""
    if len(value) > 63 or not _DNS_LABEL.match(value):
        problems.append(
            f"{where}: name {value!r} must be a DNS label (lower-case letters, digits and '-', at most 63)"
        )
    return value


def _parse_spec(
    claim: str,
    spec: Mapping[str, Any],
    problems: list[str],
    unevaluated: list[str],
    release: str = feature_gates.DEFAULT_KUBERNETES_VERSION,
) -> ClaimSpec:
    devices = spec.get("devices", {})
    if not isinstance(devices, Mapping):
        problems.append(f"claim {claim}: spec.devices must be a mapping")
        return ClaimSpec(claim, (), ())
    raw_requests = _list(devices.get("requests"), f"claim {claim}: devices.requests", problems)
    if len(raw_requests) > MAX_REQUESTS:
        problems.append(f"claim {claim}: {len(raw_requests)} requests; the limit is {MAX_REQUESTS}")
    requests: list[DeviceRequest] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_requests):
        req = _parse_request(claim, i, raw, problems, unevaluated, release)
        if req is None:
            continue
        if req.name in seen:
            problems.append(f"claim {claim}: request {req.name}: duplicate request name")
        seen.add(req.name)
        requests.append(req)
    names = {r.name: {a.subrequest for a in r.alternatives if a.subrequest} for r in requests}

    raw_constraints = _list(devices.get("constraints"), f"claim {claim}: devices.constraints", problems)
    if len(raw_constraints) > MAX_CONSTRAINTS:
        problems.append(f"claim {claim}: {len(raw_constraints)} constraints; the limit is {MAX_CONSTRAINTS}")
    constraints: list[MatchAttribute] = []
    distinct: list[MatchAttribute] = []
    for i, raw in enumerate(raw_constraints):
        c = _parse_constraint(claim, i, raw, names, problems, distinct)
        if c is not None:
            constraints.append(c)

    raw_config = _list(devices.get("config"), f"claim {claim}: devices.config", problems)
    if len(raw_config) > MAX_CONFIG:
        problems.append(f"claim {claim}: {len(raw_config)} config entries; the limit is {MAX_CONFIG}")
    for i, raw in enumerate(raw_config):
        where = f"claim {claim}: config #{i}"
        if not isinstance(raw, Mapping):
            problems.append(f"{where} must be a mapping")
            continue
        for ref in _list(raw.get("requests"), f"{where}: requests", problems):
            _check_ref(ref, where, names, problems)
        if not isinstance(raw.get("opaque"), Mapping):
            problems.append(f"{where}: opaque is required (driver and parameters)")
    return ClaimSpec(claim, tuple(requests), tuple(constraints), distinct=tuple(distinct))


def _parse_request(
    claim: str,
    i: int,
    raw: Any,
    problems: list[str],
    unevaluated: list[str],
    release: str = feature_gates.DEFAULT_KUBERNETES_VERSION,
) -> DeviceRequest | None:
    if not isinstance(raw, Mapping):
        problems.append(f"claim {claim}: request #{i} must be a mapping")
        return None
    name = _check_label(raw.get("name"), f"claim {claim}: request #{i}", problems) or f"#{i}"
    where = f"claim {claim}: request {name}"
    exactly, first = raw.get("exactly"), raw.get("firstAvailable")
    legacy = [k for k in ("deviceClassName", "selectors", "count", "allocationMode") if k in raw]
    if legacy:
        problems.append(
            f"{where}: {', '.join(legacy)} belong under 'exactly' in resource.k8s.io/v1 and v1beta2 "
            "(only v1beta1 puts them on the request)"
        )
    if exactly is not None and first:
        problems.append(
            f"{where}: exactly one of `exactly` or `firstAvailable` is required, but both are set"
        )
        return None
    if exactly is None and not first:
        problems.append(f"{where}: exactly one of `exactly` or `firstAvailable` is required")
        return None
    if exactly is not None:
        sel = _parse_selection(name, exactly, where, problems, unevaluated, release)
        return DeviceRequest(name, (sel,) if sel else ())
    subs = _list(first, f"{where}: firstAvailable", problems)
    if len(subs) > MAX_SUBREQUESTS:
        problems.append(f"{where}: {len(subs)} subrequests in firstAvailable; the limit is {MAX_SUBREQUESTS}")
    alternatives: list[DeviceSelection] = []
    seen: set[str] = set()
    for j, sub in enumerate(subs):
        if not isinstance(sub, Mapping):
            problems.append(f"{where}: subrequest #{j} must be a mapping")
            continue
        sname = _check_label(sub.get("name"), f"{where}: subrequest #{j}", problems) or f"#{j}"
        if sname in seen:
            problems.append(f"{where}: subrequest {sname}: duplicate subrequest name")
        seen.add(sname)
        sel = _parse_selection(f"{name}/{sname}", sub, f"{where}/{sname}", problems, unevaluated, release)
        if sel:
            alternatives.append(sel)
    return DeviceRequest(name, tuple(alternatives), first_available=True)


def _parse_selection(
    full: str,
    raw: Any,
    where: str,
    problems: list[str],
    unevaluated: list[str],
    release: str = feature_gates.DEFAULT_KUBERNETES_VERSION,
) -> DeviceSelection | None:
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: must be a mapping")
        return None
    for k, toleration in enumerate(_list(raw.get("tolerations"), f"{where}: tolerations", problems)):
        problems.extend(toleration_problems(toleration, f"{where}: tolerations[{k}]", release))
    if raw.get("capacity") is not None:
        # Kept only where DRAConsumableCapacity is on (_drop_disabled_fields); the published devices of this
        # model declare no consumable capacity, so how such a request allocates is not modelled.
        unevaluated.append(
            f"{where}: capacity requests (DRAConsumableCapacity) are not allocated by this model"
        )
    cls = raw.get("deviceClassName")
    if not isinstance(cls, str) or not cls:
        problems.append(f"{where}: deviceClassName is required")
        cls = ""
    elif len(cls) > 253 or not _DNS_SUBDOMAIN.match(cls):
        problems.append(f"{where}: deviceClassName {cls!r} must be a DNS subdomain")
    selectors: list[str] = []
    raw_selectors = _list(raw.get("selectors"), f"{where}: selectors", problems)
    if len(raw_selectors) > MAX_SELECTORS:
        problems.append(f"{where}: {len(raw_selectors)} selectors; the limit is {MAX_SELECTORS}")
    for k, s in enumerate(raw_selectors):
        cel_part = s.get("cel") if isinstance(s, Mapping) else None
        expr = cel_part.get("expression") if isinstance(cel_part, Mapping) else None
        if not isinstance(expr, str) or not expr:
            problems.append(f"{where}: selector #{k}: cel.expression is required")
            continue
        if len(expr) > MAX_CEL_LENGTH:
            problems.append(
                f"{where}: selector #{k}: CEL expression is {len(expr)} characters; "
                f"the limit is {MAX_CEL_LENGTH} (10 Ki)"
            )
            continue
        try:
            compiled = compile_selector(expr)
        except SelectorError as exc:
            problems.append(f"{where}: selector #{k}: {exc}")
            continue
        if compiled.unsupported:
            unevaluated.append(f"{where}: selector #{k} uses {compiled.unsupported}")
        selectors.append(expr)
    mode = raw.get("allocationMode") or "ExactCount"  # defaults.go: "" -> ExactCount
    count = raw.get("count")
    if count is not None and not _is_int(count):
        problems.append(f"{where}: count must be an integer (got {count!r})")
        return None
    if mode == "All":
        # validation.go validateDeviceAllocationMode: count must not be set (0 is the unset value).
        if count:
            problems.append(
                f"{where}: count must not be specified when allocationMode is 'All' (got {count!r})"
            )
        return DeviceSelection(full, cls, tuple(selectors), "All", 0)
    if mode != "ExactCount":
        problems.append(f"{where}: allocationMode {mode!r} is not supported; use ExactCount or All")
        return None
    if not count:
        count = 1  # defaults.go SetDefaults_ExactDeviceRequest / SetDefaults_DeviceSubRequest
    if count < 0:
        problems.append(f"{where}: count must be greater than zero (got {count!r})")
        return None
    return DeviceSelection(full, cls, tuple(selectors), "ExactCount", count)


def _check_ref(ref: Any, where: str, names: Mapping[str, set[str]], problems: list[str]) -> None:
    if not isinstance(ref, str):
        problems.append(f"{where}: request reference {ref!r} must be a string")
        return
    parts = ref.split("/")
    ok = len(parts) <= 2 and parts[0] in names and (len(parts) == 1 or parts[1] in names[parts[0]])
    if not ok:
        known = ", ".join(names) or "none"
        problems.append(
            f"{where}: {ref!r} must be the name of a request in the claim or request/subrequest "
            f"(requests: {known})"
        )


def _parse_constraint(
    claim: str,
    i: int,
    raw: Any,
    names: Mapping[str, set[str]],
    problems: list[str],
    distinct: list[MatchAttribute] | None = None,
) -> MatchAttribute | None:
    """A `matchAttribute` constraint, validated as validation.go ``validateDeviceConstraint`` does. A
    `distinctAttribute` one (kept only where DRAConsumableCapacity is on: :func:`_drop_disabled_fields`) is
    validated the same way and added to ``distinct``."""
    where = f"claim {claim}: constraint #{i}"
    if not isinstance(raw, Mapping):
        problems.append(f"{where} must be a mapping")
        return None
    refs = _list(raw.get("requests"), f"{where}: requests", problems)
    if len(set(map(str, refs))) != len(refs):
        problems.append(f"{where}: requests lists a request twice")
    for ref in refs:
        _check_ref(ref, where, names, problems)
    attribute = raw.get("matchAttribute")
    distinct_attribute = raw.get("distinctAttribute")
    if distinct_attribute is not None:
        if attribute is not None:
            problems.append(
                f"{where}: exactly one of matchAttribute or distinctAttribute may be set, not both"
            )
            return None
        if _qualified("distinctAttribute", distinct_attribute, where, problems) and distinct is not None:
            distinct.append(MatchAttribute(i, tuple(str(r) for r in refs), str(distinct_attribute)))
        return None
    if not isinstance(attribute, str) or not attribute:
        problems.append(f"{where}: matchAttribute is required")
        return None
    if not _qualified("matchAttribute", attribute, where, problems):
        return None
    return MatchAttribute(i, tuple(str(r) for r in refs), attribute)


def _qualified(field_name: str, attribute: Any, where: str, problems: list[str]) -> bool:
    """validation.go ``validateFullyQualifiedName``: `domain/name`; False when it is not even that."""
    if not isinstance(attribute, str) or not attribute:
        problems.append(f"{where}: {field_name} is required")
        return False
    domain, sep, ident = attribute.partition("/")
    if not sep:
        problems.append(
            f"{where}: {field_name} {attribute!r} must be fully qualified as domain/name, "
            f"e.g. resource.kubernetes.io/{attribute}"
        )
        return False
    # The domain is checked as a driver name: kubernetes pkg/apis/resource/validation/validation.go
    # validateFullyQualifiedName -> validateDriverName = corevalidation.ValidateCSIDriverName
    # (pkg/apis/core/validation/validation.go), which checks IsDNS1123Subdomain(strings.ToLower(name)).
    # So `Resource.kubernetes.io/pcieRoot` is valid; attribute lookup is case-sensitive, so it names
    # no attribute and the claim is unsatisfiable instead.
    if not domain or len(domain) > 63 or not _DNS_SUBDOMAIN.match(domain.lower()):
        problems.append(
            f"{where}: {field_name} {attribute!r}: domain {domain!r} must be a DNS subdomain "
            "of at most 63 characters"
        )
    if not ident or len(ident) > 32 or not _C_IDENTIFIER.match(ident):
        problems.append(
            f"{where}: {field_name} {attribute!r}: name {ident!r} must be a C identifier "
            "of at most 32 characters"
        )
    return True
