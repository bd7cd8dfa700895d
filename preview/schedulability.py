"""Schedulability at preview: does every pod the stack starts find a node pool of the stack?

The pods come from what the offline run recorded: every pod spec in a Kubernetes object the program
declares (found by structure: Pods, Jobs, DaemonSets, MPIJob replicas), the workloads of the Helm
releases it installs and of the MPI operator manifest (placement as data, oke_gpu_rdma/chart_workloads.py),
and CoreDNS, which every cluster runs. The pools come from the stack config (stack_config/pool_nodes.py):
the GPU pools and the system pool, with their labels, taints and device plugins. The rules are
Kubernetes' (oke_gpu_rdma/scheduling.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from oke_gpu_rdma import chart_workloads, charts, gpu_operator, resource_types, yamltext
from oke_gpu_rdma.scheduling import SYSTEM_PRIORITY_CLASSES, PodPlacement, Verdict, check, from_pod_spec
from stack_config import gpu_operator_plan
from stack_config.loading import Stack
from stack_config.pool_nodes import planned_pools, unseen_pools

from .mock_runtime import RecordedResource


def _pod_specs(value: Any, path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every core/v1 PodSpec under ``value``: a `...spec` object with a `containers` list."""
    if isinstance(value, Mapping):
        if path.endswith("spec") and isinstance(value.get("containers"), list):
            yield path, value
            return
        for key, item in value.items():
            yield from _pod_specs(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _pod_specs(item, f"{path}[{i}]")


def _role(path: str) -> str:
    """`Launcher` for spec.mpiReplicaSpecs.Launcher.template.spec; empty for a plain pod or template."""
    parts = path.split(".")
    for i, part in enumerate(parts[:-1]):
        if part.endswith("ReplicaSpecs"):
            return f" {parts[i + 1]}"
    return ""


def _claim_classes(resources: list[RecordedResource]) -> dict[tuple[str, str], frozenset[str]]:
    """Device classes each ResourceClaimTemplate of the run requests, by (namespace, name)."""
    found: dict[tuple[str, str], frozenset[str]] = {}
    for r in resources:
        if not (
            r.type.startswith(resource_types.DRA_GROUP_PREFIX) and r.type.endswith(":ResourceClaimTemplate")
        ):
            continue
        metadata = r.inputs.get("metadata") or {}
        requests = (((r.inputs.get("spec") or {}).get("spec") or {}).get("devices") or {}).get(
            "requests"
        ) or []
        classes = set()
        for request in requests:
            exactly = request.get("exactly") if isinstance(request, Mapping) else None
            name = (exactly or request).get("deviceClassName") if isinstance(request, Mapping) else None
            if isinstance(name, str):
                classes.add(name)
        found[(str(metadata.get("namespace") or "default"), str(metadata.get("name")))] = frozenset(classes)
    return found


def pod_placements(resources: list[RecordedResource]) -> list[PodPlacement]:
    """The placement of every pod the recorded run starts, in registration order."""
    classes = _claim_classes(resources)
    pods: list[PodPlacement] = []
    clusters = 0
    for r in resources:
        if r.type == "pulumi:providers:kubernetes":
            clusters += 1
        if r.type == resource_types.HELM_RELEASE:
            values = r.inputs.get("values") or {}
            pods += chart_workloads.release_workloads(
                str(r.inputs.get("chart")), str(r.inputs.get("name") or r.name), values
            )
            continue
        if not r.type.startswith("kubernetes:") or r.type.startswith(resource_types.DRA_GROUP_PREFIX):
            continue
        if r.type in resource_types.HELM_TYPES:
            continue
        metadata = r.inputs.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "default")
        kind = r.type.rsplit(":", 1)[-1]
        for path, spec in _pod_specs(r.inputs.get("spec"), "spec"):
            wanted: frozenset[str] = frozenset()
            for claim in spec.get("resourceClaims") or []:
                template = claim.get("resourceClaimTemplateName") if isinstance(claim, Mapping) else None
                if isinstance(template, str):
                    wanted |= classes.get((namespace, template), frozenset())
            name = f"{kind} {namespace}/{metadata.get('name') or r.name}{_role(path)}"
            pods.append(from_pod_spec(name, spec, wanted, daemonset=kind == "DaemonSet"))
    if clusters:
        pods.append(chart_workloads.COREDNS)
    return pods


# How the operand pods of a cluster's own GPU Operator are named (gpuOperator.enabled: false).
CLUSTER_OPERATOR: Final = "(the cluster's GPU Operator, not managed by this stack)"


def _operator_release(resources: list[RecordedResource]) -> tuple[str, Mapping[str, Any]] | None:
    """The gpu-operator release of the run, as (how its pods are named, its values)."""
    for r in resources:
        if (
            r.type == resource_types.HELM_RELEASE
            and str(r.inputs.get("chart")) == charts.GPU_OPERATOR_CHART_NAME
        ):
            release = str(r.inputs.get("name") or r.name)
            return f"(chart {charts.GPU_OPERATOR_CHART_NAME}, release {release})", r.inputs.get(
                "values"
            ) or {}
    return None


def _priority_classes(resources: list[RecordedResource]) -> frozenset[str]:
    """The system PriorityClasses and those the run declares."""
    declared = {
        str((r.inputs.get("metadata") or {}).get("name"))
        for r in resources
        if r.type.endswith(":PriorityClass") and r.type.startswith("kubernetes:scheduling.k8s.io/")
    }
    return SYSTEM_PRIORITY_CLASSES | declared


def check_run(resources: list[RecordedResource], stack: Stack) -> Verdict:
    """The check for one offline run of ``stack``: every pod placed, and every GPU Operator operand Ready.

    Without a gpu-operator release in the run the cluster's own operator is taken as configured the way
    :func:`stack_config.gpu_operator_plan.required_settings` says (which the verdict carries as settings).
    """
    config = stack.config
    vf_resources = stack.sriov.pool_vf_resources() if stack.sriov is not None else {}
    pools = planned_pools(config, vf_resources)
    pods = pod_placements(resources)
    operator = _operator_release(resources)
    if operator is None and config.node_pools:
        assumed = gpu_operator_plan.stack_operator_values(config)
        operator = (CLUSTER_OPERATOR, assumed)
        pods += [pod for _, pod in gpu_operator.operand_placements(assumed, CLUSTER_OPERATOR)]
    verdict = check(pods, pools, unseen_pools(config), _priority_classes(resources))
    problems = list(verdict.problems)
    plugins = [p for p in pods if p.provides_resources]
    if operator is not None:
        where, values = operator
        problems += gpu_operator.operand_problems(values, pools, plugins, where)
    problems += gpu_operator.device_plugin_gaps(pools, plugins)
    return Verdict(
        tuple(problems),
        verdict.notes,
        verdict.placements,
        tuple(gpu_operator_plan.required_settings(config)),
    )


PLACEMENT_FILE = "placement.yaml"


def placement_text(verdict: Verdict) -> str:
    """`rendered/<stack>/placement.yaml`: each pod the stack starts and the pools of the stack that admit it."""
    document: dict[str, Any] = {
        "pods": [{"pod": name, "pools": list(pools)} for name, pools in sorted(verdict.placements)],
    }
    if verdict.notes:
        document["notChecked"] = list(verdict.notes)
    if verdict.settings:
        document["clusterSettings"] = list(verdict.settings)
    header = (
        "# Where each pod the stack starts can run: the node pools of the stack that admit it by node selector,\n"
        "# affinity, taints and device requests (preview/schedulability.py). [] with notChecked: an existing\n"
        "# cluster's other pools, which the preview cannot see. clusterSettings: what the cluster's own GPU Operator\n"
        "# must be configured with (stack_config/gpu_operator_plan.py).\n"
    )
    return header + yamltext.dump(document)
