"""The rail health agent: a DaemonSet on every DRANET pool that checks each rail and marks a bad one
(components/health/scripts/rail-health.sh; oke_gpu_rdma/health/health_marks.py says how a rail is marked at a Kubernetes version).

Its objects: a namespace (Pod Security privileged: the agent needs the host network to see the node's rails in
/sys/class/net) with a NetworkPolicy that lets it reach the API server only, a ServiceAccount with the one
ClusterRole its mode writes through, the script as a ConfigMap, and one DaemonSet per shape (each shape has its
own rails).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s

from components.common import access_control
from components.common.namespaces import declare_network_policies, labelled_namespace
from components.drivers.dra_drivers import node_placement
from components.typed_inputs import to_input_type
from oke_gpu_rdma.common import admission_cel as cel
from oke_gpu_rdma.common import network_policies, pod_security, resource_types
from oke_gpu_rdma.drivers import dranet
from oke_gpu_rdma.health import health_marks as health
from oke_gpu_rdma.nodes.labels import POOL_LABEL, RAIL_UNHEALTHY_TAINT_KEY, RAILS_UNMARKED_LABEL
from oke_gpu_rdma.nodes.topology import Topology
from oke_gpu_rdma.scheduling.pod_admission import SYSTEM_PRIORITY_CLASSES
from stack_config.health.health_settings import RailHealthConfig
from stack_config.nodes.pool_settings import Taint, tolerations

SCRIPTS = Path(__file__).resolve().parent / "scripts"
SCRIPT: Final = "rail-health.sh"
NAME: Final = "rail-health-agent"
SCRIPT_MOUNT: Final = "/opt/rail-health"
STATE_MOUNT: Final = "/run/rail-health"
# hostNetwork is outside Pod Security baseline (https://kubernetes.io/docs/concepts/security/pod-security-standards/
# "Host Namespaces"): the agent's namespace is privileged (pod_security.RAIL_AGENT_LEVEL), and holds nothing else.
# system-node-critical: the agent is what takes a bad rail out of scheduling, so it is not evicted first.
PRIORITY_CLASS: Final = "system-node-critical"
assert PRIORITY_CLASS in SYSTEM_PRIORITY_CLASSES


def agent_script() -> str:
    return (SCRIPTS / SCRIPT).read_text()


def rbac_rules(mode: health.RailMarkMode) -> list[dict[str, Any]]:
    """Only what the agent writes in its mode: DeviceTaintRules (get to adopt its own marks after a restart,
    create, delete; its node read for its uid, the rules' owner), or the node's taints (get to read them, patch: `kubectl taint` reads the node and
    patches it). RBAC cannot narrow `nodes` to the pod's own node: :func:`own_node_policy` does, at
    admission."""
    nodes = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}
    if mode == "device":
        # And its node: its uid (the owner of its rules) and its rails-unmarked label (`kubectl label` reads the
        # node and patches it).
        return [
            {
                "apiGroups": ["resource.k8s.io"],
                "resources": ["devicetaintrules"],
                "verbs": ["get", "create", "delete"],
            },
            nodes,
        ]
    return [nodes]


# The agent's own mark (key, value, effect), the only one its admission policies let it write.
AGENT_MARK: Final = (RAIL_UNHEALTHY_TAINT_KEY, health.RAIL_AGENT_MARK_VALUE, health.RAIL_MARK_EFFECT)


# The object name of the device mode's node policy (the node mode's is NAME; each mode has one node policy).
NODE_LABEL_POLICY: Final = f"{NAME}-node-label"


def own_node_policy(namespace: str, mode: health.RailMarkMode, kubernetes_minor: int) -> dict[str, Any]:
    """The ValidatingAdmissionPolicy spec that narrows what RBAC cannot: the agent's updates of a node must be
    of the node its pod runs on. In node mode they add or remove only its own mark (the rail key, its value,
    NoSchedule), touching no other taint (another writer's value of the same key included), label,
    annotation or spec.unschedulable; in device mode they set only the node's rails-unmarked label, to true or
    false, and touch no taint, other label, annotation or spec.unschedulable (oke_gpu_rdma/common/admission_cel.py)."""
    if mode == "device":
        label = RAILS_UNMARKED_LABEL
        return {
            **_own_node_base(namespace),
            "validations": [
                OWN_NODE,
                {
                    "expression": f"{cel.only_key_changes('metadata.labels', label)} && "
                    f"has(object.metadata.labels) && '{label}' in object.metadata.labels && "
                    f"object.metadata.labels['{label}'] in ['true', 'false']",
                    "message": f"the rail health agent may set only its node's label {label}, to true or false",
                },
                {
                    "expression": cel.all_unchanged(
                        ("spec.taints", "[]"), ("metadata.annotations", "{}"), ("spec.unschedulable", "false")
                    ),
                    "message": "the rail health agent may not change a node's taints, annotations or unschedulable",
                },
                no_other_field(kubernetes_minor),
            ],
        }
    mark = AGENT_MARK
    return {
        **_own_node_base(namespace),
        "validations": [
            OWN_NODE,
            {
                "expression": cel.only_own_taint_changes(*mark),
                "message": "the rail health agent may add or remove only its own taint {}={}:{}".format(
                    *mark
                ),
            },
            {
                "expression": cel.all_unchanged(
                    ("metadata.labels", "{}"), ("metadata.annotations", "{}"), ("spec.unschedulable", "false")
                ),
                "message": "the rail health agent may not change a node's labels, annotations or unschedulable",
            },
            no_other_field(kubernetes_minor),
        ],
    }


def no_other_field(kubernetes_minor: int) -> dict[str, str]:
    """The whole node but what the validations above judge (issue 36: ownerReferences would let the garbage
    collector delete the node, finalizers would keep it from going), at the cluster's Kubernetes minor."""
    return {
        "expression": cel.node_unchanged_but(
            kubernetes_minor, "spec.taints", "metadata.labels", "metadata.annotations", "spec.unschedulable"
        ),
        "message": "the rail health agent may change no other field of a node (ownerReferences, finalizers, "
        "spec, status)",
    }


OWN_NODE: Final = {
    "expression": "variables.node != '' && variables.node == object.metadata.name",
    "message": "the rail health agent may change only the node its pod runs on",
}


def _own_node_base(namespace: str) -> dict[str, Any]:
    """What both modes' node policies match: the agent's own updates of nodes."""
    return cel.writer_policy(
        namespace,
        NAME,
        [cel.resource_rule("", ["nodes"], ["UPDATE"])],
        [],
        [{"name": "node", "expression": cel.TOKEN_NODE}],
    )


def own_rules_policy(namespace: str) -> dict[str, Any]:
    """The ValidatingAdmissionPolicy spec that narrows what RBAC cannot (device mode): RBAC grants the agent
    every DeviceTaintRule, and an empty device selector matches every device, with NoExecute an allowed effect
    (k8s.io/api resource/v1 DeviceTaintRuleSpec, DeviceTaint). A rule the agent creates or deletes must be one
    it writes for its own node: named rail-health.<node>.<device>, selecting one DRANET device of the pool its
    node publishes (DRANET names the pool after the node), with its own mark."""
    mark = AGENT_MARK
    return cel.writer_policy(
        namespace,
        NAME,
        [cel.resource_rule("resource.k8s.io", ["devicetaintrules"], ["CREATE", "UPDATE", "DELETE"])],
        [
            {
                "expression": f"variables.node != '' && "
                f"{cel.WRITTEN_RULE}.metadata.name.startsWith('rail-health.' + variables.node + '.')",
                "message": "the rail health agent may write only the DeviceTaintRules of the node its pod runs on "
                "(rail-health.<node>.<device>)",
            },
            {
                "expression": cel.rule_selects_one_device(dranet.DRIVER, "variables.node"),
                "message": f"the rail health agent's DeviceTaintRule must select one {dranet.DRIVER} device of its "
                "own node's pool",
            },
            {
                "expression": cel.is_taint(f"{cel.WRITTEN_RULE}.spec.taint", *mark),
                "message": "the rail health agent's DeviceTaintRule must carry its own mark {}={}:{}".format(
                    *mark
                ),
            },
            {
                "expression": cel.rule_owned_by_node("variables.node"),
                "message": "the rail health agent's DeviceTaintRule may name no owner but its own Node",
            },
        ],
        [{"name": "node", "expression": cel.TOKEN_NODE}],
    )


def shape_slug(shape: str) -> str:
    """A shape as a DNS label part: BM.GPU.B4.8 -> bm-gpu-b4-8."""
    return "".join(c if c.isalnum() else "-" for c in shape.lower()).strip("-")


def agent_env(
    config: RailHealthConfig, mode: health.RailMarkMode, topology: Topology, pools: Sequence[str]
) -> list[dict[str, Any]]:
    """The script's settings (rail-health.sh's header says what each does)."""
    plain = {
        # The pools this DaemonSet runs on: a node that left them loses the agent's marks (rail-health.sh leave).
        "POOL_LABEL": POOL_LABEL,
        "POOLS": " ".join(pools),
        "MARK_MODE": mode,
        "TAINT_KEY": RAIL_UNHEALTHY_TAINT_KEY,
        "TAINT_VALUE": health.RAIL_AGENT_MARK_VALUE,
        "DRIVER": dranet.DRIVER,
        "RAILS": health.agent_rails(topology),
        "INTERVAL_SECONDS": str(config.interval_seconds),
        "RECOVERY_CHECKS": str(config.recovery_checks),
        "RECOVERY_SECONDS": str(config.recovery_minutes * 60),
        "ERROR_COUNTERS": " ".join(config.error_counters),
        "ERROR_THRESHOLD": str(config.error_threshold),
        "STATE_DIR": STATE_MOUNT,
        "REQUEST_TIMEOUT": f"{health.AGENT_REQUEST_TIMEOUT_SECONDS}s",
        # kubectl keeps its discovery cache under $HOME; the root filesystem is read-only.
        "HOME": f"{STATE_MOUNT}/home",
    }
    if health.rails_unmarked_label(mode):
        # The node label that tells Kueue's TAS whether any rail of the node is marked.
        plain["RAILS_LABEL"] = RAILS_UNMARKED_LABEL
    return [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        *({"name": k, "value": v} for k, v in plain.items()),
    ]


def liveness_probe(config: RailHealthConfig, topology: Topology) -> dict[str, Any]:
    """Restarts an agent whose rounds stopped: its heartbeat (touched at the start of each round) is older than
    a round can last with every call timed out (health.agent_liveness_seconds). The new pod adopts the marks
    it finds. bash and coreutils' stat are in the agent's image (health.RAIL_AGENT_IMAGE)."""
    rails = sum(len(root.rails) for root in topology.roots)
    limit = health.agent_liveness_seconds(config.interval_seconds, rails)
    check = f"beat=$(stat -c %Y {STATE_MOUNT}/heartbeat) && [ $(($(date +%s) - beat)) -lt {limit} ]"
    return {
        "exec": {"command": ["bash", "-c", check]},
        # The first round starts at once; it may adopt (a read per rail) before its heartbeat ages at all.
        "initialDelaySeconds": config.interval_seconds,
        "periodSeconds": config.interval_seconds,
        "timeoutSeconds": 5,
        "failureThreshold": 2,
    }


def agent_pod_spec(
    config: RailHealthConfig,
    mode: health.RailMarkMode,
    topology: Topology,
    pools: Sequence[str],
    taints: Sequence[Taint],
) -> dict[str, Any]:
    """The agent's pod on the nodes of ``pools`` (one shape): host network (the node's rails), read-only
    /sys through the container's own sysfs, no privileges, the pools' taints and the agent's node mark
    tolerated (it must keep running on a node it marked)."""
    return {
        "serviceAccountName": NAME,
        "hostNetwork": True,
        "dnsPolicy": "ClusterFirstWithHostNet",
        "priorityClassName": PRIORITY_CLASS,
        **node_placement(pools),
        "tolerations": tolerations(list(taints)),
        "containers": [
            {
                "name": "agent",
                "image": config.image,
                "command": ["bash", f"{SCRIPT_MOUNT}/{SCRIPT}"],
                "env": agent_env(config, mode, topology, pools),
                "volumeMounts": [
                    {"name": "script", "mountPath": SCRIPT_MOUNT, "readOnly": True},
                    {"name": "state", "mountPath": STATE_MOUNT},
                ],
                "resources": {
                    "requests": {"cpu": health.AGENT_CPU_REQUEST, "memory": health.AGENT_MEMORY_REQUEST},
                    "limits": {"memory": health.AGENT_MEMORY_LIMIT},
                },
                "livenessProbe": liveness_probe(config, topology),
                "securityContext": {
                    "runAsNonRoot": True,
                    "runAsUser": 65534,
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                },
            }
        ],
        "volumes": [
            {"name": "script", "configMap": {"name": NAME}},
            # Survives a container restart, not a new pod: a new pod adopts the marks it finds.
            {"name": "state", "emptyDir": {"sizeLimit": "16Mi"}},
        ],
    }


def _mark_toleration_taint() -> Taint:
    return Taint(
        key=RAIL_UNHEALTHY_TAINT_KEY, value=health.RAIL_AGENT_MARK_VALUE, effect=health.RAIL_MARK_EFFECT
    )


@dataclass
class RailHealthAgentArgs:
    config: RailHealthConfig
    """Validated agent settings (health.rails)."""
    mode: health.RailMarkMode
    """How a bad rail is marked at the cluster's Kubernetes version (oke_gpu_rdma/health/health_marks.py rail_mark_mode)."""
    kubernetes_minor: int
    """The cluster's Kubernetes minor: its admission policies compare the Node's fields of that version."""
    pools: Mapping[str, Sequence[str]]
    """The DRANET pools by shape."""
    topologies: Mapping[str, Topology]
    """Each shape's topology (its rails)."""
    taints: Sequence[Taint]
    """The pools' taints, which the agent tolerates."""
    provider: k8s.Provider
    node_pools: Sequence[pulumi.Resource] = field(default_factory=list)
    """The pools to wait for."""


class RailHealthAgent(pulumi.ComponentResource):
    """The rail health agent on the DRANET pools."""

    daemonsets: pulumi.Output[list[str]]

    def __init__(
        self, name: str, args: RailHealthAgentArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.RAIL_HEALTH_COMPONENT, name, None, opts)
        namespace = args.config.namespace
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        # Enforced, warned at and audited: privileged (host network).
        ns = labelled_namespace(f"{name}-namespace", namespace, pod_security.RAIL_AGENT_LEVEL, child)
        in_namespace = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[ns]))
        # Nothing in, the API server only out (oke_gpu_rdma/common/network_policies.py api_server_only).
        declare_network_policies(
            name, [network_policies.api_server_only("api-server-only", namespace)], in_namespace
        )
        account = k8s.core.v1.ServiceAccount(
            f"{name}-service-account",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=NAME, namespace=namespace),
            opts=in_namespace,
        )
        _, binding = access_control.role_with_binding(
            f"{name}-cluster-role",
            NAME,
            None,
            rbac_rules(args.mode),
            [k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=NAME, namespace=namespace)],
            child,
            binding_after=[account],
        )
        # What RBAC cannot narrow, admission does: the node mode's own node, the device mode's own rules and
        # its own node's rails-unmarked label. The DaemonSet waits for every binding, so no agent ever runs with
        # its ClusterRole unnarrowed (issue 36: it waited for the RBAC binding only).
        if args.mode == "node":
            limits = [
                access_control.admission_policy(
                    f"{name}-own-node-policy",
                    NAME,
                    own_node_policy(namespace, "node", args.kubernetes_minor),
                    child,
                )
            ]
        else:
            limits = [
                access_control.admission_policy(
                    f"{name}-own-rules-policy", NAME, own_rules_policy(namespace), child
                )
            ]
            if health.rails_unmarked_label(args.mode):
                limits.append(
                    access_control.admission_policy(
                        f"{name}-node-label-policy",
                        NODE_LABEL_POLICY,
                        own_node_policy(namespace, "device", args.kubernetes_minor),
                        child,
                    )
                )
        script = k8s.core.v1.ConfigMap(
            f"{name}-script",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=NAME, namespace=namespace),
            data={SCRIPT: agent_script()},
            opts=in_namespace,
        )
        taints = list(dict.fromkeys([*args.taints, _mark_toleration_taint()]))
        names: list[str] = []
        for shape, pools in args.pools.items():
            daemonset = f"rail-health-{shape_slug(shape)}"
            labels = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/instance": daemonset}
            spec = agent_pod_spec(args.config, args.mode, args.topologies[shape], pools, taints)
            k8s.apps.v1.DaemonSet(
                f"{name}-{shape_slug(shape)}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=daemonset, namespace=namespace, labels=labels),
                spec=to_input_type(
                    k8s.apps.v1.DaemonSetSpecArgs,
                    {
                        "selector": {"matchLabels": labels},
                        "template": {"metadata": {"labels": labels}, "spec": spec},
                    },
                ),
                opts=pulumi.ResourceOptions.merge(
                    child, pulumi.ResourceOptions(depends_on=[binding, *limits, script, *args.node_pools])
                ),
            )
            names.append(daemonset)
        self.daemonsets = pulumi.Output.from_input(names)
        self.register_outputs({"daemonsets": self.daemonsets})
