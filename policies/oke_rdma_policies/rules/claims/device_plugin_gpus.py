"""no-device-plugin-gpus-with-dra-rails (stack): no pod takes GPUs from the device plugin and rails from DRA.

A stack policy: the claim a pod references is another resource (a ResourceClaimTemplate), found by
namespace and name, or through the workload's dependencies when the name is an output. A claim the
stack does not declare is reported as not checked.
"""

from __future__ import annotations

from oke_gpu_rdma.drivers.attributes import PCIE_ROOT
from oke_gpu_rdma.nodes.labels import DEVICE_PLUGIN_LABEL
from oke_rdma_policies.kube import (
    GPU_RESOURCE,
    PlainResource,
    container_name,
    containers,
    gpu_count,
    pod_specs,
)
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter
from oke_rdma_policies.stack import StackView, validate_each_workload
from oke_rdma_policies.values import UNKNOWN


def _check(view: StackView, workload: PlainResource, reporter: Reporter) -> None:
    for pod in pod_specs(workload):
        asking = []
        for path, container in containers(pod):
            count = gpu_count(container, path)
            if count is UNKNOWN:
                asking.append(f"{container_name(path, container)} ({GPU_RESOURCE}: known after apply)")
            elif count is not None and count > 0:
                shown = int(count) if float(count).is_integer() else count
                asking.append(f"{container_name(path, container)} ({GPU_RESOURCE}: {shown})")
        if not asking:
            continue
        rails, notes = view.rail_claims(workload, pod)
        where = f"{workload.label} {pod.where}"
        if not rails:
            for note in notes:
                reporter.unchecked(f"{where} asks for {GPU_RESOURCE} and {note}")
            continue
        claims = "; ".join(
            f"claim {ref.ref.pod_claim} = {claim.label} (requests {', '.join(names)})"
            for ref, claim, names in rails
        )
        reporter.violation(
            f"{where}: container {', '.join(asking)} takes GPUs from the device plugin while {claims} gives the "
            "same pod DRANET rails. The scheduler picks the rails; the kubelet picks the GPUs later without "
            "knowing them, so GPUs and rails land on different PCIe roots: two such 4-GPU jobs on BM.GPU.B4.8 "
            "got 4.27 and 5.77 GB/s (seed 000), where GPUs and rails from one aligned claim got 96.29 and "
            f"96.34 GB/s. Fix: drop {GPU_RESOURCE} and ask for the GPUs in the rails' claim, one gpus-i/rails-i "
            f"pair per PCIe root with a {PCIE_ROOT} constraint (like seed 000's aligned-4gpu-8rails-a), on nodes "
            f"labelled {DEVICE_PLUGIN_LABEL}=false",
            workload.urn,
        )


RULE = stack_rule(
    name="no-device-plugin-gpus-with-dra-rails",
    level="mandatory",
    description=(
        f"A pod that gets DRANET rails from a claim must not take {GPU_RESOURCE} from the device plugin: "
        "the GPUs then ignore where the rails are."
    ),
    validate=validate_each_workload(_check),
)
