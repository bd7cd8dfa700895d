"""nccl-gid-index-with-dranet (stack): workloads with DRANET rails must not set NCCL_IB_GID_INDEX.

Checked: the environment as the kubelet builds it (`env`, and `envFrom` ConfigMaps and Secrets the
stack declares, with their `prefix`; :mod:`oke_rdma_policies.environment`), and command/args text
(`mpirun -x NCCL_IB_GID_INDEX=3`, `export NCCL_IB_GID_INDEX=3`; a script that unsets the variable before
it uses it does not set it). For MPIJob and other multi-replica jobs every replica counts once one
replica uses rails: the launcher passes `-x` to the workers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from oke_gpu_rdma.nccl import NCCL_GID_INDEX_VARIABLE

from ..environment import script_sets, settings_of
from ..kube import PlainResource, container_name, containers, pod_specs
from ..registry import stack_rule
from ..report import Reporter
from ..stack import StackView, validate_each_workload
from ..values import as_list

VARIABLE: Final = NCCL_GID_INDEX_VARIABLE


def _settings(
    view: StackView, workload: PlainResource, path: str, container: Mapping[str, Any], reporter: Reporter
) -> list[str]:
    """How the container sets the variable (empty when it does not)."""
    notes: list[str] = []
    found = [
        f"{s.source} {VARIABLE}{s.shown}"
        for s in settings_of(view, workload, path, container, VARIABLE, notes)
    ]
    for note in notes:
        reporter.unchecked(f"{workload.label}: {note}; {VARIABLE} not checked there")
    for key in ("command", "args"):
        texts = [v for v in as_list(container.get(key), f"{path}.{key}") if isinstance(v, str)]
        if script_sets("\n".join(texts), VARIABLE):
            found.append(f"{key} (e.g. mpirun -x {VARIABLE})")
    return found


def _check(view: StackView, workload: PlainResource, reporter: Reporter) -> None:
    pods = list(pod_specs(workload))
    rails = []
    notes = []
    for pod in pods:
        found, missing = view.rail_claims(workload, pod)
        rails += found
        notes += missing
    for pod in pods:
        for path, container in containers(pod):
            settings = _settings(view, workload, path, container, reporter)
            if not settings:
                continue
            where = f"{workload.label} {pod.where} container {container_name(path, container)}"
            if not rails:
                for note in notes:
                    reporter.unchecked(f"{where} sets {VARIABLE} and {note}")
                continue
            ref, claim, _ = rails[0]
            reporter.violation(
                f"{where} sets {VARIABLE} ({'; '.join(settings)}) while the workload uses DRANET rails "
                f"(claim {ref.ref.pod_claim} = {claim.label}). The oke-rdma profile gives each pod an IPvlan "
                "child whose RoCE v2 GID has its own index, not the parent rail's (it was 5 on the seed nodes), "
                "so a fixed index points NCCL at a GID that is not the pod's address. Fix: remove "
                f"{VARIABLE}; NCCL finds the child's GID index itself (seed 000, DRANET OKE documentation)",
                workload.urn,
            )


RULE = stack_rule(
    name="nccl-gid-index-with-dranet",
    level="mandatory",
    description="Workloads that use DRANET rails must not set NCCL_IB_GID_INDEX (env or mpirun -x).",
    validate=validate_each_workload(_check),
)
