"""Regenerate oke_gpu_rdma/common/node_fields.json: every field of a Node (ObjectMeta, NodeSpec, NodeStatus) at each
Kubernetes minor the stack supports, from the API server's OpenAPI as kubernetes-validate ships it (its
`kubernetes-json-schema/v1.<minor>.0-local/_definitions.json`, pinned in requirements-preview.txt).

The admission policies of the stack's node writers compare the whole node but for the fields each writer may
change (oke_gpu_rdma/common/admission_cel.py node_unchanged_but), so they need the exact field list of the API server
they run on: a field the server does not know is a CEL compile error there, and one the list misses would go
unchecked. tests/tools/test_node_fields.py checks the file is what this script writes.

Usage: venv/bin/python -m tools.node_fields
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kubernetes_validate  # noqa: E402
from kubernetes_validate import utils  # noqa: E402

from stack_config.settings_types import MIN_KUBERNETES_MINOR  # noqa: E402

OUT = ROOT / "oke_gpu_rdma" / "common" / "node_fields.json"
DEFINITIONS = {
    "metadata": "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    "spec": "io.k8s.api.core.v1.NodeSpec",
    "status": "io.k8s.api.core.v1.NodeStatus",
}


def schema_dir(version: str) -> Path:
    return Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / f"v{version}-local"


def generate() -> dict[str, Any]:
    versions = sorted(
        {v for v in utils.all_versions() if int(v.split(".")[1]) >= MIN_KUBERNETES_MINOR},
        key=lambda v: tuple(int(p) for p in v.split(".")),
    )
    by_minor: dict[str, dict[str, list[str]]] = {}
    for version in versions:
        defs = json.loads((schema_dir(version) / "_definitions.json").read_text())["$defs"]
        minor = version.rsplit(".", 1)[0]
        by_minor[minor] = {section: sorted(defs[name]["properties"]) for section, name in DEFINITIONS.items()}
    return {
        "source": f"kubernetes-validate {_installed_version()}, kubernetes-json-schema/v<minor>.0-local/_definitions.json "
        f"({', '.join(DEFINITIONS.values())})",
        "regenerate": "venv/bin/python -m tools.node_fields",
        "fields": by_minor,
    }


def _installed_version() -> str:
    from importlib.metadata import version

    return version("kubernetes-validate")


def render() -> str:
    return json.dumps(generate(), indent=2) + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    print(f"wrote {OUT.relative_to(ROOT)}")
