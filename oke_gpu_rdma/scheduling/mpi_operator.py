"""The Kubeflow MPI operator's releases, as facts: the stack applies a release's manifest at apply time.

Both rail paths' NCCL gates are MPIJobs, so the stack installs the operator. It does not hold the
operator's manifest (an upstream file): pulumi-kubernetes' yaml/v2 `ConfigFile` fetches
`deploy/v2beta1/mpi-operator.yaml` from kubeflow/mpi-operator at the release's commit when `pulumi up`
runs (components/health/acceptance_jobs.py). What the offline preview needs of it is kept here instead, read
from the manifest by tools/mpi_operator_facts.py into mpi_operator_releases.json:

- the identity of every object, so that the plan says what the ConfigFile applies and the stack's
  objects keep their state when they move under it (aliases, :func:`alias_name`);
- where its one Deployment's pods may run, so that the schedulability check places them;
- the sha256 of the manifest's bytes at the release's commit (``manifestSha256``, kept beside the releases so
  that the tool's rewrite of a release leaves it), which :func:`fetch_manifest` checks what it fetches
  against before the stack applies it (:class:`ManifestDigestError` otherwise): a commit pins the tree, but
  nothing on the way checks that the bytes that arrive are the ones it holds.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO, Any, Final

from oke_gpu_rdma.scheduling.pod_admission import PodPlacement

RELEASES_FILE: Final = Path(__file__).with_name("mpi_operator_releases.json")
SOURCE: Final = "kubeflow/mpi-operator deploy/v2beta1/mpi-operator.yaml, read by tools/mpi_operator_facts.py"
REPOSITORY: Final = "kubeflow/mpi-operator"
MANIFEST_PATH: Final = "deploy/v2beta1/mpi-operator.yaml"
DEFAULT_VERSION: Final = "v0.6.0"
# The kind the stack's acceptance jobs are (the manifest's CRD mpijobs.kubeflow.org serves v2beta1).
MPIJOB_API_VERSION: Final = "kubeflow.org/v2beta1"
MPIJOB_KIND: Final = "MPIJob"
# The type token of pulumi-kubernetes' yaml/v2 ConfigFile (sdk/python/pulumi_kubernetes/yaml/v2/ConfigFile.py).
CONFIG_FILE_TYPE: Final = "kubernetes:yaml/v2:ConfigFile"
# The operator's own ClusterRole (and its binding) in the manifest.
OPERATOR_ROLE: Final = "mpi-operator"
# The top-level key of the recorded manifest digests, by release.
MANIFEST_SHA256_KEY: Final = "manifestSha256"
_SHA256_HEX: Final = re.compile(r"^[0-9a-f]{64}$")
# How long the apply-time fetch waits for GitHub.
FETCH_TIMEOUT_SECONDS: Final = 30


class ManifestDigestError(ValueError):
    """A release manifest whose bytes are not the ones recorded for it (or none are recorded); the message
    names the release, the URL, both digests and what to do."""


@dataclass(frozen=True)
class ManifestDigest:
    """The sha256 (hex) of a release manifest's bytes at the release's commit, and where it was read."""

    sha256: str
    source: str


@dataclass(frozen=True)
class ObjectId:
    """One object of a release manifest, as the API server names it."""

    api_version: str
    kind: str
    namespace: str | None
    name: str

    @property
    def resource_type(self) -> str:
        """Its Pulumi type token: `kubernetes:<group>/<version>:<Kind>`, the core group spelt `core`."""
        group_version = self.api_version if "/" in self.api_version else f"core/{self.api_version}"
        return f"kubernetes:{group_version}:{self.kind}"

    def config_file_child_name(self, prefix: str) -> str:
        """The name pulumi-kubernetes gives the ConfigFile's child for this object:
        `<prefix>:<namespace>/<name>`, or `<prefix>:<name>` when cluster-scoped
        (provider/pkg/provider/yaml/v2/yaml.go `register`; the prefix defaults to the ConfigFile's name)."""
        name = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{prefix}:{name}"


# Least privilege (issue 28). Upstream's ClusterRole lets the operator read and write Secrets and Pods and
# create pods/exec in every namespace. The stack runs it with --namespace=<the jobs' namespace> (cmd/mpi-operator/
# app/options/options.go at the pinned commit: "If set, it only monitors mpijobs in the given namespace"; its
# informers then list that namespace only, cmd/mpi-operator/app/server.go `kubeinformers.WithNamespace`), so its
# rules split three ways, each read from the ClusterRole of the release's manifest:
# - kept cluster-wide, read only: PriorityClasses (cluster-scoped; the controller starts their informer whatever
#   the namespace, pkg/controller/mpi_job_controller.go `priorityClassInformer.Informer()`);
# - a Role in the lock namespace: the leader-election Lease (server.go `resourcelock.LeaseLock` in
#   --lock-namespace) and the events recorded on it;
# - a Role in the jobs' namespace: everything else it names there (ConfigMaps, Secrets, Services, Pods, Jobs,
#   MPIJobs, events, pod groups);
# - dropped: rules for APIs the code at the pinned commit never calls (`git grep` in cmd/ and pkg/: no pods/exec,
#   no Endpoints, no CustomResourceDefinitions; checkCRDExists lists MPIJobs instead).
CLUSTER_WIDE_RESOURCES: Final = frozenset({"priorityclasses"})
CLUSTER_WIDE_VERBS: Final = ("get", "list", "watch")
LOCK_RESOURCES: Final = frozenset({"leases"})
UNUSED_RESOURCES: Final = frozenset({"pods/exec", "endpoints", "customresourcedefinitions"})
EVENTS: Final = "events"
NAMESPACE_FLAG: Final = "--namespace"
LOCK_NAMESPACE_FLAG: Final = "--lock-namespace"
DEFAULT_LOCK_NAMESPACE: Final = "mpi-operator"  # options.go: the flag's default


def _rules_of(
    rules: list[dict[str, Any]], keep: frozenset[str], verbs: tuple[str, ...] | None = None
) -> list[dict[str, Any]]:
    """The ``rules`` narrowed to the resources in ``keep`` (and to ``verbs`` when given); empty rules dropped."""
    out = []
    for rule in rules:
        resources = [r for r in rule.get("resources") or () if r in keep]
        if not resources:
            continue
        rule_verbs = list(rule.get("verbs") or ())
        if verbs is not None:
            rule_verbs = [v for v in verbs if v in rule_verbs or "*" in rule_verbs]
        out.append(
            {"apiGroups": list(rule.get("apiGroups") or ()), "resources": resources, "verbs": rule_verbs}
        )
    return out


@dataclass(frozen=True)
class Release:
    version: str
    commit: str
    objects: tuple[ObjectId, ...]
    deployment: dict[str, Any]
    operator_rules: tuple[dict[str, Any], ...] = ()
    """The rules of the manifest's ClusterRole mpi-operator, as upstream writes them."""
    manifest_digest: ManifestDigest | None = None
    """The sha256 of the manifest at :attr:`manifest_url`; None: not recorded (then nothing is applied)."""

    def _named(self) -> set[str]:
        return {r for rule in self.operator_rules for r in rule.get("resources") or ()}

    def cluster_rules(self) -> list[dict[str, Any]]:
        """What stays in the ClusterRole: read-only access to the cluster-scoped resources the operator watches."""
        return _rules_of(list(self.operator_rules), CLUSTER_WIDE_RESOURCES, CLUSTER_WIDE_VERBS)

    def lock_rules(self) -> list[dict[str, Any]]:
        """The Role in the lock namespace: the leader-election Lease and the events recorded on it."""
        return _rules_of(list(self.operator_rules), LOCK_RESOURCES | {EVENTS})

    def job_rules(self) -> list[dict[str, Any]]:
        """The Role in the jobs' namespace: every namespaced resource it names but the Lease and the unused ones."""
        keep = frozenset(self._named() - CLUSTER_WIDE_RESOURCES - LOCK_RESOURCES - UNUSED_RESOURCES)
        return _rules_of(list(self.operator_rules), keep)

    @property
    def service_account(self) -> tuple[str, str]:
        """(namespace, name) of the operator's ServiceAccount."""
        return (
            str(self.deployment["namespace"]),
            str(self.deployment.get("serviceAccountName") or "default"),
        )

    @property
    def lock_namespace(self) -> str:
        """Where the operator keeps its leader-election Lease (its --lock-namespace flag)."""
        for arg in self.args():
            if arg.startswith(f"{LOCK_NAMESPACE_FLAG}="):
                return arg.split("=", 1)[1]
        return DEFAULT_LOCK_NAMESPACE

    def args(self) -> list[str]:
        """The operator container's flags, as upstream writes them."""
        args = self.deployment.get("args") or [[]]
        return [str(a) for a in args[0]]

    def args_for(self, namespace: str) -> list[str]:
        """The operator's flags limited to MPIJobs of ``namespace`` (an earlier --namespace replaced)."""
        kept = [a for a in self.args() if a != NAMESPACE_FLAG and not a.startswith(f"{NAMESPACE_FLAG}=")]
        return [*kept, f"{NAMESPACE_FLAG}={namespace}"]

    @property
    def manifest_url(self) -> str:
        """The manifest at the release's commit: a commit, unlike a tag, cannot be moved."""
        return f"https://raw.githubusercontent.com/{REPOSITORY}/{self.commit}/{MANIFEST_PATH}"

    def placement(self) -> PodPlacement:
        """Where the operator's Deployment may run: what its pod template sets (nothing, for v0.6.0)."""
        d = self.deployment
        return PodPlacement(
            f"Deployment {d['namespace']}/{d['name']}",
            node_selector=dict(d.get("nodeSelector") or {}),
            affinity=dict(d.get("affinity") or {}),
            tolerations=tuple(d.get("tolerations") or ()),
        )


def _manifest_digest(data: dict[str, Any], version: str) -> ManifestDigest | None:
    entry = (data.get(MANIFEST_SHA256_KEY) or {}).get(version)
    if entry is None:
        return None
    sha256, source = entry.get("sha256"), entry.get("source")
    if (
        not isinstance(sha256, str)
        or not _SHA256_HEX.match(sha256)
        or not isinstance(source, str)
        or not source
    ):
        raise ManifestDigestError(
            f"{RELEASES_FILE.name}: {MANIFEST_SHA256_KEY}.{version}: give sha256 (64 hex) and source"
        )
    return ManifestDigest(sha256, source)


@cache
def releases() -> dict[str, Release]:
    data = json.loads(RELEASES_FILE.read_text())
    return {
        version: Release(
            version,
            entry["commit"],
            tuple(
                ObjectId(o["apiVersion"], o["kind"], o.get("namespace"), o["name"]) for o in entry["objects"]
            ),
            entry["deployment"],
            tuple(entry.get("operatorRules") or ()),
            _manifest_digest(data, version),
        )
        for version, entry in data["releases"].items()
    }


def release(version: str) -> Release:
    """The release `version`; KeyError for one the facts do not hold (the stack config refuses it first)."""
    return releases()[version]


def release_of_manifest(url: object) -> Release | None:
    """The release whose manifest URL this is (a ConfigFile's `file` input), if any."""
    return next((r for r in releases().values() if r.manifest_url == url), None)


def alias_name(component: str, obj_kind: str, obj_name: str) -> str:
    """The name the stack gave an object of the manifest when it declared each one itself (up to the
    commit that moved it to the ConfigFile): `<component>-<kind>-<name>`, the component's child."""
    return f"{component}-{obj_kind.lower()}-{obj_name}"


def check_manifest(release: Release, data: bytes) -> bytes:
    """``data`` if it is the manifest recorded for ``release`` (its sha256); ManifestDigestError otherwise."""
    expected = release.manifest_digest
    if expected is None:
        raise ManifestDigestError(
            f"MPI operator {release.version}: no sha256 of its manifest is recorded ({RELEASES_FILE.name} "
            f"{MANIFEST_SHA256_KEY}.{release.version}), so {release.manifest_url} is not applied. Fix: record "
            "the sha256 of the file at the release's commit (git show <commit>:"
            + MANIFEST_PATH
            + " | sha256sum) "
            "with where you read it"
        )
    found = hashlib.sha256(data).hexdigest()
    if found != expected.sha256:
        raise ManifestDigestError(
            f"MPI operator {release.version}: the manifest fetched from {release.manifest_url} has sha256 "
            f"{found}, not the {expected.sha256} recorded for it ({RELEASES_FILE.name}: {expected.source}); "
            "it is not applied. A file at a commit does not change, so these are not the bytes upstream "
            "committed: look at what sits between this machine and raw.githubusercontent.com (a proxy that "
            "rewrites responses, a mirror) and apply only the recorded file"
        )
    return data


Opener = Callable[..., IO[bytes]]


def fetch_manifest(
    release: Release, opener: Opener = urllib.request.urlopen, timeout: float = FETCH_TIMEOUT_SECONDS
) -> bytes:
    """The release's manifest from :attr:`Release.manifest_url`, refused (ManifestDigestError) unless its
    bytes have the recorded sha256: what the stack runs before it applies the manifest."""
    with opener(release.manifest_url, timeout=timeout) as response:
        data: bytes = response.read()
    return check_manifest(release, data)
