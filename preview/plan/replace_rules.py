"""Whether a changed input is updated in place or replaces the resource: the providers' own rules.

- `replaceOnChanges` set by the program: the engine replaces on any change at or below those paths.
- pulumi-oci: terraform-provider-oci's schema, `ForceNew` and `CustomizeDiff` with terraform-plugin-sdk
  v2's diff rules (preview/plan/oci_schema.py). The SDK's "(Updatable)" docstrings are only a
  cross-check (preview/plan/oci_updatable.py): they are wrong in places.
- pulumi-kubernetes (provider/pkg/provider/provider.go `Diff`; diff.go `forceNewProperties`, as of
  pulumi/pulumi-kubernetes 9497796): `.metadata.name` and `.metadata.namespace` of every object;
  per kind the fields listed below for the kinds this program can declare; ConfigMap `data` and
  `binaryData` unless the provider sets `enableConfigMapMutable` (off by default) and the map is not
  `immutable`. A replaced object that keeps its name is deleted first (provider.go: "Delete before
  replacement if ... the new version of that object MUST have the same name").
- Helm releases (helm_release.go `Diff`): `.name` and `.namespace` replace.
- The Kubernetes provider (provider.go `DiffConfig`): a `kubeconfig`, `context` or `cluster` not known
  before apply replaces the provider ("we can't tell for sure if a computed value has changed"), and
  with it every object it manages.
- Fields the Kubernetes API refuses to update but no provider rule replaces: the apply fails. For the
  kinds here: ResourceClaim and ResourceClaimTemplate `spec` (kubernetes/kubernetes
  pkg/apis/resource/validation/validation.go, `ValidateResourceClaimTemplateUpdate`: "field is
  immutable"), Pod `spec` beyond container images, activeDeadlineSeconds, tolerations and
  terminationGracePeriodSeconds (pkg/apis/core/validation `ValidatePodUpdate`). DeviceClass,
  Namespace labels and ConfigMap data (with a mutable provider) update in place.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from oke_gpu_rdma import resource_types
from preview.rendering import is_manifest

from . import oci_schema

Path = tuple[str | int, ...]

UNKNOWN = "(known after apply)"
# Where a plan records a change of a resource's provider (Pulumi shows `[provider]` in its diff).
PROVIDER_PATH: tuple[str] = ("[provider]",)


@dataclass(frozen=True)
class Rule:
    """What a change at one path does."""

    replaces: bool
    why: str = ""
    """The rule that decides, for the plan's detail lines."""
    refused: str = ""
    """Set when the provider would update but the API server refuses: the apply fails."""
    provider_rule: bool = False
    """The provider itself asks for the replacement (it may then delete the old object first)."""


def _parse(path: str) -> tuple[str, ...]:
    """`.spec.containers[*].image` -> ("spec", "containers", "*", "image")."""
    return tuple(p for p in re.split(r"[.\[\]]+", path) if p)


def _covers(rule: tuple[str, ...], path: Path) -> bool:
    """A change at `path` touches `rule` when one is a prefix of the other (`*` matches one segment)."""
    return all(a in ("*", str(b)) for a, b in zip(rule, path, strict=False))


_METADATA = [_parse(".metadata.name"), _parse(".metadata.namespace")]


def _container(prefix: str) -> list[str]:
    fields = (
        "args command env image imagePullPolicy lifecycle livenessProbe ports readinessProbe resources "
        "securityContext stdin stdinOnce terminationMessagePath terminationMessagePolicy tty "
        "volumeDevices volumeMounts workingDir"
    )
    return [f"{prefix}.{f}" for f in fields.split()]


_POD = (
    [
        f".spec.{f}"
        for f in [
            "affinity",
            "automountServiceAccountToken",
            "dnsConfig",
            "dnsPolicy",
            "enableServiceLinks",
            "hostAliases",
            "hostIPC",
            "hostNetwork",
            "hostPID",
            "hostname",
            "imagePullSecrets",
            "nodeName",
            "nodeSelector",
            "overhead",
            "preemptionPolicy",
            "priority",
            "priorityClassName",
            "readinessGates",
            "restartPolicy",
            "runtimeClassName",
            "schedulerName",
            "securityContext",
            "serviceAccount",
            "serviceAccountName",
            "shareProcessNamespace",
            "subdomain",
            "terminationGracePeriodSeconds",
            "volumes",
        ]
    ]
    + _container(".spec.containers[*]")
    + _container(".spec.initContainers[*]")
)
_SELECTOR = [".spec.selector"]

# pulumi-kubernetes diff.go `forceNew`, for the kinds this program declares or could (by apiVersion).
PROVIDER_FORCE_NEW: dict[str, list[tuple[str, ...]]] = {
    kind: [_parse(p) for p in paths]
    for kind, paths in {
        "v1/Pod": _POD,
        "v1/Secret": [".type"],
        "v1/Service": [".spec.clusterIP"],
        "apps/v1/DaemonSet": _SELECTOR,
        "apps/v1/Deployment": _SELECTOR,
        "apps/v1/StatefulSet": [
            *_SELECTOR,
            ".spec.podManagementPolicy",
            ".spec.revisionHistoryLimit",
            ".spec.serviceName",
            ".spec.volumeClaimTemplates",
        ],
        "batch/v1/Job": [*_SELECTOR, ".spec.completions", ".spec.parallelism", ".spec.template"],
        "rbac.authorization.k8s.io/v1/RoleBinding": [".roleRef"],
        "rbac.authorization.k8s.io/v1/ClusterRoleBinding": [".roleRef"],
    }.items()
}
_CONFIG_MAP_DATA = [_parse(".data"), _parse(".binaryData")]

# Fields the API server refuses to change, by apiVersion/kind, with the paths it does accept.
API_IMMUTABLE: dict[str, tuple[tuple[str, ...], list[tuple[str, ...]]]] = {
    "resource.k8s.io/v1/ResourceClaimTemplate": (("spec",), []),
    "resource.k8s.io/v1/ResourceClaim": (("spec",), []),
    "v1/Pod": (
        ("spec",),
        [
            _parse(p)
            for p in (
                ".spec.containers[*].image",
                ".spec.initContainers[*].image",
                ".spec.activeDeadlineSeconds",
                ".spec.tolerations",
                ".spec.terminationGracePeriodSeconds",
            )
        ],
    ),
}
_HELM_FORCE_NEW = [("name",), ("namespace",)]
_K8S_PROVIDER_IDENTITY = ("kubeconfig", "context", "cluster")


def show(path: Sequence[str | int]) -> str:
    """A property path as Pulumi prints one: `a.b[0].c`, `labels["x.io/y"]` for keys with dots or slashes."""
    if tuple(path) == PROVIDER_PATH:
        return PROVIDER_PATH[0]
    text = ""
    for segment in path:
        if isinstance(segment, int):
            text += f"[{segment}]"
        elif re.fullmatch(r"[A-Za-z_$][\w$-]*", segment):
            text += f".{segment}" if text else segment
        else:
            text += f'["{segment}"]'
    return text


def _api_kind(type_: str, manifest: dict[str, object]) -> str:
    api_version = manifest.get("apiVersion") or type_.split(":")[1].removeprefix("core/")
    kind = manifest.get("kind") or type_.rsplit(":", 1)[1]
    return f"{api_version}/{kind}"


def rule(
    type_: str,
    path: Path,
    new_value: object,
    *,
    old_value: object = None,
    replace_on_changes: Sequence[str] = (),
    inputs: dict[str, object] | None = None,
    provider_inputs: dict[str, object] | None = None,
) -> Rule:
    """What a change at `path` of a resource of `type_` does (`inputs`: its new inputs; `old_value`
    and `new_value` are the values at `path`, None where absent)."""
    for option in replace_on_changes:
        if option == "*" or _covers(_parse(option), path):
            return Rule(True, f"replaceOnChanges: {option}")
    if type_.startswith("oci:"):
        verdict = oci_schema.verdict(type_, path, old_value, new_value)
        return Rule(verdict.replaces, verdict.why)
    if type_ == resource_types.HELM_RELEASE:
        if any(_covers(r, path) for r in _HELM_FORCE_NEW):
            return Rule(True, f"pulumi-kubernetes replaces a Helm release on .{path[0]}", provider_rule=True)
        return Rule(False)
    if type_ == "pulumi:providers:kubernetes":
        # provider.go DiffConfig (preview/plan/kube_provider.py); the active-cluster comparison needs
        # both kubeconfigs and is made where the plan has them (change_plan.build).
        if path and path[0] in _K8S_PROVIDER_IDENTITY and new_value == UNKNOWN:
            return Rule(
                True, f"pulumi-kubernetes replaces its provider when {path[0]} is unknown before apply"
            )
        if path and path[0] == "clusterIdentifier" and old_value is not None and new_value is not None:
            return Rule(True, "pulumi-kubernetes replaces its provider when clusterIdentifier changes")
        if path and path[0] == "renderYamlToDirectory":
            return Rule(True, "pulumi-kubernetes replaces its provider when renderYamlToDirectory changes")
        return Rule(False)
    if is_manifest(type_):
        return _kubernetes_object(type_, path, inputs or {}, provider_inputs or {})
    return Rule(False)


def _kubernetes_object(
    type_: str, path: Path, inputs: dict[str, object], provider_inputs: dict[str, object]
) -> Rule:
    kind = _api_kind(type_, inputs)
    shown = show(path)
    if any(_covers(r, path) for r in _METADATA):
        return Rule(
            True, "pulumi-kubernetes replaces an object whose name or namespace changes", provider_rule=True
        )
    if any(_covers(r, path) for r in PROVIDER_FORCE_NEW.get(kind, [])):
        return Rule(
            True, f"pulumi-kubernetes replaces a {kind.rsplit('/', 1)[1]} on {shown}", provider_rule=True
        )
    mutable = provider_inputs.get("enableConfigMapMutable") is True and inputs.get("immutable") is not True
    if kind == "v1/ConfigMap" and not mutable and any(_covers(r, path) for r in _CONFIG_MAP_DATA):
        return Rule(
            True,
            "pulumi-kubernetes replaces ConfigMap data unless its provider sets enableConfigMapMutable",
            provider_rule=True,
        )
    immutable = API_IMMUTABLE.get(kind)
    if immutable is not None:
        field, allowed = immutable
        if _covers(field, path) and not any(_covers(a, path) and len(path) >= len(a) for a in allowed):
            return Rule(
                False,
                refused=f"the API server refuses to change {kind.rsplit('/', 1)[1]} {shown}: the apply fails "
                "(set replace_on_changes on it)",
            )
    return Rule(False)
