"""kueue-pod-sets-request: every pod set of a job queued on a topology-aware flavor requests something."""

from __future__ import annotations

from typing import Any

from tests.policies.kueue_helpers import (
    cluster_queue,
    flavor,
    kueue_stack,
    local_queue,
    queued_mpijob,
    topology,
)
from tests.policies.policy_helpers import UNKNOWN, analyze, notes, of

POLICY = "kueue-pod-sets-request"
B4 = "BM.GPU.B4.8"


def _containers(job: dict[str, Any], replica: str) -> list[dict[str, Any]]:
    containers: list[dict[str, Any]] = job["spec"]["mpiReplicaSpecs"][replica]["template"]["spec"][
        "containers"
    ]
    return containers


def requesting(job: dict[str, Any], replica: str, resources: Any) -> dict[str, Any]:
    for container in _containers(job, replica):
        container["resources"] = {**(container.get("resources") or {}), **resources}
    return job


def both_requesting() -> dict[str, Any]:
    job = requesting(queued_mpijob(), "Launcher", {"requests": {"cpu": "250m"}})
    return requesting(job, "Worker", {"requests": {"cpu": "65"}})


def test_pod_sets_that_request_cpu_pass() -> None:
    assert of(analyze(kueue_stack(both_requesting())), POLICY) == []


def test_a_launcher_that_requests_nothing_is_rejected() -> None:
    job = requesting(queued_mpijob(), "Worker", {"requests": {"cpu": "65"}})
    (v,) = of(analyze(kueue_stack(job)), POLICY)
    assert v.level == "mandatory" and v.urn.endswith("::mpijob-nccl-dranet-a")
    name = _containers(job, "Launcher")[0]["name"]
    assert v.message == (
        f"MPIJob rdma-dranet/nccl-dranet-a: replica Launcher requests no CPU, memory or other resource (containers "
        f"{name}; claims do not count), on a queue whose flavors schedule by topology (b4, h100). Kueue counts a "
        "topology-aware pod by its requests, and one that requests nothing fits no node: the job is never admitted "
        "and holds up the jobs queued behind it. Fix: give a container of it a request, e.g. resources.requests "
        "{cpu: 250m, memory: 256Mi}"
    )


def test_a_worker_with_only_claims_is_rejected_too() -> None:
    job = requesting(queued_mpijob(), "Launcher", {"requests": {"cpu": "250m"}})
    (v,) = of(analyze(kueue_stack(job)), POLICY)
    assert "replica Worker requests no CPU" in v.message


def test_a_limit_counts_as_the_request_as_kueue_makes_it() -> None:
    job = requesting(both_requesting(), "Launcher", {"requests": {}, "limits": {"memory": "1Gi"}})
    assert of(analyze(kueue_stack(job)), POLICY) == []


def test_a_zero_request_is_nothing() -> None:
    job = requesting(both_requesting(), "Launcher", {"requests": {"cpu": "0"}})
    (v,) = of(analyze(kueue_stack(job)), POLICY)
    assert "replica Launcher requests no CPU" in v.message


def test_a_limit_range_in_the_namespace_may_supply_the_request() -> None:
    limits = {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "defaults", "namespace": "rdma-dranet"},
        "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "100m"}}]},
    }
    assert of(analyze(kueue_stack(queued_mpijob(), limits)), POLICY) == []


def test_an_unqueued_job_is_not_kueues() -> None:
    assert of(analyze(kueue_stack(queued_mpijob(None))), POLICY) == []


def test_flavors_without_a_topology_are_not_judged() -> None:
    objects = [
        topology(),
        flavor("b4", {"node.kubernetes.io/instance-type": B4}, topology_name=None),
        cluster_queue("gpu", ["b4"]),
        local_queue("gpu", "gpu"),
    ]
    assert of(analyze(kueue_stack(queued_mpijob(), kueue=objects)), POLICY) == []


def test_resources_unknown_until_apply_are_a_note() -> None:
    job = requesting(both_requesting(), "Launcher", {"requests": UNKNOWN})
    (note,) = notes(analyze(kueue_stack(job)), POLICY)
    assert note.message.endswith(
        "not checked: MPIJob rdma-dranet/nccl-dranet-a: the replica Launcher containers' resources unknown until "
        "apply"
    )
