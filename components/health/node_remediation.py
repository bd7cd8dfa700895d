"""Closed-loop remediation (health.remediation; docs/remediation.md): the controller that cordons a
node whose mark lasts, has Kueue evict and requeue its jobs, drains it, has OKE replace it, proves the
replacement with the fabric check alone and returns it (oke_gpu_rdma/health/remediation/).

Its objects: a namespace (Pod Security restricted) with NetworkPolicies (the controller reaches the API server
only; a repair Job also reaches PyPI for the OCI SDK and the OCI API, both over 443), the program as a
ConfigMap, two ServiceAccounts (the controller; the repair Jobs, the principal of the OCI IAM policy that may
replace the pools' nodes), RBAC for what each does, ValidatingAdmissionPolicies that narrow what RBAC cannot
(the controller changes only spec.unschedulable of a node of its pools, only spec.active of a Workload, and
creates only its two kinds of Job), and the controller's Deployment on the system pool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s

from components.common import access_control
from components.common.namespaces import declare_network_policies, labelled_namespace
from components.typed_inputs import to_input_type
from oke_gpu_rdma.common import admission_cel as cel
from oke_gpu_rdma.common import network_policies, pod_security, resource_types
from oke_gpu_rdma.drivers import nvidia_gpu
from oke_gpu_rdma.health import fabric_check
from oke_gpu_rdma.health.remediation import controller as program
from oke_gpu_rdma.nodes.labels import POOL_LABEL, RAIL_UNHEALTHY_TAINT_KEY, RDMA_LOCAL_BLOCK_LABEL
from stack_config.health.health_settings import RemediationConfig
from stack_config.nodes.pool_settings import Taint, tolerations

NAME: Final = "node-remediation"
REPAIR_ACCOUNT: Final = "node-repair"
STATE_CONFIGMAP: Final = "node-remediation-state"
MOUNT: Final = "/opt/remediation"
METRICS_PORT: Final = 9400
SOURCE = Path(program.__file__).resolve().parent
FILES: Final = ("machine.py", "controller.py", "repair.py", "repair.lock")
POD_LABELS: Final = {"app.kubernetes.io/name": NAME}
REPAIR_LABELS: Final = {"app.kubernetes.io/name": REPAIR_ACCOUNT}
# The repair Job installs the OCI SDK from the hashed lock into scratch space (the root filesystem is read-only).
REPAIR_COMMAND: Final = (
    f"pip install --quiet --no-cache-dir --disable-pip-version-check --require-hashes --only-binary=:all: "
    f"--target /tmp/sdk -r {MOUNT}/repair.lock && PYTHONPATH=/tmp/sdk exec python3 {MOUNT}/repair.py"
)
RESTRICTED_CONTAINER: Final = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "runAsNonRoot": True,
    "runAsUser": 65534,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def settings(config: RemediationConfig) -> dict[str, Any]:
    """The machine's Settings (oke_gpu_rdma/health/remediation/machine.py) from the stack config."""
    return {
        "after_seconds": config.after_minutes * 60,
        "grace_seconds": config.grace_minutes * 60,
        "drain_seconds": config.drain_minutes * 60,
        "replace_seconds": config.replace_minutes * 60,
        "max_per_pool": config.max_nodes_per_pool,
        "max_attempts": config.max_attempts,
        "min_schedulable": config.keep_schedulable,
    }


def repair_job(config: RemediationConfig) -> dict[str, Any]:
    """The repair Job the controller creates per node (it adds the name and the node's environment)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"labels": dict(REPAIR_LABELS)},
        "spec": {
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": 86400,
            "template": {
                "metadata": {"labels": dict(REPAIR_LABELS)},
                "spec": {
                    "serviceAccountName": REPAIR_ACCOUNT,
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "repair",
                            "image": config.image,
                            "command": ["sh", "-c", REPAIR_COMMAND],
                            "env": [{"name": "HOME", "value": "/tmp"}],
                            "securityContext": RESTRICTED_CONTAINER,
                            "volumeMounts": [
                                {"name": "program", "mountPath": MOUNT, "readOnly": True},
                                {"name": "scratch", "mountPath": "/tmp"},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "program", "configMap": {"name": NAME}},
                        {"name": "scratch", "emptyDir": {}},
                    ],
                },
            },
        },
    }


# fabric-check.sh's exit status when it could not check the node yet (the node or every peer busy).
NOT_CHECKED_STATUS: Final = 3


def check_job(cronjob: Mapping[str, Any], deadline_seconds: int) -> dict[str, Any]:
    """The fabric check of one node: the scheduled check's own Job (components/health/fabric_checks.py cronjob_spec),
    which the controller runs with ONLY_NODE and POOL set. A run that found no idle peer is not a failure: its
    podFailurePolicy ignores that exit status, so the Job runs the pod again (batch/v1 PodFailurePolicy, GA in
    1.31: an Ignore rule does not count against backoffLimit), until a peer is idle or the Job's deadline
    (activeDeadlineSeconds) fails it."""
    job = json.loads(json.dumps(cronjob["jobTemplate"]))
    spec = job["spec"]
    container = spec["template"]["spec"]["containers"][0]["name"]
    spec["activeDeadlineSeconds"] = deadline_seconds
    spec["podFailurePolicy"] = {
        "rules": [
            {
                "action": "Ignore",
                "onExitCodes": {"containerName": container, "operator": "In", "values": [NOT_CHECKED_STATUS]},
            }
        ]
    }
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {}, "spec": spec}


def controller_config(
    config: RemediationConfig,
    node_pools: Mapping[str, str],
    mark_mode: fabric_check.TaintMode,
    check_namespace: str,
    check_cronjob: Mapping[str, Any],
    node_specs: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The controller's config.json (``node_pools``: each remediated pool's OKE node pool OCID; ``node_specs``:
    each one's node spec digest, whose change the controller rolls one local block at a time)."""
    return {
        "rollouts": dict(node_specs or {}),
        "pools": {pool: {"nodePoolId": node_pools[pool]} for pool in config.pools},
        "poolLabel": POOL_LABEL,
        "blockLabel": RDMA_LOCAL_BLOCK_LABEL,
        "railKey": RAIL_UNHEALTHY_TAINT_KEY,
        "gpuDriver": nvidia_gpu.DRIVER,
        "gpuTaintKeys": [
            k for k, effects in nvidia_gpu.HEALTH_TAINT_EFFECTS.items() if "NoSchedule" in effects
        ],
        "checkCondition": fabric_check.CONDITION,
        "markMode": mark_mode,
        "namespace": config.namespace,
        "stateConfigMap": STATE_CONFIGMAP,
        "repairJob": {"namespace": config.namespace, "job": repair_job(config)},
        "checkJob": {
            "namespace": check_namespace,
            "job": check_job(check_cronjob, config.replace_minutes * 60),
        },
        "settings": settings(config),
        "intervalSeconds": config.interval_seconds,
        "metricsPort": METRICS_PORT,
    }


def cluster_rules(mode: fabric_check.TaintMode) -> list[dict[str, Any]]:
    """What the controller reads and writes cluster-wide: nodes (patch: cordon and uncordon, narrowed by
    :func:`node_policy`), pods (to find what runs where) and their evictions, the GPU driver's ResourceSlices and,
    on 1.37+, DeviceTaintRules (the marks), and Kueue's Workloads (patch: spec.active, :func:`workload_policy`)."""
    rules = [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "patch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["list"]},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["patch"]},
    ]
    if mode == "device":
        rules.append({"apiGroups": ["resource.k8s.io"], "resources": ["devicetaintrules"], "verbs": ["list"]})
    return rules


def namespace_rules() -> list[dict[str, Any]]:
    """In its own namespace: its state ConfigMap, its events, its repair Jobs."""
    return [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": [STATE_CONFIGMAP],
            "verbs": ["get", "update"],
        },
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create"]},
        JOB_RULE,
    ]


JOB_RULE: Final = {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["list", "create", "delete"]}


def node_policy(namespace: str, pools: Sequence[str], kubernetes_minor: int) -> dict[str, Any]:
    """The controller's node writes: only spec.unschedulable, only of a node of its pools (before and after)."""
    in_pools = (
        f"has(oldObject.metadata.labels) && '{POOL_LABEL}' in oldObject.metadata.labels && "
        f"oldObject.metadata.labels['{POOL_LABEL}'] in {json.dumps(list(pools))}"
    )
    return cel.writer_policy(
        namespace,
        NAME,
        [cel.resource_rule("", ["nodes"], ["UPDATE"])],
        [
            {
                "expression": in_pools,
                "message": f"the remediation controller may cordon only nodes of {', '.join(pools)}",
            },
            {
                "expression": cel.node_unchanged_but(kubernetes_minor, "spec.unschedulable"),
                "message": "the remediation controller may change only a node's spec.unschedulable",
            },
        ],
    )


def workload_policy(namespace: str) -> dict[str, Any]:
    """The controller's Workload writes: spec.active only (its podSets, queue, priority and metadata stay)."""
    same = " && ".join(
        cel.unchanged(f, e)
        for f, e in (
            ("spec.podSets", "[]"),
            ("spec.queueName", "''"),
            ("spec.priority", "0"),
            ("metadata.labels", "{}"),
            ("metadata.annotations", "{}"),
            ("metadata.ownerReferences", "[]"),
            ("metadata.finalizers", "[]"),
        )
    )
    return cel.writer_policy(
        namespace,
        NAME,
        [cel.resource_rule("kueue.x-k8s.io", ["workloads"], ["UPDATE"], "*")],
        [
            {
                "expression": same,
                "message": "the remediation controller may change only a Workload's spec.active",
            }
        ],
    )


def job_policy(namespace: str, check_namespace: str, image: str, check_image: str) -> dict[str, Any]:
    """The controller's Jobs: a repair Job in its namespace runs the repair program as the repair account; a
    check Job in the workload namespace runs the fabric check as its account; nothing else."""
    spec = "object.spec.template.spec"
    one = f"size({spec}.containers) == 1 && !has({spec}.initContainers) && !has({spec}.ephemeralContainers)"
    repair = (
        f"request.namespace == '{namespace}' && {spec}.serviceAccountName == '{REPAIR_ACCOUNT}' && {one} && "
        f"{spec}.containers[0].image == '{image}' && {spec}.containers[0].command == {json.dumps(['sh', '-c', REPAIR_COMMAND])}"
    )
    check = (
        f"request.namespace == '{check_namespace}' && {spec}.serviceAccountName == 'fabric-check' && {one} && "
        f"{spec}.containers[0].image == '{check_image}'"
    )
    return cel.writer_policy(
        namespace,
        NAME,
        [cel.resource_rule("batch", ["jobs"], ["CREATE"])],
        [
            {
                "expression": f"({repair}) || ({check})",
                "message": "the remediation controller may create only its repair Jobs and the fabric check's",
            }
        ],
    )


def pod_monitor(namespace: str) -> dict[str, Any]:
    """The PodMonitor spec that scrapes the controller's metrics (its declared port, named metrics)."""
    return {
        "selector": {"matchLabels": dict(POD_LABELS)},
        "namespaceSelector": {"matchNames": [namespace]},
        "podMetricsEndpoints": [{"port": "metrics", "path": "/metrics"}],
    }


def controller_pod(
    config: RemediationConfig, system_pool: str | None, taints: Sequence[Taint]
) -> dict[str, Any]:
    placement: dict[str, Any] = (
        {"nodeSelector": {POOL_LABEL: system_pool}}
        if system_pool
        else {"tolerations": tolerations(list(taints))}
    )
    pod = {
        "serviceAccountName": NAME,
        **placement,
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {
                "name": "controller",
                "image": config.image,
                "command": ["python3", f"{MOUNT}/controller.py"],
                "env": [
                    {"name": "CONFIG", "value": f"{MOUNT}/config.json"},
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
                ],
                "ports": [{"name": "metrics", "containerPort": METRICS_PORT}],
                "livenessProbe": {
                    "httpGet": {"path": "/healthz", "port": METRICS_PORT},
                    "periodSeconds": config.interval_seconds,
                    "failureThreshold": 3,
                },
                "resources": {"requests": {"cpu": "20m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
                "securityContext": RESTRICTED_CONTAINER,
                "volumeMounts": [{"name": "program", "mountPath": MOUNT, "readOnly": True}],
            }
        ],
        "volumes": [{"name": "program", "configMap": {"name": NAME}}],
    }
    to_input_type(k8s.core.v1.PodSpecArgs, pod, "spec")
    return pod


@dataclass
class NodeRemediationArgs:
    config: RemediationConfig
    node_pool_ids: Mapping[str, pulumi.Input[str]]
    """The OKE node pool OCID of each remediated pool (what a repair Job replaces a node in)."""
    node_specs: Mapping[str, pulumi.Input[str]]
    """Each remediated pool's node spec digest (RdmaGpuNodePool.node_spec): a new one rolls its nodes."""
    mode: fabric_check.TaintMode
    kubernetes_minor: int
    check_namespace: str
    check_cronjob: Mapping[str, Any]
    """The scheduled fabric check's CronJob spec (components/health/fabric_checks.py cronjob_spec)."""
    system_pool: str | None
    taints: list[Taint]
    provider: pulumi.ProviderResource
    prometheus: tuple[str, bool] | None
    """The namespace of the Prometheus that scrapes the controller and whether the stack installs it (None: no
    monitoring)."""
    depends_on: Sequence[pulumi.Resource]


class NodeRemediation(pulumi.ComponentResource):
    namespace: pulumi.Output[str]

    def __init__(
        self, name: str, args: NodeRemediationArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.REMEDIATION_COMPONENT, name, None, opts)
        config = args.config
        child = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.depends_on))
        ns = labelled_namespace(f"{name}-namespace", config.namespace, pod_security.RESTRICTED, child)
        opts_ns = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[ns]))
        meta = k8s.meta.v1.ObjectMetaArgs(name=NAME, namespace=config.namespace)
        ids = pulumi.Output.all(
            *(args.node_pool_ids[p] for p in config.pools), *(args.node_specs[p] for p in config.pools)
        )
        files = {f: (SOURCE / f).read_text() for f in FILES}
        k8s.core.v1.ConfigMap(
            f"{name}-program",
            metadata=meta,
            data=ids.apply(
                lambda found: (
                    files
                    | {
                        "config.json": json.dumps(
                            controller_config(
                                config,
                                dict(zip(config.pools, found[: len(config.pools)], strict=True)),
                                args.mode,
                                args.check_namespace,
                                args.check_cronjob,
                                dict(zip(config.pools, found[len(config.pools) :], strict=True)),
                            ),
                            indent=1,
                            sort_keys=True,
                        )
                    }
                )
            ),
            opts=opts_ns,
        )
        for account in (NAME, REPAIR_ACCOUNT):
            k8s.core.v1.ServiceAccount(
                f"{name}-{account}-account",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=account, namespace=config.namespace),
                opts=opts_ns,
            )
        subject = [k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=NAME, namespace=config.namespace)]
        roles = [(config.namespace, namespace_rules(), "role")]
        roles.append((args.check_namespace, [JOB_RULE], "check-role"))
        for namespace, rules, suffix in roles:
            access_control.role_with_binding(f"{name}-{suffix}", NAME, namespace, rules, subject, opts_ns)
        cluster_name = f"{config.namespace}-{NAME}"
        access_control.role_with_binding(
            f"{name}-cluster-role", cluster_name, None, cluster_rules(args.mode), subject, opts_ns
        )
        check_image = args.check_cronjob["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"]
        bindings = [
            access_control.admission_policy(
                f"{name}-{suffix}-policy", f"{cluster_name}-{suffix}", spec, opts_ns
            )
            for suffix, spec in (
                ("nodes", node_policy(config.namespace, config.pools, args.kubernetes_minor)),
                ("workloads", workload_policy(config.namespace)),
                ("jobs", job_policy(config.namespace, args.check_namespace, config.image, check_image)),
            )
        ]
        declare_network_policies(
            name,
            [
                network_policies.api_server_only("api-server-only", config.namespace, POD_LABELS),
                network_policies.https_out("repair-https-out", config.namespace, REPAIR_LABELS),
                *(
                    [
                        network_policies.scraped_by_prometheus(
                            "metrics-ingress", config.namespace, POD_LABELS, METRICS_PORT, *args.prometheus
                        )
                    ]
                    if args.prometheus is not None
                    else []
                ),
            ],
            opts_ns,
        )
        k8s.apps.v1.Deployment(
            f"{name}-controller",
            metadata=meta,
            spec=to_input_type(
                k8s.apps.v1.DeploymentSpecArgs,
                {
                    # One controller at a time: two would act twice on one record.
                    "replicas": 1,
                    "strategy": {"type": "Recreate"},
                    "selector": {"matchLabels": dict(POD_LABELS)},
                    "template": {
                        "metadata": {"labels": dict(POD_LABELS)},
                        "spec": controller_pod(config, args.system_pool, args.taints),
                    },
                },
                "spec",
            ),
            # Never acting before its admission limits are in place.
            opts=pulumi.ResourceOptions.merge(opts_ns, pulumi.ResourceOptions(depends_on=bindings)),
        )
        self.namespace = pulumi.Output.from_input(config.namespace)
        self.register_outputs({"namespace": self.namespace})
