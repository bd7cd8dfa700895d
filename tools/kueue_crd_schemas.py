"""Regenerate `oke_gpu_rdma/kueue_crd_schemas.json`: the OpenAPI schemas of the Kueue kinds the stack declares,
as Kueue's CRDs define them at the pinned tag, so that the preview validates the rendered objects offline
(preview/schema_check.py) without the project holding Kueue's CRD files.

It reads the CRDs from a kubernetes-sigs/kueue git directory at a tag (`config/components/crd/bases/
kueue.x-k8s.io_<plural>.yaml`, the files the chart's templates/crd/ are generated from), keeps the schema of the
served version the stack writes (v1beta2) for Topology, ResourceFlavor, ClusterQueue and LocalQueue with the
descriptions dropped, and records where each came from (repository, tag, commit, path).

Usage (a clone or a mirror of https://github.com/kubernetes-sigs/kueue):

    python -m tools.kueue_crd_schemas --git-dir <kueue>/.git --tag v0.19.2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oke_gpu_rdma import kueue_schemas  # noqa: E402
from oke_gpu_rdma.releases import kueue  # noqa: E402

REPOSITORY = "https://github.com/kubernetes-sigs/kueue"
PLURALS = {
    kueue.TOPOLOGY_KIND: "topologies",
    kueue.RESOURCE_FLAVOR_KIND: "resourceflavors",
    kueue.CLUSTER_QUEUE_KIND: "clusterqueues",
    kueue.LOCAL_QUEUE_KIND: "localqueues",
}


class SchemaSourceError(Exception):
    """The CRDs at the tag do not give a schema; the message says which and why."""


def crd_path(kind: str) -> str:
    return f"config/components/crd/bases/{kueue.API_GROUP}_{PLURALS[kind]}.yaml"


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


def generate(git_dir: Path, tag: str) -> dict[str, Any]:
    commit = _git(git_dir, "rev-parse", f"{tag}^{{commit}}").strip()
    version = kueue.API_VERSION.split("/")[1]
    schemas: dict[str, Any] = {}
    for kind in kueue.KINDS:
        path = crd_path(kind)
        crd = yaml.safe_load(_git(git_dir, "show", f"{commit}:{path}"))
        schemas[kind] = {"source": path, "schema": served_schema(crd, kind, version)}
    return {
        "repository": REPOSITORY,
        "tag": tag,
        "commit": commit,
        "apiVersion": kueue.API_VERSION,
        "kinds": schemas,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--git-dir", type=Path, required=True, help="a kubernetes-sigs/kueue git directory")
    parser.add_argument(
        "--tag", default=f"v{kueue.DEFAULT_VERSION}", help="the release tag (default: the pinned one)"
    )
    parser.add_argument("--out", type=Path, default=kueue_schemas.SCHEMAS_FILE)
    args = parser.parse_args(argv)
    try:
        data = generate(args.git_dir, args.tag)
    except SchemaSourceError as err:
        print(f"kueue_crd_schemas: {err}", file=sys.stderr)
        return 1
    args.out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out} ({', '.join(data['kinds'])} at {data['tag']}, {data['commit']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
