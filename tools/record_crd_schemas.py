"""Regenerate the CRD schemas the preview validates custom resources with (oke_gpu_rdma/common/crd_schemas.py): the
OpenAPI schemas of the kinds the stack declares, as each operator's CRDs define them at the pinned tag, so that
the preview validates the rendered objects offline (preview/schema_check.py) without the project holding the
CRD files.

It reads the CRDs from the source's git directory at a tag (or a commit, for a source whose pinned version has no
tag), keeps the schema of the served version the stack writes with the descriptions dropped, and records where
each came from (repository, tag, commit, path). For a source whose CRD the e2e control plane installs from this
file (tests/e2e/upstream.py), it keeps the CRD's group, names, scope and subresources as well.

Usage (a clone or a mirror of the source's repository):

    python -m tools.record_crd_schemas --source kueue --git-dir <kueue>/.git                 # kubernetes-sigs/kueue
    python -m tools.record_crd_schemas --source kube-prometheus-stack --git-dir <charts>/.git  # prometheus-community/helm-charts
    python -m tools.record_crd_schemas --source mpi-operator --git-dir <mpi-operator>/.git      # kubeflow/mpi-operator
    python -m tools.record_crd_schemas --source dra-driver-nvidia-gpu --git-dir <dra-driver>/.git  # kubernetes-sigs/dra-driver-nvidia-gpu

A bare mirror is its own git directory: ``--git-dir <mirror>`` (the directory holding HEAD, objects and refs).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oke_gpu_rdma.common import crd_schemas  # noqa: E402
from oke_gpu_rdma.drivers import (  # noqa: E402
    compute_domains,
    nvidia_gpu,
)
from oke_gpu_rdma.monitoring import kube_prometheus_stack as kps  # noqa: E402
from oke_gpu_rdma.scheduling import kueue_chart as kueue  # noqa: E402
from oke_gpu_rdma.scheduling import mpi_operator  # noqa: E402


@dataclass(frozen=True)
class CrdSource:
    repository: str
    default_tag: str
    api_version: str
    paths: Mapping[str, str]
    """Kind -> the path of its CRD in the repository."""
    out: Path
    definition: bool = False
    """Keep each CRD's group, names, scope and the version's subresources too (what building the CRD from the
    file needs)."""


_KUEUE_PLURALS = {
    kueue.TOPOLOGY_KIND: "topologies",
    kueue.RESOURCE_FLAVOR_KIND: "resourceflavors",
    kueue.CLUSTER_QUEUE_KIND: "clusterqueues",
    kueue.LOCAL_QUEUE_KIND: "localqueues",
}
# The CRDs kube-prometheus-stack installs, in its crds subchart (each names the prometheus-operator release it
# was taken from in its first line).
_KPS_CRDS = "charts/kube-prometheus-stack/charts/crds/crds"
SOURCES: dict[str, CrdSource] = {
    "kueue": CrdSource(
        repository="https://github.com/kubernetes-sigs/kueue",
        default_tag=f"v{kueue.DEFAULT_VERSION}",
        api_version=kueue.API_VERSION,
        # The files the chart's templates/crd/ are generated from.
        paths={
            kind: f"config/components/crd/bases/{kueue.API_GROUP}_{plural}.yaml"
            for kind, plural in _KUEUE_PLURALS.items()
        },
        out=crd_schemas.KUEUE.path,
    ),
    "kube-prometheus-stack": CrdSource(
        repository="https://github.com/prometheus-community/helm-charts",
        default_tag=f"{kps.CHART_NAME}-{kps.DEFAULT_VERSION}",
        api_version=kps.MONITORING_API,
        paths={
            kps.POD_MONITOR_KIND: f"{_KPS_CRDS}/crd-podmonitors.yaml",
            kps.PROMETHEUS_RULE_KIND: f"{_KPS_CRDS}/crd-prometheusrules.yaml",
        },
        out=crd_schemas.PROMETHEUS_OPERATOR.path,
    ),
    # The manifest the stack applies (components/health/acceptance_jobs.py), whose CRD is the MPIJob the API server
    # keeps: a pod template field its schema lacks is pruned, silently.
    "mpi-operator": CrdSource(
        repository=f"https://github.com/{mpi_operator.REPOSITORY}",
        default_tag=mpi_operator.DEFAULT_VERSION,
        api_version=mpi_operator.MPIJOB_API_VERSION,
        paths={mpi_operator.MPIJOB_KIND: mpi_operator.MANIFEST_PATH},
        out=crd_schemas.MPI_OPERATOR.path,
    ),
    # The NVIDIA DRA driver's ComputeDomain, as its chart's crds/ installs it. The chart version the stack pins
    # (oke_gpu_rdma/drivers/nvidia_gpu.py) has no tag in the repository: the pin is a commit. The e2e control
    # plane builds the CRD from this file (tests/e2e/upstream.py compute_domain_crds), hence its names.
    nvidia_gpu.CHART_NAME: CrdSource(
        repository=f"https://github.com/{compute_domains.REPOSITORY}",
        default_tag=compute_domains.SOURCE_COMMIT,
        api_version=compute_domains.API_VERSION,
        paths={compute_domains.KIND: compute_domains.CRD_PATH},
        out=crd_schemas.COMPUTE_DOMAINS.path,
        definition=True,
    ),
}


class SchemaSourceError(Exception):
    """The CRDs at the tag do not give a schema; the message says which and why."""


def _git(git_dir: Path, *args: str) -> str:
    done = subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SchemaSourceError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def without_descriptions(node: Any) -> Any:
    """The schema without its prose (what validation never reads)."""
    if isinstance(node, Mapping):
        return {k: without_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [without_descriptions(v) for v in node]
    return node


def crd_of(text: str, kind: str) -> Mapping[str, Any]:
    """The CustomResourceDefinition of ``kind`` in a file of one or more YAML documents."""
    crds = [
        d
        for d in yaml.safe_load_all(text)
        if isinstance(d, Mapping) and d.get("kind") == "CustomResourceDefinition"
    ]
    for crd in crds:
        if crd.get("spec", {}).get("names", {}).get("kind") == kind:
            return crd
    names = [c.get("spec", {}).get("names", {}).get("kind") for c in crds]
    raise SchemaSourceError(f"no CRD of {kind} in the file (it defines {names or 'none'})")


def served_schema(crd: Mapping[str, Any], kind: str, version: str) -> dict[str, Any]:
    """The openAPIV3Schema of ``version`` in a CRD of ``kind`` (which must serve it)."""
    if crd.get("spec", {}).get("names", {}).get("kind") != kind:
        raise SchemaSourceError(
            f"the CRD of {kind} names kind {crd.get('spec', {}).get('names', {}).get('kind')!r}"
        )
    for entry in crd["spec"].get("versions", []):
        if entry.get("name") == version:
            if not entry.get("served"):
                raise SchemaSourceError(f"{kind} {version} is not served at this tag")
            return dict(without_descriptions(entry["schema"]["openAPIV3Schema"]))
    raise SchemaSourceError(f"the CRD of {kind} has no version {version}")


def definition(crd: Mapping[str, Any], version: str) -> dict[str, Any]:
    """What the CRD declares besides the schema: its group, names and scope, and ``version``'s subresources."""
    spec = crd["spec"]
    (entry,) = [v for v in spec.get("versions", []) if v.get("name") == version]
    return {
        "group": spec["group"],
        "names": dict(spec["names"]),
        "scope": spec["scope"],
        "subresources": dict(entry.get("subresources") or {}),
    }


def generate(source: CrdSource, git_dir: Path, tag: str) -> dict[str, Any]:
    commit = _git(git_dir, "rev-parse", f"{tag}^{{commit}}").strip()
    group, version = source.api_version.split("/")
    schemas: dict[str, Any] = {}
    for kind, path in source.paths.items():
        crd = crd_of(_git(git_dir, "show", f"{commit}:{path}"), kind)
        schemas[kind] = {"source": path, "schema": served_schema(crd, kind, version)}
        if source.definition:
            declared = definition(crd, version)
            if declared["group"] != group:
                raise SchemaSourceError(f"the CRD of {kind} is of group {declared['group']}, not {group}")
            schemas[kind].update(declared)
    return {
        "repository": source.repository,
        "tag": tag,
        "commit": commit,
        "apiVersion": source.api_version,
        "kinds": schemas,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", choices=sorted(SOURCES), required=True)
    parser.add_argument("--git-dir", type=Path, required=True, help="the source repository's git directory")
    parser.add_argument(
        "--tag", help="the release tag, or a commit for a source pinned by commit (default: the pinned one)"
    )
    parser.add_argument("--out", type=Path, help="default: the file the preview reads")
    args = parser.parse_args(argv)
    source = SOURCES[args.source]
    tag = args.tag or source.default_tag
    out = args.out or source.out
    try:
        data = generate(source, args.git_dir, tag)
    except SchemaSourceError as err:
        print(f"crd_schemas: {err}", file=sys.stderr)
        return 1
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out} ({', '.join(data['kinds'])} at {data['tag']}, {data['commit']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
