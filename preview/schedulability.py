"""Schedulability at preview: does every pod the stack starts find a node pool of the stack?

The pods come from what the offline run recorded: every pod spec in a Kubernetes object the program
declares (found by structure: Pods, Jobs, DaemonSets, MPIJob replicas), the workloads of the Helm
releases it installs (placement as data, oke_gpu_rdma/common/chart_workloads.py) and of the MPI operator's
manifest (oke_gpu_rdma/scheduling/mpi_operator.py), both applied at apply time,
the ones the Network Operator starts for the NicClusterPolicy (oke_gpu_rdma/network_operator.py),
and CoreDNS, which every cluster runs. The pools come from the stack config (stack_config/scheduling/pool_nodes.py):
the GPU pools and the system pool, with their labels, taints and device plugins. The rules are
Kubernetes' (oke_gpu_rdma/scheduling/pod_admission.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from oke_gpu_rdma.claims.spec import API_VERSIONS, claim_spec_to_v1, request_classes
from oke_gpu_rdma.common import chart_workloads, resource_types, yamltext
from oke_gpu_rdma.common.pod_specs import POD_TEMPLATES_LABEL, find_pod_specs
from oke_gpu_rdma.drivers import gpu_operator_chart
from oke_gpu_rdma.drivers import gpu_operator_operands as gpu_operator
from oke_gpu_rdma.scheduling import mpi_operator
from oke_gpu_rdma.scheduling.pod_admission import (
    SYSTEM_PRIORITY_CLASSES,
    PodPlacement,
    Verdict,
    check,
    from_pod_spec,
)
from oke_gpu_rdma.sriov import network_operator_chart as network_operator
from stack_config.drivers import gpu_operator_plan
from stack_config.loading import Stack
from stack_config.scheduling.pool_nodes import planned_pools, unseen_pools

from .mock_runtime import RecordedResource


def _is_pod_spec(path: str, value: Mapping[str, Any]) -> bool:
    return path.rsplit(".", 1)[-1] == "spec" and isinstance(value.get("containers"), list)


def _role(path: str) -> str:
    """`Launcher` for spec.mpiReplicaSpecs.Launcher.template.spec; empty for a plain pod or template."""
    parts = path.split(".")
    for i, part in enumerate(parts[:-1]):
        if part.endswith("ReplicaSpecs"):
            return f" {parts[i + 1]}"
    return ""


def _claim_classes(
    resources: list[RecordedResource],
) -> dict[tuple[str, str, str], tuple[frozenset[str], ...]]:
    """Per ResourceClaim and ResourceClaimTemplate of the run, by (kind, namespace, name): for each request
    the DeviceClasses that can serve it (one for `exactly`, each `firstAvailable` subrequest's), read as the
    policy pack reads them (:func:`oke_gpu_rdma.claims.spec.request_classes`, in the v1 form)."""
    found: dict[tuple[str, str, str], tuple[frozenset[str], ...]] = {}
    for r in resources:
        kind = r.type.rsplit(":", 1)[-1]
        if not r.type.startswith(resource_types.DRA_GROUP_PREFIX) or kind not in _CLAIM_KINDS.values():
            continue
        metadata = r.inputs.get("metadata") or {}
        spec = r.inputs.get("spec") or {}
        if kind == "ResourceClaimTemplate":
            spec = spec.get("spec") or {} if isinstance(spec, Mapping) else {}
        version = r.type.split(":")[1]
        claim = (
            claim_spec_to_v1(spec, version) if isinstance(spec, Mapping) and version in API_VERSIONS else {}
        )
        requests = request_classes(claim).values()
        key = (kind, str(metadata.get("namespace") or "default"), str(metadata.get("name")))
        found[key] = tuple(frozenset(c for c in classes if isinstance(c, str)) for classes in requests)
    return found


_CLAIM_KINDS = {"resourceClaimName": "ResourceClaim", "resourceClaimTemplateName": "ResourceClaimTemplate"}


def _wanted(
    spec: Mapping[str, Any],
    namespace: str,
    classes: Mapping[tuple[str, str, str], tuple[frozenset[str], ...]],
) -> tuple[frozenset[str], tuple[frozenset[str], ...]]:
    """The classes a pod's claims need (requests with one class) and its choices (requests with several)."""
    needed: set[str] = set()
    choices: list[frozenset[str]] = []
    for entry in spec.get("resourceClaims") or []:
        if not isinstance(entry, Mapping):
            continue
        for field_name, kind in _CLAIM_KINDS.items():
            name = entry.get(field_name)
            if not isinstance(name, str):
                continue
            for request in classes.get((kind, namespace, name), ()):
                if len(request) == 1:
                    needed |= request
                elif request:
                    choices.append(request)
    return frozenset(needed), tuple(dict.fromkeys(choices))


def _stored_object_pods(
    metadata: Mapping[str, Any],
    data: Mapping[str, Any],
    namespace: str,
    classes: Mapping[tuple[str, str, str], tuple[frozenset[str], ...]],
) -> list[PodPlacement]:
    """The pods of the objects a ConfigMap labelled POD_TEMPLATES_LABEL stores for a controller to create
    (the scheduled fabric check's MPIJobs): each data value a Kubernetes object as JSON, created in the
    ConfigMap's namespace."""
    labels = metadata.get("labels") or {}
    if not isinstance(labels, Mapping) or labels.get(POD_TEMPLATES_LABEL) != "true":
        return []
    pods: list[PodPlacement] = []
    for key, text in data.items():
        try:
            stored = json.loads(text) if isinstance(text, str) else None
        except json.JSONDecodeError:
            continue  # the script beside them
        if not isinstance(stored, Mapping):
            continue
        kind = stored.get("kind", "object")
        for path, spec in find_pod_specs(stored, _is_pod_spec):
            wanted, choices = _wanted(spec, namespace, classes)
            name = f"{kind} {namespace}/{key} (ConfigMap {metadata.get('name')}){_role(path)}"
            pods.append(from_pod_spec(name, spec, wanted, device_class_choices=choices))
    return pods


def pod_placements(resources: list[RecordedResource]) -> list[PodPlacement]:
    """The placement of every pod the recorded run starts, in registration order."""
    classes = _claim_classes(resources)
    pods: list[PodPlacement] = []
    clusters = 0
    for r in resources:
        if r.type == "pulumi:providers:kubernetes":
            clusters += 1
        if r.type == mpi_operator.CONFIG_FILE_TYPE:
            # A manifest applied at apply time: its workloads as its release's facts say.
            release = mpi_operator.release_of_manifest(r.inputs.get("file"))
            if release is not None:
                pods.append(release.placement())
            continue
        if r.type == resource_types.HELM_RELEASE:
            values = r.inputs.get("values") or {}
            pods += chart_workloads.release_workloads(
                str(r.inputs.get("chart")), str(r.inputs.get("name") or r.name), values
            )
            continue
        if r.type == resource_types.NIC_CLUSTER_POLICY:
            # The operator's DaemonSets and Deployments for it (not pod specs in the object itself).
            pods += network_operator.nic_cluster_policy_workloads(r.inputs.get("spec") or {})
            continue
        if not r.type.startswith("kubernetes:") or r.type.startswith(resource_types.DRA_GROUP_PREFIX):
            continue
        if r.type in resource_types.HELM_TYPES:
            continue
        metadata = r.inputs.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "default")
        kind = r.type.rsplit(":", 1)[-1]
        if kind == "PodTemplate":
            continue  # a stored template (core/v1 PodTemplate) starts no pod; the pack still judges it
        if r.type == resource_types.CONFIG_MAP:
            pods += _stored_object_pods(metadata, r.inputs.get("data") or {}, namespace, classes)
            continue
        for path, spec in find_pod_specs(r.inputs, _is_pod_spec):
            wanted, choices = _wanted(spec, namespace, classes)
            name = f"{kind} {namespace}/{metadata.get('name') or r.name}{_role(path)}"
            pods.append(
                from_pod_spec(name, spec, wanted, daemonset=kind == "DaemonSet", device_class_choices=choices)
            )
    if clusters:
        pods.append(chart_workloads.COREDNS)
    return pods


def _nic_cluster_policy(resources: list[RecordedResource]) -> dict[str, Any] | None:
    for r in resources:
        if r.type == resource_types.NIC_CLUSTER_POLICY:
            return dict(r.inputs.get("spec") or {})
    return None


def _config_daemon_selector(resources: list[RecordedResource]) -> dict[str, str] | None:
    """The configDaemonNodeSelector of the SriovOperatorConfig the network-operator release renders (None:
    no release runs the SR-IOV Network Operator with one)."""
    for r in resources:
        if r.type == resource_types.HELM_RELEASE and r.inputs.get("chart") == network_operator.CHART_NAME:
            values = r.inputs.get("values") or {}
            merged = network_operator.chart_values(values)
            sriov = network_operator.sriov_values(values)
            if (merged.get("sriovNetworkOperator") or {}).get("enabled") is True and (
                sriov.get("sriovOperatorConfig") or {}
            ).get("deploy") is True:
                return network_operator.config_daemon_node_selector(values)
    return None


def _node_policy_selectors(resources: list[RecordedResource]) -> list[dict[str, str]]:
    return [
        dict((r.inputs.get("spec") or {}).get("nodeSelector") or {})
        for r in resources
        if r.type == resource_types.SRIOV_NODE_POLICY
    ]


# How the operand pods of a cluster's own GPU Operator are named (gpuOperator.enabled: false).
CLUSTER_OPERATOR: Final = "(the cluster's GPU Operator, not managed by this stack)"


def _operator_release(resources: list[RecordedResource]) -> tuple[str, Mapping[str, Any]] | None:
    """The gpu-operator release of the run, as (how its pods are named, its values)."""
    for r in resources:
        if (
            r.type == resource_types.HELM_RELEASE
            and str(r.inputs.get("chart")) == gpu_operator_chart.CHART_NAME
        ):
            release = str(r.inputs.get("name") or r.name)
            return f"(chart {gpu_operator_chart.CHART_NAME}, release {release})", r.inputs.get("values") or {}
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

    The pools carry the labels the network operators set from the objects the run declares. Without a
    gpu-operator release in the run the cluster's own operator is taken as configured the way
    :func:`stack_config.drivers.gpu_operator_plan.required_settings` says (which the verdict carries as settings).
    A pod naming a priority class the cluster lacks, an operand pod that would never be Ready, and an SR-IOV
    pool that a node agent its VF pods need does not reach, are problems too.
    """
    config = stack.config
    vf_resources = stack.sriov.pool_vf_resources() if stack.sriov is not None else {}
    pods = pod_placements(resources)
    pools = network_operator.with_operator_labels(
        planned_pools(config, vf_resources),
        _nic_cluster_policy(resources),
        _config_daemon_selector(resources),
        _node_policy_selectors(resources),
    )
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
    if stack.sriov is not None:
        problems += network_operator.missing_node_agents(verdict.placements, stack.sriov.pools)
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
        "# must be configured with (stack_config/drivers/gpu_operator_plan.py).\n"
    )
    return header + yamltext.dump(document)
