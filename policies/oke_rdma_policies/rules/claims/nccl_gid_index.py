"""nccl-gid-index-with-dranet (stack): workloads with DRANET rails must not set the NCCL variables that
break with DRANET children (`NCCL_IB_GID_INDEX`, `NCCL_IB_HCA`: :data:`oke_gpu_rdma.drivers.nccl.NCCL_FORBIDDEN_WITH_DRANET`).

Checked in every workload kind (:mod:`oke_gpu_rdma.common.pod_specs`): the environment as the kubelet builds it
(`env`, and `envFrom` ConfigMaps and Secrets the stack declares, with their `prefix`;
:mod:`oke_rdma_policies.environment`), and command/args text after the kubelet's `$(VAR)` expansion
(`mpirun -x NCCL_IB_GID_INDEX=$(GID)`, `export NCCL_IB_HCA=mlx5_0`; a script that unsets the variable
before it uses it does not set it). For MPIJob and other multi-replica jobs every replica counts once one
replica uses rails: the launcher passes `-x` to the workers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oke_gpu_rdma.drivers.nccl import NCCL_FORBIDDEN_REASONS, NCCL_FORBIDDEN_WITH_DRANET
from oke_rdma_policies.environment import command_texts, script_sets, settings_of
from oke_rdma_policies.kube import PlainResource, container_name, containers, pod_specs
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter
from oke_rdma_policies.stack import StackView, validate_each_workload


def _settings(
    view: StackView,
    workload: PlainResource,
    path: str,
    container: Mapping[str, Any],
    variable: str,
    reporter: Reporter,
) -> list[str]:
    """How the container sets ``variable`` (empty when it does not)."""
    notes: list[str] = []
    found = [
        f"{s.source} {variable}{s.shown}"
        for s in settings_of(view, workload, path, container, variable, notes)
    ]
    for note in notes:
        reporter.unchecked(f"{workload.label}: {note}; {variable} not checked there")
    for key, items in command_texts(view, workload, path, container).items():
        texts = [v for v in items if isinstance(v, str)]
        if script_sets("\n".join(texts), variable):
            found.append(f"{key} (e.g. mpirun -x {variable})")
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
            for variable in NCCL_FORBIDDEN_WITH_DRANET:
                settings = _settings(view, workload, path, container, variable, reporter)
                if not settings:
                    continue
                where = f"{workload.label} {pod.where} container {container_name(path, container)}"
                if not rails:
                    for note in notes:
                        reporter.unchecked(f"{where} sets {variable} and {note}")
                    continue
                ref, claim, _ = rails[0]
                reporter.violation(
                    f"{where} sets {variable} ({'; '.join(settings)}) while the workload uses DRANET rails "
                    f"(claim {ref.ref.pod_claim} = {claim.label}). {NCCL_FORBIDDEN_REASONS[variable]} "
                    "(seed 000, DRANET OKE documentation)",
                    workload.urn,
                )


RULE = stack_rule(
    name="nccl-gid-index-with-dranet",
    level="mandatory",
    description=(
        f"Workloads that use DRANET rails must not set {' or '.join(NCCL_FORBIDDEN_WITH_DRANET)} (env, envFrom, "
        "or command/args such as mpirun -x, after $(VAR) expansion)."
    ),
    validate=validate_each_workload(_check),
)
