"""Operators' CRD schemas at their pinned versions, as data: one JSON file per source, written by
`python -m tools.record_crd_schemas --source <name>` from the project's own CRD files at a tag (each file names the
repository, tag, commit and the path of each kind's CRD, and holds the served version's openAPIV3Schema
without its descriptions). The preview validates the rendered custom resources against them
(preview/schema_check.py); the project never holds the CRD files themselves.

- Kueue (kubernetes-sigs/kueue, the chart's tag): Topology, ResourceFlavor, ClusterQueue, LocalQueue.
- The Prometheus Operator's PodMonitor and PrometheusRule as kube-prometheus-stack ships them at the pinned chart
  tag (prometheus-community/helm-charts charts/kube-prometheus-stack/charts/crds/crds/): the CRDs the stack's
  own release installs.
- The MPI Operator's MPIJob, from the manifest the stack applies (kubeflow/mpi-operator deploy/v2beta1/
  mpi-operator.yaml at the pinned release): the API server prunes any pod template field its schema lacks.
- The NVIDIA DRA driver's ComputeDomain (kubernetes-sigs/dra-driver-nvidia-gpu deployments/helm/
  dra-driver-nvidia-gpu/crds/ at the pinned commit, oke_gpu_rdma/drivers/compute_domains.py: the chart version has no tag,
  so the file's tag is that commit). It also keeps the CRD's group, names, scope and subresources, from which the
  e2e control plane builds the CRD (tests/e2e/upstream.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

# Each file sits in the folder of the capability whose objects it checks.
LIBRARY: Final = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class SchemaFile:
    """One source's schemas: ``path`` is the JSON file the tool writes."""

    path: Path

    def load(self) -> dict[str, Any]:
        """The file's content: repository, tag, commit, apiVersion, and per kind its source path and schema."""
        return _read(self.path)

    def schema(self, api_version: str, kind: str) -> dict[str, Any] | None:
        """The openAPIV3Schema of ``kind`` at ``api_version`` (None for another version or kind)."""
        data = self.load()
        if api_version != data["apiVersion"] or kind not in data["kinds"]:
            return None
        found: dict[str, Any] = data["kinds"][kind]["schema"]
        return found

    def provenance(self) -> str:
        """Where the schemas come from, for a report line."""
        data = self.load()
        if data["tag"] == data["commit"]:  # pinned by commit (no release tag)
            return f"{data['repository']} commit {data['commit'][:12]} CRDs"
        return f"{data['repository']} {data['tag']} ({data['commit'][:12]}) CRDs"


@cache
def _read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


KUEUE: Final = SchemaFile(LIBRARY / "scheduling" / "kueue_crd_schemas.json")
PROMETHEUS_OPERATOR: Final = SchemaFile(LIBRARY / "monitoring" / "prometheus_operator_crd_schemas.json")
MPI_OPERATOR: Final = SchemaFile(LIBRARY / "scheduling" / "mpi_operator_crd_schemas.json")
COMPUTE_DOMAINS: Final = SchemaFile(LIBRARY / "drivers" / "compute_domain_crd_schemas.json")
SOURCES: Final = (KUEUE, PROMETHEUS_OPERATOR, MPI_OPERATOR, COMPUTE_DOMAINS)


def find(api_version: str, kind: str) -> tuple[SchemaFile, dict[str, Any]] | None:
    """The source that has a schema for ``kind`` at ``api_version``, and the schema."""
    for source in SOURCES:
        schema = source.schema(api_version, kind)
        if schema is not None:
            return source, schema
    return None
