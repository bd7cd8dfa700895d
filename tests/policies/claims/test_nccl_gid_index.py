"""nccl-gid-index-with-dranet: env, envFrom and `mpirun -x` in the launcher of a job with DRANET rails."""

from __future__ import annotations

import copy

from tests.fixtures import seed000
from tests.policies.policy_helpers import (
    aligned_mpijob,
    analyze,
    k8s,
    notes,
    violations,
)

POLICY = "nccl-gid-index-with-dranet"


def launcher(job):
    return job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]


def worker(job):
    return job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]


def run(job, *extra):
    return analyze([k8s(seed000("aligned-4gpu-8rails-a")), k8s(job), *extra])


def test_seed_job_without_gid_index_passes():
    assert [f for f in run(aligned_mpijob()) if f.policy == POLICY] == []


def test_mpirun_x_in_the_launcher_is_rejected():
    job = aligned_mpijob()
    launcher(job)["args"][0] = launcher(job)["args"][0].replace(
        "-x NCCL_IB_TC=41", "-x NCCL_IB_GID_INDEX=3 -x NCCL_IB_TC=41"
    )
    (v,) = violations(run(job), POLICY)
    assert v.level == "mandatory" and "replica Launcher container mpi-launcher" in v.message
    assert "mpirun -x" in v.message and "aligned-4gpu-8rails-a" in v.message and "Fix: remove" in v.message


def test_env_in_the_worker_is_rejected():
    job = aligned_mpijob()
    worker(job)["env"] = [{"name": "NCCL_IB_GID_INDEX", "value": "3"}]
    (v,) = violations(run(job), POLICY)
    assert "env[0] NCCL_IB_GID_INDEX=3" in v.message


def test_env_from_a_config_map_of_the_stack():
    job = aligned_mpijob()
    worker(job)["envFrom"] = [{"configMapRef": {"name": "nccl"}}]
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "nccl", "namespace": "rdma-dranet"},
        "data": {"NCCL_IB_GID_INDEX": "3"},
    }
    (v,) = violations(run(job, k8s(cm)), POLICY)
    assert "ConfigMap nccl" in v.message


def test_unset_is_fine_and_jobs_without_rails_are_not_judged():
    job = aligned_mpijob()
    launcher(job)["args"][0] += "\nunset NCCL_IB_GID_INDEX\n"
    assert violations(run(job), POLICY) == []
    plain = aligned_mpijob()
    plain["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"].pop("resourceClaims")
    worker(plain)["env"] = [{"name": "NCCL_IB_GID_INDEX", "value": "3"}]
    assert [f for f in analyze([k8s(plain)]) if f.policy == POLICY] == []


def test_claim_outside_the_stack_is_a_note():
    job = aligned_mpijob()
    worker(job)["env"] = [{"name": "NCCL_IB_GID_INDEX", "value": "3"}]
    findings = analyze([k8s(job)])
    assert violations(findings, POLICY) == [] and len(notes(findings, POLICY)) == 1


# -- issue 11 item 8: workloads as the kubelet builds them (kubelet_pods.go makeEnvironmentVariables) ----


def _secret(data):
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "nccl", "namespace": "rdma-dranet"},
        "stringData": data,
    }


def _config_map(data):
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "nccl", "namespace": "rdma-dranet"},
        "data": data,
    }


def test_env_from_a_secret_counts():
    job = aligned_mpijob()
    worker(job)["envFrom"] = [{"secretRef": {"name": "nccl"}}]
    (v,) = violations(run(job, k8s(_secret({"NCCL_IB_GID_INDEX": "3"}))), POLICY)
    assert "envFrom[0] Secret nccl" in v.message
    assert violations(run(job, k8s(_secret({"NCCL_IB_TC": "41"}))), POLICY) == []


def test_env_from_prefix_plus_key_is_the_name():
    job = aligned_mpijob()
    worker(job)["envFrom"] = [{"prefix": "NCCL_IB_", "configMapRef": {"name": "nccl"}}]
    (v,) = violations(run(job, k8s(_config_map({"GID_INDEX": "3"}))), POLICY)
    assert "(prefix NCCL_IB_)" in v.message
    # Passing: the key itself would be NCCL_IB_NCCL_IB_GID_INDEX under the prefix.
    assert violations(run(job, k8s(_config_map({"NCCL_IB_GID_INDEX": "3"}))), POLICY) == []


def test_a_script_that_unsets_the_variable_before_use_does_not_set_it():
    job = aligned_mpijob()
    script = launcher(job)["args"][0]
    launcher(job)["args"][0] = script.replace("NUM_GPUS=4", "unset NCCL_IB_GID_INDEX; NUM_GPUS=4").replace(
        "-x NCCL_IB_TC=41", "-x NCCL_IB_GID_INDEX -x NCCL_IB_TC=41"
    )
    assert violations(run(job), POLICY) == []
    # Failing variant: the same script forwarding it without the unset.
    launcher(job)["args"][0] = script.replace("-x NCCL_IB_TC=41", "-x NCCL_IB_GID_INDEX -x NCCL_IB_TC=41")
    assert len(violations(run(job), POLICY)) == 1
    # Set after the unset: set again.
    launcher(job)["args"][0] = script.replace(
        "NUM_GPUS=4", "unset NCCL_IB_GID_INDEX; export NCCL_IB_GID_INDEX=3"
    )
    assert len(violations(run(job), POLICY)) == 1


LEADER_WORKER_SET = {
    "apiVersion": "leaderworkerset.x-k8s.io/v1",
    "kind": "LeaderWorkerSet",
    "metadata": {"name": "vllm", "namespace": "rdma-dranet"},
    "spec": {
        "leaderWorkerTemplate": {
            "size": 2,
            "workerTemplate": {
                "spec": {
                    "resourceClaims": [
                        {"name": "rails", "resourceClaimTemplateName": "aligned-4gpu-8rails-a"}
                    ],
                    "containers": [
                        {
                            "name": "worker",
                            "image": "vllm",
                            "env": [{"name": "NCCL_IB_GID_INDEX", "value": "3"}],
                        }
                    ],
                }
            },
        }
    },
}


def test_pod_templates_are_found_by_structure_in_any_kind():
    (v,) = violations(run(LEADER_WORKER_SET), POLICY)
    assert "LeaderWorkerSet rdma-dranet/vllm replica worker container worker" in v.message
    clean = copy.deepcopy(LEADER_WORKER_SET)
    del clean["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["env"]
    assert violations(run(clean), POLICY) == []


# -- issue 22 item 3: every variable nccl.py forbids, wherever the pod sets it; $(VAR) as the kubelet expands --


def test_nccl_ib_hca_is_forbidden_too_in_env_env_from_and_args():
    job = aligned_mpijob()
    worker(job)["env"] = [{"name": "NCCL_IB_HCA", "value": "=mlx5_0,mlx5_1"}]
    (v,) = violations(run(job), POLICY)
    assert "sets NCCL_IB_HCA (env[0] NCCL_IB_HCA==mlx5_0,mlx5_1)" in v.message
    assert "Fix: remove NCCL_IB_HCA" in v.message
    job = aligned_mpijob()
    worker(job)["envFrom"] = [{"configMapRef": {"name": "nccl"}}]
    (v,) = violations(run(job, k8s(_config_map({"NCCL_IB_HCA": "mlx5"}))), POLICY)
    assert "envFrom[0] ConfigMap nccl NCCL_IB_HCA=mlx5" in v.message
    job = aligned_mpijob()
    launcher(job)["args"][0] = launcher(job)["args"][0].replace(
        "-x NCCL_IB_TC=41", "-x NCCL_IB_HCA=mlx5_0 -x NCCL_IB_TC=41"
    )
    (v,) = violations(run(job), POLICY)
    assert (
        "replica Launcher" in v.message
        and "sets NCCL_IB_HCA (args (e.g. mpirun -x NCCL_IB_HCA))" in v.message
    )


def test_args_are_expanded_from_the_env_before_they_are_read():
    """kubelet ExpandContainerCommandAndArgs: `$(OPTS)` takes the env value; `$$(OPTS)` stays literal."""
    job = aligned_mpijob()
    launcher(job)["env"] = [
        {"name": "GID", "value": "3"},
        {"name": "OPTS", "value": "-x NCCL_IB_GID_INDEX=$(GID)"},
    ]
    script = launcher(job)["args"][0]
    launcher(job)["args"][0] = script.replace("-x NCCL_IB_TC=41", "$(OPTS) -x NCCL_IB_TC=41")
    (v,) = violations(run(job), POLICY)
    assert "sets NCCL_IB_GID_INDEX (args (e.g. mpirun -x NCCL_IB_GID_INDEX))" in v.message
    launcher(job)["args"][0] = script.replace("-x NCCL_IB_TC=41", "$$(OPTS) -x NCCL_IB_TC=41")
    assert violations(run(job), POLICY) == []
    # An unknown variable stays `$(UNSET)` as written: nothing is set.
    launcher(job)["args"][0] = script.replace("-x NCCL_IB_TC=41", "$(UNSET) -x NCCL_IB_TC=41")
    assert violations(run(job), POLICY) == []


def test_command_args_from_a_config_map_through_env_from():
    job = aligned_mpijob()
    launcher(job)["envFrom"] = [{"configMapRef": {"name": "nccl"}}]
    launcher(job)["args"][0] = launcher(job)["args"][0].replace(
        "-x NCCL_IB_TC=41", "$(EXTRA) -x NCCL_IB_TC=41"
    )
    (v,) = violations(run(job, k8s(_config_map({"EXTRA": "-x NCCL_IB_HCA=mlx5_0"}))), POLICY)
    assert "NCCL_IB_HCA" in v.message


def test_pod_template_and_cronjob_kinds():
    pod = copy.deepcopy(LEADER_WORKER_SET["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"])
    meta = {"name": "t", "namespace": "rdma-dranet"}
    for obj in (
        {"apiVersion": "v1", "kind": "PodTemplate", "metadata": meta, "template": {"spec": pod}},
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": meta,
            "spec": {"jobTemplate": {"spec": {"template": {"spec": pod}}}},
        },
    ):
        (v,) = violations(run(obj), POLICY)
        assert v.message.startswith(f"{obj['kind']} rdma-dranet/t "), v.message


def test_a_reference_to_a_config_map_key_expands_too():
    """env[].valueFrom.configMapKeyRef gives the variable the ConfigMap's value; `$(EXTRA)` then expands."""
    job = aligned_mpijob()
    launcher(job)["env"] = [{"name": "EXTRA", "valueFrom": {"configMapKeyRef": {"name": "nccl", "key": "x"}}}]
    launcher(job)["args"][0] = launcher(job)["args"][0].replace(
        "-x NCCL_IB_TC=41", "$(EXTRA) -x NCCL_IB_TC=41"
    )
    (v,) = violations(run(job, k8s(_config_map({"x": "-x NCCL_IB_GID_INDEX=3"}))), POLICY)
    assert "NCCL_IB_GID_INDEX" in v.message
    assert violations(run(job, k8s(_config_map({"x": "-x NCCL_IB_TC=41"}))), POLICY) == []
