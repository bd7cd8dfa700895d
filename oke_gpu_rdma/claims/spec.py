"""ResourceClaim specs: unwrap, default, validate and parse them like the API server does, per version.

Input is the Kubernetes JSON form (camelCase) as written: a ResourceClaimSpec ``{"devices": {...}}``, a
ResourceClaim (``spec``) or a ResourceClaimTemplate (``spec.spec``), in ``resource.k8s.io/v1``,
``v1beta2`` or ``v1beta1`` (the ``api_version`` argument, else the object's ``apiVersion``, else v1;
the versions and the conversion to the v1 form are :mod:`~oke_gpu_rdma.claims.api_versions`, re-exported
here, the seam code outside the judge reads them through). The fields the release's feature gates drop
are :mod:`~oke_gpu_rdma.claims.gated_fields`; the parsed spec's types :mod:`~oke_gpu_rdma.claims.spec_types`.

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
from typing import Any

from oke_gpu_rdma.claims import feature_gates
from oke_gpu_rdma.claims.api_versions import (
    API_V1,
    API_V1BETA1,
    API_V1BETA2,
    API_VERSIONS,
    claim_spec_to_v1,
    resolve_api_version,
    v1beta1_spec,
)
from oke_gpu_rdma.claims.device_cel import compile_selector
from oke_gpu_rdma.claims.gated_fields import drop_disabled_fields
from oke_gpu_rdma.claims.spec_types import ClaimSpec, DeviceRequest, DeviceSelection, MatchAttribute
from oke_gpu_rdma.common.errors import ClaimValidationError, SelectorError

# This module and the entry are the only parts of the judge that code outside it may import
# (tests/oke_gpu_rdma/claims/test_entry.py): the pack and the preview read the versions, the conversion and
# the per-request reads through it, so the names it had before api_versions.py held them stay here.
__all__ = [
    "API_V1",
    "API_V1BETA1",
    "API_V1BETA2",
    "API_VERSIONS",
    "MAX_DEVICES_PER_CLAIM",
    "admin_access_requests",
    "claim_spec_to_v1",
    "parse_claim",
    "request_classes",
    "resolve_api_version",
    "toleration_problems",
    "unwrap_claim",
]

MAX_REQUESTS = 32
MAX_CONSTRAINTS = 32
MAX_CONFIG = 32
MAX_SELECTORS = 32
MAX_SUBREQUESTS = 8
MAX_CEL_LENGTH = 10 * 1024
MAX_DEVICES_PER_CLAIM = 32  # AllocationResultsMaxSize, enforced by the allocator

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


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
        spec = v1beta1_spec(claim_name, spec, problems)
    release = kubernetes_version or feature_gates.DEFAULT_KUBERNETES_VERSION
    try:
        feature_gates.release(release)
    except feature_gates.KubernetesVersionError as err:
        raise ClaimValidationError([str(err)]) from None
    spec = drop_disabled_fields(claim_name, spec, release, problems)
    parsed = _parse_spec(claim_name, spec, problems, unevaluated, release)
    if problems:
        raise ClaimValidationError(problems)
    return ClaimSpec(
        parsed.name, parsed.requests, parsed.constraints, version, tuple(unevaluated), parsed.distinct
    )


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
        # Kept only where DRAConsumableCapacity is on (gated_fields.py); the published devices of this
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
    `distinctAttribute` one (kept only where DRAConsumableCapacity is on:
    :func:`~oke_gpu_rdma.claims.gated_fields.drop_disabled_fields`) is validated the same way and added to
    ``distinct``."""
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
