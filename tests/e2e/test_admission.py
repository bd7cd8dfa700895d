"""The stack's ValidatingAdmissionPolicies and RBAC, enforced by the real kube-apiserver (k8s.io/apiserver
pkg/admission/plugin/policy/validating: a failed validation of a policy bound with validationActions Deny
refuses the request with 422 Invalid and "ValidatingAdmissionPolicy '<policy>' with binding '<binding>'
denied request: <message>"; RBAC refuses first, with 403 Forbidden), against the in-cluster writers acting
with their own identities:

- the rail health agent (components/health/scripts/rail-health.sh) with a token the API server mints for one of
  its DaemonSet's pods, which the real scheduler bound to a node: the token carries that node in the user
  extra authentication.kubernetes.io/node-name (ServiceAccountTokenPodNodeInfo, GA in 1.32), which the
  agent's policy reads;
- the scheduled fabric check (components/health/scripts/fabric-check.sh) with a token for the pod of a Job made
  from its CronJob, as `kubectl create job --from=cronjob/...` makes one.

Each write is sent as the scripts' kubectl sends it (checked against the requests of kubectl -v=8): `kubectl taint` GETs
the node and PATCHes a strategic merge patch of the whole spec.taints list, new taints first
(kubectl pkg/cmd/taint: addTaints / deleteTaints, fieldManager kubectl-taint); `kubectl label` and
`kubectl annotate` a JSON merge patch of the one key; `kubectl patch --subresource=status --type=strategic`
GETs nodes/status, then PATCHes it.

Allowed: exactly the writes the scripts make (on 1.36, node taints: no DeviceTaintRule is served in
resource.k8s.io/v1). Denied: anything else the policies are there to stop. Where the API server admits
today what it should refuse, the test still asserts the refusal and is marked xfail(strict=True) with the
issue that fixes it, so it flips when the policy is fixed; the admitted write is undone at once. The policies
compare the whole node but for each writer's own fields (issue 36), so owner references, finalizers and status
fields other than the check's condition are refused.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from components.health import fabric_checks
from oke_gpu_rdma.health import fabric_check
from oke_gpu_rdma.nodes.labels import FABRIC_CHECK_LABEL
from tests.components.health.test_fabric_checks import OWN as CHECK_MARK
from tests.components.health.test_rail_health import MARK as AGENT_MARK
from tests.e2e.claim_pods import RESOURCE_API
from tests.e2e.cluster_stack import StackCluster, wait_for
from tests.e2e.kube import ApiError, Kube

KEY = "full-admission"
AGENT_NODE, OTHER_NODE = "gpu-b4-a-0", "gpu-b4-a-1"
# The fabric check's pool (its CronJob's POOL): the nodes it marks.
CHECKED_NODE = "gpu-b4-a-1"


# -- identities --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Writer:
    """A client holding a service account token bound to one pod, and who the API server says it is."""

    kube: Kube
    pod: Mapping[str, Any]
    user: Mapping[str, Any]

    @property
    def node(self) -> str:
        [name] = self.user["extra"]["authentication.kubernetes.io/node-name"]
        return str(name)


def pod_token(kube: Kube, pod: Mapping[str, Any], seconds: int = 3600) -> str:
    """A TokenRequest for the pod's service account, bound to the pod (the kubelet asks the same for a
    projected service account token volume)."""
    meta = pod["metadata"]
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {
            "expirationSeconds": seconds,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]},
        },
    }
    path = f"/api/v1/namespaces/{meta['namespace']}/serviceaccounts/{pod['spec']['serviceAccountName']}/token"
    token: str = kube.post(path, body)["status"]["token"]
    return token


def writer_for(kube: Kube, pod: Mapping[str, Any]) -> Writer:
    client = kube.with_token(pod_token(kube, pod))
    review = client.post(
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
    )
    return Writer(client, pod, review["status"]["userInfo"])


def manifest(cluster: StackCluster, kind: str, name: str) -> dict[str, Any]:
    """The stack's object of ``kind`` named ``name`` (as the program declares it now)."""
    found = [
        o for o in cluster.stack.manifests.values() if o["kind"] == kind and o["metadata"]["name"] == name
    ]
    assert len(found) == 1, f"the stack declares {len(found)} {kind} {name}"
    return copy.deepcopy(found[0])


def rail_agent_daemonset(cluster: StackCluster) -> dict[str, Any]:
    [found] = [
        o
        for o in cluster.stack.manifests.values()
        if o["kind"] == "DaemonSet"
        and o["spec"]["template"]["spec"].get("serviceAccountName") == "rail-health-agent"
    ]
    return copy.deepcopy(found)


def rail_agent_on(cluster: StackCluster, node: str) -> Writer:
    """The rail agent as its DaemonSet's pod on ``node`` (made by the DaemonSet controller, bound by the
    scheduler): a token for that pod."""
    daemonset = rail_agent_daemonset(cluster)
    namespace = daemonset["metadata"]["namespace"]
    selector = ",".join(f"{k}={v}" for k, v in daemonset["spec"]["selector"]["matchLabels"].items())

    def pod() -> dict[str, Any] | None:
        pods = cluster.kube.list("v1", "Pod", namespace, labelSelector=selector)
        return next((p for p in pods if p["spec"].get("nodeName") == node), None)

    found = wait_for(pod, f"the rail agent's pod on {node}", 60)
    return writer_for(cluster.kube, found)


def delete_now(kube: Kube, path: str) -> None:
    """DELETE with gracePeriodSeconds 0: no kubelet here finishes a graceful pod deletion."""
    kube.delete(path, grace_seconds=0)


@dataclass
class CheckRun:
    """A run of the fabric check's CronJob made by hand: the Job and its pod."""

    job: str
    namespace: str
    writer: Writer


def start_fabric_check(cluster: StackCluster, job_name: str) -> CheckRun:
    """A Job from the fabric check's CronJob, as `kubectl create job --from=cronjob/<name>` makes it
    (the CronJob's jobTemplate, annotated cronjob.kubernetes.io/instantiate=manual), and a token for its pod
    once the scheduler has bound it."""
    cronjob = manifest(cluster, "CronJob", fabric_checks.NAME)
    namespace = cronjob["metadata"]["namespace"]
    template = cronjob["spec"]["jobTemplate"]
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name,
            "namespace": namespace,
            "annotations": {"cronjob.kubernetes.io/instantiate": "manual"},
            "labels": dict((template.get("metadata") or {}).get("labels") or {}),
        },
        "spec": template["spec"],
    }
    cluster.kube.create(job)

    def bound_pod() -> dict[str, Any] | None:
        pods = cluster.kube.list("v1", "Pod", namespace, labelSelector=f"job-name={job_name}")
        return next((p for p in pods if p["spec"].get("nodeName")), None)

    pod = wait_for(bound_pod, f"the pod of Job {job_name} bound to a node", 60)
    return CheckRun(job_name, namespace, writer_for(cluster.kube, pod))


def stop_fabric_check(cluster: StackCluster, run: CheckRun) -> None:
    cluster.kube.delete(f"/apis/batch/v1/namespaces/{run.namespace}/jobs/{run.job}")
    for pod in cluster.kube.list("v1", "Pod", run.namespace, labelSelector=f"job-name={run.job}"):
        delete_now(cluster.kube, f"/api/v1/namespaces/{run.namespace}/pods/{pod['metadata']['name']}")


# -- writes as kubectl sends them ----------------------------------------------------------------------------
def _patch(kube: Kube, path: str, body: Any, content_type: str, manager: str, strict: bool = False) -> Any:
    params = {"fieldManager": manager, **({"fieldValidation": "Strict"} if strict else {})}
    return kube.request(
        "PATCH",
        path,
        f"PATCH {path} as {manager}",
        params=params,
        data=json.dumps(body),
        headers={"Content-Type": content_type},
    )


STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"


def _same_taint(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """core/v1 Taint.MatchTaint: the same key and effect."""
    return bool(a["key"] == b["key"] and a.get("effect") == b.get("effect"))


def kubectl_taint(
    kube: Kube, node: str, taint: Mapping[str, str], remove: bool = False, overwrite: bool = False
) -> Any:
    """`kubectl taint node NODE key=value:effect [--overwrite]`, or with ``remove`` `key:effect-`."""
    path = f"/api/v1/nodes/{node}"
    old = list(kube.raw_get(path)["spec"].get("taints") or ())
    kept = [t for t in old if not _same_taint(t, taint)]
    if remove:
        assert len(kept) < len(old), f'kubectl: taint "{taint["key"]}:{taint["effect"]}" not found on {node}'
        new = kept
    else:
        assert overwrite or len(kept) == len(old), (
            f"kubectl: {node} already has the taint; --overwrite is false"
        )
        new = [dict(taint), *kept]
    return _patch(kube, path, {"spec": {"taints": new or None}}, STRATEGIC, "kubectl-taint", strict=True)


def kubectl_label(kube: Kube, node: str, key: str, value: str | None, kind: str = "labels") -> Any:
    """`kubectl label node NODE key=value --overwrite` (``value`` None: `key-`); ``kind`` annotations for
    `kubectl annotate`."""
    path = f"/api/v1/nodes/{node}"
    kube.raw_get(path)
    manager = "kubectl-label" if kind == "labels" else "kubectl-annotate"
    return _patch(kube, path, {"metadata": {kind: {key: value}}}, MERGE, manager)


def kubectl_patch_status(kube: Kube, node: str, body: Mapping[str, Any]) -> Any:
    """`kubectl patch node NODE --subresource=status --type=strategic -p BODY`."""
    path = f"/api/v1/nodes/{node}/status"
    kube.raw_get(path)
    return _patch(kube, path, body, STRATEGIC, "kubectl-patch")


def kubectl_patch(kube: Kube, node: str, body: Mapping[str, Any]) -> Any:
    """`kubectl patch node NODE --type=merge -p BODY`."""
    path = f"/api/v1/nodes/{node}"
    kube.raw_get(path)
    return _patch(kube, path, body, MERGE, "kubectl-patch")


def condition(status: str, reason: str) -> dict[str, Any]:
    """The condition fabric-check.sh mark_node sets."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {
        "type": fabric_check.CONDITION,
        "status": status,
        "reason": reason,
        "message": f"with {OTHER_NODE}: NCCL all_reduce busbw at 8589934592 bytes: 191.0 GB/s",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


# -- outcomes ------------------------------------------------------------------------------------------------
class Admitted(AssertionError):
    """The API server admitted a write the test expects it to refuse."""


def _dig(obj: Any, path: str) -> Any:
    for part in path.split(".") if path else ():
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def refusal(write: Callable[[], Any], shows: str = "") -> ApiError:
    """The API server's refusal of ``write``; Admitted, with what the server stored at ``shows`` (a dotted
    path in the object it returned), when it took the write."""
    try:
        written = write()
    except ApiError as err:
        return err
    meta = written.get("metadata", {}) if isinstance(written, dict) else {}
    stored = json.dumps(_dig(written, shows)) if shows else ""
    raise Admitted(
        f"the API server admitted it: {meta.get('name')} resourceVersion {meta.get('resourceVersion')}"
        + (f", {shows} = {stored}" if shows else "")
    )


def policy_message(cluster: StackCluster, policy: str, message: str) -> str:
    """What the API server says when ``policy``'s validation with ``message`` fails, names from the stack."""
    vap = manifest(cluster, "ValidatingAdmissionPolicy", policy)
    assert message in [v["message"] for v in vap["spec"]["validations"]], message
    [binding] = [
        o
        for o in cluster.stack.manifests.values()
        if o["kind"] == "ValidatingAdmissionPolicyBinding" and o["spec"]["policyName"] == policy
    ]
    assert binding["spec"]["validationActions"] == ["Deny"]
    return (
        f"ValidatingAdmissionPolicy '{policy}' with binding '{binding['metadata']['name']}' denied request: "
        f"{message}"
    )


def assert_denied_by_policy(
    cluster: StackCluster, write: Callable[[], Any], policy: str, message: str
) -> ApiError:
    err = refusal(write)
    assert (err.status, err.reason) == (422, "Invalid"), str(err)
    assert policy_message(cluster, policy, message) in err.message, err.message
    return err


def node_of(cluster: StackCluster, name: str) -> dict[str, Any]:
    node: dict[str, Any] = cluster.kube.raw_get(f"/api/v1/nodes/{name}")
    return node


def _back(before: Any, now: Any) -> Any:
    """A JSON merge patch value that turns ``now`` back into ``before`` (maps key by key, the rest whole)."""
    if isinstance(before, dict) and isinstance(now, dict):
        return {
            k: (_back(before[k], now.get(k)) if k in before else None) for k in before.keys() | now.keys()
        }
    return before


def restore_node(kube: Kube, before: Mapping[str, Any]) -> None:
    """Put back the node's metadata, spec and status as they were (admin), whatever a write changed."""
    name = before["metadata"]["name"]
    now = kube.raw_get(f"/api/v1/nodes/{name}")
    fields = ("labels", "annotations", "finalizers", "ownerReferences")
    meta = {f: _back(before["metadata"].get(f), now["metadata"].get(f)) for f in fields}
    spec = {f: _back(before["spec"].get(f), now["spec"].get(f)) for f in ("taints", "unschedulable")}
    kube.patch(f"/api/v1/nodes/{name}", {"metadata": meta, "spec": spec}, "merge")
    kube.patch(f"/api/v1/nodes/{name}/status", {"status": _back(before["status"], now["status"])}, "merge")
    after = kube.raw_get(f"/api/v1/nodes/{name}")
    for f in fields:
        assert after["metadata"].get(f) == before["metadata"].get(f), f"{name}: {f} not restored"
    assert after["status"].get("allocatable") == before["status"].get("allocatable")


PROBE_LABEL = "e2e.oke-gpu-rdma/probe"


def wait_policies_in_force(cluster: StackCluster, users: Iterable[str]) -> None:
    """Until each policy refuses its writer's label change: the API server loads a policy and its binding
    from its informers after the objects are written, not at once."""
    for user in users:
        writer = cluster.kube.as_user(user)

        def refused(writer: Kube = writer) -> bool:
            try:
                kubectl_label(writer, OTHER_NODE, PROBE_LABEL, "x")
            except ApiError as err:
                return err.status == 422
            kubectl_label(cluster.kube, OTHER_NODE, PROBE_LABEL, None)
            return False

        wait_for(refused, f"the admission policy on {user} in force", 30, 0.2)


@pytest.fixture(scope="module")
def cluster(cluster_of: Callable[..., StackCluster]) -> StackCluster:
    cluster = cluster_of("full", key=KEY)
    wait_policies_in_force(
        cluster,
        [
            "system:serviceaccount:rail-health:rail-health-agent",
            "system:serviceaccount:rdma-dranet:fabric-check",
        ],
    )
    return cluster


@pytest.fixture
def agent(cluster: StackCluster) -> Iterator[Writer]:
    """The rail agent on AGENT_NODE; the node is put back afterwards."""
    writer = rail_agent_on(cluster, AGENT_NODE)
    before = {n: node_of(cluster, n) for n in (AGENT_NODE, OTHER_NODE)}
    yield writer
    for node in before.values():
        restore_node(cluster.kube, node)


@pytest.fixture(scope="module")
def check_run(cluster: StackCluster) -> Iterator[CheckRun]:
    run = start_fabric_check(cluster, "fabric-check-e2e-admission")
    yield run
    stop_fabric_check(cluster, run)


@pytest.fixture
def check(cluster: StackCluster, check_run: CheckRun) -> Iterator[Writer]:
    """The fabric check (its CronJob's pod's token); CHECKED_NODE is put back afterwards."""
    before = node_of(cluster, CHECKED_NODE)
    yield check_run.writer
    restore_node(cluster.kube, before)


AGENT_POLICY = "rail-health-agent"
CHECK_POLICY = "rdma-dranet-fabric-check"
AGENT_OWN_NODE_ONLY = "the rail health agent may change only the node its pod runs on"
AGENT_OWN_MARK_ONLY = "the rail health agent may add or remove only its own taint oke-gpu-rdma/rail-unhealthy=rail-agent:NoSchedule"
AGENT_NO_METADATA = "the rail health agent may not change a node's labels, annotations or unschedulable"
CHECK_OWN_MARK_ONLY = "the fabric check may add or remove only its own taint oke-gpu-rdma/rail-unhealthy=fabric-check:NoSchedule"
CHECK_OWN_LABEL_ONLY = f"the fabric check may change only the label {FABRIC_CHECK_LABEL}"
CHECK_OWN_ANNOTATION_ONLY = f"the fabric check may change only the annotation {fabric_check.RAILS_ANNOTATION}"
CHECK_NO_CORDON = "the fabric check may not cordon or uncordon a node"
CHECK_OWN_CONDITION_ONLY = f"the fabric check may change only the condition {fabric_check.CONDITION}"


def served_minor(cluster: StackCluster) -> int:
    """The API server's Kubernetes minor (/version): the Node fields its policies may name."""
    return int(str(cluster.kube.get("/version")["minor"]).rstrip("+"))


def an_owner(cluster: StackCluster) -> dict[str, Any]:
    """An owner reference to an object that exists (the agent's ClusterRole), so the garbage collector leaves
    the node alone while the test looks."""
    name = manifest(cluster, "ClusterRole", "rail-health-agent")["metadata"]["name"]
    role = cluster.kube.raw_get(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}")
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
        "uid": role["metadata"]["uid"],
    }


# -- the rail health agent -----------------------------------------------------------------------------------
def test_the_rail_agents_token_names_the_node_its_pod_was_scheduled_to(
    cluster: StackCluster, agent: Writer
) -> None:
    assert agent.user["username"] == "system:serviceaccount:rail-health:rail-health-agent"
    assert agent.pod["spec"]["nodeName"] == AGENT_NODE
    assert agent.node == AGENT_NODE


def test_the_rail_agent_marks_nodes_on_1_36_with_the_mark_the_tests_send(cluster: StackCluster) -> None:
    container = rail_agent_daemonset(cluster)["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["MARK_MODE"] == "node"
    assert {"key": env["TAINT_KEY"], "value": env["TAINT_VALUE"], "effect": "NoSchedule"} == AGENT_MARK


def test_the_rail_agent_marks_its_own_node_and_lifts_the_mark_as_rail_health_sh_does(
    cluster: StackCluster, agent: Writer
) -> None:
    before = node_of(cluster, AGENT_NODE)["spec"]["taints"]
    assert AGENT_MARK not in before
    kubectl_taint(agent.kube, AGENT_NODE, AGENT_MARK)
    marked = node_of(cluster, AGENT_NODE)["spec"]["taints"]
    assert marked == [AGENT_MARK, *before]
    kubectl_taint(agent.kube, AGENT_NODE, AGENT_MARK, remove=True)
    assert node_of(cluster, AGENT_NODE)["spec"]["taints"] == before


def test_the_rail_agent_may_not_mark_another_node(cluster: StackCluster, agent: Writer) -> None:
    before = node_of(cluster, OTHER_NODE)
    assert_denied_by_policy(
        cluster, lambda: kubectl_taint(agent.kube, OTHER_NODE, AGENT_MARK), AGENT_POLICY, AGENT_OWN_NODE_ONLY
    )
    assert node_of(cluster, OTHER_NODE)["spec"] == before["spec"]


@pytest.mark.parametrize(
    ("taint", "what"),
    [
        ({**AGENT_MARK, "effect": "NoExecute"}, "NoExecute would evict the pods on the node"),
        (CHECK_MARK, "the fabric check's value of the key"),
        ({"key": "example.com/other", "value": "x", "effect": "NoSchedule"}, "another key"),
    ],
    ids=["no-execute", "fabric-check-value", "other-key"],
)
def test_the_rail_agent_may_set_only_its_own_mark(
    cluster: StackCluster, agent: Writer, taint: dict[str, str], what: str
) -> None:
    before = node_of(cluster, AGENT_NODE)
    assert_denied_by_policy(
        cluster, lambda: kubectl_taint(agent.kube, AGENT_NODE, taint), AGENT_POLICY, AGENT_OWN_MARK_ONLY
    )
    assert node_of(cluster, AGENT_NODE)["spec"] == before["spec"], what


def test_the_rail_agent_may_not_lift_the_fabric_checks_mark(cluster: StackCluster, agent: Writer) -> None:
    kubectl_taint(cluster.kube, AGENT_NODE, CHECK_MARK)
    assert_denied_by_policy(
        cluster,
        lambda: kubectl_taint(agent.kube, AGENT_NODE, CHECK_MARK, remove=True),
        AGENT_POLICY,
        AGENT_OWN_MARK_ONLY,
    )
    assert CHECK_MARK in node_of(cluster, AGENT_NODE)["spec"]["taints"]


@pytest.mark.parametrize(
    "body",
    [
        {"metadata": {"labels": {"example.com/x": "y"}}},
        {"metadata": {"annotations": {"example.com/x": "y"}}},
        {"spec": {"unschedulable": True}},
    ],
    ids=["label", "annotation", "cordon"],
)
def test_the_rail_agent_may_not_label_annotate_or_cordon_its_node(
    cluster: StackCluster, agent: Writer, body: dict[str, Any]
) -> None:
    assert_denied_by_policy(
        cluster, lambda: kubectl_patch(agent.kube, AGENT_NODE, body), AGENT_POLICY, AGENT_NO_METADATA
    )


def test_the_rail_agent_may_not_set_owner_references_on_its_node(
    cluster: StackCluster, agent: Writer
) -> None:
    body = {"metadata": {"ownerReferences": [an_owner(cluster)]}}
    err = refusal(lambda: kubectl_patch(agent.kube, AGENT_NODE, body), "metadata.ownerReferences")
    assert err.status == 422 and f"ValidatingAdmissionPolicy '{AGENT_POLICY}'" in err.message, str(err)


def test_the_rail_agent_may_not_set_finalizers_on_its_node(cluster: StackCluster, agent: Writer) -> None:
    body = {"metadata": {"finalizers": ["example.com/keep"]}}
    err = refusal(lambda: kubectl_patch(agent.kube, AGENT_NODE, body), "metadata.finalizers")
    assert err.status == 422 and f"ValidatingAdmissionPolicy '{AGENT_POLICY}'" in err.message, str(err)


# -- the fabric check ----------------------------------------------------------------------------------------
def test_the_fabric_check_runs_as_its_service_account(cluster: StackCluster, check: Writer) -> None:
    cronjob = manifest(cluster, "CronJob", fabric_checks.NAME)
    assert (
        cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["serviceAccountName"] == fabric_checks.NAME
    )
    assert check.user["username"] == f"system:serviceaccount:rdma-dranet:{fabric_checks.NAME}"
    assert check.pod["spec"]["nodeName"] and check.node == check.pod["spec"]["nodeName"]


def test_the_fabric_check_sets_and_lifts_its_marks_as_fabric_check_sh_does(
    cluster: StackCluster, check: Writer
) -> None:
    node = CHECKED_NODE
    before = node_of(cluster, node)
    # mark_rails, a rail below the threshold: the taint (--overwrite), then the rails annotation.
    kubectl_taint(check.kube, node, CHECK_MARK, overwrite=True)
    kubectl_label(check.kube, node, fabric_check.RAILS_ANNOTATION, "rdma3 rdma7", "annotations")
    # mark_node, NCCL below the threshold: the label, then the condition on nodes/status.
    kubectl_label(check.kube, node, FABRIC_CHECK_LABEL, "fail")
    kubectl_patch_status(
        check.kube, node, {"status": {"conditions": [condition("True", "NcclBelowThreshold")]}}
    )
    marked = node_of(cluster, node)
    assert marked["spec"]["taints"] == [CHECK_MARK, *before["spec"]["taints"]]
    assert marked["metadata"]["annotations"][fabric_check.RAILS_ANNOTATION] == "rdma3 rdma7"
    assert marked["metadata"]["labels"][FABRIC_CHECK_LABEL] == "fail"
    conditions = {c["type"]: c for c in marked["status"]["conditions"]}
    assert (conditions[fabric_check.CONDITION]["status"], conditions[fabric_check.CONDITION]["reason"]) == (
        "True",
        "NcclBelowThreshold",
    )
    assert conditions["Ready"] == {c["type"]: c for c in before["status"]["conditions"]}["Ready"]
    # Every rail passed and NCCL above the threshold: the mark lifted, pass and False.
    kubectl_taint(check.kube, node, CHECK_MARK, remove=True)
    kubectl_label(check.kube, node, fabric_check.RAILS_ANNOTATION, None, "annotations")
    kubectl_label(check.kube, node, FABRIC_CHECK_LABEL, "pass")
    kubectl_patch_status(
        check.kube, node, {"status": {"conditions": [condition("False", "NcclAboveThreshold")]}}
    )
    lifted = node_of(cluster, node)
    assert lifted["spec"]["taints"] == before["spec"]["taints"]
    assert fabric_check.RAILS_ANNOTATION not in (lifted["metadata"].get("annotations") or {})
    assert lifted["metadata"]["labels"][FABRIC_CHECK_LABEL] == "pass"
    assert {c["type"]: c["status"] for c in lifted["status"]["conditions"]}[fabric_check.CONDITION] == "False"


@pytest.mark.parametrize(
    ("write", "message"),
    [
        (
            lambda k: kubectl_taint(k, CHECKED_NODE, {**CHECK_MARK, "effect": "NoExecute"}),
            CHECK_OWN_MARK_ONLY,
        ),
        (lambda k: kubectl_taint(k, CHECKED_NODE, AGENT_MARK), CHECK_OWN_MARK_ONLY),
        (
            lambda k: kubectl_taint(
                k, CHECKED_NODE, {"key": "nvidia.com/gpu", "effect": "NoSchedule"}, remove=True
            ),
            CHECK_OWN_MARK_ONLY,
        ),
        (lambda k: kubectl_label(k, CHECKED_NODE, "example.com/x", "y"), CHECK_OWN_LABEL_ONLY),
        (
            lambda k: kubectl_label(k, CHECKED_NODE, "example.com/x", "y", "annotations"),
            CHECK_OWN_ANNOTATION_ONLY,
        ),
        (lambda k: kubectl_patch(k, CHECKED_NODE, {"spec": {"unschedulable": True}}), CHECK_NO_CORDON),
        (
            lambda k: kubectl_patch_status(
                k,
                CHECKED_NODE,
                {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "x"}]}},
            ),
            CHECK_OWN_CONDITION_ONLY,
        ),
    ],
    ids=[
        "no-execute",
        "rail-agent-value",
        "gpu-taint-lifted",
        "other-label",
        "other-annotation",
        "cordon",
        "ready-condition",
    ],
)
def test_the_fabric_check_may_not_write_what_is_not_its_mark(
    cluster: StackCluster, check: Writer, write: Callable[[Kube], Any], message: str
) -> None:
    before = node_of(cluster, CHECKED_NODE)
    assert_denied_by_policy(cluster, lambda: write(check.kube), CHECK_POLICY, message)
    after = node_of(cluster, CHECKED_NODE)
    assert (after["metadata"]["resourceVersion"], after["spec"]) == (
        before["metadata"]["resourceVersion"],
        before["spec"],
    )


@pytest.mark.parametrize(
    ("field", "body"),
    [
        pytest.param(
            "metadata.ownerReferences",
            None,
        ),
        pytest.param(
            "metadata.finalizers",
            {"metadata": {"finalizers": ["example.com/keep"]}},
        ),
    ],
    ids=["owner-references", "finalizers"],
)
def test_the_fabric_check_may_not_set_owner_references_or_finalizers(
    cluster: StackCluster, check: Writer, field: str, body: dict[str, Any] | None
) -> None:
    body = body or {"metadata": {"ownerReferences": [an_owner(cluster)]}}
    err = refusal(lambda: kubectl_patch(check.kube, CHECKED_NODE, body), field)
    assert err.status == 422 and f"ValidatingAdmissionPolicy '{CHECK_POLICY}'" in err.message, (
        field,
        str(err),
    )


@pytest.mark.parametrize(
    "status",
    [
        pytest.param({"allocatable": {"cpu": "1"}}, id="allocatable"),
        pytest.param({"capacity": {"cpu": "1"}}, id="capacity"),
        pytest.param({"addresses": [{"type": "InternalIP", "address": "10.9.9.9"}]}, id="addresses"),
        pytest.param({"nodeInfo": {"kubeletVersion": "v1.99.0"}}, id="node-info"),
    ],
)
def test_the_fabric_check_may_change_no_status_field_but_its_condition(
    cluster: StackCluster, check: Writer, status: dict[str, Any]
) -> None:
    [field] = status
    err = refusal(
        lambda: kubectl_patch_status(check.kube, CHECKED_NODE, {"status": status}), f"status.{field}"
    )
    assert err.status == 422 and f"ValidatingAdmissionPolicy '{CHECK_POLICY}'" in err.message, str(err)


# -- the fabric check's claim templates ----------------------------------------------------------------------
STACK_TEMPLATE = "aligned-8gpu-16rails"


def claim_template(namespace: str, name: str) -> dict[str, Any]:
    spec = {
        "devices": {"requests": [{"name": "rails", "exactly": {"deviceClassName": "dra.net", "count": 1}}]}
    }
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": spec},
    }


def rct_path(namespace: str, name: str) -> str:
    return f"/apis/{RESOURCE_API}/namespaces/{namespace}/resourceclaimtemplates/{name}"


def rct_write(kube: Kube, verb: str, namespace: str, name: str) -> Any:
    """What `kubectl apply -f claims.json` (create, or patch when it exists) and `kubectl delete -f
    claims.json` send for one template of fabric-check.sh's device mode."""
    if verb == "create":
        return kube.create(claim_template(namespace, name))
    if verb == "patch":
        body = {"metadata": {"labels": {fabric_check.RUN_LABEL: "claims"}}}
        return kube.patch(rct_path(namespace, name), body, "strategic")
    assert verb == "delete"
    return kube.request("DELETE", rct_path(namespace, name), f"DELETE {rct_path(namespace, name)}")


def allowed(kube: Kube, verb: str, namespace: str) -> bool:
    """A SelfSubjectAccessReview: may this client ``verb`` ResourceClaimTemplates in ``namespace``?"""
    review = kube.post(
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {
                "resourceAttributes": {
                    "group": "resource.k8s.io",
                    "resource": "resourceclaimtemplates",
                    "verb": verb,
                    "namespace": namespace,
                }
            },
        },
    )
    return bool(review["status"]["allowed"])


def test_on_1_36_the_fabric_check_may_write_no_claim_template(cluster: StackCluster, check: Writer) -> None:
    """Node mode: fabric-check.sh writes no ResourceClaimTemplate, and RBAC grants it none, inside its prefix
    or outside it."""
    cronjob = manifest(cluster, "CronJob", fabric_checks.NAME)
    container = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert (env["TAINT_MODE"], env["CLAIM_PREFIX"]) == ("node", fabric_check.CLAIM_PREFIX)
    namespace = cronjob["metadata"]["namespace"]
    own = fabric_check.CLAIM_PREFIX + STACK_TEMPLATE
    cluster.kube.create(claim_template(namespace, own))
    try:
        writes = [("create", fabric_check.CLAIM_PREFIX + "new"), ("create", "outside-the-prefix")]
        writes += [(verb, name) for verb in ("patch", "delete") for name in (own, STACK_TEMPLATE)]
        for verb, name in writes:

            def write(verb: str = verb, name: str = name) -> Any:
                return rct_write(check.kube, verb, namespace, name)

            err = refusal(write)
            assert (err.status, err.reason) == (403, "Forbidden"), (verb, name, str(err))
            assert f'cannot {verb} resource "resourceclaimtemplates"' in err.message, err.message
        assert cluster.kube.get(rct_path(namespace, STACK_TEMPLATE)) is not None
        assert cluster.kube.get(rct_path(namespace, own)) is not None
    finally:
        cluster.kube.delete(rct_path(namespace, own))


@pytest.fixture
def device_mode_role(cluster: StackCluster, check: Writer) -> Iterator[str]:
    """The fabric check's Role as the stack declares it from 1.37 (device mode,
    components/fabric_checks.namespace_rules("device")) in place of the 1.36 one, until RBAC's cache grants
    it; the 1.36 Role and the stack's templates put back afterwards. The admission policy matches the check's
    claim templates in both modes (so the stack's 1.36 policy, applied, is the one that judges them here)."""
    role = manifest(cluster, "Role", fabric_checks.NAME)
    namespace = role["metadata"]["namespace"]
    for mode in ("node", "device"):
        policy = fabric_checks.admission_policy(namespace, mode, served_minor(cluster))
        assert any(
            "resourceclaimtemplates" in r["resources"] for r in policy["matchConstraints"]["resourceRules"]
        )
    cluster.kube.apply({**role, "rules": fabric_checks.namespace_rules("device")})
    try:
        wait_for(lambda: allowed(check.kube, "create", namespace), "the 1.37 Role granted", 30, 0.2)
        yield namespace
    finally:
        cluster.kube.apply(role)
        for obj in cluster.stack.manifests.values():
            if obj["kind"] == "ResourceClaimTemplate":
                path = rct_path(namespace, obj["metadata"]["name"])
                if cluster.kube.get(path) is None:
                    cluster.kube.apply(obj)
                else:
                    cluster.kube.patch(path, {"metadata": {"labels": {fabric_check.RUN_LABEL: None}}})
        wait_for(lambda: not allowed(check.kube, "create", namespace), "the 1.36 Role back", 30, 0.2)


def test_from_1_37_the_fabric_check_writes_its_own_claim_template_copies(
    cluster: StackCluster, check: Writer, device_mode_role: str
) -> None:
    namespace, own = device_mode_role, fabric_check.CLAIM_PREFIX + STACK_TEMPLATE
    try:
        assert rct_write(check.kube, "create", namespace, own)["metadata"]["name"] == own
        rct_write(check.kube, "patch", namespace, own)
        labels = cluster.kube.raw_get(rct_path(namespace, own))["metadata"]["labels"]
        assert labels == {fabric_check.RUN_LABEL: "claims"}
        rct_write(check.kube, "delete", namespace, own)
        assert cluster.kube.get(rct_path(namespace, own)) is None
    finally:
        cluster.kube.delete(rct_path(namespace, own))


@pytest.mark.parametrize("verb", ["create", "patch", "delete"])
def test_from_1_37_the_fabric_check_may_not_write_claim_templates_outside_its_prefix(
    cluster: StackCluster, check: Writer, device_mode_role: str, verb: str
) -> None:
    namespace = device_mode_role
    # A new template of someone else's, or the stack's own whole-node template.
    name = "other-team-template" if verb == "create" else STACK_TEMPLATE
    assert not name.startswith(fabric_check.CLAIM_PREFIX)
    try:
        shows = {"create": "metadata.name", "patch": "metadata.labels", "delete": "metadata.name"}[verb]
        err = refusal(lambda: rct_write(check.kube, verb, namespace, name), shows)
        assert err.status == 422 and f"ValidatingAdmissionPolicy '{CHECK_POLICY}'" in err.message, str(err)
        assert "may write only its own ResourceClaimTemplates" in err.message, err.message
    finally:
        cluster.kube.delete(rct_path(namespace, "other-team-template"))
    assert cluster.kube.get(rct_path(namespace, STACK_TEMPLATE)) is not None
