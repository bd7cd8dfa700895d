"""The optional acceptance jobs (components/acceptance_jobs.py)."""

from __future__ import annotations

from collections.abc import Callable

import pulumi
import pytest

from components.acceptance_jobs import EXPECTED_NCCL, EXPECTED_RAILS, MPI_OPERATOR_MANIFEST
from oke_gpu_rdma.nccl import NCCL_FORBIDDEN_WITH_DRANET, NCCL_SETTINGS
from tests.support import Run, raw_config

MPIJOB = "kubernetes:kubeflow.org/v2beta1:MPIJob"


def with_jobs(**jobs: object) -> dict:
    raw = raw_config("dev")
    raw["workloads"] = {"acceptanceJobs": {"enabled": True, **jobs}}
    return raw


def test_off_by_default(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev")
    assert run.of_type(MPIJOB) == [] and run.of_type("kubernetes:core/v1:Pod") == []


def test_mpijob_uses_the_aligned_template(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev", with_jobs())
    job = run.one(MPIJOB)
    assert job.inputs["metadata"]["annotations"]["oke-gpu-rdma/expected"] == EXPECTED_NCCL
    spec = job.inputs["spec"]
    assert spec["slotsPerWorker"] == 8
    worker = spec["mpiReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2
    pod = worker["template"]["spec"]
    assert pod["resourceClaims"] == [
        {"name": "gpus-rails", "resourceClaimTemplateName": "aligned-8gpu-16rails"}
    ]
    # GPUs come from the claim, never from the device plugin.
    assert "limits" not in pod["containers"][0].get("resources", {})
    script = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["args"][0]
    for key, value in NCCL_SETTINGS.items():
        assert f"-x {key}={value}" in script
    assert not any(name in script for name in NCCL_FORBIDDEN_WITH_DRANET)
    operator = run.one("kubernetes:yaml/v2:ConfigFile")
    assert operator.inputs["file"] == MPI_OPERATOR_MANIFEST.format(version="v0.6.0")
    assert operator.urn in job.dependencies


def test_rail_pods_hold_all_rails_one_per_node(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev", with_jobs(nccl=False, railBandwidth=True))
    assert run.of_type(MPIJOB) == []
    pods = {p.inputs["metadata"]["name"]: p.inputs for p in run.of_type("kubernetes:core/v1:Pod")}
    assert set(pods) == {"rail-bw-server", "rail-bw-client"}
    for pod in pods.values():
        assert pod["metadata"]["annotations"]["oke-gpu-rdma/expected"] == EXPECTED_RAILS
        spec = pod["spec"]
        assert spec["resourceClaims"] == [{"name": "rails", "resourceClaimTemplateName": "all-rails"}]
        anti = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
        assert anti["topologyKey"] == "kubernetes.io/hostname"


def test_4_gpu_template_sets_4_slots(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev", with_jobs(claimTemplate="aligned-4gpu-8rails"))
    assert run.one(MPIJOB).inputs["spec"]["slotsPerWorker"] == 4


def test_unknown_template_is_a_clear_error(run_stack: Callable[..., Run]) -> None:
    with pytest.raises(pulumi.RunError) as caught:
        run_stack("dev", with_jobs(claimTemplate="nope"))
    assert str(caught.value).splitlines()[1:] == [
        "  stacks/Pulumi.dev.yaml: workloads.acceptanceJobs.claimTemplate = 'nope': no such template in "
        "workloads.claimTemplates (aligned-8gpu-16rails, aligned-4gpu-8rails)"
    ]


def test_nccl_job_and_rail_pods_are_not_deployed_together(run_stack: Callable[..., Run]) -> None:
    with pytest.raises(pulumi.RunError) as caught:
        run_stack("dev", with_jobs(railBandwidth=True))
    assert "nccl and railBandwidth both hold every rail of their nodes" in str(caught.value)
    assert run_stack("dev", with_jobs()).of_type("kubernetes:core/v1:Pod") == []


def test_rail_pods_need_the_rails_only_template(run_stack: Callable[..., Run]) -> None:
    raw = with_jobs(nccl=False, railBandwidth=True)
    raw["workloads"]["railsOnlyTemplate"] = None
    with pytest.raises(pulumi.RunError) as caught:
        run_stack("dev", raw)
    assert "workloads.acceptanceJobs.railBandwidth = true: needs the rails-only template" in str(caught.value)
