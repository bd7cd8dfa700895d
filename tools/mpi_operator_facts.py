"""Regenerate `oke_gpu_rdma/scheduling/mpi_operator_releases.json`: what the stack needs to know of a Kubeflow MPI
operator release without holding its manifest.

The stack applies the release manifest itself at apply time (pulumi-kubernetes' yaml/v2 ConfigFile
fetches it, components/health/acceptance_jobs.py). The offline preview, the plan and the schedulability check
still need three facts of it: the identity of every object (the plan, and the aliases that keep a stack's
objects when it moves from declaring them one by one to the ConfigFile), and where its Deployment's pods
may run (node selector, tolerations, affinity) with its image and flags, and the rules of the operator's
ClusterRole (which the stack narrows to namespaced Roles). This script reads them from the manifest.

Usage, with the manifest of kubeflow/mpi-operator `deploy/v2beta1/mpi-operator.yaml` at the release's
commit (the URL the stack applies is printed by `python -m tools.mpi_operator_facts --url v0.6.0 <commit>`):

    python -m tools.mpi_operator_facts mpi-operator.yaml --version v0.6.0 --commit <40-hex commit>

It rewrites the release's entry in the JSON file and leaves the other releases as they are.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oke_gpu_rdma.scheduling import mpi_operator  # noqa: E402

_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_VERSION = re.compile(r"^v\d+\.\d+\.\d+$")


class FactsError(Exception):
    """The manifest or the arguments cannot give a release entry; the message says which and why."""


def _placement(template: Mapping[str, Any]) -> dict[str, Any]:
    spec = template.get("spec") or {}
    containers = spec.get("containers") or []
    return {
        "nodeSelector": dict(spec.get("nodeSelector") or {}),
        "tolerations": list(spec.get("tolerations") or []),
        "affinity": dict(spec.get("affinity") or {}),
        "priorityClassName": spec.get("priorityClassName"),
        "images": [c.get("image") for c in containers if isinstance(c, Mapping)],
        # The operator's flags: the stack adds --namespace to them (oke_gpu_rdma/scheduling/mpi_operator.py).
        "args": [list(c.get("args") or []) for c in containers if isinstance(c, Mapping)],
        "serviceAccountName": spec.get("serviceAccountName"),
    }


def release_entry(documents: Iterable[Any], commit: str) -> dict[str, Any]:
    """The JSON entry of one release, from its manifest's documents."""
    if not _COMMIT.match(commit):
        raise FactsError(f"--commit {commit!r}: give the release's full 40-character commit")
    objects: list[dict[str, Any]] = []
    deployments: list[dict[str, Any]] = []
    rules: list[Any] | None = None
    for doc in documents:
        if not isinstance(doc, Mapping):
            continue
        metadata = doc.get("metadata") or {}
        identity = {
            "apiVersion": str(doc.get("apiVersion")),
            "kind": str(doc.get("kind")),
            "namespace": metadata.get("namespace"),
            "name": str(metadata.get("name")),
        }
        objects.append(identity)
        if doc.get("kind") == "ClusterRole" and identity["name"] == mpi_operator.OPERATOR_ROLE:
            # The operator's own role: the stack splits it into a namespaced Role and what stays cluster-wide.
            rules = list(doc.get("rules") or [])
        if doc.get("kind") == "Deployment":
            template = (doc.get("spec") or {}).get("template") or {}
            deployments.append(
                {"namespace": identity["namespace"], "name": identity["name"], **_placement(template)}
            )
    if not objects:
        raise FactsError("the manifest holds no Kubernetes object; is it the release's mpi-operator.yaml?")
    if len(deployments) != 1:
        raise FactsError(f"the manifest holds {len(deployments)} Deployments; the operator has exactly one")
    if rules is None:
        raise FactsError(
            f"the manifest holds no ClusterRole {mpi_operator.OPERATOR_ROLE}, the operator's own role"
        )
    return {"commit": commit, "objects": objects, "deployment": deployments[0], "operatorRules": rules}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("manifest", type=Path, help="deploy/v2beta1/mpi-operator.yaml of the release")
    parser.add_argument("--version", required=True, help="the release tag, e.g. v0.6.0")
    parser.add_argument("--commit", required=True, help="the tag's commit (40 hex characters)")
    parser.add_argument("--out", type=Path, default=mpi_operator.RELEASES_FILE)
    args = parser.parse_args(argv)
    try:
        if not _VERSION.match(args.version):
            raise FactsError(f"--version {args.version!r}: give the release tag, such as v0.6.0")
        try:
            documents = list(yaml.safe_load_all(args.manifest.read_text()))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
            reason = " ".join(str(err).split())  # one line: the YAML error spans several
            raise FactsError(f"{args.manifest}: cannot read it as YAML ({reason})") from None
        entry = release_entry(documents, args.commit)
    except FactsError as err:
        print(f"mpi_operator_facts: {err}", file=sys.stderr)
        return 2
    data = json.loads(args.out.read_text()) if args.out.is_file() else {}
    data.setdefault("source", mpi_operator.SOURCE)
    data.setdefault("releases", {})[args.version] = entry
    data["releases"] = dict(sorted(data["releases"].items()))
    args.out.write_text(json.dumps(data, indent=2) + "\n")
    print(f"{args.out}: {args.version} at {args.commit}, {len(entry['objects'])} objects")
    return 0


if __name__ == "__main__":
    sys.exit(main())
