"""The rail health agent's objects (components/rail_health.py), as the full example declares them."""

from __future__ import annotations

from collections.abc import Callable

from components.rail_health import NAME, agent_script, own_node_policy, rbac_rules
from oke_gpu_rdma.labels import POD_SECURITY_ENFORCE_LABEL, RAIL_UNHEALTHY_TAINT_KEY
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
    assert container["image"] == "registry.k8s.io/kubectl:v1.36.0"
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
    policy = run.one(POLICY).inputs
    assert policy["spec"] == own_node_policy("rail-health")
    assert policy["spec"]["matchConditions"] == [
        {
            "name": "the-rail-health-agent",
            "expression": "request.userInfo.username == 'system:serviceaccount:rail-health:rail-health-agent'",
        }
    ]
    assert policy["spec"]["validations"][0]["expression"] == (
        "has(request.userInfo.extra) && 'authentication.kubernetes.io/node-name' in request.userInfo.extra && "
        "request.userInfo.extra['authentication.kubernetes.io/node-name'] == [object.metadata.name]"
    )
    assert run.one(POLICY_BINDING).inputs["spec"] == {"policyName": NAME, "validationActions": ["Deny"]}
    script = run.one("kubernetes:core/v1:ConfigMap", "rail-health-script").inputs
    assert script["data"] == {"rail-health.sh": agent_script()}
    namespace = run.one("kubernetes:core/v1:Namespace", "rail-health-namespace").inputs
    assert namespace["metadata"]["labels"] == {POD_SECURITY_ENFORCE_LABEL: "privileged"}
    # The DaemonSet waits for the DRANET pools (and its RBAC and script).
    pools = {r.urn for r in run.of_type(NODE_POOL) if r.name != "system-nodes"}
    assert pools <= set(daemonset.dependencies)


def test_on_1_37_the_agent_writes_device_taint_rules_only(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("full")
    raw["cluster"]["create"]["kubernetesVersion"] = "v1.37.1"
    run = run_stack("full", raw)
    assert env_of(run)["MARK_MODE"] == "device"
    assert (
        run.one(CLUSTER_ROLE, "rail-health-cluster-role").inputs["rules"]
        == rbac_rules("device")
        == [
            {
                "apiGroups": ["resource.k8s.io"],
                "resources": ["devicetaintrules"],
                "verbs": ["get", "create", "delete"],
            }
        ]
    )
    assert run.of_type(POLICY) == [] and run.of_type(POLICY_BINDING) == []
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
