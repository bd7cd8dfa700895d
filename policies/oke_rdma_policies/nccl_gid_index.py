"""nccl-gid-index-with-dranet (stack): workloads with DRANET rails must not set NCCL_IB_GID_INDEX.

Checked: `env` of every container, `envFrom` ConfigMaps the stack declares, and command/args text
(`mpirun -x NCCL_IB_GID_INDEX=3`, `export NCCL_IB_GID_INDEX=3`). For MPIJob and other multi-replica
jobs every replica counts once one replica uses rails: the launcher passes `-x` to the workers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from pulumi_policy import StackValidationPolicy

from oke_gpu_rdma import resource_types
from oke_gpu_rdma.nccl import NCCL_GID_INDEX_VARIABLE
from oke_gpu_rdma.pack_config import PolicyName

from . import settings
from .kube import Res, container_name, containers, pod_specs
from .report import Reporter
from .stack import StackView, validate_each_workload
from .values import UNKNOWN, as_list

VARIABLE: Final = NCCL_GID_INDEX_VARIABLE
_IN_TEXT: Final = re.compile(rf"\b{VARIABLE}\b")


def _text_mentions(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    return any(_IN_TEXT.search(line) and not line.lstrip().startswith("unset") for line in value.splitlines())


def _settings(view: StackView, workload: Res, path: str, container: Mapping[str, Any]) -> list[str]:
    """How the container sets the variable (empty when it does not)."""
    found = []
    for i, env in enumerate(as_list(container.get("env"), f"{path}.env")):
        if isinstance(env, Mapping) and env.get("name") == VARIABLE:
            value = env.get("value")
            shown = f"={value}" if isinstance(value, str) else " from valueFrom"
            found.append(f"env[{i}] {VARIABLE}{shown}")
    for i, source in enumerate(as_list(container.get("envFrom"), f"{path}.envFrom")):
        ref = source.get("configMapRef") if isinstance(source, Mapping) else None
        name = ref.get("name") if isinstance(ref, Mapping) else None
        for cm in view.of_type(resource_types.CONFIG_MAP):
            if cm.object_name == name and cm.namespace == workload.namespace:
                data = cm.props.get("data")
                if isinstance(data, Mapping) and VARIABLE in data:
                    found.append(f"envFrom[{i}] ConfigMap {name} ({VARIABLE}={data[VARIABLE]})")
    for key in ("command", "args"):
        if any(_text_mentions(v) for v in as_list(container.get(key), f"{path}.{key}") if v is not UNKNOWN):
            found.append(f"{key} (e.g. mpirun -x {VARIABLE})")
    return found


def _check(view: StackView, workload: Res, rep: Reporter) -> None:
    pods = list(pod_specs(workload))
    rails = []
    notes = []
    for pod in pods:
        found, missing = view.rail_claims(workload, pod)
        rails += found
        notes += missing
    for pod in pods:
        for path, container in containers(pod):
            settings = _settings(view, workload, path, container)
            if not settings:
                continue
            where = f"{workload.label} {pod.where} container {container_name(path, container)}"
            if not rails:
                for note in notes:
                    rep.unchecked(f"{where} sets {VARIABLE} and {note}")
                continue
            ref, claim, _ = rails[0]
            rep.violation(
                f"{where} sets {VARIABLE} ({'; '.join(settings)}) while the workload uses DRANET rails "
                f"(claim {ref.ref.pod_claim} = {claim.label}). The oke-rdma profile gives each pod an IPvlan "
                "child whose RoCE v2 GID has its own index, not the parent rail's (it was 5 on the seed nodes), "
                "so a fixed index points NCCL at a GID that is not the pod's address. Fix: remove "
                f"{VARIABLE}; NCCL finds the child's GID index itself (seed 000, DRANET OKE documentation)",
                workload.urn,
            )


policy = StackValidationPolicy(
    name=PolicyName.NCCL_GID_INDEX,
    description="Workloads that use DRANET rails must not set NCCL_IB_GID_INDEX (env or mpirun -x).",
    validate=validate_each_workload(_check),
    enforcement_level=settings.level(PolicyName.NCCL_GID_INDEX),
)
