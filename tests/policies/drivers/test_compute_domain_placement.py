"""compute-domain-placement: a ComputeDomain job stays within one NVLink domain of a multi-node NVLink shape, and
its channel claims can be allocated. Judged on the GB200 example stack as the program declares it, then changed the
way a user would change a job."""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from oke_gpu_rdma.drivers import compute_domains
from oke_gpu_rdma.nodes.labels import GPU_MEMORY_FABRIC_LABEL, RDMA_LOCAL_BLOCK_LABEL
from preview.mock_runtime import RecordedResource
from tests.policies.policy_helpers import analyze, k8s, of, struct, two_channels, violations

POLICY = "compute-domain-placement"
JOB = "MPIJob rdma-dranet/nccl-all-reduce"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"


@functools.cache
def _run(stack: str) -> tuple[RecordedResource, ...]:
    from preview.cli import load_stack
    from preview.mock_runtime import run_program
    from preview.stacks import EXAMPLES

    return tuple(run_program(stack, load_stack(stack, [EXAMPLES])).resources)


def stack(name: str = "gb200") -> list[RecordedResource]:
    return list(_run(name))


def changed(
    resources: list[RecordedResource], kind: str, edit: Callable[[dict[str, Any]], None]
) -> list[RecordedResource]:
    """The resources with ``edit`` applied to the inputs of the one whose type ends with ``kind``."""
    out = []
    for res in resources:
        if res.type.endswith(kind):
            inputs = copy.deepcopy(res.inputs)
            edit(inputs)
            res = dataclasses.replace(res, inputs=inputs, struct=struct(inputs))
        out.append(res)
    return out


def worker(job: dict[str, Any]) -> dict[str, Any]:
    template: dict[str, Any] = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    return template


def test_the_gb200_example_gate_is_within_one_nvlink_domain() -> None:
    resources = stack()
    assert any(r.type == f"kubernetes:{compute_domains.API_VERSION}:ComputeDomain" for r in resources)
    assert of(analyze(resources), POLICY) == []


def test_a_job_whose_pods_could_span_two_nvlink_domains_is_rejected() -> None:
    """A required topology on the local block: Kueue may place the two workers in two GPU memory fabrics."""

    def coarser(job: dict[str, Any]) -> None:
        worker(job)["metadata"]["annotations"][REQUIRED] = RDMA_LOCAL_BLOCK_LABEL

    (v,) = violations(analyze(changed(stack(), ":MPIJob", coarser)), POLICY)
    assert v.level == "mandatory"
    assert v.message.startswith(
        f"{JOB}: replica Worker runs 2 pods in ComputeDomain rdma-dranet/nccl-all-reduce-nvlink, and nothing keeps "
        "them in one NVLink domain: pods in two GPU memory fabrics get two IMEX domains"
    )
    assert f"podset-required-topology: {GPU_MEMORY_FABRIC_LABEL}" in v.message


def test_a_preferred_topology_does_not_hold_the_pods_together() -> None:
    def preferred(job: dict[str, Any]) -> None:
        annotations = worker(job)["metadata"]["annotations"]
        annotations["kueue.x-k8s.io/podset-preferred-topology"] = annotations.pop(REQUIRED)

    assert len(violations(analyze(changed(stack(), ":MPIJob", preferred)), POLICY)) == 1


def test_a_required_fabric_outside_a_queue_holds_nothing_but_a_pinned_fabric_does() -> None:
    """Without Kueue the annotation is read by no one; a nodeSelector on one fabric's value is read by the
    scheduler."""

    def unqueued(job: dict[str, Any]) -> None:
        job["metadata"]["labels"].pop("kueue.x-k8s.io/queue-name")

    assert len(violations(analyze(changed(stack(), ":MPIJob", unqueued)), POLICY)) == 1

    def pinned(job: dict[str, Any]) -> None:
        unqueued(job)
        worker(job)["spec"]["nodeSelector"][GPU_MEMORY_FABRIC_LABEL] = "0f3e9a1c2b4d5e6f7a8b9c0d1e2f3a4b"

    assert of(analyze(changed(stack(), ":MPIJob", pinned)), POLICY) == []


def test_a_job_on_pools_the_compute_domain_plugin_does_not_reach_is_never_allocated() -> None:
    def elsewhere(job: dict[str, Any]) -> None:
        worker(job)["spec"]["nodeSelector"]["oke-gpu-rdma/node-pool"] = "system"

    (v,) = violations(analyze(changed(stack(), ":MPIJob", elsewhere)), POLICY)
    assert (
        "none of the pools it may land on runs the GPU DRA driver's ComputeDomain kubelet plugin" in v.message
    )


def test_a_shape_without_multi_node_nvlink_is_rejected() -> None:
    """The fleet example (BM.GPU.B4.8 and BM.GPU.GB200-v3.4) with a ComputeDomain job on the B4.8 pool, and the
    ComputeDomain kubelet plugin spread to that pool by hand."""
    gb200 = stack()
    domain = next(r for r in gb200 if r.type.endswith(":ComputeDomain"))
    job = next(r for r in gb200 if r.type.endswith(":MPIJob"))

    def on_b4(inputs: dict[str, Any]) -> None:
        pod = worker(inputs)
        pod["spec"]["nodeSelector"] = {"oke-gpu-rdma/node-pool": "gpu-b4"}
        pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = "aligned-8gpu-16rails-bm-gpu-b4-8"

    def everywhere(release: dict[str, Any]) -> None:
        if release.get("name") == "dra-driver-nvidia-compute-domain":
            term = release["values"]["kubeletPlugin"]["affinity"]["nodeAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"
            ]["nodeSelectorTerms"][0]["matchExpressions"][0]
            term["values"] = ["gpu-b4", "gpu-gb200"]

    fleet = changed(stack("fleet"), ":Release", everywhere)
    job_inputs = copy.deepcopy(job.inputs)
    on_b4(job_inputs)
    resources = [*fleet, domain, dataclasses.replace(job, inputs=job_inputs, struct=struct(job_inputs))]
    found = violations(analyze(resources), POLICY)
    assert any(
        "may land on pools gpu-b4-nodes of BM.GPU.B4.8, which have no NVLink between nodes" in f.message
        for f in found
    ), [f.message for f in found]


def test_a_channel_claim_for_more_than_the_one_channel_a_node_publishes_is_rejected() -> None:
    claim = two_channels()
    assert claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == (
        compute_domains.CHANNEL_DEVICE_CLASS
    )
    (v,) = violations(analyze([*stack(), k8s(claim)]), POLICY)
    assert v.message.startswith(
        "ResourceClaimTemplate rdma-dranet/two-channels: asks for 2 devices of "
        "compute-domain-default-channel.nvidia.com; the driver publishes 1 per node"
    )


def test_workers_that_may_share_a_node_are_rejected() -> None:
    """A node has one IMEX channel: without a whole node's CPUs (or an anti-affinity on the host) Kueue's TAS may put
    two workers on one node, and the second never starts."""

    def small(job: dict[str, Any]) -> None:
        worker(job)["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "8"

    (v,) = violations(analyze(changed(stack(), ":MPIJob", small)), POLICY)
    assert "two of them may share a node: a node has one IMEX channel" in v.message

    def apart(job: dict[str, Any]) -> None:
        small(job)
        worker(job)["spec"]["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        }

    assert of(analyze(changed(stack(), ":MPIJob", apart)), POLICY) == []


def test_a_required_host_level_puts_every_worker_on_one_node_and_is_rejected() -> None:
    def one_host(job: dict[str, Any]) -> None:
        worker(job)["metadata"]["annotations"][REQUIRED] = "kubernetes.io/hostname"

    (v,) = violations(analyze(changed(stack(), ":MPIJob", one_host)), POLICY)
    assert "Kueue puts them all on one node, which has one IMEX channel" in v.message
