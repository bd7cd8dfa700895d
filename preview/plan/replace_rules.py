"""Whether a changed input is updated in place or replaces the resource: the providers' own rules.

- `replaceOnChanges` set by the program: the engine replaces on any change at or below those paths.
- pulumi-oci: terraform-provider-oci's schema, `ForceNew` and `CustomizeDiff` with terraform-plugin-sdk
  v2's diff rules (preview/plan/oci_schema.py). The SDK's "(Updatable)" docstrings are only a
  cross-check (preview/plan/oci_updatable.py): they are wrong in places.
- pulumi-kubernetes (provider/pkg/provider/provider.go `Diff`; diff.go `forceNewProperties`, as of
  pulumi/pulumi-kubernetes 9497796): `.metadata.name` and `.metadata.namespace` of every object;
  per kind the fields listed below for the kinds this program can declare; ConfigMap `data` and
  `binaryData` unless the provider sets `enableConfigMapMutable` (off by default) and the map is not
  `immutable`; Secret `type`, `data` and `stringData` likewise with `enableSecretMutable`. The provider
  deletes a replaced object first only when it keeps its name and namespace and was named by the
  program, not autonamed (provider.go `Diff`: "Delete before replacement if ... the new version of that
  object MUST have the same name"; `deleteBeforeReplace`); a renamed or moved object is created first.
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

from oke_gpu_rdma.common import resource_types
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
_STATEFUL_SET = [
    *_SELECTOR,
    ".spec.podManagementPolicy",
    ".spec.revisionHistoryLimit",
    ".spec.serviceName",
    ".spec.volumeClaimTemplates",
]
_JOB = [*_SELECTOR, ".spec.completions", ".spec.parallelism", ".spec.template"]
_ROLE_BINDING = [".roleRef"]
_PV_SOURCES = (
    "awsElasticBlockStore azureDisk azureFile cephfs cinder csi fc flexVolume flocker gcePersistentDisk "
    "glusterfs hostPath iscsi local nfs photonPersistentDisk portworxVolume quobyte rbd scaleIO storageos "
    "vsphereVolume"
)

# pulumi-kubernetes provider/pkg/provider/diff.go `forceNew` (pulumi/pulumi-kubernetes 9497796), the
# whole table, by apiVersion/kind: the provider replaces an object when a change touches one of these
# paths (besides .metadata.name and .metadata.namespace of every kind).
PROVIDER_FORCE_NEW: dict[str, list[tuple[str, ...]]] = {
    kind: [_parse(p) for p in paths]
    for kind, paths in {
        "apps/v1beta1/StatefulSet": _STATEFUL_SET,
        **{
            f"apps/{version}/{kind}": paths
            for version in ("v1beta2", "v1")
            for kind, paths in (
                ("DaemonSet", _SELECTOR),
                ("Deployment", _SELECTOR),
                ("StatefulSet", _STATEFUL_SET),
            )
        },
        "v1/PersistentVolume": [f".spec.{source}" for source in _PV_SOURCES.split()],
        "v1/PersistentVolumeClaim": [
            ".spec.accessModes",
            ".spec.selector",
            ".spec.storageClassName",
            ".spec.volumeName",
        ],
        "v1/Pod": _POD,
        "v1/ResourceQuota": [".spec.scopes"],
        "v1/Secret": [".type"],
        "v1/Service": [".spec.clusterIP"],
        "policy/v1beta1/PodDisruptionBudget": [".spec"],
        **{
            f"rbac.authorization.k8s.io/{version}/{kind}": _ROLE_BINDING
            for version in ("v1alpha1", "v1beta1", "v1")
            for kind in ("ClusterRoleBinding", "RoleBinding")
        },
        "storage.k8s.io/v1/StorageClass": [".parameters", ".provisioner"],
        **{f"batch/{version}/Job": _JOB for version in ("v1beta1", "v1", "v2alpha1")},
    }.items()
}
# diff.go `forceNewProperties`: a Secret's data replaces unless the provider sets enableSecretMutable
# (and the Secret is not `immutable`); a ConfigMap's likewise with enableConfigMapMutable.
_SECRET_DATA = [_parse(".type"), _parse(".stringData"), _parse(".data")]
_CONFIG_MAP_DATA = [_parse(".data"), _parse(".binaryData")]

# Fields the API server refuses to change, by apiVersion/kind, with the paths it does accept.
API_IMMUTABLE: dict[str, tuple[tuple[str, ...], list[tuple[str, ...]]]] = {
    "resource.k8s.io/v1/ResourceClaimTemplate": (("spec",), []),
    "resource.k8s.io/v1/ResourceClaim": (("spec",), []),
    # Kueue's CRD transition rules at v0.19.2 (oke_gpu_rdma/scheduling/kueue_crd_schemas.json): Topology spec.levels
    # `self == oldSelf`; LocalQueue spec.clusterQueue `self == oldSelf`; a ResourceFlavor with a topologyName
    # keeps its nodeLabels, tolerations and topologyName (only nodeTaints change) - every flavor of this
    # program has one but the system flavor, whose spec changes only with the system pool's name.
    "kueue.x-k8s.io/v1beta2/Topology": (("spec", "levels"), []),
    "kueue.x-k8s.io/v1beta2/LocalQueue": (("spec", "clusterQueue"), []),
    "kueue.x-k8s.io/v1beta2/ResourceFlavor": (("spec",), [("spec", "nodeTaints")]),
    # The GPU DRA driver's ComputeDomain CRD: spec `self == oldSelf` (oke_gpu_rdma/drivers/compute_domain_crd_schemas.json;
    # components/drivers/job_compute_domain.py replaces on it).
    "resource.nvidia.com/v1beta1/ComputeDomain": (("spec",), []),
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

# Every kind this program can declare (KINDS below is checked against the examples' renderings and the
# components by tests/preview/plan/test_kind_rules.py), with what the Kubernetes API itself refuses to
# update where no provider rule above already replaces it:
# - Namespace, ConfigMap, Secret, ServiceAccount, ClusterRole, Role: no immutable field beyond the name
#   (kubernetes/kubernetes pkg/apis/core/validation/validation.go `ValidateNamespaceUpdate`,
#   `ValidateConfigMapUpdate` and `ValidateSecretUpdate` refuse data changes only of an `immutable` one,
#   which the provider replaces; pkg/apis/rbac/validation/validation.go `ValidateClusterRoleUpdate`,
#   `ValidateRoleUpdate`).
# - ClusterRoleBinding, RoleBinding: `roleRef` is immutable (rbac validation `ValidateClusterRoleBindingUpdate`,
#   `ValidateRoleBindingUpdate`); the
#   provider replaces on it. Deployment: `spec.selector` (pkg/apis/apps/validation `ValidateDeploymentUpdate`
#   on apps/v1); the provider replaces on it. Job: `spec.selector`, `spec.template` (beyond a suspended
#   job's scheduling directives) and `spec.completions` (pkg/apis/batch/validation/validation.go
#   `ValidateJobSpecUpdate`); the provider replaces on all three.
# - DeviceClass: updatable (pkg/apis/resource/validation/validation.go `ValidateDeviceClassUpdate`
#   checks only metadata). ResourceClaimTemplate, ResourceClaim: `spec` immutable (API_IMMUTABLE).
# - CustomResourceDefinition: updatable (apiextensions-apiserver `ValidateCustomResourceDefinitionUpdate`;
#   `spec.scope` and the group/names are the API's to refuse, which this program never changes).
# - Custom resources (MPIJob, NicClusterPolicy, IPPool, SriovNetwork, SriovNetworkNodePolicy,
#   SriovNetworkPoolConfig, NetworkAttachmentDefinition): no built-in immutable field; their CRDs declare
#   no `x-kubernetes-validations` transition rules (kubeflow/mpi-operator v0.6.0
#   deploy/v2beta1/mpi-operator.yaml; Mellanox/network-operator's and k8snetworkplumbingwg's CRDs), so
#   every field updates in place.
# - Kueue's Topology, ResourceFlavor and LocalQueue: the immutable fields of their CRDs' transition rules
#   (API_IMMUTABLE; components/scheduling/kueue.py replaces on them); ClusterQueue: no transition rule, quotas update in place.
# - ComputeDomain (resource.nvidia.com/v1beta1): its whole spec, by its CRD's transition rule (API_IMMUTABLE).
# - ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1): updatable
#   (pkg/apis/admissionregistration/validation/validation.go `ValidateValidatingAdmissionPolicyUpdate` and
#   `ValidateValidatingAdmissionPolicyBindingUpdate` validate the new object, with no immutable field).
# - Role: like ClusterRole (rbac validation `ValidateRoleUpdate` checks only metadata). RoleBinding: `roleRef`
#   immutable, as ClusterRoleBinding's; the provider replaces on it.
# - CronJob: updatable (pkg/apis/batch/validation/validation.go `ValidateCronJobUpdate` validates the new spec
#   with no immutable field; the provider has no forceNew entry for batch CronJobs).
# - PodMonitor, PrometheusRule (monitoring.coreos.com/v1): custom resources whose CRDs (kube-prometheus-stack
#   88.5.3 charts/crds/crds/crd-podmonitors.yaml, crd-prometheusrules.yaml) declare no transition rule
#   (no `oldSelf`): every field updates in place.
# - NetworkPolicy (networking.k8s.io/v1): updatable (pkg/apis/networking/validation/validation.go
#   `ValidateNetworkPolicyUpdate` validates the new spec only, with no immutable field).
# - Helm releases: helm_release.go `Diff` (.name, .namespace replace; never delete-first).
KINDS: frozenset[str] = frozenset(
    {
        "v1/Namespace",
        "v1/ConfigMap",
        "v1/Secret",
        "v1/ServiceAccount",
        "v1/Pod",
        "apps/v1/Deployment",
        "apps/v1/DaemonSet",
        "batch/v1/Job",
        "rbac.authorization.k8s.io/v1/ClusterRole",
        "rbac.authorization.k8s.io/v1/ClusterRoleBinding",
        "rbac.authorization.k8s.io/v1/Role",
        "rbac.authorization.k8s.io/v1/RoleBinding",
        "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy",
        "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding",
        "batch/v1/CronJob",
        "networking.k8s.io/v1/NetworkPolicy",
        "monitoring.coreos.com/v1/PodMonitor",
        "monitoring.coreos.com/v1/PrometheusRule",
        "apiextensions.k8s.io/v1/CustomResourceDefinition",
        "resource.k8s.io/v1/DeviceClass",
        "resource.k8s.io/v1/ResourceClaimTemplate",
        "resource.k8s.io/v1/ResourceClaim",
        "kubeflow.org/v2beta1/MPIJob",
        "mellanox.com/v1alpha1/NicClusterPolicy",
        "nv-ipam.nvidia.com/v1alpha1/IPPool",
        "sriovnetwork.openshift.io/v1/SriovNetwork",
        "sriovnetwork.openshift.io/v1/SriovNetworkNodePolicy",
        "sriovnetwork.openshift.io/v1/SriovNetworkPoolConfig",
        "k8s.cni.cncf.io/v1/NetworkAttachmentDefinition",
        "kueue.x-k8s.io/v1beta2/Topology",
        "kueue.x-k8s.io/v1beta2/ResourceFlavor",
        "kueue.x-k8s.io/v1beta2/ClusterQueue",
        "kueue.x-k8s.io/v1beta2/LocalQueue",
        "resource.nvidia.com/v1beta1/ComputeDomain",
        "helm.sh/v3/Release",
    }
)
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
    for data_kind, setting, fields in (
        ("Secret", "enableSecretMutable", _SECRET_DATA),
        ("ConfigMap", "enableConfigMapMutable", _CONFIG_MAP_DATA),
    ):
        mutable = provider_inputs.get(setting) is True and inputs.get("immutable") is not True
        if kind == f"v1/{data_kind}" and not mutable and any(_covers(r, path) for r in fields):
            return Rule(
                True,
                f"pulumi-kubernetes replaces {data_kind} data unless its provider sets {setting}",
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


AUTONAMED_ANNOTATION = "pulumi.com/autonamed"
"""pulumi-kubernetes provider/pkg/metadata/annotations.go `AnnotationAutonamed`."""


def _name(inputs: dict[str, object]) -> tuple[object, object, bool]:
    metadata = inputs.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    annotations = metadata.get("annotations")
    autonamed = isinstance(annotations, dict) and annotations.get(AUTONAMED_ANNOTATION) == "true"
    return metadata.get("name"), metadata.get("namespace"), autonamed


def provider_deletes_first(
    type_: str, old_inputs: dict[str, object], new_inputs: dict[str, object], rules: Sequence[Rule]
) -> bool:
    """Whether pulumi-kubernetes answers a replacement with `deleteBeforeReplace` (provider.go `Diff`):
    the provider itself replaces (`rules` of the changes), the object is named by the program (not
    autonamed, no generateName) and keeps its name and namespace. Helm releases never
    (helm_release.go `Diff`: `DeleteBeforeReplace: false`)."""
    if not is_manifest(type_) or not any(r.provider_rule for r in rules):
        return False
    new_name, new_namespace, autonamed = _name(new_inputs)
    old_name, old_namespace, _ = _name(old_inputs)
    named = isinstance(new_name, str) and new_name != UNKNOWN
    return named and not autonamed and new_name == old_name and new_namespace == old_namespace
