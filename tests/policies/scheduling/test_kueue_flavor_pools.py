"""kueue-flavor-pools: each ResourceFlavor selects node pools of the stack, all of one shape."""

from __future__ import annotations

import pytest

from oke_gpu_rdma.nodes.labels import INSTANCE_TYPE_LABEL, POOL_LABEL, RDMA_HPC_ISLAND_LABEL
from tests.policies.kueue_helpers import flavor, kueue_stack, topology
from tests.policies.policy_helpers import UNKNOWN, analyze, notes, of, violations

POLICY = "kueue-flavor-pools"
POOLS = "gpu-b4 (BM.GPU.B4.8), gpu-h100 (BM.GPU.H100.8)"


def flavors(*objects: dict[str, object]) -> list[dict[str, object]]:
    return [topology(), *objects]


def test_a_flavor_per_shape_passes_by_instance_type_or_pool_label() -> None:
    stack = kueue_stack(
        kueue=flavors(
            flavor("b4", {INSTANCE_TYPE_LABEL: "BM.GPU.B4.8"}), flavor("h100", {POOL_LABEL: "gpu-h100"})
        )
    )
    assert of(analyze(stack), POLICY) == []


def test_a_flavor_that_selects_no_pool_is_rejected() -> None:
    (v,) = of(
        analyze(kueue_stack(kueue=flavors(flavor("a100", {INSTANCE_TYPE_LABEL: "BM.GPU.A100-v2.8"})))), POLICY
    )
    assert v.level == "mandatory" and v.urn.endswith("::resourceflavor-a100")
    assert v.message == (
        "ResourceFlavor a100: spec.nodeLabels node.kubernetes.io/instance-type=BM.GPU.A100-v2.8 select no node pool "
        f"of the stack (pools: {POOLS}): Kueue would count quota for nodes that do not exist, and a workload "
        "admitted on it finds no node, its pods stay Pending. Fix: select one shape's pools, by "
        "oke-gpu-rdma/node-pool or node.kubernetes.io/instance-type"
    )


@pytest.mark.parametrize(
    ("labels", "shown"),
    [
        ({"nvidia.com/gpu.present": "true"}, "nvidia.com/gpu.present=true"),
        (None, "no nodeLabels (every node)"),
    ],
)
def test_a_flavor_over_two_shapes_is_rejected(labels: dict[str, str] | None, shown: str) -> None:
    (v,) = of(analyze(kueue_stack(kueue=flavors(flavor("gpus", labels)))), POLICY)
    assert v.message == (
        f"ResourceFlavor gpus: spec.nodeLabels {shown} select node pools of 2 shapes (BM.GPU.B4.8: gpu-b4; "
        "BM.GPU.H100.8: gpu-h100); one flavor's quota and topology would count hosts with different GPUs and rails "
        "as one, and a job admitted on it may land on a shape its claims do not fit. Fix: one ResourceFlavor per "
        "shape, e.g. node.kubernetes.io/instance-type=BM.GPU.B4.8"
    )


def test_a_topology_aware_flavor_over_nodes_without_the_fabric_labels_is_rejected() -> None:
    """The H100 pool without rails gets no topology labeller: its nodes carry only kubernetes.io/hostname of
    the Topology's levels, and Kueue's TAS leaves them out of the flavor."""
    stack = kueue_stack(kueue=flavors(flavor("h100", {POOL_LABEL: "gpu-h100"})), h100_rails=False)
    (v,) = of(analyze(stack), POLICY)
    assert v.urn.endswith("::resourceflavor-h100")
    assert v.message == (
        "ResourceFlavor h100: its Topology rdma-fabric has levels oke-gpu-rdma/rdma-hpc-island, "
        "oke-gpu-rdma/rdma-network-block, oke-gpu-rdma/rdma-local-block, which the nodes of pool gpu-h100 do not "
        "carry: Kueue's topology-aware scheduling leaves a node without every level's label out of the flavor, so "
        "those nodes never run its workloads. Fix: select pools whose nodes register every level (the RDMA pools' "
        "cloud-init writes the fabric levels), or drop the levels from the Topology"
    )
    # Without topologyName the flavor is not topology-aware: no level is needed.
    plain = kueue_stack(kueue=flavors(flavor("h100", {POOL_LABEL: "gpu-h100"}, None)), h100_rails=False)
    assert of(analyze(plain), POLICY) == []


def test_v1beta1_flavors_are_read_too() -> None:
    old = flavor("a100", {INSTANCE_TYPE_LABEL: "BM.GPU.A100-v2.8"}, api="kueue.x-k8s.io/v1beta1")
    (v,) = of(analyze(kueue_stack(kueue=flavors(old))), POLICY)
    assert v.message.startswith("ResourceFlavor a100: spec.nodeLabels")


def test_a_fabric_label_is_known_only_at_boot_and_the_other_keys_decide() -> None:
    island = flavor("island", {RDMA_HPC_ISLAND_LABEL: "4f1c", INSTANCE_TYPE_LABEL: "BM.GPU.B4.8"})
    findings = analyze(kueue_stack(kueue=flavors(island)))
    assert violations(findings, POLICY) == []
    (note,) = notes(findings, POLICY)
    assert (
        "ResourceFlavor island: nodeLabels oke-gpu-rdma/rdma-hpc-island have values known only on the nodes, "
        "matched on the other keys and on the pools whose nodes register them" in note.message
    )


def test_unknown_node_labels_are_a_note() -> None:
    findings = analyze(kueue_stack(kueue=flavors(flavor("b4", {INSTANCE_TYPE_LABEL: UNKNOWN}))))
    assert violations(findings, POLICY) == []
    (note,) = notes(findings, POLICY)
    assert "ResourceFlavor b4: spec.nodeLabels unknown until apply" in note.message
