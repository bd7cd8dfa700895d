"""Issue 37 on the real control plane: the remediation controller (oke_gpu_rdma/health/remediation/controller.py,
run here in-process with its own service account's token, so its RBAC and admission policies are the ones
that judge it) against Kueue v0.19.2 and kube-scheduler with the full stack installed.

A two-node job runs in one local block; one of its nodes is marked bad (the fabric check's node condition, which
Kueue does not act on by itself). The controller cordons that node, has Kueue evict and requeue the job, and
drains the node; Kueue admits the job again on two healthy nodes of the same block; another job's pod on a
third node is never touched. No kubelet runs here, so this test stands in for one: a pod whose deletion began
is deleted at once (gracePeriodSeconds 0), as a kubelet would once its containers stopped.
"""

from __future__ import annotations

import dataclasses
import json
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from oke_gpu_rdma.health.remediation import controller
from oke_gpu_rdma.health.remediation.controller import Controller
from oke_gpu_rdma.nodes import labels
from oke_gpu_rdma.scheduling.kueue_jobs import QUEUE_LABEL, REQUIRED_TOPOLOGY
from tests.e2e.claim_pods import RESTRICTED
from tests.e2e.cluster_stack import StackCluster, wait_for
from tests.e2e.kube import ApiError, Kube
from tests.e2e.nodes import register
from tests.e2e.workloads import admitted, workload_of

STACK = "full"
KEY = "remediation"
POOL = "gpu-b4-a"


@pytest.fixture(scope="module")
def cluster(cluster_of: Callable[..., StackCluster]) -> StackCluster:
    """The full stack with four more nodes in gpu-b4-a's first local block: six in one block, of which the
    acceptance job holds two."""
    found = cluster_of(STACK, key=KEY)
    first = found.node(f"{POOL}-0")
    extra = []
    for index in (2, 3, 4, 5):
        name = f"{POOL}-{index}"
        if any(n.name == name for n in found.nodes):
            continue
        extra.append(
            dataclasses.replace(first, name=name, labels={**first.labels, labels.HOSTNAME_LABEL: name})
        )
    register(found.kube, extra)
    found.nodes.extend(extra)
    # The acceptance MPIJob holds two nodes and half the B4.8 flavor's quota (the ClusterQueue counts the
    # stack's four B4.8 nodes, not the ones added here): it is not part of this test.
    for mpijob in [m for m in found.stack.manifests.values() if m["kind"] == "MPIJob"]:
        meta = mpijob["metadata"]
        found.kube.delete(f"/apis/kubeflow.org/v2beta1/namespaces/{meta['namespace']}/mpijobs/{meta['name']}")
        wait_for(
            lambda meta=meta: (
                kubelet(found.kube)
                or not found.kube.list(
                    "v1",
                    "Pod",
                    meta["namespace"],
                    labelSelector=f"training.kubeflow.org/job-name={meta['name']}",
                )
            ),
            "the acceptance job's pods gone",
            timeout=120,
        )
    return found


def _config(cluster: StackCluster) -> dict[str, Any]:
    [configmap] = [
        m
        for m in cluster.stack.manifests.values()
        if m["kind"] == "ConfigMap" and m["metadata"]["name"] == "node-remediation"
    ]
    config: dict[str, Any] = json.loads(configmap["data"]["config.json"])
    # No waiting in a test: a mark acts at once and the jobs get no grace.
    config["settings"] |= {"after_seconds": 0, "grace_seconds": 0}
    return config


def controller_for(cluster: StackCluster, config: dict[str, Any], tmp: Path) -> Controller:
    """The controller as its pod runs it, with a token of its own service account."""
    namespace = config["namespace"]
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    token = cluster.kube.post(f"/api/v1/namespaces/{namespace}/serviceaccounts/node-remediation/token", body)
    path = tmp / "token"
    path.write_text(token["status"]["token"])
    kube = controller.Kube(cluster.kube.server, str(path), None)
    kube.context = ssl._create_unverified_context()  # loopback, self-signed (tests/e2e/kube.py)
    return Controller(kube, config)


def kubelet(kube: Kube) -> None:
    """What the nodes' kubelets would do: finish each pod deletion that began."""
    for pod in kube.list("v1", "Pod"):
        meta = pod["metadata"]
        if meta.get("deletionTimestamp") and pod["spec"].get("nodeName"):
            try:
                kube.delete(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}", grace_seconds=0)
            except ApiError as err:
                if err.status != 404:
                    raise


def job(cluster: StackCluster, name: str, workers: int) -> dict[str, Any]:
    """A batch Job of ``workers`` whole B4.8 nodes through the stack's queue, all in one local block."""
    config = cluster.stack.stack.config
    [queue] = [m for m in cluster.stack.manifests.values() if m["kind"] == "LocalQueue"]
    template = next(t for t in cluster.stack.stack.claims.aligned if t.gpus_per_worker == 8)
    size = config.node_size(template.shape)
    assert size is not None
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": config.workloads.namespace,
            "labels": {QUEUE_LABEL: queue["metadata"]["name"]},
        },
        "spec": {
            "completions": workers,
            "parallelism": workers,
            "completionMode": "Indexed",
            "template": {
                "metadata": {"annotations": {REQUIRED_TOPOLOGY: labels.RDMA_LOCAL_BLOCK_LABEL}},
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {labels.INSTANCE_TYPE_LABEL: template.shape, labels.POOL_LABEL: POOL},
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "resourceClaims": [{"name": "gpus-rails", "resourceClaimTemplateName": template.name}],
                    "containers": [
                        {
                            "name": "train",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {
                                "requests": {"cpu": str(size.whole_node_cpus)},
                                "claims": [{"name": "gpus-rails"}],
                            },
                            "securityContext": RESTRICTED,
                        }
                    ],
                },
            },
        },
    }


def bound(kube: Kube, namespace: str, name: str, count: int) -> dict[str, str] | None:
    """The job's live pods by name -> node, once ``count`` of them are bound."""
    pods = kube.list("v1", "Pod", namespace, labelSelector=f"batch.kubernetes.io/job-name={name}")
    live = {
        p["metadata"]["name"]: p["spec"].get("nodeName")
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
    }
    return live if len(live) == count and all(live.values()) else None  # type: ignore[return-value]


def test_a_marked_nodes_job_is_evicted_requeued_and_admitted_on_two_healthy_nodes_of_its_block(
    cluster: StackCluster, tmp_path: Path
) -> None:
    kube = cluster.kube
    namespace = cluster.stack.stack.config.workloads.namespace
    kube.create(job(cluster, "train-two", 2))
    first = wait_for(
        lambda: bound(kube, namespace, "train-two", 2), "the two-node job's pods bound", timeout=120
    )
    kube.create(job(cluster, "other-one", 1))
    other = wait_for(
        lambda: bound(kube, namespace, "other-one", 1), "the one-node job's pod bound", timeout=120
    )
    [(other_pod, other_node)] = other.items()
    bad = sorted(first.values())[0]
    assert other_node not in first.values()
    # The fabric check measured the bad node's pair below the threshold (its node condition).
    config = _config(cluster)
    condition = {
        "type": config["checkCondition"],
        "status": "True",
        "reason": "BelowThreshold",
        "message": "with a peer: 120 GB/s",
        "lastHeartbeatTime": "2026-12-03T00:00:00Z",
        "lastTransitionTime": "2026-12-03T00:00:00Z",
    }
    kube.patch(f"/api/v1/nodes/{bad}/status", {"status": {"conditions": [condition]}}, "strategic")
    ctl = controller_for(cluster, config, tmp_path)
    first_workload = workload_of(kube, namespace, "train-two")
    assert first_workload is not None and admitted(first_workload)

    def advance() -> str:
        ctl.round()
        kubelet(kube)
        record = ctl.records.get(bad)
        return record.state if record else ""

    wait_for(
        lambda: advance() == "repairing", "the bad node drained and its repair started", timeout=180, every=1
    )
    node = kube.get(f"/api/v1/nodes/{bad}")
    assert node["spec"]["unschedulable"] is True
    # Requeued by Kueue (spec.active back to true) and admitted again, on two healthy nodes of the same block.
    again = wait_for(
        lambda: (b := bound(kube, namespace, "train-two", 2)) and bad not in b.values() and b,
        "the job admitted again away from the bad node",
        timeout=180,
    )
    assert len(set(again.values())) == 2
    blocks = {cluster.node(n).labels[labels.RDMA_LOCAL_BLOCK_LABEL] for n in again.values()}
    assert blocks == {cluster.node(bad).labels[labels.RDMA_LOCAL_BLOCK_LABEL]}
    workload = workload_of(kube, namespace, "train-two")
    assert workload is not None and admitted(workload) and workload["spec"].get("active", True) is True
    # Evicted once, by deactivation (Kueue's own count: status.schedulingStats.evictions, apis/kueue/v1beta2
    # workload_types.go SchedulingStats), and the same Workload admitted again: requeued, not recreated.
    evictions = workload["status"].get("schedulingStats", {}).get("evictions", [])
    assert [(e["reason"], e["count"]) for e in evictions] == [("Deactivated", 1)]
    assert workload["metadata"]["uid"] == first_workload["metadata"]["uid"]
    # Drained: no pod but DaemonSets' is left on the bad node; the other job's pod is the same pod, untouched.
    left = [
        p["metadata"]["name"]
        for p in kube.list("v1", "Pod", fieldSelector=f"spec.nodeName={bad}")
        if not any(o["kind"] == "DaemonSet" for o in p["metadata"].get("ownerReferences") or [])
    ]
    assert left == []
    assert bound(kube, namespace, "other-one", 1) == {other_pod: other_node}
    # The repair Job names the node's instance and its node pool.
    [repair] = kube.list(
        "batch/v1", "Job", config["namespace"], labelSelector=f"{controller.KIND_LABEL}=repair"
    )
    env = {e["name"]: e.get("value") for e in repair["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["NODE_NAME"] == bad and env["NODE_POOL_ID"] == config["pools"][POOL]["nodePoolId"]


def test_the_controller_may_not_change_more_of_a_node_than_unschedulable(
    cluster: StackCluster, tmp_path: Path
) -> None:
    config = _config(cluster)
    ctl = controller_for(cluster, config, tmp_path)
    name = f"{POOL}-3"
    with pytest.raises(controller.ApiError) as refused:
        ctl.kube.request(
            "PATCH",
            f"/api/v1/nodes/{name}",
            {"metadata": {"labels": {"evil": "true"}}},
            "application/merge-patch+json",
        )
    assert refused.value.status in (403, 422) and "spec.unschedulable" in str(refused.value)
    system = next(n.name for n in cluster.nodes if n.pool == cluster.stack.stack.config.system_pool.name)
    with pytest.raises(controller.ApiError) as outside:
        ctl.kube.request(
            "PATCH",
            f"/api/v1/nodes/{system}",
            {"spec": {"unschedulable": True}},
            "application/merge-patch+json",
        )
    assert "may cordon only nodes of" in str(outside.value)


def test_the_controller_may_not_create_a_job_of_its_own_making(cluster: StackCluster, tmp_path: Path) -> None:
    config = _config(cluster)
    ctl = controller_for(cluster, config, tmp_path)
    bad = yaml.safe_load(json.dumps(config["repairJob"]["job"]))
    bad["metadata"] = {"name": "not-a-repair", "namespace": config["namespace"]}
    bad["spec"]["template"]["spec"]["containers"][0]["command"] = ["sh", "-c", "echo anything"]
    with pytest.raises(controller.ApiError) as refused:
        ctl.kube.request("POST", f"/apis/batch/v1/namespaces/{config['namespace']}/jobs", bad)
    assert "only its repair Jobs" in str(refused.value)
