"""kueue-jobs-queued: in a stack with a Kueue Topology, a multi-node GPU job goes through a queue."""

from __future__ import annotations

from typing import Any

from tests.policies.kueue_helpers import NAMESPACE, kueue_objects, kueue_stack, local_queue, queued_mpijob
from tests.policies.policy_helpers import UNKNOWN, analyze, notes, of, violations

POLICY = "kueue-jobs-queued"
CLAIM = [{"name": "gpus-rails", "resourceClaimTemplateName": "aligned-4gpu-8rails-a"}]


def pod(claims: bool = True, gpus: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "w", "image": "nccl-tests"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    spec: dict[str, Any] = {"containers": [container]}
    if claims:
        spec["resourceClaims"] = CLAIM
        container["resources"] = {"claims": [{"name": "gpus-rails"}]}
    return {"spec": spec}


def test_an_mpijob_without_a_queue_is_flagged_as_advisory() -> None:
    (v,) = of(analyze(kueue_stack(queued_mpijob(None))), POLICY)
    assert v.level == "advisory"
    assert v.urn.endswith("::mpijob-nccl-dranet-a")
    assert v.message == (
        "MPIJob rdma-dranet/nccl-dranet-a: a multi-node GPU job (replica Worker: 2 pods at once, claiming GPUs or "
        "rails) without the kueue.x-k8s.io/queue-name label, in a stack with topology-aware scheduling (Topology "
        "rdma-fabric): Kueue does not manage it, so kube-scheduler places each pod on its own, anywhere on the RDMA "
        "fabric, outside the ClusterQueue's quota. Fix: label the job kueue.x-k8s.io/queue-name: gpu"
    )


def test_a_queued_job_passes() -> None:
    assert of(analyze(kueue_stack(queued_mpijob("gpu"))), POLICY) == []


def test_the_namespaces_default_local_queue_takes_a_job_without_the_label() -> None:
    stack = kueue_stack(queued_mpijob(None), kueue=[*kueue_objects(), local_queue("default", "gpu")])
    assert of(analyze(stack), POLICY) == []


def test_without_a_topology_the_stack_has_no_fabric_placement_to_bypass() -> None:
    assert of(analyze(kueue_stack(queued_mpijob(None), kueue=kueue_objects()[1:])), POLICY) == []


def test_one_worker_is_not_multi_node() -> None:
    job = queued_mpijob(None)
    job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 1
    assert of(analyze(kueue_stack(job)), POLICY) == []


def test_a_jobset_and_an_indexed_job_with_device_plugin_gpus() -> None:
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "train", "namespace": NAMESPACE},
        "spec": {
            "replicatedJobs": [
                {"name": "workers", "template": {"spec": {"parallelism": 2, "template": pod()}}}
            ]
        },
    }
    indexed = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "sweep", "namespace": NAMESPACE},
        "spec": {
            "completionMode": "Indexed",
            "completions": 4,
            "parallelism": 4,
            "template": pod(False, gpus=8),
        },
    }
    found = sorted(v.message.split(":")[0] for v in of(analyze(kueue_stack(jobset, indexed)), POLICY))
    assert found == ["Job rdma-dranet/sweep", "JobSet rdma-dranet/train"]
    (v,) = [v for v in of(analyze(kueue_stack(jobset)), POLICY)]
    assert "(replica workers: 2 pods at once, claiming GPUs or rails)" in v.message


def test_pods_without_gpus_or_rails_are_not_a_gpu_job() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NAMESPACE},
        "spec": {"replicas": 3, "template": pod(False)},
    }
    assert of(analyze(kueue_stack(deployment)), POLICY) == []


def test_an_unknown_replica_count_is_a_note() -> None:
    job = queued_mpijob(None)
    job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = UNKNOWN
    findings = analyze(kueue_stack(job))
    assert violations(findings, POLICY) == []
    (note,) = notes(findings, POLICY)
    assert "MPIJob rdma-dranet/nccl-dranet-a: replicas unknown until apply" in note.message


def test_claims_the_stack_does_not_declare_are_a_note() -> None:
    job = queued_mpijob(None)
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    worker["resourceClaims"][0]["resourceClaimTemplateName"] = "made-elsewhere"
    findings = analyze(kueue_stack(job))
    assert violations(findings, POLICY) == []
    (note,) = notes(findings, POLICY)
    assert (
        "MPIJob rdma-dranet/nccl-dranet-a: ResourceClaimTemplate rdma-dranet/made-elsewhere (claim gpus-rails) is not "
        "declared in this stack, so whether it is a multi-node GPU job" in note.message
    )
