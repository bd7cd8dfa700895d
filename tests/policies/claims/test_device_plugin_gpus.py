"""no-device-plugin-gpus-with-dra-rails: seed 000's device-plugin job is rejected, the aligned one passes."""

from __future__ import annotations

from tests.fixtures import seed000
from tests.policies.policy_helpers import (
    UNKNOWN,
    aligned_mpijob,
    analyze,
    k8s,
    notes,
    violations,
)

POLICY = "no-device-plugin-gpus-with-dra-rails"


def test_seed_device_plugin_job_is_rejected():
    findings = analyze([k8s(seed000("rails-8-a")), k8s(seed000("nccl-dranet-a-device-plugin"))])
    (v,) = violations(findings, POLICY)
    assert v.level == "mandatory" and v.urn.endswith("::nccl-dranet-a")
    assert "MPIJob rdma-dranet/nccl-dranet-a replica Worker" in v.message
    assert "mpi-worker (nvidia.com/gpu: 4)" in v.message
    assert "ResourceClaimTemplate rdma-dranet/rails-8-a (requests rails)" in v.message
    assert "4.27" in v.message and "Fix:" in v.message


def test_seed_aligned_job_passes():
    findings = analyze([k8s(seed000("aligned-4gpu-8rails-a")), k8s(aligned_mpijob())])
    assert of_policy(findings) == []


def of_policy(findings):
    return [f for f in findings if f.policy == POLICY]


def test_claim_outside_the_stack_is_a_note():
    findings = analyze([k8s(seed000("nccl-dranet-a-device-plugin"))])
    assert violations(findings, POLICY) == []
    (note,) = notes(findings, POLICY)
    assert "rdma-dranet/rails-8-a" in note.message and "not declared in this stack" in note.message


def test_gpu_only_claim_with_device_plugin_gpus_is_not_this_policy():
    gpu_claim = seed000("rails-8-a")
    gpu_claim["spec"]["spec"]["devices"]["requests"][0]["exactly"] = {
        "deviceClassName": "gpu.nvidia.com",
        "count": 1,
    }
    assert of_policy(analyze([k8s(gpu_claim), k8s(seed000("nccl-dranet-a-device-plugin"))])) == []


def test_deployment_and_cronjob_and_pod():
    pod_spec = seed000("nccl-dranet-a-device-plugin")["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    meta = {"name": "w", "namespace": "rdma-dranet"}
    objects = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {"template": {"spec": pod_spec}},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": meta,
            "spec": {"jobTemplate": {"spec": {"template": {"spec": pod_spec}}}},
        },
        {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec},
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": meta,
            "spec": {"pytorchReplicaSpecs": {"Worker": {"template": {"spec": pod_spec}}}},
        },
    ]
    for obj in objects:
        findings = analyze([k8s(seed000("rails-8-a")), k8s(obj, name=obj["kind"].lower())])
        assert len(violations(findings, POLICY)) == 1, obj["kind"]


def test_unknown_gpu_count_still_fails_and_auto_named_claim_resolves_by_dependency():
    job = seed000("nccl-dranet-a-device-plugin")
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    worker["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = UNKNOWN
    worker["resourceClaims"][0]["resourceClaimTemplateName"] = UNKNOWN
    template = seed000("rails-8-a")
    del template["metadata"]["name"]
    claim = k8s(template, name="rails")
    findings = analyze([claim, k8s(job, dependencies=[claim.urn])])
    (v,) = violations(findings, POLICY)
    assert "known after apply" in v.message


def test_wrong_types_are_violations():
    job = seed000("nccl-dranet-a-device-plugin")
    job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"] = "mpi-worker"
    (v,) = violations(analyze([k8s(seed000("rails-8-a")), k8s(job)]), POLICY)
    assert "containers must be a list" in v.message


def test_pod_template_carries_its_pod_spec_at_the_top_level():
    """core/v1 PodTemplate holds its PodTemplateSpec at the top level (`template`, beside metadata; kubernetes
    staging/src/k8s.io/api/core/v1/types.go PodTemplate)."""
    pod_spec = seed000("nccl-dranet-a-device-plugin")["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    meta = {"name": "w", "namespace": "rdma-dranet"}
    template = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": meta, "template": {"spec": pod_spec}}
    (v,) = violations(analyze([k8s(seed000("rails-8-a")), k8s(template, name="t")]), POLICY)
    assert v.message.startswith("PodTemplate rdma-dranet/w template.spec:")
    assert "mpi-worker (nvidia.com/gpu: 4)" in v.message
