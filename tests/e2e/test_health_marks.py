"""What the health marks do to scheduling on the real control plane: kube-scheduler's TaintToleration and
DynamicResources plugins (k8s.io/kubernetes pkg/scheduler/framework/plugins), the MPI operator v0.6.0
creating the MPIJobs' pods, and Kueue's Topology Aware Scheduling admitting the queued ones
(sigs.k8s.io/kueue pkg/cache/scheduler/tas_flavor_snapshot.go). Pods never run (no kubelet): a pod is
bound (spec.nodeName) or the scheduler says why not (condition PodScheduled False, reason Unschedulable).

- A rail the agent marked bad: on 1.36 its mark is a NoSchedule taint on the whole node, written with the
  agent's own token as rail-health.sh writes it (`kubectl taint node <node> <key>=<value>:NoSchedule`).
  New whole-node claims (the stack's aligned-8gpu-16rails, on pods carrying what the stack's MPIJob worker
  carries) go to the other nodes of the shape, never to the marked one, even when it is the last with free
  devices; a pod pinned there waits with the scheduler's untolerated-taint message, and is bound there once
  the agent lifts its mark.
- From 1.37 a rail is marked by a DeviceTaintRule alone, which Kueue's TAS does not see: with the objects the
  stack declares then (the shape's flavor selecting oke-gpu-rdma/rails-unmarked=true, the agent's node-label
  admission policy), the agent's own `kubectl label ... rails-unmarked=false` keeps a queued whole-node job
  pinned to its node unadmitted, and setting it back lets Kueue admit it there (the 1.36 control plane here
  serves no v1 DeviceTaintRule, so the label is what the test changes; the agent's script is tested against
  the fake kubectl).
- The scheduled fabric check holding a pair: its NCCL MPIJob, made as fabric-check.sh makes it from the
  stack's spec (its ConfigMap nccl.json) for the idle pair it finds with its own token (a token for the pod
  of a Job made from its CronJob), gets one worker on each node of the pair, each holding its devices; a
  queued two-node job like the stack's acceptance MPIJob is then admitted by Kueue onto the two other B4.8
  nodes, none of the held ones. On 1.36 (TAINT_MODE node) the check applies no claim template copies of
  its own: its jobs claim from the stack's templates.

The stack's own acceptance MPIJob is admitted at install and holds two nodes: it is deleted first (its pods
force-deleted) so that the nodes are free.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from components.health import fabric_checks, rail_health
from oke_gpu_rdma.nodes.labels import (
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    RAILS_UNMARKED_LABEL,
    RDMA_NETWORK_BLOCK_LABEL,
)
from oke_gpu_rdma.scheduling import mpi_operator
from oke_gpu_rdma.scheduling.kueue_jobs import QUEUE_LABEL
from tests.components.health.test_rail_health import MARK as AGENT_MARK
from tests.e2e.claim_pods import RESOURCE_API, delete_pods, scheduled
from tests.e2e.cluster_stack import StackCluster, wait_for
from tests.e2e.kube import ApiError, Kube
from tests.e2e.nodes import Placement
from tests.e2e.test_admission import (
    CheckRun,
    kubectl_label,
    kubectl_taint,
    manifest,
    rail_agent_daemonset,
    rail_agent_on,
    served_minor,
    start_fabric_check,
    stop_fabric_check,
)
from tests.e2e.test_kueue import _single_node_job
from tests.e2e.workloads import admitted, workload_of

KEY = "full-health-marks"
SHAPE = "BM.GPU.B4.8"
MPIJOB_API = mpi_operator.MPIJOB_API_VERSION
ACCEPTANCE_JOB = "nccl-all-reduce"
WHOLE_NODE_TEMPLATE = "aligned-8gpu-16rails"
# The fabric check's pool (gpu-b4-a) in the network block Kueue's TAS tries first when blocks tie: its
# BestFit order ends on the level values, ascending (sortedDomains), and the label values are SHA-256
# digests of the blocks' OCIDs (oke_gpu_rdma/nodes/scripts/rdma-topology-labels.sh): block-1's sorts before
# block-2's. So a TAS that sees the check's nodes as empty takes them.
PLACEMENT = Placement(
    blocks={"gpu-b4-a": [("block-1", "local-1")] * 2, "gpu-b4-b": [("block-2", "local-2")] * 2}
)
# The MPI operator's label on the pods of an MPIJob (v0.6.0 pkg/controller: training.kubeflow.org/job-name).
JOB_NAME_LABEL = "training.kubeflow.org/job-name"


# -- pods and jobs -------------------------------------------------------------------------------------------
def pods_of(kube: Kube, namespace: str, prefix: str) -> list[dict[str, Any]]:
    return [p for p in kube.list("v1", "Pod", namespace) if p["metadata"]["name"].startswith(prefix)]


def claims_of(kube: Kube, namespace: str, pod_names: set[str]) -> list[dict[str, Any]]:
    """The claims the resourceclaim controller made for these pods (named <pod>-<claim>-<random>)."""
    return [
        c
        for c in kube.list(RESOURCE_API, "ResourceClaim", namespace)
        if any(
            o.get("kind") == "Pod" and o["name"] in pod_names
            for o in c["metadata"].get("ownerReferences") or ()
        )
    ]


def delete_job(cluster: StackCluster, namespace: str, name: str) -> None:
    """Delete an MPIJob with its Workload, launcher Job and pods, and wait until the pods' claims are gone."""
    kube = cluster.kube
    kube.delete(f"/apis/{MPIJOB_API}/namespaces/{namespace}/mpijobs/{name}")
    kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}-launcher")

    def gone() -> bool:
        pods = pods_of(kube, namespace, f"{name}-")
        names = {p["metadata"]["name"] for p in pods}
        if pods:
            delete_pods(kube, namespace, names)
        left = kube.get(f"/apis/{MPIJOB_API}/namespaces/{namespace}/mpijobs/{name}")
        return not pods and left is None and workload_of(kube, namespace, name, "MPIJob") is None

    wait_for(gone, f"MPIJob {name} and its pods gone", 60)
    wait_for(
        lambda: (
            not [
                c
                for c in kube.list(RESOURCE_API, "ResourceClaim", namespace)
                if c["metadata"]["name"].startswith(f"{name}-")
            ]
        ),
        f"the claims of MPIJob {name} gone",
        60,
    )


def workers(kube: Kube, namespace: str, job: str) -> list[dict[str, Any]]:
    return sorted(pods_of(kube, namespace, f"{job}-worker-"), key=lambda p: p["metadata"]["name"])


def held_devices(kube: Kube, pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The devices the pod's claim was allocated, after checking that the claim is reserved for the pod."""
    [status] = pod["status"].get("resourceClaimStatuses") or [{}]
    name = status.get("resourceClaimName")
    assert name, f"{pod['metadata']['name']}: no claim made"
    claim = kube.raw_get(
        f"/apis/{RESOURCE_API}/namespaces/{pod['metadata']['namespace']}/resourceclaims/{name}"
    )
    reserved = {r.get("uid") for r in claim["status"].get("reservedFor") or ()}
    assert pod["metadata"]["uid"] in reserved, f"claim {name} is not reserved for {pod['metadata']['name']}"
    results: list[dict[str, Any]] = claim["status"]["allocation"]["devices"]["results"]
    return results


# -- the whole-node pods of a user job -----------------------------------------------------------------------
def worker_template(cluster: StackCluster) -> dict[str, Any]:
    job = manifest(cluster, "MPIJob", ACCEPTANCE_JOB)
    template: dict[str, Any] = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    return template


def whole_node_pod(cluster: StackCluster, name: str, node: str | None = None) -> dict[str, Any]:
    """A pod of a GPU job: the stack's MPIJob worker pod spec (its tolerations, its whole-node claim, its
    containers with whatever securityContext they carry, so Pod Security admits it as it admits the worker),
    selecting the shape's nodes of either pool, or pinned to ``node`` by its hostname label."""
    spec = copy.deepcopy(worker_template(cluster)["spec"])
    assert [c["resourceClaimTemplateName"] for c in spec["resourceClaims"]] == [WHOLE_NODE_TEMPLATE]
    spec["nodeSelector"] = {INSTANCE_TYPE_LABEL: spec["nodeSelector"][INSTANCE_TYPE_LABEL]}
    if node:
        spec["nodeSelector"][HOSTNAME_LABEL] = node
    namespace = manifest(cluster, "ResourceClaimTemplate", WHOLE_NODE_TEMPLATE)["metadata"]["namespace"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def shape_nodes(cluster: StackCluster) -> list[str]:
    return sorted(n.name for n in cluster.nodes if n.shape == SHAPE)


# -- the fabric check ----------------------------------------------------------------------------------------
def check_env(cluster: StackCluster) -> dict[str, str]:
    cronjob = manifest(cluster, "CronJob", fabric_checks.NAME)
    [container] = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


def idle_pairs(kube: Kube, env: Mapping[str, str]) -> list[tuple[str, str]]:
    """Steps 1 and 2 of fabric-check.sh with the check's token: its leftover MPIJobs deleted; the pool's
    schedulable nodes that no pod with a claim holds (Pending, Running or Unknown on the node), paired in
    order. A pod with a claim waiting for a node stops the check (an empty list)."""
    namespace, run_label = env["NAMESPACE"], env["RUN_LABEL"]
    for job in kube.list(MPIJOB_API, "MPIJob", namespace, labelSelector=run_label):
        kube.delete(f"/apis/{MPIJOB_API}/namespaces/{namespace}/mpijobs/{job['metadata']['name']}")
    claimed = [
        p["spec"].get("nodeName") or "-"
        for p in kube.list("v1", "Pod")
        if p["spec"].get("resourceClaims") and p["status"].get("phase") in ("Pending", "Running", "Unknown")
    ]
    if "-" in claimed:
        return []
    nodes = kube.list("v1", "Node", labelSelector=f"{env['POOL_LABEL']}={env['POOL']}")
    idle = sorted(n["metadata"]["name"] for n in nodes if not n["spec"].get("unschedulable"))
    idle = [n for n in idle if n not in claimed]
    return list(zip(idle[::2], idle[1::2], strict=False))


def check_job(
    cluster: StackCluster, env: Mapping[str, str], kind: str, a: str, b: str, run: str
) -> dict[str, Any]:
    """The MPIJob fabric-check.sh run_job creates from $SPECS/<kind>.json for the pair (a, b): its jq
    program, step by step."""
    spec = json.loads(manifest(cluster, "ConfigMap", fabric_checks.NAME)["data"][f"{kind}.json"])
    name, run_label = f"fabric-check-{kind}-{run}", env["RUN_LABEL"]
    job: dict[str, Any] = copy.deepcopy(spec)
    job["metadata"] = {**job.get("metadata", {}), "name": name, "namespace": env["NAMESPACE"]}
    job["metadata"]["labels"] = {**job["metadata"].get("labels", {}), run_label: run}
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]
    worker["replicas"] = 2
    template = worker["template"]
    template.setdefault("metadata", {}).setdefault("labels", {})[run_label] = name
    pod = template["spec"]
    affinity = pod.setdefault("affinity", {})
    anti = affinity.setdefault("podAntiAffinity", {}).setdefault(
        "requiredDuringSchedulingIgnoredDuringExecution", []
    )
    anti.append({"labelSelector": {"matchLabels": {run_label: name}}, "topologyKey": HOSTNAME_LABEL})
    affinity.setdefault("nodeAffinity", {})["requiredDuringSchedulingIgnoredDuringExecution"] = {
        # One term per node, as fabric-check.sh writes it (a node field selector holds one value).
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]} for node in (a, b)
        ]
    }
    pod["tolerations"] = [
        *pod.get("tolerations", []),
        {"key": env["RAIL_KEY"], "operator": "Exists", "effect": "NoSchedule"},
    ]
    prefix = env["CLAIM_PREFIX"] if env["TAINT_MODE"] == "device" else ""
    for claim in pod.get("resourceClaims", []):
        if "resourceClaimTemplateName" in claim:
            claim["resourceClaimTemplateName"] = prefix + claim["resourceClaimTemplateName"]
    return job


class WorkersRefused(AssertionError):
    """The MPI operator could not create an MPIJob's worker pods: the API server refused them."""


def refused_pods(kube: Kube, namespace: str, job: str) -> list[str]:
    """The MPI operator's MPIJobFailed events for ``job`` (v0.6.0 records the API server's refusal)."""
    return [
        e["message"]
        for e in kube.list("v1", "Event", namespace)
        if e["involvedObject"].get("name") == job and e["reason"] == "MPIJobFailed"
    ]


def wait_bound_workers(kube: Kube, namespace: str, job: str, count: int = 2) -> list[dict[str, Any]]:
    def done() -> list[dict[str, Any]] | None:
        refused = refused_pods(kube, namespace, job)
        if refused:
            raise WorkersRefused(f"MPIJob {job}: {refused[-1]}")
        pods = workers(kube, namespace, job)
        return pods if len(pods) == count and all(p["spec"].get("nodeName") for p in pods) else None

    found: list[dict[str, Any]] = wait_for(done, f"MPIJob {job}: {count} workers bound", 60)
    return found


def queued_job(cluster: StackCluster, name: str) -> dict[str, Any]:
    """The stack's acceptance MPIJob (queued: Kueue's queue-name label, its workers' required topology)
    under another name, its workers selecting the shape's nodes of either pool."""
    job = manifest(cluster, "MPIJob", ACCEPTANCE_JOB)
    assert job["metadata"]["labels"][QUEUE_LABEL]
    job["metadata"] = {
        "name": name,
        "namespace": job["metadata"]["namespace"],
        "labels": job["metadata"]["labels"],
    }
    selector = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"]
    job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"] = {
        INSTANCE_TYPE_LABEL: selector[INSTANCE_TYPE_LABEL]
    }
    return job


def assignment_hosts(workload: Mapping[str, Any], podset_name: str = "worker") -> set[str]:
    """The nodes Kueue's TAS assigned the Workload's ``podset_name`` pods to (hostname level of its
    topologyAssignment; the launcher has one too, on the system pool, the queue being TAS-only)."""
    hosts: set[str] = set()
    for podset in (workload.get("status") or {}).get("admission", {}).get("podSetAssignments") or ():
        if podset.get("name") != podset_name:
            continue
        assignment = podset.get("topologyAssignment")
        if not assignment:
            continue
        assert assignment["levels"][-1] == HOSTNAME_LABEL, assignment
        for piece in assignment["slices"]:
            for values in piece["valuesPerLevel"]:
                if "individual" in values:
                    individual = values["individual"]
                    hosts |= {
                        individual.get("prefix", "") + r + individual.get("suffix", "")
                        for r in individual["roots"]
                    }
                else:
                    hosts |= set(values.get("universal", {}).get("values", []))
    return hosts


class OntoHeldNodes(AssertionError):
    """Kueue admitted a queued job onto nodes the fabric check holds."""


# -- fixtures ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster(cluster_of: Callable[..., StackCluster]) -> StackCluster:
    """The full stack's cluster with its B4.8 nodes free: the acceptance MPIJob Kueue admitted at install
    (its workers bound to the two nodes of its pool) deleted, with its pods and their claims."""
    cluster = cluster_of("full", key=KEY, placement=PLACEMENT)
    namespace = manifest(cluster, "MPIJob", ACCEPTANCE_JOB)["metadata"]["namespace"]
    pool = worker_template(cluster)["spec"]["nodeSelector"]["oke-gpu-rdma/node-pool"]
    pool_nodes = {n.name for n in cluster.nodes if n.pool == pool}
    bound = wait_bound_workers(cluster.kube, namespace, ACCEPTANCE_JOB)
    assert {p["spec"]["nodeName"] for p in bound} == pool_nodes
    assert admitted(workload_of(cluster.kube, namespace, ACCEPTANCE_JOB, "MPIJob"))
    delete_job(cluster, namespace, ACCEPTANCE_JOB)
    return cluster


@pytest.fixture(scope="module")
def check_run(cluster: StackCluster) -> Iterator[CheckRun]:
    run = start_fabric_check(cluster, "fabric-check-e2e-health")
    yield run
    stop_fabric_check(cluster, run)


# -- a rail the agent marked ---------------------------------------------------------------------------------
def test_a_rail_the_agent_marked_keeps_new_whole_node_claims_off_its_node(cluster: StackCluster) -> None:
    kube = cluster.kube
    nodes = shape_nodes(cluster)
    marked, others = nodes[0], nodes[1:]
    namespace = manifest(cluster, "ResourceClaimTemplate", WHOLE_NODE_TEMPLATE)["metadata"]["namespace"]
    agent = rail_agent_on(cluster, marked)
    assert agent.node == marked
    kubectl_taint(agent.kube, marked, AGENT_MARK)
    names: list[str] = []
    lifted = False
    try:
        assert AGENT_MARK in kube.raw_get(f"/api/v1/nodes/{marked}")["spec"]["taints"]
        # Pinned to the marked node: the scheduler refuses it for the taint alone.
        names.append("pinned-to-the-marked-node")
        kube.create(whole_node_pod(cluster, names[-1], marked))

        def unschedulable(name: str) -> str | None:
            node, message = scheduled(kube.raw_get(f"/api/v1/namespaces/{namespace}/pods/{name}"))
            assert node is None, f"{name} bound to {node}"
            return message or None

        message = wait_for(lambda: unschedulable(names[0]), f"{names[0]}: the scheduler's verdict", 60)
        assert "1 node(s) had untolerated taint(s)" in message, message
        assert f"{len(cluster.nodes) - 1} node(s) didn't match Pod's node affinity/selector" in message, (
            message
        )
        # Free to go anywhere of the shape: one pod per other node, each claiming the whole node.
        placed = []
        for index in range(len(others)):
            names.append(f"whole-node-{index}")
            kube.create(whole_node_pod(cluster, names[-1]))

            def bound(name: str = names[-1]) -> str | None:
                node, _ = scheduled(kube.raw_get(f"/api/v1/namespaces/{namespace}/pods/{name}"))
                return node

            placed.append(wait_for(bound, f"{names[-1]} bound", 60))
        assert sorted(placed) == others
        # The marked node is now the only one with free devices, and still no new claim goes there.
        names.append("whole-node-last")
        kube.create(whole_node_pod(cluster, names[-1]))
        message = wait_for(lambda: unschedulable(names[-1]), f"{names[-1]}: the scheduler's verdict", 60)
        assert "1 node(s) had untolerated taint(s)" in message, message
        assert scheduled(kube.raw_get(f"/api/v1/namespaces/{namespace}/pods/{names[0]}"))[0] is None
        delete_pods(kube, namespace, [names.pop()])
        # The agent lifts its mark (rail-health.sh: `kubectl taint node <node> <key>:NoSchedule-`): the
        # pinned pod is bound there, so the taint was all that kept it off.
        kubectl_taint(agent.kube, marked, AGENT_MARK, remove=True)
        lifted = True

        def pinned_bound() -> str | None:
            return scheduled(kube.raw_get(f"/api/v1/namespaces/{namespace}/pods/{names[0]}"))[0]

        assert wait_for(pinned_bound, f"{names[0]} bound once the mark is lifted", 60) == marked
    finally:
        delete_pods(kube, namespace, names)
        wait_for(lambda: not claims_of(kube, namespace, set(names)), "the pods' claims gone", 60)
        if not lifted:
            kubectl_taint(kube, marked, AGENT_MARK, remove=True)


# -- 1.37+: a rail marked by a DeviceTaintRule alone, and Kueue ----------------------------------------------
ADMISSION = "admissionregistration.k8s.io/v1"
KUEUE_API = "kueue.x-k8s.io/v1beta2"


@pytest.fixture
def device_mode_kueue(cluster: StackCluster) -> Iterator[str]:
    """What the stack declares from 1.37 with the rail agent on (device mode), in place of the 1.36 objects: the
    B4.8 nodes labelled rails-unmarked=true (the pools' initial labels), the shape's flavor selecting that label
    (stack_config/scheduling/scheduling_plan.py shape_flavor_labels; a new flavor, as nodeLabels are immutable), and the
    agent's node-label admission policy bound in place of the node-mode one. Yields the flavor's name; the 1.36
    objects are put back afterwards."""
    kube = cluster.kube
    namespace = rail_agent_daemonset(cluster)["metadata"]["namespace"]
    node_policy = manifest(cluster, "ValidatingAdmissionPolicyBinding", rail_health.NAME)
    queue = manifest(cluster, "ClusterQueue", cluster.stack.stack.scheduling.cluster_queue)
    [old] = [
        o
        for o in cluster.stack.manifests.values()
        if o["kind"] == "ResourceFlavor" and o["spec"]["nodeLabels"].get(INSTANCE_TYPE_LABEL) == SHAPE
    ]
    old_name = old["metadata"]["name"]
    flavor = copy.deepcopy(old)
    flavor["metadata"]["name"] = f"{old_name}-unmarked"
    flavor["spec"]["nodeLabels"][RAILS_UNMARKED_LABEL] = "true"

    def with_flavor(name: str) -> dict[str, Any]:
        swapped = copy.deepcopy(queue)
        for group in swapped["spec"]["resourceGroups"]:
            for f in group["flavors"]:
                if f["name"] in (old_name, flavor["metadata"]["name"]):
                    f["name"] = name
        return swapped

    policy = {
        "apiVersion": ADMISSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": rail_health.NODE_LABEL_POLICY},
        "spec": rail_health.own_node_policy(namespace, "device", served_minor(cluster)),
    }
    binding = {
        "apiVersion": ADMISSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": rail_health.NODE_LABEL_POLICY},
        "spec": {"policyName": rail_health.NODE_LABEL_POLICY, "validationActions": ["Deny"]},
    }
    for node in shape_nodes(cluster):
        kubectl_label(kube, node, RAILS_UNMARKED_LABEL, "true")
    kube.apply(policy)
    kube.apply(binding)
    kube.delete(f"/apis/{ADMISSION}/validatingadmissionpolicybindings/{rail_health.NAME}")
    kube.apply(flavor)
    kube.apply(with_flavor(flavor["metadata"]["name"]))
    try:
        yield flavor["metadata"]["name"]
    finally:
        kube.apply(with_flavor(old_name))
        kube.delete(f"/apis/{KUEUE_API}/resourceflavors/{flavor['metadata']['name']}")
        kube.apply(node_policy)
        kube.delete(f"/apis/{ADMISSION}/validatingadmissionpolicybindings/{rail_health.NODE_LABEL_POLICY}")
        kube.delete(f"/apis/{ADMISSION}/validatingadmissionpolicies/{rail_health.NODE_LABEL_POLICY}")
        for node in shape_nodes(cluster):
            kubectl_label(kube, node, RAILS_UNMARKED_LABEL, None)


def test_from_1_37_a_node_whose_agent_marks_a_rail_is_kept_off_by_kueue(
    cluster: StackCluster, device_mode_kueue: str
) -> None:
    """Issue 34 item 4: Kueue's TAS does not see a DeviceTaintRule; the agent's rails-unmarked=false does. A
    queued whole-node job pinned to the marked node is not admitted; once the agent sets the label back (its
    marks lifted), it is admitted and bound there."""
    kube = cluster.kube
    marked = shape_nodes(cluster)[0]
    agent = rail_agent_on(cluster, marked)
    # The agent labels its own node as rail-health.sh does (`kubectl label node <node> --overwrite k=v`), once
    # the API server's admission has dropped the node-mode binding (it follows bindings through an informer).

    def labelled() -> bool:
        try:
            kubectl_label(agent.kube, marked, RAILS_UNMARKED_LABEL, "false")
        except ApiError as err:
            if f"binding '{rail_health.NAME}'" not in err.message:
                raise
            return False
        return True

    wait_for(labelled, "the agent's label admitted under the device-mode policy", 30)
    job = _single_node_job(cluster, "pinned-to-a-marked-node")
    job["spec"]["template"]["spec"]["nodeSelector"][HOSTNAME_LABEL] = marked
    namespace, name = job["metadata"]["namespace"], job["metadata"]["name"]
    kube.create(job)
    try:

        def pending() -> dict[str, Any] | None:
            workload = workload_of(kube, namespace, name, "Job")
            if workload is None:
                return None
            assert not admitted(workload), f"admitted onto {marked}, whose agent marks a rail"
            conditions = {c["type"]: c for c in (workload.get("status") or {}).get("conditions") or ()}
            quota = conditions.get("QuotaReserved")
            return quota if quota is not None and quota["status"] == "False" else None

        # Kueue tries in milliseconds here: its verdict, and 10 s more without an admission, is its answer.
        wait_for(pending, f"{name}: Kueue's verdict", 30)
        time.sleep(10)
        assert pending() is not None
        kubectl_label(agent.kube, marked, RAILS_UNMARKED_LABEL, "true")
        wait_for(
            lambda: admitted(workload_of(kube, namespace, name, "Job")), f"{name} admitted once unmarked", 30
        )
        [pod] = wait_for(
            lambda: (p := pods_of(kube, namespace, f"{name}-")) and p[0]["spec"].get("nodeName") and p,
            f"{name}'s pod bound",
        )
        assert pod["spec"]["nodeName"] == marked
    finally:
        kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}")
        delete_pods(kube, namespace, [p["metadata"]["name"] for p in pods_of(kube, namespace, f"{name}-")])
        wait_for(lambda: workload_of(kube, namespace, name, "Job") is None, f"{name}'s Workload gone", 60)


# -- the fabric check holding a pair -------------------------------------------------------------------------
def test_the_fabric_checks_nccl_job_gets_one_worker_on_each_node_of_the_idle_pair(
    cluster: StackCluster, check_run: CheckRun
) -> None:
    env = check_env(cluster)
    check = check_run.writer.kube
    pairs = idle_pairs(check, env)
    pool_nodes = sorted(n.name for n in cluster.nodes if n.pool == env["POOL"])
    assert pairs == [tuple(pool_nodes)]
    [(a, b)] = pairs
    job = check_job(cluster, env, "nccl", a, b, "202601010300")
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    created = check.create(job)
    try:
        assert created["metadata"]["name"] == name
        bound = wait_bound_workers(cluster.kube, namespace, name)
        assert sorted(p["spec"]["nodeName"] for p in bound) == [a, b]
        for pod in bound:
            devices = held_devices(cluster.kube, pod)
            assert {d["pool"] for d in devices} == {pod["spec"]["nodeName"]}
    finally:
        delete_job(cluster, namespace, name)


def test_a_queued_job_is_admitted_to_the_other_nodes_while_the_fabric_check_holds_a_pair(
    cluster: StackCluster, check_run: CheckRun
) -> None:
    kube, env = cluster.kube, check_env(cluster)
    check = check_run.writer.kube
    [(a, b)] = idle_pairs(check, env)
    held = {a, b}
    others = set(shape_nodes(cluster)) - held
    assert len(others) == 2
    # The held pair's block is the one a TAS blind to the check's pods would take.
    blocks = {
        n: kube.raw_get(f"/api/v1/nodes/{n}")["metadata"]["labels"][RDMA_NETWORK_BLOCK_LABEL]
        for n in held | others
    }
    assert max(blocks[n] for n in held) < min(blocks[n] for n in others), blocks
    check_spec = check_job(cluster, env, "nccl", a, b, "202601010400")
    check_name, namespace = check_spec["metadata"]["name"], check_spec["metadata"]["namespace"]
    queued_name = "queued-nccl-all-reduce"
    check.create(check_spec)
    try:
        holding = wait_bound_workers(kube, namespace, check_name)
        assert {p["spec"]["nodeName"] for p in holding} == held
        for pod in holding:
            assert {d["pool"] for d in held_devices(kube, pod)} == {pod["spec"]["nodeName"]}
        kube.create(queued_job(cluster, queued_name))
        workload = wait_for(
            lambda: (w := workload_of(kube, namespace, queued_name, "MPIJob")) and admitted(w) and w,
            f"Kueue admits {queued_name}",
            60,
        )
        hosts = assignment_hosts(workload)
        job_workers = wait_for(
            lambda: (
                len(w := workers(kube, namespace, queued_name)) == 2
                and all(scheduled(p) != (None, "") for p in w)
                and w
            ),
            f"{queued_name}: the scheduler's verdict on both workers",
            60,
        )
        outcome = {p["metadata"]["name"]: scheduled(p) for p in job_workers}
        if hosts & held:
            raise OntoHeldNodes(
                f"Kueue assigned {queued_name} to {sorted(hosts)} (held: {sorted(held)}); its workers: {outcome}"
            )
        assert hosts == others, hosts
        bound = wait_bound_workers(kube, namespace, queued_name)
        assert {p["spec"]["nodeName"] for p in bound} == others
    finally:
        delete_job(cluster, namespace, queued_name)
        delete_job(cluster, namespace, check_name)
