"""sriov-pods-all-rails (advisory): one VF of every rail, networks in rail order."""

from __future__ import annotations

import copy

from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from tests.fixtures import seed001
from tests.policies.policy_helpers import analyze, k8s, seed_sriov_final, sriov_pool, violations
from tests.support import topology_to_dict

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


def test_per_rail_resources_of_an_overridden_shape_come_from_its_supplied_topology():
    # The seed's per-rail node policies on a shape the catalog does not verify: the pack config's
    # topology says which rail each PF is, so a pod with half the rails is flagged as on BM.GPU.B4.8.
    shape = "BM.GPU.A100-v2.8"
    node_policies = copy.deepcopy(seed001.all("sriov-node-policies-per-rail"))
    for node_policy in node_policies:
        node_policy["spec"]["nodeSelector"]["node.kubernetes.io/instance-type"] = shape
    resources = [
        sriov_pool(),
        *(k8s(o, f"{o['kind'].lower()}-{o['metadata']['name']}") for o in node_policies),
        *(k8s(o, f"network-{o['metadata']['name']}") for o in seed001.all("sriov-networks-per-rail")),
    ]
    job = copy.deepcopy(seed001("nccl-vf-a-per-rail"))
    limits = worker(job)["spec"]["containers"][0]["resources"]["limits"]
    for rail in range(8, 16):
        del limits[f"nvidia.com/rdma-vf-{rail}"]
    assert violations(analyze([*resources, k8s(job)]), POLICY) == []  # no rail layout: nothing to judge
    config = {POLICY: {"shapeTopologies": {shape: topology_to_dict(CATALOG.topology("BM.GPU.B4.8"))}}}
    (v,) = violations(analyze([*resources, k8s(job)], config), POLICY)
    assert v.message.startswith(
        "MPIJob default/nccl-vf-a replica Worker: container mpi-worker asks for VFs of 8 of the 16 rails "
    )


def test_every_rail_means_every_rail_of_the_pods_shape():
    """Issue 19 item 2: a second SR-IOV shape's per-rail policies (renamed by shape) do not make the B4.8
    pod short of rails; half of its own shape's rails still are."""
    shape = "BM.GPU.A100-v2.8"
    second = copy.deepcopy(seed001.all("sriov-node-policies-per-rail"))
    for node_policy in second:
        node_policy["metadata"]["name"] += "-a100"
        node_policy["spec"]["resourceName"] += "-a100"
        node_policy["spec"]["nodeSelector"]["node.kubernetes.io/instance-type"] = shape
    resources = [*seed_sriov_final(), *(k8s(o, f"policy-{o['metadata']['name']}") for o in second)]
    config = {POLICY: {"shapeTopologies": {shape: topology_to_dict(CATALOG.topology("BM.GPU.B4.8"))}}}
    assert violations(analyze([*resources, k8s(seed001("nccl-vf-a-per-rail"))], config), POLICY) == []
    job = seed001("nccl-vf-a-per-rail")
    limits = worker(job)["spec"]["containers"][0]["resources"]["limits"]
    for rail in range(8, 16):
        del limits[f"nvidia.com/rdma-vf-{rail}"]
    (v,) = violations(analyze([*resources, k8s(job)], config), POLICY)
    assert "asks for VFs of 8 of the 16 rails (missing nvidia.com/rdma-vf-8, " in v.message
