"""The GB200 example on the real control plane (issue 38): its ComputeDomain is stored as the pinned CRD defines it,
Kueue admits the NCCL gate over the NVLink Topology, and kube-scheduler binds its workers on one GPU memory
fabric, each with its aligned GPU/rail claim and its node's IMEX channel allocated.

The driver does not run here: tests/e2e/compute_domain_driver.py writes what its kubelet plugin and controller
would (the channel slice on each GB200 node, the domain's channel template)."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest

from oke_gpu_rdma.drivers import compute_domains
from oke_gpu_rdma.nodes import labels
from tests.e2e.cluster_stack import StackCluster, bound_workers, mpi_pods, one_per_node_within, wait_for
from tests.e2e.kube import ApiError
from tests.e2e.workloads import admitted, workload_of

STACK = "gb200"
# Kueue's refusal of a pod set in a TAS flavor (pkg/cache/scheduler/tas_flavor_snapshot.go, notFitMessage).
NOT_FIT_IN_THE_FABRIC = re.compile(
    r'pod set (\w+): .*topology "rdma-fabric-nvlink" (doesn\'t allow to fit any of|allows to fit only \d+ out of) '
    r"(\d+) pod\(s\)"
)


def _manifest(cluster: StackCluster, kind: str) -> dict[str, Any]:
    return next(m for m in cluster.stack.manifests.values() if m["kind"] == kind)


def test_the_compute_domain_is_stored_as_the_pinned_crd_defines_it(
    cluster_of: Callable[..., StackCluster],
) -> None:
    cluster = cluster_of(STACK)
    domain = _manifest(cluster, compute_domains.KIND)
    stored = cluster.kube.get(cluster.kube.path_of(domain))
    assert stored["spec"] == domain["spec"]
    # The spec is immutable (the CRD's `self == oldSelf`): the API server refuses a change.
    changed = {**domain, "spec": {**domain["spec"], "numNodes": 2}}
    with pytest.raises(ApiError) as err:
        cluster.kube.apply(changed)
    assert "A computeDomain.spec is immutable" in err.value.message


def test_the_nvlink_gate_is_admitted_and_bound_within_one_gpu_memory_fabric(
    cluster_of: Callable[..., StackCluster],
) -> None:
    cluster = cluster_of(STACK)
    job = _manifest(cluster, "MPIJob")
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    workload = wait_for(
        lambda: (w := workload_of(cluster.kube, namespace, name)) and admitted(w) and w,
        "the NVLink gate's Workload admitted",
    )
    # Kueue counted one IMEX channel per worker on the GB200 flavor.
    worker_set = next(
        p for p in workload["status"]["admission"]["podSetAssignments"] if p["name"] == "worker"
    )
    assert worker_set["resourceUsage"]["oke-gpu-rdma/imex-channels"] == str(
        job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
    )
    workers = bound_workers(cluster.kube, job, "the NVLink gate's workers bound")
    one_per_node_within(cluster, workers, labels.GPU_MEMORY_FABRIC_LABEL)
    # Each worker's claims: its node's channel 0 beside the aligned GPUs and rails.
    for worker in workers:
        claims = {
            s["name"]: s["resourceClaimName"] for s in worker["status"].get("resourceClaimStatuses") or ()
        }
        channel = cluster.kube.get(
            f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{claims['compute-domain-channel']}"
        )
        results = channel["status"]["allocation"]["devices"]["results"]
        assert [(r["driver"], r["device"], r["pool"]) for r in results] == [
            (compute_domains.DRIVER, "channel-0", worker["spec"]["nodeName"])
        ]
        assert claims["gpus-rails"]


def test_a_job_larger_than_any_nvlink_domain_is_never_split_across_two(
    cluster_of: Callable[..., StackCluster],
) -> None:
    """Each GB200 pool's two nodes share one GPU memory fabric (tests/e2e/nodes.py: a fabric per local block), so
    three workers required within one fabric fit nowhere: Kueue keeps the job waiting and says why, instead of
    spreading it over two NVLink domains. The gate goes first, so the quota would hold the job."""
    cluster = cluster_of(STACK)
    gate = _manifest(cluster, "MPIJob")
    cluster.kube.delete(cluster.kube.path_of(gate))
    wait_for(
        lambda: workload_of(cluster.kube, gate["metadata"]["namespace"], gate["metadata"]["name"]) is None,
        "the gate's Workload gone",
    )
    job = copy.deepcopy(gate)
    job["metadata"] = {
        "name": "three-trays",
        "namespace": gate["metadata"]["namespace"],
        "labels": dict(gate["metadata"]["labels"]),
    }
    job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 3
    del job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"][labels.POOL_LABEL]
    cluster.kube.apply(job)
    namespace = job["metadata"]["namespace"]

    def waiting() -> str | None:
        workload = workload_of(cluster.kube, namespace, "three-trays")
        conditions = ((workload or {}).get("status") or {}).get("conditions") or ()
        return next(
            (c["message"] for c in conditions if c["type"] == "QuotaReserved" and c["status"] == "False"),
            None,
        )

    message = wait_for(waiting, "the three-tray job's Workload evaluated")
    # Kueue words the refusal by the pod set it reports and how many of its pods one domain could still take:
    # the workers (none fit while the gate's are still terminating, at most the fabric's two nodes once they are
    # gone), or, as a run of make e2e once reported, the launcher, refused in the GB200 flavor whose nodes its
    # nodeSelector excludes. Either way the job waits on the NVLink topology, and no worker pod is created.
    found = NOT_FIT_IN_THE_FABRIC.search(message)
    assert found, message
    pod_set, _, count = found.groups()
    assert (pod_set, count) in (("worker", "3"), ("launcher", "1")), message
    assert not admitted(workload_of(cluster.kube, namespace, "three-trays"))
    assert mpi_pods(cluster.kube, job, "worker") == []
