"""sriov-pods-all-rails (advisory): one VF of every rail, networks in rail order."""

from __future__ import annotations

from tests.fixtures import seed001
from tests.policies.policy_helpers import (
    analyze,
    k8s,
    seed_sriov_final,
    violations,
)

POLICY = "sriov-pods-all-rails"


def worker(job):
    return job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]


def test_the_seeds_two_job_worker_passes():
    assert violations(analyze([*seed_sriov_final(), k8s(seed001("nccl-vf-a-per-rail"))]), POLICY) == []


def test_a_pod_with_half_the_rails_is_flagged():
    job = seed001("nccl-vf-a-per-rail")
    limits = worker(job)["spec"]["containers"][0]["resources"]["limits"]
    for rail in range(8, 16):
        del limits[f"nvidia.com/rdma-vf-{rail}"]
    (v,) = violations(analyze([*seed_sriov_final(), k8s(job)]), POLICY)
    assert v.level == "advisory"
    assert v.message.startswith(
        "MPIJob default/nccl-vf-a replica Worker: container mpi-worker asks for VFs of 8 of the 16 rails "
        "(missing nvidia.com/rdma-vf-8, "
    )


def test_networks_out_of_rail_order_are_flagged():
    job = seed001("nccl-vf-a-per-rail")
    meta = worker(job)["metadata"]["annotations"]
    names = meta["k8s.v1.cni.cncf.io/networks"].split(",")
    meta["k8s.v1.cni.cncf.io/networks"] = ",".join(reversed(names))
    (v,) = violations(analyze([*seed_sriov_final(), k8s(job)]), POLICY)
    assert "lists the rail networks out of rail order" in v.message
