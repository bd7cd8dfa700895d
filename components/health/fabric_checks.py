"""The scheduled fabric check (workloads.acceptanceJobs.schedule): a CronJob whose controller runs the
acceptance MPIJobs again on pairs of idle nodes and marks the rails and nodes below the thresholds
(components/health/scripts/fabric-check.sh says how). Declared by the acceptance component beside its MPI operator.

What it declares, in the workload namespace: the ConfigMap with the controller script and the two MPIJob
specs it creates (the apply-time specs of components/health/acceptance_jobs.py, so the same claim templates and
thresholds; labelled as pod templates, so the schedulability check places their pods), the ServiceAccount, a
Role for the MPIJobs and their logs, a ClusterRole for what is cluster-wide (pods, to find idle nodes; nodes and
their status, to mark them; on 1.37+ ResourceSlices and DeviceTaintRules), a NetworkPolicy that lets the
controller's pods reach the API server only, and the CronJob.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s

from components.claims.rdma_workloads import SCRIPTS
from components.common import access_control
from components.common.namespaces import declare_network_policies
from components.typed_inputs import to_input_type
from oke_gpu_rdma.common import admission_cel as cel
from oke_gpu_rdma.common import network_policies
from oke_gpu_rdma.common.pod_specs import POD_TEMPLATES_LABEL
from oke_gpu_rdma.drivers import dranet
from oke_gpu_rdma.health import fabric_check
from oke_gpu_rdma.nodes.labels import FABRIC_CHECK_LABEL, POOL_LABEL, RAIL_UNHEALTHY_TAINT_KEY
from oke_gpu_rdma.scheduling import mpi_operator
from stack_config.health.acceptance_settings import AcceptanceJobsConfig
from stack_config.nodes.pool_settings import Taint, tolerations

SCRIPT: Final = "fabric-check.sh"
NAME: Final = "fabric-check"
MOUNT: Final = "/opt/fabric-check"
RAIL_SPEC: Final = "rail.json"
NCCL_SPEC: Final = "nccl.json"
# Device mode: the claim templates the jobs use, tolerating the check's own mark (fabric_check.tolerating_claim_spec).
CLAIMS: Final = "claims.json"
# The controller polls each job this often (seconds).
POLL_SECONDS: Final = 10
# The controller's pods, which its NetworkPolicy selects (the workload namespace's other pods, the jobs' among
# them, are left alone).
POD_LABELS: Final = {"app.kubernetes.io/name": NAME}


def mpijob_manifest(spec: dict[str, Any]) -> str:
    """An MPIJob the controller creates from ``spec`` (it sets the name, namespace and node pinning)."""
    return json.dumps(
        {
            "apiVersion": mpi_operator.MPIJOB_API_VERSION,
            "kind": mpi_operator.MPIJOB_KIND,
            "metadata": {},
            "spec": spec,
        },
        indent=1,
    )


def cluster_rules(mode: fabric_check.TaintMode) -> list[dict[str, Any]]:
    """The ClusterRole: only the verbs the controller's kubectl calls use."""
    rules: list[dict[str, Any]] = [
        # Which nodes pods with claims hold (every namespace); kubectl logs job/... lists the job's pods.
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        # The pool's nodes, their taint, label and annotation (kubectl taint/label/annotate: get and patch).
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]},
        # The condition: `kubectl patch --subresource=status` reads the subresource before it patches it
        # (kubectl pkg/cmd/patch/patch.go builds a resource.Builder that requires the object; cli-runtime
        # pkg/resource/builder.go requireObject true, visitor.go Info.Get on the subresource).
        {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["get", "patch"]},
    ]
    if mode == "device":
        rules += [
            {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["list"]},
            # kubectl apply: get, then create or patch; the lift: delete; its own rules of nodes gone or in no
            # pool: list (by its label), then delete.
            {
                "apiGroups": ["resource.k8s.io"],
                "resources": ["devicetaintrules"],
                "verbs": ["get", "list", "create", "patch", "delete"],
            },
        ]
    return rules


NAMESPACE_RULES: Final[list[dict[str, Any]]] = [
    # create, wait (get), delete; the leftovers of a killed run: delete -l (list, then delete).
    {"apiGroups": ["kubeflow.org"], "resources": ["mpijobs"], "verbs": ["create", "get", "list", "delete"]},
    # kubectl logs job/<name>-launcher: the Job, then its pod's log.
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
]


def namespace_rules(mode: fabric_check.TaintMode) -> list[dict[str, Any]]:
    """The Role: the jobs and their logs; in device mode also the check's own claim templates (kubectl apply:
    get, then create or patch; delete at the end of a run)."""
    if mode == "node":
        return NAMESPACE_RULES
    return [
        *NAMESPACE_RULES,
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceclaimtemplates"],
            "verbs": ["get", "create", "patch", "delete"],
        },
    ]


def admission_policy(namespace: str, mode: fabric_check.TaintMode, kubernetes_minor: int) -> dict[str, Any]:
    """The ValidatingAdmissionPolicy spec that narrows what RBAC cannot (oke_gpu_rdma/common/admission_cel.py): the
    ClusterRole lets the check patch any field of any node and, on 1.37+, write any DeviceTaintRule. Its node
    updates may change only its own marks (the rail taint with its value, NoSchedule; its label; its rails
    annotation; its condition) and leave spec.unschedulable, other taints (the rail agent's value of the same
    key among them), labels, annotations and conditions as they are; its DeviceTaintRules must be named
    fabric-check-..., select one DRANET device and carry its own mark."""
    mark = (RAIL_UNHEALTHY_TAINT_KEY, fabric_check.TAINT_VALUE, "NoSchedule")
    node_rules = [
        (cel.only_own_taint_changes(*mark), "may add or remove only its own taint {}={}:{}".format(*mark)),
        (
            cel.only_key_changes("metadata.labels", FABRIC_CHECK_LABEL),
            f"may change only the label {FABRIC_CHECK_LABEL}",
        ),
        (
            cel.only_key_changes("metadata.annotations", fabric_check.RAILS_ANNOTATION),
            f"may change only the annotation {fabric_check.RAILS_ANNOTATION}",
        ),
        (cel.unchanged("spec.unschedulable", "false"), "may not cordon or uncordon a node"),
        (
            cel.only_condition_changes(fabric_check.CONDITION),
            f"may change only the condition {fabric_check.CONDITION}",
        ),
        # The whole node but the fields judged above (issue 36: ownerReferences, finalizers, status.allocatable).
        (
            cel.node_unchanged_but(
                kubernetes_minor,
                "spec.taints",
                "metadata.labels",
                "metadata.annotations",
                "spec.unschedulable",
                "status.conditions",
            ),
            "may change no other field of a node (ownerReferences, finalizers, spec, status)",
        ),
    ]
    rule = cel.WRITTEN_RULE
    rule_rules = [
        (f"{rule}.metadata.name.startsWith('{NAME}-')", f"may write only DeviceTaintRules named {NAME}-..."),
        # The pool too: a rule without one would match the device name in every node's pool.
        (
            f"{cel.rule_selects_one_device(dranet.DRIVER)} && has({rule}.spec.deviceSelector.pool) && "
            f"{rule}.spec.deviceSelector.pool != ''",
            f"must select one {dranet.DRIVER} device of one node's pool in a DeviceTaintRule",
        ),
        (
            cel.is_taint(f"{rule}.spec.taint", *mark),
            "must carry its own mark {}={}:{} in a DeviceTaintRule".format(*mark),
        ),
        # DRANET names a node's pool after the node (drivers/dranet.py dranet_slice).
        (
            cel.rule_owned_by_node(f"{rule}.spec.deviceSelector.pool"),
            "may make no owner of a DeviceTaintRule but the node of its device",
        ),
    ]
    resource_rules = [
        cel.resource_rule("", ["nodes", "nodes/status"], ["UPDATE"]),
        # Its claim templates, in both modes: RBAC grants them only in device mode, and then on every template of
        # the namespace; admission keeps it to its own copies (issue 36).
        cel.resource_rule("resource.k8s.io", ["resourceclaimtemplates"], ["CREATE", "UPDATE", "DELETE"]),
    ]
    validations = [
        {"expression": f"request.kind.kind != 'Node' || ({expr})", "message": f"the fabric check {message}"}
        for expr, message in node_rules
    ]
    validations.append(
        {
            "expression": "request.kind.kind != 'ResourceClaimTemplate' || "
            f"{cel.named_with_prefix(fabric_check.CLAIM_PREFIX)}",
            "message": f"the fabric check may write only its own ResourceClaimTemplates, named "
            f"{fabric_check.CLAIM_PREFIX}...",
        }
    )
    if mode == "device":
        resource_rules.append(
            cel.resource_rule("resource.k8s.io", ["devicetaintrules"], ["CREATE", "UPDATE", "DELETE"])
        )
        validations += [
            {
                "expression": f"request.kind.kind != 'DeviceTaintRule' || ({expr})",
                "message": f"the fabric check {message}",
            }
            for expr, message in rule_rules
        ]
    return cel.writer_policy(namespace, NAME, resource_rules, validations)


def worker_templates(spec: dict[str, Any]) -> list[str]:
    """The ResourceClaimTemplates an MPIJob spec's workers claim from."""
    pod = spec["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    return [
        c["resourceClaimTemplateName"]
        for c in pod.get("resourceClaims", [])
        if "resourceClaimTemplateName" in c
    ]


def claims_manifest(namespace: str, templates: Mapping[str, Mapping[str, Any]]) -> str:
    """The check's copies of ``templates`` (name -> ResourceClaimSpec) as a kubectl List, each named with
    fabric_check.CLAIM_PREFIX and tolerating the check's own mark only; each is checked against
    pulumi-kubernetes' ResourceClaimTemplateSpec, as a declared template is."""
    items = []
    for name, spec in sorted(templates.items()):
        template_spec = {"spec": fabric_check.tolerating_claim_spec(spec, RAIL_UNHEALTHY_TAINT_KEY)}
        to_input_type(k8s.resource.v1.ResourceClaimTemplateSpecArgs, template_spec, f"{name}.spec")
        items.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {
                    "name": fabric_check.CLAIM_PREFIX + name,
                    "namespace": namespace,
                    "labels": {fabric_check.RUN_LABEL: "claims"},
                },
                "spec": template_spec,
            }
        )
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=1)


def controller_env(
    config: AcceptanceJobsConfig, pool: str, namespace: str, mode: fabric_check.TaintMode
) -> list[dict[str, str]]:
    settings = {
        "POOL_LABEL": POOL_LABEL,
        "POOL": pool,
        "NAMESPACE": namespace,
        "TAINT_MODE": mode,
        "RAIL_KEY": RAIL_UNHEALTHY_TAINT_KEY,
        "TAINT_VALUE": fabric_check.TAINT_VALUE,
        "CHECK_LABEL": FABRIC_CHECK_LABEL,
        "CONDITION": fabric_check.CONDITION,
        "RAILS_ANNOTATION": fabric_check.RAILS_ANNOTATION,
        "DRIVER": dranet.DRIVER,
        "RUN_LABEL": fabric_check.RUN_LABEL,
        "RULE_NODE_LABEL": fabric_check.RULE_NODE_LABEL,
        "CLAIM_PREFIX": fabric_check.CLAIM_PREFIX,
        "SPECS": MOUNT,
        "WAIT_SECONDS": str(config.timeout_minutes * 60),
        "POLL_SECONDS": str(POLL_SECONDS),
    }
    return [{"name": key, "value": value} for key, value in settings.items()]


def cronjob_spec(
    config: AcceptanceJobsConfig,
    pool: str,
    namespace: str,
    mode: fabric_check.TaintMode,
    taints: Sequence[Taint],
) -> dict[str, Any]:
    """The CronJob: one controller at a time (Forbid: two would pair the same nodes), no retry (the next
    schedule is the retry); its pod needs no GPU and tolerates the GPU pools' taints, as the launchers do,
    so that it also runs where the cluster has only GPU nodes."""
    assert config.schedule is not None
    pod = {
        "serviceAccountName": NAME,
        "restartPolicy": "Never",
        "tolerations": tolerations(list(taints)),
        "containers": [
            {
                "name": "controller",
                "image": config.check_image,
                "command": ["bash", f"{MOUNT}/{SCRIPT}"],
                "env": controller_env(config, pool, namespace, mode),
                "volumeMounts": [{"name": "specs", "mountPath": MOUNT, "readOnly": True}],
            }
        ],
        "volumes": [{"name": "specs", "configMap": {"name": NAME}}],
    }
    to_input_type(k8s.core.v1.PodSpecArgs, pod, "spec")
    return {
        "schedule": config.schedule,
        "concurrencyPolicy": "Forbid",
        "successfulJobsHistoryLimit": 3,
        "failedJobsHistoryLimit": 3,
        "jobTemplate": {
            "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": dict(POD_LABELS)}, "spec": pod}}
        },
    }


@dataclass
class FabricCheckArgs:
    config: AcceptanceJobsConfig
    pool: str
    namespace: str
    mode: fabric_check.TaintMode
    kubernetes_minor: int
    """The cluster's: its admission policy compares the Node's fields of that version."""
    taints: list[Taint]
    rail_spec: dict[str, Any] | None
    nccl_spec: dict[str, Any] | None
    templates: Mapping[str, Mapping[str, Any]]
    """The ResourceClaimSpec of each template the specs' workers claim from, by name."""


def declare(name: str, args: FabricCheckArgs, opts: pulumi.ResourceOptions) -> None:
    """The check's objects, children of the acceptance component (``opts``: its parent, provider and what
    the jobs wait for, the MPI operator among them)."""
    data = {SCRIPT: (SCRIPTS / SCRIPT).read_text()}
    if args.rail_spec is not None:
        data[RAIL_SPEC] = mpijob_manifest(args.rail_spec)
    if args.nccl_spec is not None:
        data[NCCL_SPEC] = mpijob_manifest(args.nccl_spec)
    if args.mode == "device":
        used = [
            t for spec in (args.rail_spec, args.nccl_spec) if spec is not None for t in worker_templates(spec)
        ]
        data[CLAIMS] = claims_manifest(args.namespace, {t: args.templates[t] for t in used})
    meta = k8s.meta.v1.ObjectMetaArgs(name=NAME, namespace=args.namespace)
    k8s.core.v1.ConfigMap(
        f"{name}-{NAME}-specs",
        metadata=k8s.meta.v1.ObjectMetaArgs(
            name=NAME, namespace=args.namespace, labels={POD_TEMPLATES_LABEL: "true"}
        ),
        data=data,
        opts=opts,
    )
    k8s.core.v1.ServiceAccount(f"{name}-{NAME}-account", metadata=meta, opts=opts)
    subject = [k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=NAME, namespace=args.namespace)]
    access_control.role_with_binding(
        f"{name}-{NAME}-role", NAME, args.namespace, namespace_rules(args.mode), subject, opts
    )
    cluster_name = f"{args.namespace}-{NAME}"
    access_control.role_with_binding(
        f"{name}-{NAME}-cluster-role", cluster_name, None, cluster_rules(args.mode), subject, opts
    )
    policy_binding = access_control.admission_policy(
        f"{name}-{NAME}-policy",
        cluster_name,
        admission_policy(args.namespace, args.mode, args.kubernetes_minor),
        opts,
    )
    # Nothing in, the API server only out (oke_gpu_rdma/common/network_policies.py api_server_only).
    declare_network_policies(
        name, [network_policies.api_server_only(f"{NAME}-api-server-only", args.namespace, POD_LABELS)], opts
    )
    k8s.batch.v1.CronJob(
        f"{name}-{NAME}",
        metadata=meta,
        spec=to_input_type(
            k8s.batch.v1.CronJobSpecArgs,
            cronjob_spec(args.config, args.pool, args.namespace, args.mode, args.taints),
            "spec",
        ),
        # The check never runs before its admission limits are in place.
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[policy_binding])),
    )
