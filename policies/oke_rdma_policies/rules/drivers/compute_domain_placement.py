"""compute-domain-placement (stack): a pod set that claims a ComputeDomain's channel lands on one NVLink domain of
a shape with multi-node NVLink, and its channel claims can be allocated as the driver serves them.

A ComputeDomain (resource.nvidia.com/v1beta1) is an IMEX domain; its pods share GPU memory over NVLink only
within one NVLink partition, and between two they fall back to the rails without a word
(oke_gpu_rdma/drivers/compute_domains.py). So:

- every pool the pods may land on (their own node selection, where the driver's ComputeDomain kubelet plugin runs)
  is of a shape whose shape file states multi-node NVLink; none at all means the claim is never allocated;
- more than one pod at once must be held to one GPU memory fabric: queued to Kueue with
  `kueue.x-k8s.io/podset-required-topology` on that level, or pinned to one fabric by nodeSelector; a preferred
  topology or none lets Kueue spread them;
- and must take a node each: a node has one channel of the default class and no two claims share it, and a
  node carries one ComputeDomain label (cmd/compute-domain-kubelet-plugin/device_state.go), while Kueue's TAS packs
  pods by their container requests alone (pkg/cache/scheduler/tas_flavor_snapshot.go): a required pod anti-affinity
  on the host among the pod set's pods, or a CPU request above half of each landing node's CPUs (OCI's figures,
  oke_gpu_rdma/nodes/node_sizes.py; the gate's workers ask for that);
- a channel claim the stack writes itself asks for one device of the default channel class: the driver publishes
  one (channel 0) per node, which no two claims can share.
Applies to stacks with a ComputeDomain or a claim of its channel class.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from pulumi_policy import StackValidationArgs

from oke_gpu_rdma.claims import drivers_on_pools
from oke_gpu_rdma.common import release_registry as releases
from oke_gpu_rdma.drivers import compute_domains
from oke_gpu_rdma.nodes.labels import GPU_MEMORY_FABRIC_LABEL, HOSTNAME_LABEL
from oke_gpu_rdma.nodes.node_sizes import node_size
from oke_gpu_rdma.nodes.shape_catalog import multi_node_nvlink
from oke_gpu_rdma.scheduling import kueue_jobs
from oke_gpu_rdma.scheduling.node_selection import may_select
from oke_rdma_policies.claim_landing import driver_plugins, pool_nodes
from oke_rdma_policies.kube import PlainResource, PodSpec, claim_refs, pod_specs, resource_claim_spec_v1
from oke_rdma_policies.kueue_view import KueueObjects, PoolLabels, pool_labels, template_annotations
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter, guarded, stack_where
from oke_rdma_policies.stack import StackView
from oke_rdma_policies.values import UNKNOWN, contains_unknown, dig

KIND = f"kubernetes:{compute_domains.API_VERSION}:{compute_domains.KIND}"
CONFINING_LEVELS = (GPU_MEMORY_FABRIC_LABEL,)
FIX_LEVEL = (
    f"queue it to Kueue with kueue.x-k8s.io/podset-required-topology: {GPU_MEMORY_FABRIC_LABEL} on the pod template "
    "(the multi-node NVLink flavors' Topology has that level), or pin it with nodeSelector "
    f"{GPU_MEMORY_FABRIC_LABEL}: <one fabric's value>"
)


def channel_templates(view: StackView) -> dict[tuple[str, str], str]:
    """(namespace, template) -> ComputeDomain, for the stack's ComputeDomains (names known in the plan)."""
    found: dict[tuple[str, str], str] = {}
    for res in view.resources:
        if res.type != KIND:
            continue
        template = dig(res.props, "spec.channel.resourceClaimTemplate.name")
        name, namespace = res.object_name, res.namespace
        if isinstance(template, str) and isinstance(name, str):
            found[(namespace if isinstance(namespace, str) else "default", template)] = name
    return found


def _channel_requests(claim: PlainResource) -> list[Mapping[str, Any]]:
    spec = resource_claim_spec_v1(claim)
    requests = dig(spec, "devices.requests") if isinstance(spec, Mapping) else None
    found = []
    for request in requests if isinstance(requests, list) else []:
        exactly = request.get("exactly") if isinstance(request, Mapping) else None
        if (
            isinstance(exactly, Mapping)
            and exactly.get("deviceClassName") == compute_domains.CHANNEL_DEVICE_CLASS
        ):
            found.append(exactly)
    return found


def _domains_of(
    view: StackView, workload: PlainResource, pod: PodSpec, cds: dict[tuple[str, str], str]
) -> list[str]:
    """How the pod set reaches a channel: `ComputeDomain ns/d` or `ResourceClaimTemplate ns/t`."""
    namespace = workload.namespace if isinstance(workload.namespace, str) else "default"
    found = []
    for ref in claim_refs(pod):
        if isinstance(ref.target, str) and (namespace, ref.target) in cds:
            found.append(f"ComputeDomain {namespace}/{cds[(namespace, ref.target)]}")
    for resolved in view.resolve(workload, pod):
        for claim in resolved.claims:
            if _channel_requests(claim):
                found.append(claim.label)
    return found


def _channel_pools(view: StackView, pools: PoolLabels) -> set[str] | None:
    """The pools the driver's ComputeDomain kubelet plugin runs on, as the stack installs it; None when the stack
    does not install it (the cluster's own: any pool)."""
    classes = {
        **releases.device_class_selectors(),
        compute_domains.CHANNEL_DEVICE_CLASS: (compute_domains.CHANNEL_CLASS_SELECTOR,),
    }
    plugins, deployed = driver_plugins(view, classes)
    if compute_domains.DRIVER not in deployed:
        return None
    nodes = [n for p in view.gpu_node_pools() if (n := pool_nodes(p)) is not None]
    reach = drivers_on_pools(plugins, nodes, classes)
    return {
        name for name, drivers in reach.items() if compute_domains.DRIVER in drivers and name in pools.pools
    }


def _confined(workload: PlainResource, pod: PodSpec, kueue: KueueObjects, required: Any) -> bool | None:
    """Whether every pod of the set lands in one NVLink domain, given the level its template requires of Kueue;
    None when unknown until apply."""
    selector = dig(pod.spec, "nodeSelector")
    if contains_unknown(selector):
        return None
    if isinstance(selector, Mapping) and any(k in selector for k in CONFINING_LEVELS):
        return True
    if required is UNKNOWN:
        return None
    queue = kueue.queue_of(workload)
    if queue is UNKNOWN:
        return None
    return queue is not None and required in CONFINING_LEVELS


def _cpus(value: Any) -> float | None:
    """A CPU quantity (`73`, `500m`, 2.5) in CPUs; None for anything else (the schema check reports it)."""
    text = str(value)
    try:
        return float(text[:-1]) / 1000 if text.endswith("m") else float(text)
    except ValueError:
        return None


def _node_each(pod: PodSpec, shapes: list[str]) -> bool | None:
    """Whether no two pods of the set can share a node; None when unknown until apply."""
    spec = pod.spec
    if contains_unknown(spec.get("affinity")) or contains_unknown(spec.get("containers")):
        return None
    anti = dig(spec, "affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(anti, list) and any(
        isinstance(term, Mapping) and term.get("topologyKey") == HOSTNAME_LABEL for term in anti
    ):
        return True
    requested = 0.0
    for container in spec.get("containers") or ():
        cpu = dig(container, "resources.requests.cpu") if isinstance(container, Mapping) else None
        requested += (_cpus(cpu) or 0.0) if cpu is not None else 0.0
    sizes = [node_size(shape) for shape in shapes]
    return bool(sizes) and all(size is not None and requested > size.cpus / 2 for size in sizes)


def _check(
    view: StackView,
    kueue: KueueObjects,
    pools: PoolLabels,
    served: set[str] | None,
    cds: dict[tuple[str, str], str],
    workload: PlainResource,
    reporter: Reporter,
) -> None:
    for pod in pod_specs(workload):
        domains = _domains_of(view, workload, pod, cds)
        if not domains:
            continue
        via = ", ".join(dict.fromkeys(domains))
        selector, affinity = pod.spec.get("nodeSelector"), pod.spec.get("affinity")
        if contains_unknown(selector) or contains_unknown(affinity):
            reporter.unchecked(f"{workload.label}: {pod.where} node selection unknown until apply")
            continue
        landing = [
            name
            for name in pools.pools
            if (served is None or name in served)
            and may_select(
                selector if isinstance(selector, Mapping) else {},
                affinity if isinstance(affinity, Mapping) else {},
                pools.pools[name][1],
                pools.keys(name),
            )
        ]
        if not landing:
            reporter.violation(
                f"{workload.label}: {pod.where} claims a channel of {via}, but none of the pools it may land on runs "
                "the GPU DRA driver's ComputeDomain kubelet plugin, so the claim is never allocated and the pods stay "
                "Pending. Fix: select a pool of a multi-node NVLink shape (BM.GPU.GB200-v3.4) with "
                "gpuDriver.computeDomains on",
                workload.urn,
            )
            continue
        without = sorted({pools.pools[p][0] for p in landing if not multi_node_nvlink(pools.pools[p][0])})
        if without:
            names = ", ".join(p for p in landing if pools.pools[p][0] in without)
            reporter.violation(
                f"{workload.label}: {pod.where} claims a channel of {via} and may land on pools {names} of "
                f"{', '.join(without)}, which have no NVLink between nodes: its pods would share no GPU memory and "
                "talk over the rails alone. Fix: select only pools of a multi-node NVLink shape (BM.GPU.GB200-v3.4)",
                workload.urn,
            )
        try:
            pods = kueue_jobs.pods_at_once(workload.props, pod.path, UNKNOWN)
        except kueue_jobs.Unknown:
            reporter.unchecked(f"{workload.label}: {pod.where} replica count unknown until apply")
            continue
        if pods > 1:
            annotations = template_annotations(workload, pod)
            required = UNKNOWN if annotations is UNKNOWN else annotations.get(kueue_jobs.REQUIRED_TOPOLOGY)
            if required == HOSTNAME_LABEL:
                reporter.violation(
                    f"{workload.label}: {pod.where} requires {HOSTNAME_LABEL} for its {pods} pods in {via}: Kueue puts "
                    "them all on one node, which has one IMEX channel that no two claims share, so all but one "
                    f"never start. Fix: {FIX_LEVEL}",
                    workload.urn,
                )
                continue
            confined = _confined(workload, pod, kueue, required)
            if confined is None:
                reporter.unchecked(f"{workload.label}: {pod.where} placement unknown until apply")
            elif not confined:
                reporter.violation(
                    f"{workload.label}: {pod.where} runs {pods} pods in {via}, and nothing keeps them in one NVLink "
                    "domain: pods in two GPU memory fabrics get two IMEX domains and NCCL goes over the rails "
                    f"between them. Fix: {FIX_LEVEL}",
                    workload.urn,
                )
            each = _node_each(pod, sorted({pools.pools[p][0] for p in landing}))
            if each is None:
                reporter.unchecked(f"{workload.label}: {pod.where} requests or affinity unknown until apply")
            elif not each:
                reporter.violation(
                    f"{workload.label}: {pod.where} runs {pods} pods in {via}, and two of them may share a node: a "
                    "node has one IMEX channel, which no two claims share, so the second pod never starts (and "
                    "Kueue's TAS, which counts container requests only, would place it there). Fix: request more "
                    "than half the node's CPUs in the pod's containers (the gate's workers do), or a required "
                    "podAntiAffinity on kubernetes.io/hostname among the set's pods",
                    workload.urn,
                )


def _check_claim(claim: PlainResource, reporter: Reporter) -> None:
    for exactly in _channel_requests(claim):
        count, mode = exactly.get("count", 1), exactly.get("allocationMode", "ExactCount")
        if mode == "All" or (isinstance(count, int) and count > compute_domains.CHANNELS_PER_NODE):
            reporter.violation(
                f"{claim.label}: asks for {'all' if mode == 'All' else count} devices of "
                f"{compute_domains.CHANNEL_DEVICE_CLASS}; the driver publishes {compute_domains.CHANNELS_PER_NODE} "
                "per node (channel 0) and a claim's devices come from one node, so it is never allocated. Fix: ask "
                "for one (count 1; the ComputeDomain's allocationMode All gives a pod every channel)",
                claim.urn,
            )


def check(args: StackValidationArgs, reporter: Reporter) -> None:
    view = StackView.of(args)
    cds = channel_templates(view)
    channel_claims = [c for c in view.claims if _channel_requests(c)]
    for claim in channel_claims:
        reporter.guard(claim.label, claim.urn, partial(_check_claim, claim, reporter))
    if not cds and not channel_claims:
        return
    kueue = KueueObjects.of(view)
    pools = pool_labels(view)
    served = _channel_pools(view, pools)
    for workload in view.workloads:
        reporter.guard(
            workload.label, workload.urn, partial(_check, view, kueue, pools, served, cds, workload, reporter)
        )


RULE = stack_rule(
    name="compute-domain-placement",
    level="mandatory",
    description=(
        "A pod set that claims a ComputeDomain's IMEX channel lands only on multi-node NVLink shapes, within one "
        "NVLink domain (GPU memory fabric), and asks for a channel the driver can allocate."
    ),
    validate=guarded(check, stack_where),
)
