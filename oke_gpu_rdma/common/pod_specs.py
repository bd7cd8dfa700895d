"""Where a Kubernetes object carries pod specs: found by structure, in every kind.

A core/v1 PodSpec is an object with a `containers` list under a field named `spec` (kubernetes
`staging/src/k8s.io/api/core/v1/types.go`: `Pod.spec`, `PodTemplateSpec.spec`). Kinds put the
PodTemplateSpec in different places: `spec.template` (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job,
ReplicationController), `spec.jobTemplate.spec.template` (CronJob), `spec.*ReplicaSpecs.<role>.template`
(MPIJob, PyTorchJob), `spec.replicatedJobs[].template.spec.template` (JobSet),
`spec.leaderWorkerTemplate.{leader,worker}Template` (LeaderWorkerSet), and core/v1 `PodTemplate` at the
top level, `template` (types.go `PodTemplate.Template`), beside `metadata`, not under a `spec`. List kinds
(`DeploymentList`) hold whole objects under `items`. So the walk starts at every top-level field of the
object but its metadata and status, and a kind nobody listed here is read like the others.

The policy pack (``policies/oke_rdma_policies/kube.py``) and the preview's schedulability check
(``preview/schedulability.py``) both use :func:`find_pod_specs`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

# A ConfigMap with this label holds, in each data value, a Kubernetes object as JSON that a controller of the
# stack creates later (the scheduled fabric check's MPIJobs): its pod specs are the stack's pods as much as
# a declared object's, so the schedulability check places them too.
POD_TEMPLATES_LABEL: Final = "oke-gpu-rdma/pod-templates"

# Top-level fields that never hold a pod spec of the object (status is written by controllers).
NOT_POD_FIELDS: Final = frozenset({"apiVersion", "kind", "metadata", "status"})


def _is_pod_spec(path: str, value: Mapping[str, Any]) -> bool:
    return path.rsplit(".", 1)[-1] == "spec" and "containers" in value


def find_pod_specs(
    obj: Mapping[str, Any],
    is_pod_spec: Callable[[str, Mapping[str, Any]], bool] = _is_pod_spec,
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(path, PodSpec) for every pod spec of ``obj`` (a Kubernetes object as JSON data), in field order.

    ``is_pod_spec`` decides whether a mapping at a path is a PodSpec (default: a `spec` with `containers`);
    a pod spec's own fields are not searched further.
    """
    for key, value in obj.items():
        if key not in NOT_POD_FIELDS:
            yield from _walk(value, str(key), is_pod_spec)


def _walk(
    value: Any, path: str, is_pod_spec: Callable[[str, Mapping[str, Any]], bool]
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if isinstance(value, Mapping):
        if is_pod_spec(path, value):
            yield path, value
            return
        for key, item in value.items():
            yield from _walk(item, f"{path}.{key}", is_pod_spec)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _walk(item, f"{path}[{i}]", is_pod_spec)
