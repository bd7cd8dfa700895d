"""rdma-workloads-baseline (advisory): Pod Security baseline where DRANET rails are claimed."""

from __future__ import annotations

import yaml

from tests.fixtures import seed000
from tests.policies.policy_helpers import (
    NAMESPACE_YAML,
    aligned_mpijob,
    analyze,
    k8s,
    violations,
)

POLICY = "rdma-workloads-baseline"


def test_seed_namespace_and_job_pass():
    findings = analyze([k8s(NAMESPACE_YAML), k8s(seed000("aligned-4gpu-8rails-a")), k8s(aligned_mpijob())])
    assert [f for f in findings if f.policy == POLICY] == []


def test_namespace_without_baseline_is_advisory():
    ns = yaml.safe_load(NAMESPACE_YAML)
    ns["metadata"]["labels"] = {}
    (v,) = violations(analyze([k8s(ns), k8s(seed000("all-rails"))]), POLICY)
    assert v.level == "advisory" and "Namespace rdma-dranet" in v.message and "is not set" in v.message


def test_privileged_host_network_and_ipc_lock():
    job = aligned_mpijob()
    spec = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    spec["hostNetwork"] = True
    spec["containers"][0]["securityContext"] = {"privileged": True, "capabilities": {"add": ["IPC_LOCK"]}}
    found = violations(analyze([k8s(seed000("aligned-4gpu-8rails-a")), k8s(job)]), POLICY)
    assert len(found) == 3 and all(v.level == "advisory" for v in found)
    assert any("IPC_LOCK" in v.message for v in found) and any("hostNetwork" in v.message for v in found)


def test_level_can_be_raised_or_disabled():
    job = aligned_mpijob()
    job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["hostNetwork"] = True
    resources = [k8s(seed000("aligned-4gpu-8rails-a")), k8s(job)]
    (v,) = violations(analyze(resources, {POLICY: "mandatory"}), POLICY)
    assert v.level == "mandatory"
    assert violations(analyze(resources, {POLICY: {"enforcementLevel": "disabled"}}), POLICY) == []
