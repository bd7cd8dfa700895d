"""kueue-flavor-shapes: a job's queue may admit it only on flavors of a shape its claims can be allocated on."""

from __future__ import annotations

from typing import Any

from tests.fixtures import seed000
from tests.policies.kueue_helpers import (
    cluster_queue,
    flavor,
    kueue_stack,
    local_queue,
    queued_mpijob,
    topology,
)
from tests.policies.policy_helpers import analyze, notes, of, violations

POLICY = "kueue-flavor-shapes"
QUOTA = (
    "Kueue counts DRA devices by DeviceClass, not by the claim's selectors, so it can admit the job there and the "
    "pods then stay Pending holding the quota."
)


def pinned_to_b4() -> dict[str, Any]:
    """aligned-4gpu-8rails-a with its rail requests pinned to BM.GPU.B4.8 by oke.dra.net/shape (what the stack's
    multi-shape claim templates do)."""
    claim = seed000("aligned-4gpu-8rails-a")
    claim["metadata"]["name"] = "aligned-b4"
    for request in claim["spec"]["spec"]["devices"]["requests"][1::2]:
        request["exactly"]["selectors"].append(
            {"cel": {"expression": 'device.attributes["oke.dra.net"].shape == "BM.GPU.B4.8"'}}
        )
    return claim


def job_with(template: str, node_selector: bool = True) -> dict[str, Any]:
    job = queued_mpijob("gpu")
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    worker["resourceClaims"][0]["resourceClaimTemplateName"] = template
    if not node_selector:
        del worker["nodeSelector"]
    return job


def test_a_job_pinned_by_node_selector_to_the_shape_its_claim_fits_passes() -> None:
    """The worker's nodeSelector (instance-type B4) rules the h100 flavor out (Kueue's flavorSelector)."""
    assert of(analyze(kueue_stack(pinned_to_b4(), job_with("aligned-b4"))), POLICY) == []


def test_a_flavor_whose_shape_the_claims_selectors_rule_out_is_rejected() -> None:
    (v,) = of(analyze(kueue_stack(pinned_to_b4(), job_with("aligned-b4", node_selector=False))), POLICY)
    assert v.level == "mandatory" and v.urn.endswith("::mpijob-nccl-dranet-a")
    assert v.message == (
        "MPIJob rdma-dranet/nccl-dranet-a: replica Worker uses ResourceClaimTemplate rdma-dranet/aligned-b4, and "
        "claim aligned-b4 can never be allocated on BM.GPU.H100.8: its selectors rule the shape out. Its queue "
        "(LocalQueue rdma-dranet/gpu -> ClusterQueue gpu) may admit it on flavor h100 (pools gpu-h100) of that "
        f"shape: {QUOTA} Fix: pin the pod set to a shape its claims fit (nodeSelector "
        "node.kubernetes.io/instance-type: BM.GPU.B4.8), or submit it to a queue whose flavors fit"
    )


def test_a_claim_the_flavors_shape_cannot_hold_is_rejected() -> None:
    claim = seed000("aligned-4gpu-8rails-a")
    claim["metadata"]["name"] = "nine-gpus"
    claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 9
    (v,) = of(analyze(kueue_stack(claim, job_with("nine-gpus"))), POLICY)
    assert v.message.startswith(
        "MPIJob rdma-dranet/nccl-dranet-a: replica Worker uses ResourceClaimTemplate rdma-dranet/nine-gpus, and "
        "claim nine-gpus can never be allocated on BM.GPU.B4.8: no PCIe root has 9 GPUs and 4 rails"
    )
    assert v.message.endswith(
        "Its queue (LocalQueue rdma-dranet/gpu -> ClusterQueue gpu) may admit it on flavor b4 (pools gpu-b4) of "
        f"that shape: {QUOTA} Fix: submit it to a queue whose flavors are a shape the claim fits, or change the claim"
    )


def test_the_seeds_aligned_job_fits_its_flavor() -> None:
    assert of(analyze(kueue_stack(queued_mpijob("gpu"))), POLICY) == []


def test_a_queue_outside_the_stack_is_a_note() -> None:
    findings = analyze(kueue_stack(queued_mpijob("elsewhere")))
    assert violations(findings, POLICY) == []
    (note,) = notes(findings, POLICY)
    assert (
        "MPIJob rdma-dranet/nccl-dranet-a: LocalQueue rdma-dranet/elsewhere is not declared in this stack: its "
        "flavors' shapes not checked" in note.message
    )


def test_required_node_affinity_on_the_shape_pins_the_flavor_too() -> None:
    job = job_with("aligned-b4", node_selector=False)
    term = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["BM.GPU.B4.8"]}
    job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [term]}]
            }
        }
    }
    assert of(analyze(kueue_stack(pinned_to_b4(), job)), POLICY) == []


# -- issue 34, round 5: what kube-scheduler does after Kueue's nodeSelector ---------------------------------

GPU_NODES = {"nvidia.com/gpu.present": "true"}  # on every GPU pool's nodes: a flavor spanning both shapes


def spanning(topology_name: str | None) -> list[dict[str, Any]]:
    """One flavor over the B4 and H100 pools (with topology-aware scheduling when ``topology_name``)."""
    return [
        topology(),
        flavor("gpus", GPU_NODES, topology_name=topology_name),
        cluster_queue("gpu", ["gpus"]),
        local_queue("gpu", "gpu"),
    ]


def test_a_flavor_spanning_two_shapes_places_the_pods_where_the_claim_is_pinned() -> None:
    """Round 5, finding 3: Kueue adds the flavor's nodeLabels to the pods' nodeSelector (pkg/podset/podset.go
    FromAssignment), and kube-scheduler's DRA Filter then takes, among those nodes, only the ones where the claim
    can be allocated: the B4 nodes of the flavor. Nothing stays Pending."""
    stack = kueue_stack(pinned_to_b4(), job_with("aligned-b4", node_selector=False), kueue=spanning(None))
    assert of(analyze(stack), POLICY) == []


def test_a_flavor_spanning_two_shapes_where_no_shape_fits_is_still_rejected() -> None:
    """Pinned to B4 and asking for 9 GPUs per PCIe root: no B4 node holds it and no H100 node has its rails, so
    kube-scheduler finds no node of the flavor for it; each shape's reason is named."""
    claim = pinned_to_b4()
    claim["metadata"]["name"] = "nine-gpus"
    claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 9
    stack = kueue_stack(claim, job_with("nine-gpus", node_selector=False), kueue=spanning(None))
    b4, h100 = of(analyze(stack), POLICY)
    assert b4.level == h100.level == "mandatory"
    assert "claim nine-gpus can never be allocated on BM.GPU.B4.8: no PCIe root has 9 GPUs" in b4.message
    assert "may admit it on flavor gpus (pools gpu-b4) of that shape" in b4.message
    assert "claim nine-gpus can never be allocated on BM.GPU.H100.8: its selectors rule the shape out" in (
        h100.message
    )
    assert "may admit it on flavor gpus (pools gpu-h100) of that shape" in h100.message


def test_topology_aware_scheduling_picks_the_nodes_without_reading_the_claim() -> None:
    """With a Topology, Kueue's TAS chooses each pod's node among the flavor's (by the pod's nodeSelector,
    affinity and requests: tas_flavor_snapshot.go l. 963-985) and the ungater pins the pod there
    (topology_ungater.go l. 312-315); it never reads the claim, so it may choose an H100 node and the pod stays
    Pending there."""
    stack = kueue_stack(
        pinned_to_b4(), job_with("aligned-b4", node_selector=False), kueue=spanning("rdma-fabric")
    )
    (v,) = of(analyze(stack), POLICY)
    assert "can never be allocated on BM.GPU.H100.8: its selectors rule the shape out" in v.message
    assert "flavor gpus (pools gpu-h100)" in v.message


def test_the_pods_own_node_selector_keeps_them_off_the_flavors_other_shape() -> None:
    """The worker's nodeSelector (instance-type B4) does not cut the flavor out (Kueue's flavorSelector reads only
    the flavor's keys), but kube-scheduler's NodeAffinity Filter keeps every pod on B4 nodes, TAS or not."""
    for topology_name in (None, "rdma-fabric"):
        stack = kueue_stack(pinned_to_b4(), job_with("aligned-b4"), kueue=spanning(topology_name))
        assert of(analyze(stack), POLICY) == []
