"""Jobs through Kueue v0.19.2 as the stack configures it (its chart's managerConfig, the stack's Topology,
ResourceFlavors, ClusterQueue and LocalQueue), with the MPI operator v0.6.0 the stack applies creating the
pods and kube-scheduler binding them.

Known failures are kept as the correct assertion, marked strict xfail with the issue that fixes them: the
day one passes, the mark must go.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oke_gpu_rdma.nodes import labels
from oke_gpu_rdma.scheduling.kueue_jobs import QUEUE_LABEL
from tests.e2e.claim_pods import RESTRICTED, delete_pods
from tests.e2e.cluster_stack import StackCluster, bound_workers, mpi_pods, one_per_node_within, wait_for
from tests.e2e.workloads import admitted, workload_of

STACK = "full"


def _mpijob(cluster: StackCluster) -> dict[str, Any]:
    return next(m for m in cluster.stack.manifests.values() if m["kind"] == "MPIJob")


def _pods(cluster: StackCluster, namespace: str, selector: str) -> list[dict[str, Any]]:
    return cluster.kube.list("v1", "Pod", namespace, labelSelector=selector)


def test_the_nccl_acceptance_job_is_admitted_and_its_workers_bound_inside_one_network_block(
    cluster_of: Callable[..., StackCluster],
) -> None:
    cluster = cluster_of(STACK)
    job = _mpijob(cluster)
    namespace = job["metadata"]["namespace"]
    workload = wait_for(
        lambda: (w := workload_of(cluster.kube, namespace, job["metadata"]["name"])) and admitted(w) and w,
        "the acceptance MPIJob's Workload admitted",
    )
    assert workload["status"]["admission"]["clusterQueue"] == cluster.stack.stack.scheduling.cluster_queue
    workers = bound_workers(cluster.kube, job, "the acceptance job's workers bound")
    nodes = one_per_node_within(cluster, workers, labels.RDMA_NETWORK_BLOCK_LABEL)
    shape = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"][
        labels.INSTANCE_TYPE_LABEL
    ]
    assert {cluster.node(n).shape for n in nodes} == {shape}


def test_the_acceptance_jobs_launcher_runs_on_the_system_pool(
    cluster_of: Callable[..., StackCluster],
) -> None:
    cluster = cluster_of(STACK)
    job = _mpijob(cluster)
    [launcher] = wait_for(
        lambda: (p := mpi_pods(cluster.kube, job, "launcher")) and p[0]["spec"].get("nodeName") and p,
        "the acceptance job's launcher bound",
    )
    system = cluster.stack.stack.config.system_pool.name
    assert cluster.node(launcher["spec"]["nodeName"]).pool == system


def _single_node_job(cluster: StackCluster, name: str) -> dict[str, Any]:
    """A batch Job a user writes for one whole B4.8 node as docs/scheduling.md says: the stack's 8-GPU
    template, more than half the node's CPUs (so TAS, which counts CPUs and not claims, puts it on a node no
    other whole-node worker holds), the GPU toleration, the shape, and of Kueue only the queue-name label."""
    config = cluster.stack.stack.config
    namespace = config.workloads.namespace
    [local_queue] = [m for m in cluster.stack.manifests.values() if m["kind"] == "LocalQueue"]
    template = next(t for t in cluster.stack.stack.claims.aligned if t.gpus_per_worker == 8)
    size = config.node_size(template.shape)
    assert size is not None, f"no size for {template.shape}"
    cpus = size.whole_node_cpus
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {QUEUE_LABEL: local_queue["metadata"]["name"]},
        },
        "spec": {
            "completions": 1,
            "parallelism": 1,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {labels.INSTANCE_TYPE_LABEL: template.shape},
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "resourceClaims": [{"name": "gpus-rails", "resourceClaimTemplateName": template.name}],
                    "containers": [
                        {
                            "name": "train",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": str(cpus)}, "claims": [{"name": "gpus-rails"}]},
                            "securityContext": RESTRICTED,
                        }
                    ],
                }
            },
        },
    }


def test_a_single_node_gpu_job_with_only_the_queue_name_label_is_admitted_and_bound(
    cluster_of: Callable[..., StackCluster],
) -> None:
    cluster = cluster_of(STACK)
    job = _single_node_job(cluster, "one-node-train")
    namespace = job["metadata"]["namespace"]
    cluster.kube.create(job)
    try:
        wait_for(
            lambda: admitted(workload_of(cluster.kube, namespace, "one-node-train")),
            # Kueue admits within its scheduling cycle (milliseconds here); 20 s is long past it.
            "the single-node Job's Workload admitted",
            20,
        )
        [pod] = wait_for(
            lambda: (
                (p := _pods(cluster, namespace, "job-name=one-node-train"))
                and p[0]["spec"].get("nodeName")
                and p
            ),
            "the single-node Job's pod bound",
        )
        assert (
            cluster.node(pod["spec"]["nodeName"]).shape
            == job["spec"]["template"]["spec"]["nodeSelector"][labels.INSTANCE_TYPE_LABEL]
        )
    finally:
        cluster.kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/one-node-train")
        delete_pods(
            cluster.kube,
            namespace,
            [p["metadata"]["name"] for p in _pods(cluster, namespace, "job-name=one-node-train")],
        )
