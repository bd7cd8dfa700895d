"""The scheduled fabric check's objects (components/health/fabric_checks.py), as the full example declares them."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from components.health import fabric_checks
from components.health.mpijob_specs import mpijob_spec
from oke_gpu_rdma.common.pod_specs import POD_TEMPLATES_LABEL
from oke_gpu_rdma.health import fabric_check
from oke_gpu_rdma.health.fabric_check import TAINT_VALUE, taint_mode, tolerating_claim_spec
from oke_gpu_rdma.nodes.labels import POOL_LABEL, RAIL_UNHEALTHY_TAINT_KEY
from stack_config.claims.template_requests import acceptance_template
from stack_config.loading import load_stack
from tests.components.admission import denials
from tests.support import EXAMPLE_REGION, Run, raw_config, without_remediation

CRONJOB = "kubernetes:batch/v1:CronJob"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
MPIJOB = "kubernetes:kubeflow.org/v2beta1:MPIJob"


def test_the_full_example_gates_the_apply_with_nccl_and_runs_it_nightly(
    run_stack: Callable[..., Run],
) -> None:
    run = run_stack("full")
    # The apply-time gate is the NCCL job through Kueue's queue; the nightly check reuses its spec unqueued.
    (gate,) = run.of_type(MPIJOB)
    assert gate.inputs["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "rdma-gpus"
    cron = run.one(CRONJOB)
    spec = cron.inputs["spec"]
    assert (spec["schedule"], spec["concurrencyPolicy"]) == ("0 3 * * *", "Forbid")
    pod = spec["jobTemplate"]["spec"]["template"]["spec"]
    assert spec["jobTemplate"]["spec"]["backoffLimit"] == 0
    assert pod["serviceAccountName"] == "fabric-check" and pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    assert (
        container["image"]
        == "docker.io/alpine/k8s:1.36.2@sha256:44ef4942e171939b9c665a4a84beb80e2dcdb9a24330d4651cfdfd2e9deecc47"
    )
    assert container["command"] == ["bash", "/opt/fabric-check/fabric-check.sh"]
    env = {e["name"]: e["value"] for e in container["env"]}
    # v1.36: no DeviceTaintRule in resource.k8s.io/v1, so the rail mark is a node taint.
    assert env["TAINT_MODE"] == "node"
    assert (env["POOL"], env["POOL_LABEL"], env["NAMESPACE"]) == ("gpu-b4-a", POOL_LABEL, "rdma-dranet")
    assert env["WAIT_SECONDS"] == "1800"  # timeoutMinutes 30
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    mpi_operator = run.one("kubernetes:yaml/v2:ConfigFile")
    assert mpi_operator.urn in cron.dependencies


def test_the_stored_specs_are_the_apply_time_jobs_with_their_thresholds(
    run_stack: Callable[..., Run],
) -> None:
    run = run_stack("full")
    specs = run.one(CONFIG_MAP, "acceptance-fabric-check-specs")
    assert specs.inputs["metadata"]["labels"] == {POD_TEMPLATES_LABEL: "true"}
    data = specs.inputs["data"]
    # The full example's gate is the NCCL job (it and the rail job are refused together at apply time).
    assert sorted(data) == ["fabric-check.sh", "nccl.json"]
    assert data["fabric-check.sh"] == (fabric_checks.SCRIPTS / "fabric-check.sh").read_text()
    stack = load_stack(raw_config("full"), "full", EXAMPLE_REGION)
    config = stack.config.workloads.acceptance_jobs
    taints = [t for p in stack.config.dra_pools for t in p.taints]
    taints = list(dict.fromkeys(taints))
    aligned = stack.claims.aligned_template(str(acceptance_template(stack.config)), "BM.GPU.B4.8")
    stored = json.loads(data["nccl.json"])["spec"]
    worker = stored["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    # With Kueue, the check's workers request a whole node's CPUs (the next test); otherwise the gate's spec.
    assert worker["resources"].pop("requests") == {"cpu": "65"}
    # ... and its launcher runs on the system pool, as the queued launchers do.
    launcher = stored["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    assert launcher.pop("nodeSelector") == {"oke-gpu-rdma/node-pool": "system"}
    assert stored == mpijob_spec(config, aligned, "gpu-b4-a", taints, 190.13)


def test_with_kueue_the_checks_workers_are_seen_by_tas_as_holding_their_nodes(
    run_stack: Callable[..., Run],
) -> None:
    """Issue 34 item 3: the check's MPIJob stays outside the queue (it pins its own pair), so TAS counts its
    workers only by their container requests (non_tas_usage_controller.go belongsToNonTASCache): they request
    what a queued whole-node worker does, more than half the node's CPUs, so no queued worker fits beside one."""
    run = run_stack("full")
    data = run.one(CONFIG_MAP, "acceptance-fabric-check-specs").inputs["data"]
    check = json.loads(data["nccl.json"])
    assert "kueue.x-k8s.io/queue-name" not in (check["metadata"].get("labels") or {})
    (gate,) = run.of_type(MPIJOB)
    queued = gate.inputs["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker = check["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert worker["resources"]["requests"] == queued["resources"]["requests"] == {"cpu": "65"}
    assert 2 * 65 > 128  # BM.GPU.B4.8's CPUs (oke_gpu_rdma/nodes/node_sizes.py): two never fit one node


def test_rbac_is_only_what_the_controller_calls(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    assert run.one(CLUSTER_ROLE, "acceptance-fabric-check-cluster-role").inputs["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]},
        {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["get", "patch"]},
    ]
    assert run.one(ROLE, "acceptance-fabric-check-role").inputs["rules"] == [
        {
            "apiGroups": ["kubeflow.org"],
            "resources": ["mpijobs"],
            "verbs": ["create", "get", "list", "delete"],
        },
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    ]
    binding = run.one(
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
        "acceptance-fabric-check-cluster-role-binding",
    )
    assert binding.inputs["subjects"] == [
        {"kind": "ServiceAccount", "name": "fabric-check", "namespace": "rdma-dranet"}
    ]
    assert (
        binding.inputs["roleRef"]["name"]
        == run.one(CLUSTER_ROLE, "acceptance-fabric-check-cluster-role").inputs["metadata"]["name"]
    )


def test_from_1_37_rails_are_device_taint_rules_and_the_role_grants_them() -> None:
    assert (taint_mode(36), taint_mode(37), taint_mode(38)) == ("node", "device", "device")
    extra = fabric_checks.cluster_rules("device")[3:]
    assert extra == [
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["list"]},
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["devicetaintrules"],
            "verbs": ["get", "list", "create", "patch", "delete"],
        },
    ]


def test_no_schedule_no_check(run_stack: Callable[..., Run]) -> None:
    raw = without_remediation(raw_config("full"))
    del raw["workloads"]
    run = run_stack("full", raw)
    assert run.of_type(CRONJOB) == [] and [r for r in run.of_type(ROLE) if "fabric-check" in r.name] == []


def test_on_1_37_the_check_carries_its_own_templates_tolerating_only_its_mark(
    run_stack: Callable[..., Run],
) -> None:
    raw = raw_config("full")
    raw["cluster"]["create"]["kubernetesVersion"] = "v1.37.1"
    run = run_stack("full", raw)
    data = run.one(CONFIG_MAP, "acceptance-fabric-check-specs").inputs["data"]
    assert sorted(data) == ["claims.json", "fabric-check.sh", "nccl.json"]
    nccl = json.loads(data["nccl.json"])["spec"]
    (used,) = fabric_checks.worker_templates(nccl)
    (declared,) = [
        t
        for t in run.of_type("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate")
        if t.inputs["metadata"]["name"] == used
    ]
    (copy,) = json.loads(data["claims.json"])["items"]
    assert copy["metadata"] == {
        "name": f"fabric-check-{used}",
        "namespace": "rdma-dranet",
        "labels": {"oke-gpu-rdma/fabric-check-run": "claims"},
    }
    # The declared template with one toleration more on every request: the check's own mark, nothing else.
    own = {"key": RAIL_UNHEALTHY_TAINT_KEY, "operator": "Equal", "value": TAINT_VALUE, "effect": "NoSchedule"}
    expected = json.loads(json.dumps(declared.inputs["spec"]["spec"]))
    for request in expected["devices"]["requests"]:
        request["exactly"]["tolerations"] = [own]
    assert copy["spec"]["spec"] == expected
    role = run.one(ROLE, "acceptance-fabric-check-role")
    assert role.inputs["rules"][-1] == {
        "apiGroups": ["resource.k8s.io"],
        "resources": ["resourceclaimtemplates"],
        "verbs": ["get", "create", "patch", "delete"],
    }


def test_a_first_available_request_tolerates_the_mark_in_every_subrequest() -> None:
    spec = {"devices": {"requests": [{"name": "r", "firstAvailable": [
        {"name": "a", "deviceClassName": "dra.net", "count": 2},
        {"name": "b", "deviceClassName": "dra.net", "count": 1,
         "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]}]}]}}  # fmt: skip
    out = tolerating_claim_spec(spec, RAIL_UNHEALTHY_TAINT_KEY)
    subs = out["devices"]["requests"][0]["firstAvailable"]
    own = {"key": RAIL_UNHEALTHY_TAINT_KEY, "operator": "Equal", "value": TAINT_VALUE, "effect": "NoSchedule"}
    assert subs[0]["tolerations"] == [own]
    assert subs[1]["tolerations"] == [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}, own]
    assert "tolerations" not in spec["devices"]["requests"][0]["firstAvailable"][0]  # the input is left alone


CHECK = "system:serviceaccount:rdma-dranet:fabric-check"
OWN = {"key": RAIL_UNHEALTHY_TAINT_KEY, "value": TAINT_VALUE, "effect": "NoSchedule"}
GPU = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
READY = {"type": "Ready", "status": "True"}


def node_update(user: str = CHECK) -> dict[str, Any]:
    return {"operation": "UPDATE", "kind": {"kind": "Node"}, "userInfo": {"username": user}}


def a_node(
    taints: tuple[dict[str, str], ...] = (GPU,),
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    conditions: tuple[dict[str, str], ...] = (READY,),
) -> dict[str, Any]:
    return {
        "metadata": {"name": "10.0.0.11", "labels": labels or {"a": "b"}, "annotations": annotations or {}},
        "spec": {"taints": list(taints)},
        "status": {"conditions": list(conditions)},
    }


def test_admission_lets_the_check_set_only_its_own_marks_on_nodes() -> None:
    policy = fabric_checks.admission_policy("rdma-dranet", "node", 36)
    before = a_node()
    # What fabric-check.sh sends: its taint on and off, its label, its annotation, its condition.
    for after in (
        a_node(taints=(GPU, OWN)),
        a_node(labels={"a": "b", "oke-gpu-rdma/fabric-check": "fail"}),
        a_node(annotations={"oke-gpu-rdma/fabric-check-rails": "rdma1"}),
        a_node(conditions=(READY, {"type": "FabricCheckFailed", "status": "True"})),
    ):
        assert denials(policy, node_update(), after, before) == []
        assert denials(policy, node_update(), before, after) == []
    refused = {
        "the fabric check may add or remove only its own taint oke-gpu-rdma/rail-unhealthy=fabric-check:NoSchedule": (
            a_node(taints=(GPU, {**OWN, "effect": "NoExecute"})),
            a_node(taints=(GPU, {**OWN, "value": "rail-agent"})),  # the rail agent's mark is not the check's
            a_node(taints=()),
        ),
        "the fabric check may change only the label oke-gpu-rdma/fabric-check": (a_node(labels={"a": "c"}),),
        "the fabric check may change only the annotation oke-gpu-rdma/fabric-check-rails": (
            a_node(annotations={"x": "y"}),
        ),
        "the fabric check may change only the condition FabricCheckFailed": (
            a_node(conditions=({"type": "Ready", "status": "False"},)),
        ),
    }
    for message, afters in refused.items():
        for after in afters:
            assert denials(policy, node_update(), after, before) == [message], after
    cordoned = a_node()
    cordoned["spec"]["unschedulable"] = True
    assert denials(policy, node_update(), cordoned, before) == [
        "the fabric check may not cordon or uncordon a node"
    ]
    assert denials(policy, node_update(user="system:node:10.0.0.11"), cordoned, before) is None


def test_on_1_37_admission_holds_the_check_to_its_own_device_taint_rules() -> None:
    assert [r["resources"] for r in fabric_checks.admission_policy("rdma-dranet", "node", 36)["matchConstraints"][
        "resourceRules"]] == [["nodes", "nodes/status"], ["resourceclaimtemplates"]]  # fmt: skip
    policy = fabric_checks.admission_policy("rdma-dranet", "device", 37)
    rule = {
        "metadata": {"name": "fabric-check-10.0.0.11-rdma1"},
        "spec": {"deviceSelector": {"driver": "dra.net", "pool": "10.0.0.11", "device": "pci-0000-0c-00-1"}, "taint": OWN},
    }  # fmt: skip
    request = {"kind": {"kind": "DeviceTaintRule"}, "userInfo": {"username": CHECK}}
    assert denials(policy, {**request, "operation": "CREATE"}, rule) == []
    assert denials(policy, {**request, "operation": "DELETE"}, None, rule) == []
    agents = {"metadata": {"name": "rail-health.10.0.0.11.pci-0000-0c-00-1"}, "spec": {**rule["spec"], "taint": {
        **OWN, "value": "rail-agent"}}}  # fmt: skip
    assert denials(policy, {**request, "operation": "DELETE"}, None, agents) == [
        "the fabric check may write only DeviceTaintRules named fabric-check-...",
        "the fabric check must carry its own mark oke-gpu-rdma/rail-unhealthy=fabric-check:NoSchedule in a "
        "DeviceTaintRule",
    ]
    everything = {"metadata": rule["metadata"], "spec": {"deviceSelector": {}, "taint": OWN}}
    assert denials(policy, {**request, "operation": "CREATE"}, everything) == [
        "the fabric check must select one dra.net device of one node's pool in a DeviceTaintRule"
    ]
    # A device name without a pool matches that device on every node.
    no_pool = {"metadata": rule["metadata"], "spec": {"deviceSelector": {"driver": "dra.net", "device": "pci-0000-0c-00-1"}, "taint": OWN}}  # fmt: skip
    assert denials(policy, {**request, "operation": "CREATE"}, no_pool) == [
        "the fabric check must select one dra.net device of one node's pool in a DeviceTaintRule"
    ]

    # Owned by its device's node, so that the garbage collector deletes it with the node; no other owner.
    def owned(kind: str, name: str) -> dict[str, object]:
        refs = [{"apiVersion": "v1", "kind": kind, "name": name, "uid": "u"}]
        return {"metadata": {**rule["metadata"], "ownerReferences": refs}, "spec": rule["spec"]}

    assert denials(policy, {**request, "operation": "CREATE"}, owned("Node", "10.0.0.11")) == []
    for other in (owned("Node", "10.0.0.12"), owned("Namespace", "10.0.0.11")):
        assert denials(policy, {**request, "operation": "CREATE"}, other) == [
            "the fabric check may make no owner of a DeviceTaintRule but the node of its device"
        ]


NO_OTHER_FIELD = (
    "the fabric check may change no other field of a node (ownerReferences, finalizers, spec, status)"
)


@pytest.mark.parametrize(
    ("section", "field", "value"),
    [
        ("metadata", "ownerReferences", [{"apiVersion": "v1", "kind": "Namespace", "name": "x", "uid": "u"}]),
        ("metadata", "finalizers", ["example.com/keep"]),
        ("spec", "providerID", "ocid1.instance.oc1.iad.other"),
        ("spec", "podCIDR", "10.244.9.0/24"),
        ("status", "allocatable", {"cpu": "1"}),
        ("status", "capacity", {"nvidia.com/gpu": "16"}),
        ("status", "addresses", [{"type": "InternalIP", "address": "10.9.9.9"}]),
        ("status", "daemonEndpoints", {"kubeletEndpoint": {"Port": 1}}),
        ("status", "nodeInfo", {"kubeletVersion": "v1.99.0"}),
    ],
)
@pytest.mark.parametrize("mode", ["node", "device"])
def test_admission_refuses_every_other_field_of_a_node(
    mode: fabric_check.TaintMode, section: str, field: str, value: Any
) -> None:
    """A whole-node comparison but for the check's own marks (issue 36 item 3): a field it never writes, set or
    changed, is refused, whether it appears or changes."""
    policy = fabric_checks.admission_policy("rdma-dranet", mode, 36 if mode == "node" else 37)
    before = a_node()
    after = a_node()
    after[section][field] = value
    assert denials(policy, node_update(), after, before) == [NO_OTHER_FIELD]
    assert denials(policy, node_update(), before, after) == [NO_OTHER_FIELD]
    # The API server's own bookkeeping changes on every write and is not the check's doing.
    stamped = a_node(taints=(GPU, OWN))
    stamped["metadata"] |= {"resourceVersion": "2", "managedFields": [{"manager": "kubectl-taint"}]}
    assert denials(policy, node_update(), stamped, {**before, "metadata": {**before["metadata"], "resourceVersion": "1"}}) == []  # fmt: skip


@pytest.mark.parametrize("mode", ["node", "device"])
def test_admission_keeps_the_check_to_its_own_claim_templates(mode: fabric_check.TaintMode) -> None:
    policy = fabric_checks.admission_policy("rdma-dranet", mode, 36 if mode == "node" else 37)
    request = {"kind": {"kind": "ResourceClaimTemplate"}, "userInfo": {"username": CHECK}}
    own = {"metadata": {"name": "fabric-check-aligned-8gpu-16rails", "namespace": "rdma-dranet"}, "spec": {}}
    other = {"metadata": {"name": "aligned-8gpu-16rails", "namespace": "rdma-dranet"}, "spec": {}}
    message = "the fabric check may write only its own ResourceClaimTemplates, named fabric-check-..."
    assert denials(policy, {**request, "operation": "CREATE"}, own) == []
    assert denials(policy, {**request, "operation": "UPDATE"}, own, own) == []
    assert denials(policy, {**request, "operation": "DELETE"}, None, own) == []
    assert denials(policy, {**request, "operation": "CREATE"}, other) == [message]
    assert denials(policy, {**request, "operation": "UPDATE"}, other, other) == [message]
    assert denials(policy, {**request, "operation": "DELETE"}, None, other) == [message]


def test_the_check_waits_for_its_admission_limits(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    policy = run.one(
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy",
        "acceptance-fabric-check-policy",
    )
    assert policy.inputs["metadata"]["name"] == "rdma-dranet-fabric-check"
    assert policy.inputs["spec"] == fabric_checks.admission_policy("rdma-dranet", "node", 36)
    binding = run.one(
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding",
        "acceptance-fabric-check-policy-binding",
    )
    assert binding.inputs["spec"] == {"policyName": "rdma-dranet-fabric-check", "validationActions": ["Deny"]}
    assert binding.urn in run.one(CRONJOB).dependencies
