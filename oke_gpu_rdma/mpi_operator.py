"""The Kubeflow MPI operator's releases, as facts: the stack applies a release's manifest at apply time.

Both rail paths' NCCL gates are MPIJobs, so the stack installs the operator. It does not hold the
operator's manifest (an upstream file): pulumi-kubernetes' yaml/v2 `ConfigFile` fetches
`deploy/v2beta1/mpi-operator.yaml` from kubeflow/mpi-operator at the release's commit when `pulumi up`
runs (components/acceptance_jobs.py). What the offline preview needs of it is kept here instead, read
from the manifest by tools/mpi_operator_facts.py into mpi_operator_releases.json:

- the identity of every object, so that the plan says what the ConfigFile applies and the stack's
  objects keep their state when they move under it (aliases, :func:`alias_name`);
- where its one Deployment's pods may run, so that the schedulability check places them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

from .scheduling import PodPlacement

RELEASES_FILE: Final = Path(__file__).with_name("mpi_operator_releases.json")
SOURCE: Final = "kubeflow/mpi-operator deploy/v2beta1/mpi-operator.yaml, read by tools/mpi_operator_facts.py"
REPOSITORY: Final = "kubeflow/mpi-operator"
MANIFEST_PATH: Final = "deploy/v2beta1/mpi-operator.yaml"
DEFAULT_VERSION: Final = "v0.6.0"
# The type token of pulumi-kubernetes' yaml/v2 ConfigFile (sdk/python/pulumi_kubernetes/yaml/v2/ConfigFile.py).
CONFIG_FILE_TYPE: Final = "kubernetes:yaml/v2:ConfigFile"


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


@dataclass(frozen=True)
class Release:
    version: str
    commit: str
    objects: tuple[ObjectId, ...]
    deployment: dict[str, Any]

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
