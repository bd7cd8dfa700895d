"""kueue-topology-levels: a pod template's topology annotation names a level of its flavors' Topology."""

from __future__ import annotations

from typing import Any

import pytest

from oke_gpu_rdma.nodes.labels import RDMA_LOCAL_BLOCK_LABEL, RDMA_NETWORK_BLOCK_LABEL
from tests.policies.kueue_helpers import (
    cluster_queue,
    flavor,
    kueue_objects,
    kueue_stack,
    local_queue,
    queued_mpijob,
    topology,
)
from tests.policies.policy_helpers import UNKNOWN, analyze, notes, of, violations

POLICY = "kueue-topology-levels"
LEVELS = (
    "oke-gpu-rdma/rdma-hpc-island, oke-gpu-rdma/rdma-network-block, oke-gpu-rdma/rdma-local-block, "
    "kubernetes.io/hostname"
)


def annotated(annotation: str, level: Any) -> dict[str, Any]:
    job = queued_mpijob("gpu")
    job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["metadata"] = {
        "annotations": {f"kueue.x-k8s.io/{annotation}": level}
    }
    return job


@pytest.mark.parametrize("annotation", ["podset-required-topology", "podset-preferred-topology"])
def test_a_level_of_the_topology_passes(annotation: str) -> None:
    assert of(analyze(kueue_stack(annotated(annotation, RDMA_LOCAL_BLOCK_LABEL))), POLICY) == []


@pytest.mark.parametrize(
    "annotation", ["podset-required-topology", "podset-preferred-topology", "podset-slice-required-topology"]
)
def test_a_level_the_topology_does_not_define_is_rejected(annotation: str) -> None:
    (v,) = of(analyze(kueue_stack(annotated(annotation, "oke-gpu-rdma/rdma-rack"))), POLICY)
    assert v.level == "mandatory" and v.urn.endswith("::mpijob-nccl-dranet-a")
    assert v.message == (
        f"MPIJob rdma-dranet/nccl-dranet-a: replica Worker asks kueue.x-k8s.io/{annotation}: oke-gpu-rdma/rdma-rack, "
        f"a level no Topology of its flavors defines (Topology rdma-fabric: {LEVELS}). Kueue never admits it "
        '("no requested topology level: oke-gpu-rdma/rdma-rack"), so the job never starts. Fix: name one of '
        "those levels' node labels"
    )


@pytest.mark.parametrize("api", ["kueue.x-k8s.io/v1alpha1", "kueue.x-k8s.io/v1beta1"])
def test_earlier_topology_versions_are_read_by_kind(api: str) -> None:
    objects = [topology(api=api), *kueue_objects()[1:]]
    job = annotated("podset-required-topology", "oke-gpu-rdma/rdma-rack")
    (v,) = of(analyze(kueue_stack(job, kueue=objects)), POLICY)
    assert "Topology rdma-fabric:" in v.message
    assert (
        of(
            analyze(
                kueue_stack(annotated("podset-required-topology", RDMA_LOCAL_BLOCK_LABEL), kueue=objects)
            ),
            POLICY,
        )
        == []
    )


def test_the_topology_of_the_jobs_flavors_decides() -> None:
    """Two Topologies: the job's queue reaches only the flavor of `blocks`, which has no local block."""
    objects = [
        topology(),
        topology("blocks", (RDMA_NETWORK_BLOCK_LABEL, "kubernetes.io/hostname")),
        flavor("b4", {"node.kubernetes.io/instance-type": "BM.GPU.B4.8"}, "blocks"),
        cluster_queue("gpu", ["b4"]),
        local_queue("gpu", "gpu"),
    ]
    (v,) = of(
        analyze(kueue_stack(annotated("podset-required-topology", RDMA_LOCAL_BLOCK_LABEL), kueue=objects)),
        POLICY,
    )
    assert "(Topology blocks: oke-gpu-rdma/rdma-network-block, kubernetes.io/hostname)" in v.message


def test_without_a_topology_in_the_stack_nothing_is_judged() -> None:
    job = annotated("podset-required-topology", "oke-gpu-rdma/rdma-rack")
    assert of(analyze(kueue_stack(job, kueue=kueue_objects()[1:])), POLICY) == []


def test_an_unknown_level_is_a_note() -> None:
    findings = analyze(kueue_stack(annotated("podset-required-topology", UNKNOWN)))
    assert violations(findings, POLICY) == []
    (note,) = notes(findings, POLICY)
    assert "kueue.x-k8s.io/podset-required-topology of replica Worker unknown until apply" in note.message


def test_a_topology_whose_levels_are_unknown_judges_nothing_yet() -> None:
    objects = [topology(levels=(UNKNOWN,)), *kueue_objects()[1:]]
    findings = analyze(
        kueue_stack(annotated("podset-required-topology", "oke-gpu-rdma/rdma-rack"), kueue=objects)
    )
    assert violations(findings, POLICY) == []
    (note,) = notes(findings, POLICY)
    assert "Topology rdma-fabric: spec.levels unknown until apply" in note.message
