"""Kubernetes objects as the engine sends them: type tokens, claims, workloads and their pod specs.

pulumi-kubernetes registers an object of kind K in group/version G as `kubernetes:G:K`
(`kubernetes:core/v1:Pod`, `kubernetes:resource.k8s.io/v1:ResourceClaimTemplate`, and for custom
resources `kubernetes:kubeflow.org/v2beta1:MPIJob`), with the object's fields as inputs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from oke_gpu_rdma.claims import spec as claim_spec
from oke_gpu_rdma.claims.spec import API_VERSIONS, claim_spec_to_v1
from oke_gpu_rdma.common import release_registry as registry
from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.common.pod_specs import find_pod_specs
from oke_gpu_rdma.drivers.attributes import NVIDIA_GPU_RESOURCE

from .values import UNKNOWN, PropertyTypeError, as_list, as_map, dig, plain

CLAIM_VERSIONS: Final = ("v1", "v1beta2", "v1beta1")
GPU_RESOURCE: Final = NVIDIA_GPU_RESOURCE


@dataclass
class PlainResource:
    """One resource of the stack (or of a single Analyze call) with plain properties.

    ``raw`` holds the SDK's proxy; :attr:`props` converts it on first use, so a policy pays only
    for the resources it reads.
    """

    urn: str
    type: str
    name: str
    raw: Any
    parent: str | None = None
    provider: str = ""
    dependencies: tuple[str, ...] = ()
    _props: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def props(self) -> dict[str, Any]:
        if self._props is None:
            value = plain(self.raw)
            self._props = value if isinstance(value, dict) else {}
        return self._props

    @property
    def group_version(self) -> str:
        parts = self.type.split(":")
        return parts[1] if len(parts) == 3 else ""

    @property
    def kind(self) -> str:
        return self.type.rsplit(":", 1)[-1]

    @property
    def group(self) -> str:
        gv = self.group_version
        return gv.rsplit("/", 1)[0] if "/" in gv else ""

    @property
    def namespace(self) -> Any:
        meta = self.props.get("metadata")
        ns = meta.get("namespace") if isinstance(meta, Mapping) else None
        if ns is UNKNOWN:
            return UNKNOWN
        return ns if isinstance(ns, str) and ns else "default"

    @property
    def object_name(self) -> Any:
        """metadata.name; None when Pulumi auto-names the object (the name is then unknown in preview)."""
        meta = self.props.get("metadata")
        value = meta.get("name") if isinstance(meta, Mapping) else None
        return value if isinstance(value, str) or value is UNKNOWN else None

    @property
    def label(self) -> str:
        """`Kind namespace/name` for messages, falling back to the Pulumi resource name."""
        name = self.object_name
        shown = name if isinstance(name, str) else f"{self.name} (auto-named)"
        ns = self.namespace
        if self.type.startswith("kubernetes:") and self.kind not in ("Namespace", "DeviceClass"):
            return f"{self.kind} {ns if isinstance(ns, str) else '?'}/{shown}"
        return f"{self.kind} {shown}"


def chart_basename(chart: object) -> str | None:
    """`dranet` for oci://registry.k8s.io/networking/charts/dranet, ./dranet-1.5.0.tgz, dranet."""
    if not isinstance(chart, str) or not chart:
        return None
    last = chart.rstrip("/").rsplit("/", 1)[-1].removesuffix(".tgz")
    return re.sub(r"-v?\d+(\.\d+)*([-+].*)?$", "", last)


def helm_chart_is(res: PlainResource, names: tuple[str, ...]) -> bool:
    """Whether ``res`` is a Helm release or chart of one of the chart ``names``."""
    return res.type in resource_types.HELM_TYPES and chart_basename(res.props.get("chart")) in names


def is_claim(res: PlainResource) -> bool:
    return (
        res.type.startswith(resource_types.DRA_GROUP_PREFIX)
        and res.group_version.rsplit("/", 1)[-1] in CLAIM_VERSIONS
        and res.kind in ("ResourceClaim", "ResourceClaimTemplate")
    )


def resource_claim_spec(res: PlainResource) -> Any:
    """The claim's ResourceClaimSpec as written in its API version (None if absent, UNKNOWN if unknown)."""
    base = "spec.spec" if res.kind == "ResourceClaimTemplate" else "spec"
    spec = dig(res.props, base)
    if spec is None or spec is UNKNOWN:
        return spec
    return as_map(spec, base)


def resource_claim_spec_v1(res: PlainResource) -> Any:
    """:func:`resource_claim_spec` in the resource.k8s.io/v1 form (v1beta1 requests get `exactly`), for
    the policies that only ask which DeviceClasses a request uses."""
    spec = resource_claim_spec(res)
    if not isinstance(spec, Mapping) or res.group_version not in API_VERSIONS:
        return spec
    return claim_spec_to_v1(spec, res.group_version)


def request_classes(spec: Any) -> dict[str, set[Any]]:
    """Request name -> DeviceClass names it (or any of its subrequests) can use
    (:func:`oke_gpu_rdma.claims.spec.request_classes`, which the preview reads claims with too); a class
    unknown until apply is UNKNOWN, one of the wrong type None (gpu-rail-claims-aligned reports it)."""
    return claim_spec.request_classes(spec, UNKNOWN)


@dataclass(frozen=True)
class DeviceClasses:
    """Which DeviceClass names select DRANET devices and which NVIDIA GPUs (defaults plus the stack's).

    ``problems`` holds (DeviceClass, message) for classes whose properties have the wrong type: they
    select nothing here, and gpu-rail-claims-aligned reports them.
    """

    dranet: frozenset[str] = field(default_factory=lambda: registry.classes_serving("rails"))
    gpu: frozenset[str] = field(default_factory=lambda: registry.classes_serving("gpus"))
    selectors: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    problems: tuple[tuple[PlainResource, str], ...] = ()


_DRIVER_IN_CEL: Final = re.compile(r"device\.driver\s*==\s*['\"]([^'\"]+)['\"]")


def _class_selectors(res: PlainResource) -> tuple[str, ...] | None:
    """The CEL expressions of a DeviceClass (resource.k8s.io `spec.selectors[].cel.expression`); None when
    unknown; PropertyTypeError naming the path when a value has the wrong type."""
    sels = dig(res.props, "spec.selectors")
    if sels is UNKNOWN:
        return None
    exprs = []
    for i, sel in enumerate(as_list(sels, "spec.selectors")):
        expr = dig(as_map(sel, f"spec.selectors[{i}]"), "cel.expression", f"spec.selectors[{i}]")
        if expr is UNKNOWN:
            return None
        if not isinstance(expr, str):
            raise PropertyTypeError(
                f"spec.selectors[{i}].cel.expression", "a CEL expression (a string)", expr
            )
        exprs.append(expr)
    return tuple(exprs)


def class_drivers(res: PlainResource) -> set[str]:
    """The drivers a DeviceClass's CEL selectors name (`device.driver == "..."`); empty for any other
    resource, or a class whose selectors are unknown or malformed."""
    if not (res.type.startswith(resource_types.DRA_GROUP_PREFIX) and res.kind == "DeviceClass"):
        return set()
    try:
        exprs = _class_selectors(res)
    except PropertyTypeError:
        return set()
    return {m for e in exprs or () for m in _DRIVER_IN_CEL.findall(e)}


def device_classes(resources: list[PlainResource]) -> DeviceClasses:
    """DeviceClasses the stack declares, sorted by the driver their CEL selectors name: a class naming a
    registered rail driver (DRANET) selects rails, one naming a registered GPU driver GPUs."""
    dranet = set(registry.classes_serving("rails"))
    gpu = set(registry.classes_serving("gpus"))
    rail_drivers = registry.drivers_serving("rails")
    gpu_drivers = registry.drivers_serving("gpus")
    selectors: dict[str, tuple[str, ...]] = {}
    problems: list[tuple[PlainResource, str]] = []
    for res in resources:
        if not (res.type.startswith(resource_types.DRA_GROUP_PREFIX) and res.kind == "DeviceClass"):
            continue
        name = res.object_name
        if not isinstance(name, str):
            continue
        try:
            exprs = _class_selectors(res)
        except PropertyTypeError as err:
            problems.append((res, str(err)))
            continue
        if exprs is None:
            continue
        selectors[name] = exprs
        drivers = {m for e in exprs for m in _DRIVER_IN_CEL.findall(e)}
        if drivers & rail_drivers:
            dranet.add(name)
        if drivers & gpu_drivers:
            gpu.add(name)
    return DeviceClasses(frozenset(dranet), frozenset(gpu), selectors, tuple(problems))


def rail_requests(spec: Any, classes: DeviceClasses) -> list[str]:
    """Requests of a claim spec that can get DRANET devices (rails)."""
    return [name for name, used in request_classes(spec).items() if used & classes.dranet]


def gpu_requests(spec: Any, classes: DeviceClasses) -> list[str]:
    """Requests of a claim spec that can get NVIDIA GPUs (from the NVIDIA GPU DRA driver)."""
    return [name for name, used in request_classes(spec).items() if used & classes.gpu]


# --- workloads ---------------------------------------------------------------------------------


@dataclass
class PodSpec:
    """One pod spec inside a workload; ``role`` names the replica (Worker, Launcher) or the path."""

    path: str
    role: str | None
    spec: Mapping[str, Any]

    @property
    def where(self) -> str:
        return f"replica {self.role}" if self.role else self.path


def _may_hold_pods(res: PlainResource) -> bool:
    """Kubernetes objects other than DRA objects and Helm charts (which hold no pod spec themselves)."""
    return (
        res.type.startswith("kubernetes:")
        and not res.type.startswith(resource_types.DRA_GROUP_PREFIX)
        and res.type not in resource_types.HELM_TYPES
    )


def is_workload(res: PlainResource) -> bool:
    """Whether the object holds a pod spec anywhere (any kind: Deployment, MPIJob, LeaderWorkerSet, ...)."""
    if not _may_hold_pods(res):
        return False
    try:
        return next(pod_specs(res), None) is not None
    except PropertyTypeError:
        return True  # its reader names the path


def _role(path: str, props: Mapping[str, Any]) -> str | None:
    """The replica a pod spec belongs to: `Worker` under `*ReplicaSpecs`, a JobSet job's name, a
    LeaderWorkerSet's leader or worker template."""
    parts = re.split(r"\.|(?=\[)", path)
    for i, part in enumerate(parts):
        if part.endswith("ReplicaSpecs") and i + 1 < len(parts):
            return parts[i + 1]
        if part == "replicatedJobs" and i + 1 < len(parts) and parts[i + 1].startswith("["):
            job = dig(props, ".".join(parts[: i + 1]))
            index = int(parts[i + 1].strip("[]"))
            name = (
                job[index].get("name") if isinstance(job, list) and isinstance(job[index], Mapping) else None
            )
            return str(name) if isinstance(name, str) else str(index)
    templates = [p for p in parts if p.endswith("Template") and p != "jobTemplate"]
    return templates[-1].removesuffix("Template") if templates else None


def pod_specs(res: PlainResource) -> Iterator[PodSpec]:
    """Every pod spec of a workload, found by structure (:func:`oke_gpu_rdma.common.pod_specs.find_pod_specs`: a
    `...spec` object with `containers` anywhere in the object, a core/v1 PodTemplate's top-level `template`
    included), so a kind the pack has never heard of (LeaderWorkerSet, a new training operator) is read like
    a Deployment."""
    if not _may_hold_pods(res):
        return
    spec = res.props.get("spec")
    if spec is not None and spec is not UNKNOWN:
        as_map(spec, "spec")  # a spec of the wrong type is named by its path
    for path, pod in find_pod_specs(res.props):
        yield PodSpec(path, _role(path, res.props), pod)


def containers(pod: PodSpec) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(path, container) for containers and init containers of a pod spec."""
    for key in ("initContainers", "containers"):
        value = pod.spec.get(key)
        if value is UNKNOWN:
            continue
        for i, container in enumerate(as_list(value, f"{pod.path}.{key}")):
            if container is UNKNOWN:
                continue
            yield f"{pod.path}.{key}[{i}]", as_map(container, f"{pod.path}.{key}[{i}]")


def container_name(path: str, container: Mapping[str, Any]) -> str:
    name = container.get("name")
    return name if isinstance(name, str) else path


@dataclass(frozen=True)
class ClaimRef:
    """One entry of `spec.resourceClaims`: the pod's claim name and what it points to."""

    pod_claim: str
    kind: str  # ResourceClaim | ResourceClaimTemplate
    target: Any  # name, or UNKNOWN


def claim_refs(pod: PodSpec) -> list[ClaimRef]:
    refs: list[ClaimRef] = []
    value = pod.spec.get("resourceClaims")
    if value is UNKNOWN:
        return [ClaimRef("?", "ResourceClaimTemplate", UNKNOWN)]
    for i, entry in enumerate(as_list(value, f"{pod.path}.resourceClaims")):
        where = f"{pod.path}.resourceClaims[{i}]"
        if entry is UNKNOWN:
            refs.append(ClaimRef("?", "ResourceClaimTemplate", UNKNOWN))
            continue
        entry = as_map(entry, where)
        nested = entry.get("source")  # the alpha API nested the reference under `source`
        source: Mapping[str, Any] = nested if isinstance(nested, Mapping) else entry
        name = entry.get("name")
        pod_claim = name if isinstance(name, str) else where
        for field_name, kind in (
            ("resourceClaimName", "ResourceClaim"),
            ("resourceClaimTemplateName", "ResourceClaimTemplate"),
        ):
            target = source.get(field_name)
            if target is UNKNOWN or isinstance(target, str):
                refs.append(ClaimRef(pod_claim, kind, target))
            elif target is not None:
                raise PropertyTypeError(f"{where}.{field_name}", "a string", target)
    return refs


def gpu_count(container: Mapping[str, Any], path: str) -> Any:
    """The container's nvidia.com/gpu limit or request (a number, UNKNOWN, or None)."""
    resources = container.get("resources")
    if resources is UNKNOWN:
        return UNKNOWN
    resources = as_map(resources, f"{path}.resources")
    found: Any = None
    for key in ("limits", "requests"):
        section = resources.get(key)
        if section is UNKNOWN:
            return UNKNOWN
        value = as_map(section, f"{path}.resources.{key}").get(GPU_RESOURCE)
        if value is UNKNOWN:
            return UNKNOWN
        if value is not None:
            found = value
    if isinstance(found, str):
        try:
            found = float(found)
        except ValueError:
            raise PropertyTypeError(
                f"{path}.resources.limits.{GPU_RESOURCE}", "a whole number", found
            ) from None
    if found is not None and not isinstance(found, int | float):
        raise PropertyTypeError(f"{path}.resources.limits.{GPU_RESOURCE}", "a whole number", found)
    return found
