"""The rail health agent's objects (components/health/rail_health.py), as the full example declares them."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from components.health.rail_health import (
    NAME,
    NODE_LABEL_POLICY,
    STATE_MOUNT,
    agent_script,
    own_node_policy,
    own_rules_policy,
    rbac_rules,
)
from oke_gpu_rdma.health import health_marks as health
from oke_gpu_rdma.nodes.labels import (
    POD_SECURITY_ENFORCE_LABEL,
    RAIL_UNHEALTHY_TAINT_KEY,
    RAILS_UNMARKED_LABEL,
)
from tests.components.admission import denials
from tests.support import Run, raw_config

DAEMONSET = "kubernetes:apps/v1:DaemonSet"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"
POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
POLICY_BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"


def env_of(run: Run) -> dict[str, object]:
    container = run.one(DAEMONSET, "rail-health-bm-gpu-b4-8").inputs["spec"]["template"]["spec"][
        "containers"
    ][0]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_the_full_example_runs_the_agent_on_its_dranet_pools_marking_nodes_on_1_36(
    run_stack: Callable[..., Run],
) -> None:
    run = run_stack("full")
    daemonset = run.one(DAEMONSET, "rail-health-bm-gpu-b4-8")
    spec = daemonset.inputs["spec"]["template"]["spec"]
    assert daemonset.inputs["metadata"]["namespace"] == "rail-health"
    assert spec["hostNetwork"] is True and spec["serviceAccountName"] == NAME
    assert spec["priorityClassName"] == "system-node-critical"
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [
        {
            "matchExpressions": [
                {"key": "oke-gpu-rdma/node-pool", "operator": "In", "values": ["gpu-b4-a", "gpu-b4-b"]}
            ]
        }
    ]
    assert spec["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": RAIL_UNHEALTHY_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
    ]
    (container,) = spec["containers"]
    assert (
        container["image"]
        == health.RAIL_AGENT_IMAGE
        == (
            "registry.k8s.io/kubectl:v1.36.3@sha256:6e4fce3c83651edb91b74bc67701c5cd263dd8aa3cd4254b1798d6425a5ab789"
        )
    )
    assert container["command"] == ["bash", "/opt/rail-health/rail-health.sh"]
    assert container["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 65534,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    env = env_of(run)
    assert env["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert (env["MARK_MODE"], env["TAINT_KEY"], env["TAINT_VALUE"]) == (
        "node",
        RAIL_UNHEALTHY_TAINT_KEY,
        "rail-agent",
    )
    assert (env["RECOVERY_CHECKS"], env["RECOVERY_SECONDS"], env["INTERVAL_SECONDS"]) == ("5", "600", "30")
    assert str(env["RAILS"]).split()[15] == "rdma15=0000:d1:00.1"
    # The pools it runs on: an agent whose node left them lifts its marks as it stops.
    assert (env["POOL_LABEL"], env["POOLS"]) == ("oke-gpu-rdma/node-pool", "gpu-b4-a gpu-b4-b")
    # v1.36: no v1 DeviceTaintRule, so the agent may only read and patch nodes.
    assert run.one(CLUSTER_ROLE, "rail-health-cluster-role").inputs["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}
    ]
    binding = run.one(BINDING, "rail-health-cluster-role-binding").inputs
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": NAME,
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": NAME, "namespace": "rail-health"}]
    # RBAC cannot narrow nodes to the pod's own: the admission policy does, and keeps other taints and labels.
    policy = run.one(POLICY, "rail-health-own-node-policy").inputs
    assert policy["spec"] == own_node_policy("rail-health", "node", 36)
    assert policy["spec"]["matchConditions"] == [
        {
            "name": "the-rail-health-agent",
            "expression": "request.userInfo.username == 'system:serviceaccount:rail-health:rail-health-agent'",
        }
    ]
    policy_binding = run.one(POLICY_BINDING, "rail-health-own-node-policy-binding")
    assert policy_binding.inputs["spec"] == {"policyName": NAME, "validationActions": ["Deny"]}
    # No agent runs before its admission limits are bound (issue 36 item 11).
    assert policy_binding.urn in daemonset.dependencies
    script = run.one("kubernetes:core/v1:ConfigMap", "rail-health-script").inputs
    assert script["data"] == {"rail-health.sh": agent_script()}
    namespace = run.one("kubernetes:core/v1:Namespace", "rail-health-namespace").inputs
    # Enforced, warned at and audited (issue 36, finding 11).
    assert namespace["metadata"]["labels"] == {
        POD_SECURITY_ENFORCE_LABEL: "privileged",
        "pod-security.kubernetes.io/warn": "privileged",
        "pod-security.kubernetes.io/audit": "privileged",
    }
    # The DaemonSet waits for the DRANET pools (and its RBAC and script).
    pools = {r.urn for r in run.of_type(NODE_POOL) if r.name != "system-nodes"}
    assert pools <= set(daemonset.dependencies)


def test_a_hung_agent_is_restarted_by_its_liveness_probe(
    run_stack: Callable[..., Run], tmp_path: Path
) -> None:
    """Issue 35 defect 6: the probe fails once the heartbeat each round touches is older than a round can last
    with every kubectl call timed out (10 s each), and passes while rounds go on; every call is bounded."""
    run = run_stack("full")
    container = run.one(DAEMONSET, "rail-health-bm-gpu-b4-8").inputs["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert env_of(run)["REQUEST_TIMEOUT"] == "10s"
    probe = container["livenessProbe"]
    limit = health.agent_liveness_seconds(30, 16)
    assert limit == 2 * 30 + (17 + 16 + 4) * 10
    assert (probe["periodSeconds"], probe["failureThreshold"], probe["initialDelaySeconds"]) == (30, 2, 30)
    shell, flag, check = probe["exec"]["command"]
    assert (shell, flag) == ("bash", "-c")
    check = check.replace(STATE_MOUNT, str(tmp_path))

    def alive() -> bool:
        return subprocess.run(["bash", "-c", check], capture_output=True).returncode == 0

    assert not alive()  # no round has started
    beat = tmp_path / "heartbeat"
    beat.touch()
    assert alive()
    old = time.time() - limit - 1
    os.utime(beat, (old, old))
    assert not alive()
    os.utime(beat, (old + 5, old + 5))
    assert alive()


def test_on_1_37_the_agent_writes_device_taint_rules_only(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("full")
    raw["cluster"]["create"]["kubernetesVersion"] = "v1.37.1"
    run = run_stack("full", raw)
    assert env_of(run)["MARK_MODE"] == "device"
    # Issue 34 item 4: the node label Kueue's TAS sees, since it does not see device taints.
    assert env_of(run)["RAILS_LABEL"] == RAILS_UNMARKED_LABEL
    assert (
        run.one(CLUSTER_ROLE, "rail-health-cluster-role").inputs["rules"]
        == rbac_rules("device")
        == [
            {
                "apiGroups": ["resource.k8s.io"],
                "resources": ["devicetaintrules"],
                "verbs": ["get", "create", "delete"],
            },
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]},
        ]
    )
    node_policy = run.one(POLICY, "rail-health-node-label-policy").inputs
    assert node_policy["metadata"]["name"] == NODE_LABEL_POLICY
    assert node_policy["spec"] == own_node_policy("rail-health", "device", 37)
    daemonset = run.one(DAEMONSET, "rail-health-bm-gpu-b4-8")
    for policy in ("rail-health-node-label-policy", "rail-health-own-rules-policy"):
        assert run.one(POLICY_BINDING, f"{policy}-binding").urn in daemonset.dependencies
    # Every node of the watched pools starts unmarked, and the shape's flavor selects it.
    starting = {
        pool.inputs["name"]: {label["key"]: label["value"] for label in pool.inputs["initialNodeLabels"]}.get(
            RAILS_UNMARKED_LABEL
        )
        for pool in run.of_type(NODE_POOL)
    }
    assert starting == {"gpu-b4-a": "true", "gpu-b4-b": "true", "system": None}
    (gpu_flavor,) = [
        f for f in run.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor") if "bm-gpu-b4-8" in f.name
    ]
    assert gpu_flavor.inputs["spec"]["nodeLabels"][RAILS_UNMARKED_LABEL] == "true"
    # RBAC grants every DeviceTaintRule: admission holds the agent to its own node's rules and mark.
    policy = run.one(POLICY, "rail-health-own-rules-policy").inputs
    assert policy["spec"] == own_rules_policy("rail-health")
    assert policy["spec"]["matchConstraints"]["resourceRules"] == [
        {
            "apiGroups": ["resource.k8s.io"],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE", "DELETE"],
            "resources": ["devicetaintrules"],
        }
    ]
    binding = run.one(POLICY_BINDING, "rail-health-own-rules-policy-binding").inputs
    assert binding["spec"] == {"policyName": NAME, "validationActions": ["Deny"]}
    # No node is marked, so the GPU driver's kubelet plugin needs no toleration of the mark.
    release = next(
        r for r in run.of_type("kubernetes:helm.sh/v3:Release") if r.name == "gpu-dra-driver-release"
    )
    assert release.inputs["values"]["kubeletPlugin"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]


def test_without_health_nothing_of_it_is_declared(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("full")
    raw.pop("health")
    run = run_stack("full", raw)
    assert (
        run.of_type(DAEMONSET) == []
        and [r for r in run.of_type(CLUSTER_ROLE) if r.name.startswith("rail-health")] == []
    )
    release = next(
        r for r in run.of_type("kubernetes:helm.sh/v3:Release") if r.name == "gpu-dra-driver-release"
    )
    assert "featureGates" not in release.inputs["values"]


AGENT = "system:serviceaccount:rail-health:rail-health-agent"
NODE = "10.0.0.5"
MARK = {"key": RAIL_UNHEALTHY_TAINT_KEY, "value": "rail-agent", "effect": "NoSchedule"}
GPU_TAINT = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}


def request(operation: str, user: str = AGENT, node: str | None = NODE) -> dict[str, object]:
    extra = {"authentication.kubernetes.io/node-name": [node]} if node else {}
    return {"operation": operation, "userInfo": {"username": user, "extra": extra}}


def a_node(
    name: str = NODE, taints: tuple[dict[str, str], ...] = (GPU_TAINT,), **meta: object
) -> dict[str, object]:
    return {"metadata": {"name": name, "labels": {"a": "b"}, **meta}, "spec": {"taints": list(taints)}}


def test_on_1_36_the_agent_may_set_and_lift_only_its_own_mark_on_its_own_node() -> None:
    policy = own_node_policy("rail-health", "node", 36)
    update = request("UPDATE")
    marked = a_node(taints=(GPU_TAINT, MARK))
    assert denials(policy, update, marked, a_node()) == []  # kubectl taint ... :NoSchedule
    assert denials(policy, update, a_node(), marked) == []  # ... and its removal
    other_node = a_node("10.0.0.6", (GPU_TAINT, MARK))
    assert denials(policy, update, other_node, a_node("10.0.0.6")) == [
        "the rail health agent may change only the node its pod runs on"
    ]
    own_mark_only = [
        "the rail health agent may add or remove only its own taint oke-gpu-rdma/rail-unhealthy=rail-agent:NoSchedule"
    ]
    evicting = a_node(taints=(GPU_TAINT, {**MARK, "effect": "NoExecute"}))
    assert denials(policy, update, evicting, a_node()) == own_mark_only
    # The scheduled check's mark under the same key is not the agent's to lift.
    checked = a_node(taints=(GPU_TAINT, {**MARK, "value": "fabric-check"}))
    assert denials(policy, update, a_node(), checked) == own_mark_only
    assert denials(policy, update, a_node(taints=(MARK,)), a_node()) == own_mark_only  # the GPU taint dropped
    cordoned = a_node()
    cordoned["spec"] = {**cordoned["spec"], "unschedulable": True}  # type: ignore[dict-item]
    assert denials(policy, update, cordoned, a_node()) == [
        "the rail health agent may not change a node's labels, annotations or unschedulable"
    ]
    # A token without the pod's node is refused; anyone else (the kubelet, an admin) is not this policy's.
    assert denials(policy, request("UPDATE", node=None), marked, a_node()) == [
        "the rail health agent may change only the node its pod runs on"
    ]
    assert denials(policy, request("UPDATE", user="system:node:10.0.0.5"), evicting, a_node()) is None


def test_on_1_37_the_agent_may_write_only_its_own_node_s_rules_with_its_own_mark() -> None:
    policy = own_rules_policy("rail-health")
    rule = {
        "metadata": {"name": f"rail-health.{NODE}.pci-0000-0c-00-0"},
        "spec": {
            "deviceSelector": {"driver": "dra.net", "pool": NODE, "device": "pci-0000-0c-00-0"},
            "taint": MARK,
        },
    }
    assert denials(policy, request("CREATE"), rule) == []
    assert denials(policy, request("DELETE"), None, rule) == []
    everything = {
        "metadata": rule["metadata"],
        "spec": {"deviceSelector": {}, "taint": {**MARK, "effect": "NoExecute"}},
    }
    assert denials(policy, request("CREATE"), everything) == [
        "the rail health agent's DeviceTaintRule must select one dra.net device of its own node's pool",
        "the rail health agent's DeviceTaintRule must carry its own mark oke-gpu-rdma/rail-unhealthy=rail-agent:NoSchedule",
    ]
    # Another node's rule, or the scheduled check's, is not the agent's to delete.
    theirs = {"metadata": {"name": f"fabric-check-{NODE}-rdma0"}, "spec": rule["spec"]}
    assert denials(policy, request("DELETE"), None, theirs) == [
        "the rail health agent may write only the DeviceTaintRules of the node its pod runs on "
        "(rail-health.<node>.<device>)"
    ]
    assert denials(policy, request("CREATE", node="10.0.0.6"), rule) == [
        "the rail health agent may write only the DeviceTaintRules of the node its pod runs on "
        "(rail-health.<node>.<device>)",
        "the rail health agent's DeviceTaintRule must select one dra.net device of its own node's pool",
    ]
    # Its own Node as owner (the garbage collector deletes the rule with the node), and no other.
    owned = {**rule, "metadata": {**rule["metadata"], "ownerReferences": [
        {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": "u"}]}}  # fmt: skip
    assert denials(policy, request("CREATE"), owned) == []
    elsewhere = {**rule, "metadata": {**rule["metadata"], "ownerReferences": [
        {"apiVersion": "v1", "kind": "Node", "name": "10.0.0.6", "uid": "u"}]}}  # fmt: skip
    assert denials(policy, request("CREATE"), elsewhere) == [
        "the rail health agent's DeviceTaintRule may name no owner but its own Node"
    ]


def test_on_1_37_the_agent_may_set_only_its_own_nodes_rails_unmarked_label() -> None:
    policy = own_node_policy("rail-health", "device", 37)
    update = request("UPDATE")

    def labelled(value: str | None, name: str = NODE, **extra: str) -> dict[str, object]:
        node = a_node(name)
        labels = {"a": "b", **extra, **({RAILS_UNMARKED_LABEL: value} if value is not None else {})}
        node["metadata"] = {**node["metadata"], "labels": labels}  # type: ignore[dict-item]
        return node

    assert denials(policy, update, labelled("false"), labelled("true")) == []
    assert denials(policy, update, labelled("true"), labelled(None)) == []  # a node that had none yet
    only_label = [
        f"the rail health agent may set only its node's label {RAILS_UNMARKED_LABEL}, to true or false"
    ]
    assert denials(policy, update, labelled("maybe"), labelled("true")) == only_label
    assert denials(policy, update, labelled(None), labelled("true")) == only_label  # removed
    assert denials(policy, update, labelled("true", **{"oke-gpu-rdma/node-pool": "x"}), labelled("true")) == (
        only_label
    )
    assert denials(policy, update, labelled("true", "10.0.0.6"), labelled("false", "10.0.0.6")) == [
        "the rail health agent may change only the node its pod runs on"
    ]
    tainted = labelled("true")
    tainted["spec"] = {"taints": [GPU_TAINT, MARK]}
    assert denials(policy, update, tainted, labelled("true")) == [
        "the rail health agent may not change a node's taints, annotations or unschedulable"
    ]


@pytest.mark.parametrize(
    ("section", "field", "value"),
    [
        ("metadata", "ownerReferences", [{"apiVersion": "v1", "kind": "Namespace", "name": "x", "uid": "u"}]),
        ("metadata", "finalizers", ["example.com/keep"]),
        ("spec", "providerID", "ocid1.instance.oc1.iad.other"),
        ("status", "allocatable", {"cpu": "1"}),
    ],
)
@pytest.mark.parametrize("mode", ["node", "device"])
def test_the_agent_may_change_no_other_field_of_its_node(
    mode: health.RailMarkMode, section: str, field: str, value: object
) -> None:
    """The whole node but the fields the other validations judge (issue 36 item 3): an owner reference would let
    the garbage collector delete the node, a finalizer keep it from going."""
    policy = own_node_policy("rail-health", mode, 36 if mode == "node" else 37)
    before = a_node(**({"labels": {"a": "b", RAILS_UNMARKED_LABEL: "true"}} if mode == "device" else {}))
    after = json.loads(json.dumps(before))
    after.setdefault(section, {})[field] = value
    assert denials(policy, request("UPDATE"), after, before) == [
        "the rail health agent may change no other field of a node (ownerReferences, finalizers, spec, status)"
    ]
