"""Every rendered Kubernetes manifest against the OpenAPI schema of the stack's Kubernetes version.

kubernetes-validate (PyPI, pinned in requirements-preview.txt: the preview's alone, `pulumi up` never loads it) ships the JSON schemas generated from each
Kubernetes release's OpenAPI document, in a strict variant that refuses fields the schema does not
declare (`additionalProperties: false`): a misspelt or misplaced field, which the API server would
drop or refuse, fails here instead of at `pulumi up`. The schemas are taken at the newest release the
library ships that is not newer than the stack's `kubernetesVersion` (major.minor), and the report
says which.

Custom resources (MPIJob, NicClusterPolicy, SriovNetwork, ...) have no schema there: their CRDs are
the operators'. They are named as not validated, never passed silently. Kueue's kinds and the Prometheus
Operator's PodMonitor and PrometheusRule are validated against their own CRD schemas at the pinned tags
(oke_gpu_rdma/common/crd_schemas.py, preview/crd_schema.py): the structural schema strictly, then the CEL rules a
create evaluates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import version as installed_version
from typing import Any

import kubernetes_validate
from kubernetes_validate import utils
from packaging.version import Version

from oke_gpu_rdma.common import crd_schemas

from . import crd_schema

LIBRARY = "kubernetes-validate"


class SchemaVersionError(ValueError):
    """The stack's Kubernetes version is older than every schema the library ships."""


def schema_version(kubernetes_version: str) -> str:
    """The newest shipped schema version (`1.36.0`) whose major.minor is not newer than the stack's
    (`v1.36.4` -> 1.36; `v1.38.1` -> the newest shipped)."""
    wanted = Version(kubernetes_version.removeprefix("v"))
    shipped = sorted({Version(v) for v in utils.all_versions()})
    fits = [v for v in shipped if (v.major, v.minor) <= (wanted.major, wanted.minor)]
    if not fits:
        raise SchemaVersionError(
            f"cluster kubernetesVersion {kubernetes_version}: {LIBRARY} {installed_version(LIBRARY)} ships "
            f"schemas from v{shipped[0]} on; pin an older {LIBRARY} in requirements-preview.txt"
        )
    return str(fits[-1])


@dataclass
class SchemaReport:
    kubernetes_version: str
    """The stack's."""
    schema_version: str
    """The schemas used (schema_version())."""
    validated: int = 0
    errors: list[str] = field(default_factory=list)
    """`<apiVersion>/<kind> <namespace>/<name>: <path>: <message>`, one per manifest that fails."""
    unvalidated: dict[str, int] = field(default_factory=dict)
    """`<apiVersion>/<kind>` of custom resources without a shipped schema -> how many objects."""
    crd_validated: dict[str, int] = field(default_factory=dict)
    """Custom resources valid against their CRD's schema: the schemas' provenance -> how many objects."""
    transition_rules: int = 0
    """CEL transition rules (oldSelf) of those CRDs, which only an update evaluates."""

    def lines(self) -> list[str]:
        head = (
            f"Schemas: {self.validated} manifest(s) valid against the Kubernetes v{self.schema_version} "
            f"OpenAPI schemas (strict; {LIBRARY} {installed_version(LIBRARY)}, the newest it ships not newer "
            f"than the stack's {self.kubernetes_version})"
        )
        if self.errors:
            head = (
                f"Schemas: {len(self.errors)} manifest(s) invalid against the Kubernetes v{self.schema_version} "
                f"OpenAPI schemas (strict; {LIBRARY} {installed_version(LIBRARY)}; stack {self.kubernetes_version}):"
            )
        lines = [head, *(f"  {e}" for e in self.errors)]
        for provenance, count in sorted(self.crd_validated.items()):
            lines.append(
                f"  {count} custom resource(s) valid against {provenance} (strict, with their CEL rules)"
            )
        if self.crd_validated:
            lines.append(
                f"  {self.transition_rules} update-only CEL rule(s) of those CRDs not evaluated on a create"
            )
        if self.unvalidated:
            kinds = ", ".join(f"{kind} ({n})" for kind, n in sorted(self.unvalidated.items()))
            lines.append(f"  not validated (custom resources, no schema shipped): {kinds}")
        return lines


def _where(error: Any) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path) or "."


def check(manifests: Iterable[Mapping[str, Any]], kubernetes_version: str) -> SchemaReport:
    """Validate each manifest (strict) against the schemas for `kubernetes_version`."""
    report = SchemaReport(kubernetes_version, schema_version(kubernetes_version))
    for manifest in manifests:
        kind = f"{manifest['apiVersion']}/{manifest['kind']}"
        metadata = manifest.get("metadata") or {}
        name = "/".join(str(p) for p in (metadata.get("namespace"), metadata.get("name")) if p)
        crd = crd_schemas.find(str(manifest["apiVersion"]), str(manifest["kind"]))
        if crd is not None:
            source, schema = crd
            found = crd_schema.check(manifest, schema)
            report.transition_rules += found.transition_rules
            report.errors += [f"{kind} {name}: {e}" for e in found.errors]
            if not found.errors:
                provenance = source.provenance()
                report.crd_validated[provenance] = report.crd_validated.get(provenance, 0) + 1
            continue
        try:
            kubernetes_validate.validate(dict(manifest), report.schema_version, strict=True)
        except utils.SchemaNotFoundError:
            report.unvalidated[kind] = report.unvalidated.get(kind, 0) + 1
        except utils.ValidationError as err:
            report.errors.append(f"{kind} {name}: {_where(err)}: {err.message}")
        else:
            report.validated += 1
    return report
