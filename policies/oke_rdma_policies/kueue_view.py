"""The stack's Kueue objects and its GPU jobs as Kueue sees them, for the kueue-* policies.

Kueue's objects are custom resources of group kueue.x-k8s.io (`kubernetes:kueue.x-k8s.io/<version>:<Kind>`),
recognised by kind in every version Kueue has served them (:data:`oke_gpu_rdma.scheduling.kueue_jobs.API_VERSIONS`).
The rules they follow are in :mod:`oke_gpu_rdma.scheduling.kueue_jobs`, with their sources.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.nodes.cloud_init import registered_label_keys
from oke_gpu_rdma.nodes.labels import FABRIC_LEVEL_LABELS, HOSTNAME_LABEL, NVLINK_LEVEL_LABELS
from oke_gpu_rdma.scheduling import kueue_jobs
from oke_rdma_policies.kube import PlainResource, PodSpec, containers, gpu_count, pod_specs
from oke_rdma_policies.stack import StackView, labels_of, node_cloud_init, node_labels
from oke_rdma_policies.values import UNKNOWN, PropertyTypeError, as_list, as_map, contains_unknown, dig

PREFIX = f"kubernetes:{kueue_jobs.GROUP}/"


# Kueue's cluster-scoped kinds: named without a namespace in messages.
CLUSTER_SCOPED = ("Topology", "ResourceFlavor", "ClusterQueue", "Cohort", "AdmissionCheck")


def label(res: PlainResource) -> str:
    """`Kind name` for a cluster-scoped Kueue object, else the resource's usual label."""
    name = res.object_name
    if res.kind in CLUSTER_SCOPED and isinstance(name, str):
        return f"{res.kind} {name}"
    return res.label


def is_kueue(res: PlainResource, kind: str) -> bool:
    return (
        res.type.startswith(PREFIX)
        and res.group_version.rsplit("/", 1)[-1] in kueue_jobs.API_VERSIONS
        and res.kind == kind
    )


@dataclass
class KueueObjects:
    """The stack's Topologies, ResourceFlavors, ClusterQueues and LocalQueues by name."""

    topologies: dict[str, tuple[PlainResource, tuple[str, ...]]] = field(default_factory=dict)
    flavors: dict[str, PlainResource] = field(default_factory=dict)
    cluster_queues: dict[str, PlainResource] = field(default_factory=dict)
    local_queues: dict[tuple[str, str], PlainResource] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)
    """Objects whose name or spec is unknown until apply."""
    unknown_topologies: set[str] = field(default_factory=set)
    """Topologies whose levels are unknown until apply (listed with no levels)."""

    @classmethod
    def of(cls, view: StackView) -> KueueObjects:
        found = cls()
        for res in view.resources:
            if not res.type.startswith(PREFIX):
                continue
            name = res.object_name
            if not isinstance(name, str):
                found.unknown.append(f"{label(res)}: metadata.name unknown until apply")
                continue
            if is_kueue(res, "Topology"):
                spec = res.props.get("spec")
                if spec is UNKNOWN or contains_unknown(spec):
                    found.unknown.append(f"{label(res)}: spec.levels unknown until apply")
                    found.unknown_topologies.add(name)
                    spec = None
                found.topologies[name] = (res, kueue_jobs.topology_levels(as_map(spec, "spec")))
            elif is_kueue(res, "ResourceFlavor"):
                found.flavors[name] = res
            elif is_kueue(res, "ClusterQueue"):
                found.cluster_queues[name] = res
            elif is_kueue(res, "LocalQueue") and isinstance(res.namespace, str):
                found.local_queues[(res.namespace, name)] = res
        return found

    def queue_of(self, workload: PlainResource) -> Any:
        """The LocalQueue the workload is submitted to (:func:`oke_gpu_rdma.scheduling.kueue_jobs.queue_of`), None without
        one; UNKNOWN when its labels are unknown until apply."""
        labels = labels_of(workload)
        if labels is UNKNOWN or labels.get(kueue_jobs.QUEUE_LABEL) is UNKNOWN:
            return UNKNOWN
        namespace = workload.namespace
        default = (
            isinstance(namespace, str) and (namespace, kueue_jobs.DEFAULT_LOCAL_QUEUE) in self.local_queues
        )
        return kueue_jobs.queue_of(labels, default)

    def flavors_of(self, workload: PlainResource) -> tuple[list[str], str]:
        """The ResourceFlavor names of the ClusterQueue behind the workload's LocalQueue, and how the queue was
        reached (`LocalQueue ns/q -> ClusterQueue c`); ([], why not) when the chain leaves the stack or a link
        is unknown until apply."""
        queue = self.queue_of(workload)
        if queue is UNKNOWN:
            return [], f"{workload.label}: its {kueue_jobs.QUEUE_LABEL} label is unknown until apply"
        if queue is None:
            return [], ""
        namespace = workload.namespace
        local = self.local_queues.get((namespace, queue)) if isinstance(namespace, str) else None
        if local is None:
            return [], f"{workload.label}: LocalQueue {namespace}/{queue} is not declared in this stack"
        cluster_queue = dig(local.props, "spec.clusterQueue")
        if not isinstance(cluster_queue, str):
            return [], f"{local.label}: spec.clusterQueue unknown until apply"
        cq = self.cluster_queues.get(cluster_queue)
        if cq is None:
            return [], f"{local.label}: ClusterQueue {cluster_queue} is not declared in this stack"
        groups = dig(cq.props, "spec.resourceGroups")
        if groups is UNKNOWN or contains_unknown(groups):
            return [], f"{label(cq)}: spec.resourceGroups unknown until apply"
        names: list[str] = []
        for i, group in enumerate(as_list(groups, "spec.resourceGroups")):
            for j, flavor in enumerate(
                as_list(as_map(group, f"spec.resourceGroups[{i}]").get("flavors"), "flavors")
            ):
                name = as_map(flavor, f"spec.resourceGroups[{i}].flavors[{j}]").get("name")
                if isinstance(name, str) and name not in names:
                    names.append(name)
        return names, f"LocalQueue {namespace}/{queue} -> ClusterQueue {cluster_queue}"


def flavor_labels(flavor: PlainResource) -> dict[str, str] | Any:
    """A ResourceFlavor's spec.nodeLabels ({} when it sets none); UNKNOWN when unknown until apply."""
    labels = dig(flavor.props, "spec.nodeLabels")
    if labels is UNKNOWN or contains_unknown(labels):
        return UNKNOWN
    return {str(k): str(v) for k, v in as_map(labels, "spec.nodeLabels").items()}


def boot_time_keys(labels: Mapping[str, str]) -> list[str]:
    """The keys whose values a node learns only when it boots (the fabric levels, its hostname): no pool of
    the plan carries them, so a flavor is matched on its other keys."""
    return [key for key in labels if key in FABRIC_LEVEL_LABELS or key in NVLINK_LEVEL_LABELS]


@dataclass(frozen=True)
class PoolLabels:
    """The stack's node pools: name -> (shape, labels every node has from boot), the keys of the labels its
    nodes register at boot (values known only there: the fabric levels its cloud-init writes, the hostname),
    and the pools whose labels are unknown until apply."""

    pools: dict[str, tuple[str, dict[str, str]]]
    unknown: tuple[str, ...]
    at_boot: dict[str, frozenset[str]] = field(default_factory=dict)

    def keys(self, pool: str) -> frozenset[str]:
        """Every label key the pool's nodes carry once they run."""
        return frozenset(self.pools[pool][1]) | self.at_boot.get(pool, frozenset())

    @property
    def shapes(self) -> dict[str, str]:
        return {name: shape for name, (shape, _) in self.pools.items()}


def pool_labels(view: StackView) -> PoolLabels:
    pools: dict[str, tuple[str, dict[str, str]]] = {}
    unknown: list[str] = []
    at_boot: dict[str, frozenset[str]] = {}
    for pool in view.of_type(resource_types.NODE_POOL):
        shape = pool.props.get("nodeShape")
        labels = node_labels(pool)
        if not isinstance(shape, str) or labels is UNKNOWN or contains_unknown(labels):
            unknown.append(pool.name)
            continue
        pools[pool.name] = (shape, {str(k): str(v) for k, v in labels.items()})
        text = node_cloud_init(pool)
        registered = registered_label_keys(text) if isinstance(text, str) else ()
        at_boot[pool.name] = frozenset((*registered, HOSTNAME_LABEL))
    return PoolLabels(pools, tuple(unknown), at_boot)


def flavor_pools(labels: Mapping[str, str], pools: PoolLabels) -> kueue_jobs.FlavorPools:
    """The pools a flavor with nodeLabels ``labels`` selects: matched on the labels known in the plan, and,
    for keys known only at boot, on the pools whose nodes register those keys."""
    at_boot = boot_time_keys(labels)
    chosen = kueue_jobs.pools_of_flavor({k: v for k, v in labels.items() if k not in at_boot}, pools.pools)
    if not at_boot:
        return chosen
    kept = tuple(p for p in chosen.pools if set(at_boot) <= pools.keys(p))
    return kueue_jobs.FlavorPools(kept, tuple(sorted({pools.pools[p][0] for p in kept})))


@dataclass(frozen=True)
class PodSet:
    """One pod template of a workload, how many of its pods run at once, and the claims (kind, name) that
    give them GPUs or rails."""

    pod: PodSpec
    pods: int
    claims: tuple[PlainResource, ...]
    device_plugin_gpus: bool
    unresolved: tuple[str, ...] = ()
    """Claim references the stack does not resolve (why each), so whether they give devices is not known."""

    @property
    def uses_devices(self) -> bool:
        return bool(self.claims) or self.device_plugin_gpus


def pod_sets(view: StackView, workload: PlainResource) -> list[PodSet]:
    """The workload's pod templates; raises kueue_jobs.Unknown when a replica count is unknown."""
    found = []
    for pod in pod_specs(workload):
        pods = kueue_jobs.pods_at_once(workload.props, pod.path, UNKNOWN)
        references = view.resolve(workload, pod)
        claims = tuple(
            claim
            for resolved in references
            for claim in resolved.claims
            if view.rails_of(claim) or view.gpus_of(claim)
        )
        unresolved = tuple(r.missing for r in references if r.missing)
        plugin = False
        for path, container in containers(pod):
            count = gpu_count(container, path)
            if isinstance(count, int | float) and count > 0:
                plugin = True
        found.append(PodSet(pod, pods, claims, plugin, unresolved))
    return found


def template_annotations(workload: PlainResource, pod: PodSpec) -> Any:
    """The pod template's annotations ({} without any); UNKNOWN when unknown until apply."""
    meta = kueue_jobs.template_metadata(workload.props, pod.path)
    annotations = meta.get("annotations")
    if annotations is UNKNOWN:
        return UNKNOWN
    if annotations is not None and not isinstance(annotations, Mapping):
        raise PropertyTypeError(
            f"{pod.path.removesuffix('.spec')}.metadata.annotations", "an object", annotations
        )
    return annotations or {}
