"""How Kueue reads a job, its queue and its flavors (plain data, no Pulumi): the facts the pack's kueue-*
policies judge with.

Every name and rule here is Kueue's, from kubernetes-sigs/kueue at tag v0.19.2:

- The queue is the label `kueue.x-k8s.io/queue-name` on the job object itself, never its pod template
  (`pkg/controller/constants/constants.go` QueueLabel; `pkg/controller/jobframework/utils.go`
  QueueNameForObject reads `object.GetLabels()` only). A job without it gets the LocalQueue named
  `default` of its namespace when one exists (`DefaultLocalQueueName`, `jobframework/defaults.go`
  defaultLocalQueueApplies); otherwise Kueue does not manage it (and, with manageJobsWithoutQueueName,
  keeps it suspended).
- A pod set's topology request is an annotation on its pod template whose value is a level's node label
  (`apis/kueue/v1beta2/topology_types.go` PodSetRequiredTopologyAnnotation,
  PodSetPreferredTopologyAnnotation, PodSetSliceRequiredTopologyAnnotation; read by
  `jobframework/tas.go` NewPodSetTopologyRequest). A level the flavor's Topology does not list leaves the
  workload unadmitted: "no requested topology level: <label>" (`pkg/cache/scheduler/tas_flavor_snapshot.go`
  resolveLevelIdx).
- `Topology.spec.levels[].nodeLabel`; `ResourceFlavor.spec.nodeLabels` and `.spec.topologyName`;
  `ClusterQueue.spec.resourceGroups[].flavors[].name`; `LocalQueue.spec.clusterQueue`
  (`apis/kueue/v1beta1` and `v1beta2` `*_types.go`: the same JSON names in both versions).
- A flavor's nodes are those carrying every one of its nodeLabels, and for a topology-aware flavor every
  level's label too (`pkg/util/tas/node.go` NodeMatchesFlavor).
- A pod set fits a flavor only if its nodeSelector and required node affinity, cut to the keys the flavor's
  nodeLabels set, match those nodeLabels (`pkg/scheduler/flavorassigner/flavorassigner.go`
  checkFlavorForPodSets, flavorSelector). The flavor's nodeTaints against the pod's tolerations, which
  Kueue checks as well, are not modelled here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from oke_gpu_rdma.nodes.labels import INSTANCE_TYPE_LABEL, POOL_LABEL
from oke_gpu_rdma.scheduling.node_selection import SelectionError, affinity_matches, selector_matches

GROUP: Final = "kueue.x-k8s.io"
# Topology was v1alpha1 before it moved to v1beta1 and v1beta2; the fields read here are the same in all.
API_VERSIONS: Final = ("v1alpha1", "v1beta1", "v1beta2")

# pkg/controller/constants/constants.go l. 23 QueueLabel (on the job object); the pod-set annotations:
# apis/kueue/v1beta2/topology_types.go l. 28 and l. 39 (on a pod set's template).
QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
DEFAULT_LOCAL_QUEUE: Final = "default"

REQUIRED_TOPOLOGY: Final = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_TOPOLOGY: Final = "kueue.x-k8s.io/podset-preferred-topology"
SLICE_REQUIRED_TOPOLOGY: Final = "kueue.x-k8s.io/podset-slice-required-topology"
# The annotations whose value names a level, in the order NewPodSetTopologyRequest reads them.
TOPOLOGY_ANNOTATIONS: Final = (REQUIRED_TOPOLOGY, PREFERRED_TOPOLOGY, SLICE_REQUIRED_TOPOLOGY)

# Fields that multiply the pods of the pod templates below them: `replicas` (Deployment, StatefulSet,
# MPIJob and PyTorchJob replica specs, JobSet replicatedJobs, LeaderWorkerSet) and a JobSpec's
# `parallelism` (batch/v1 Job, and each JobSet job: pods that run at once; an indexed Job's completions
# run `parallelism` at a time). Both default to 1. A LeaderWorkerSet's group size multiplies its templates too.
POD_MULTIPLIERS: Final = ("replicas", "parallelism")

_SEGMENT: Final = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


class Unknown(Exception):
    """A value on the way is unknown until apply (the caller's sentinel was met)."""


def _steps(path: str) -> list[str | int]:
    return [name if name else int(index) for name, index in _SEGMENT.findall(path)]


def pods_at_once(obj: Mapping[str, Any], pod_path: str, unknown: object = None) -> int:
    """How many pods of the pod spec at ``pod_path`` (a path :func:`oke_gpu_rdma.common.pod_specs.find_pod_specs`
    gives) run at once: the product of every ``replicas`` and ``parallelism`` on the objects above it.
    Raises :class:`Unknown` when one of them is ``unknown``."""
    count = 1
    current: Any = obj
    for step in _steps(pod_path):
        if isinstance(current, Mapping):
            for key in POD_MULTIPLIERS:
                value = current.get(key)
                if value is unknown and unknown is not None:
                    raise Unknown(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    count *= value
            count *= _group_pods(current, step, unknown)
            current = current.get(step) if isinstance(step, str) else None
        elif isinstance(current, list) and isinstance(step, int) and step < len(current):
            current = current[step]
        else:
            break
    return count


def _group_pods(template: Mapping[str, Any], step: str | int, unknown: object) -> int:
    """A LeaderWorkerSet group's pods of the template ``step`` names: `leaderWorkerTemplate.size` counts the
    leader, which has a template of its own when `leaderTemplate` is set (lws api/leaderworkerset/v1
    LeaderWorkerTemplate)."""
    if step not in ("workerTemplate", "leaderTemplate") or "size" not in template:
        return 1
    size = template["size"]
    if size is unknown and unknown is not None:
        raise Unknown("size")
    if not isinstance(size, int) or isinstance(size, bool):
        return 1
    if step == "leaderTemplate":
        return 1
    return max(size - 1, 0) if "leaderTemplate" in template else size


def template_metadata(obj: Mapping[str, Any], pod_path: str) -> Mapping[str, Any]:
    """The metadata of the pod template whose spec is at ``pod_path`` (`....template.spec` ->
    `....template.metadata`); {} when there is none."""
    steps = _steps(pod_path)
    current: Any = obj
    for step in steps[:-1]:
        if isinstance(current, Mapping) and isinstance(step, str):
            current = current.get(step)
        elif isinstance(current, list) and isinstance(step, int) and step < len(current):
            current = current[step]
        else:
            return {}
    meta = current.get("metadata") if isinstance(current, Mapping) else None
    return meta if isinstance(meta, Mapping) else {}


def requested_levels(annotations: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(annotation, level) for each topology annotation the pod template carries."""
    return [(key, annotations[key]) for key in TOPOLOGY_ANNOTATIONS if key in annotations]


def topology_levels(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """A Topology's levels (`spec.levels[].nodeLabel`), outermost first; entries without a string are left
    out (the API server refuses them)."""
    levels = spec.get("levels")
    if not isinstance(levels, Sequence) or isinstance(levels, str):
        return ()
    return tuple(
        str(level["nodeLabel"])
        for level in levels
        if isinstance(level, Mapping) and isinstance(level.get("nodeLabel"), str)
    )


def queue_of(labels: Mapping[str, Any], default_queue_exists: bool) -> str | None:
    """The LocalQueue a job is submitted to (its label, else `default` when its namespace has one)."""
    name = labels.get(QUEUE_LABEL)
    if isinstance(name, str) and name:
        return name
    return DEFAULT_LOCAL_QUEUE if default_queue_exists else None


def flavor_selects(flavor_labels: Mapping[str, str], node_labels: Mapping[str, str]) -> bool:
    """Whether a node with ``node_labels`` is one of the flavor's nodes (it carries every nodeLabel)."""
    return all(node_labels.get(key) == value for key, value in flavor_labels.items())


def flavor_admits(flavor_labels: Mapping[str, str], pod_spec: Mapping[str, Any]) -> bool:
    """Whether Kueue may assign the flavor to a pod set with ``pod_spec``: its nodeSelector and required node
    affinity, cut to the keys the flavor's nodeLabels set, match the flavor's nodeLabels as a node's
    (flavorSelector: a term left without expressions matches any flavor; matchFields are dropped)."""
    keys = set(flavor_labels)
    selector = pod_spec.get("nodeSelector")
    if isinstance(selector, Mapping) and not selector_matches(
        {k: v for k, v in selector.items() if k in keys}, flavor_labels
    ):
        return False
    affinity = pod_spec.get("affinity")
    node = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = (
        node.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(node, Mapping) else None
    )
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    if not isinstance(terms, list):
        return True
    kept = []
    for term in terms:
        exprs = term.get("matchExpressions") if isinstance(term, Mapping) else None
        exprs = (
            [e for e in exprs if isinstance(e, Mapping) and e.get("key") in keys]
            if isinstance(exprs, list)
            else []
        )
        if not exprs:
            return True
        kept.append({"matchExpressions": exprs})
    cut = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": kept}}}
    try:
        return affinity_matches(cut, flavor_labels) is not False
    except SelectionError:
        return True  # a malformed affinity: the API server refuses the pod, not this flavor


@dataclass(frozen=True)
class FlavorPools:
    """The pools a ResourceFlavor's nodeLabels select and their shapes."""

    pools: tuple[str, ...]
    shapes: tuple[str, ...]

    def problem(
        self, flavor: str, flavor_labels: Mapping[str, str], pool_shapes: Mapping[str, str]
    ) -> str | None:
        """Why the flavor cannot stand for one shape's nodes, or None: it selects no pool, or pools of two
        shapes (a flavor's quota and topology then mix hosts that differ in GPUs and rails)."""
        shown = (
            ", ".join(f"{k}={v}" for k, v in sorted(flavor_labels.items())) or "no nodeLabels (every node)"
        )
        if not self.pools:
            known = ", ".join(f"{pool} ({shape})" for pool, shape in sorted(pool_shapes.items())) or "none"
            return (
                f"ResourceFlavor {flavor}: spec.nodeLabels {shown} select no node pool of the stack (pools: "
                f"{known}): Kueue would count quota for nodes that do not exist, and a workload admitted on it finds no "
                "node, its pods stay Pending. "
                f"Fix: select one shape's pools, by {POOL_LABEL} or {INSTANCE_TYPE_LABEL}"
            )
        if len(self.shapes) > 1:
            by_shape = "; ".join(
                f"{shape}: {', '.join(p for p in self.pools if pool_shapes[p] == shape)}"
                for shape in self.shapes
            )
            return (
                f"ResourceFlavor {flavor}: spec.nodeLabels {shown} select node pools of {len(self.shapes)} shapes "
                f"({by_shape}); one flavor's quota and topology would count hosts with different GPUs and rails "
                "as one, and a job admitted on it may land on a shape its claims do not fit. Fix: one "
                f"ResourceFlavor per shape, e.g. {INSTANCE_TYPE_LABEL}={self.shapes[0]}"
            )
        return None


def pools_of_flavor(
    flavor_labels: Mapping[str, str], pools: Mapping[str, tuple[str, Mapping[str, str]]]
) -> FlavorPools:
    """The pools (name -> (shape, node labels)) whose nodes the flavor selects, and their shapes in order."""
    chosen = tuple(
        sorted(name for name, (_, labels) in pools.items() if flavor_selects(flavor_labels, labels))
    )
    shapes = tuple(sorted({pools[name][0] for name in chosen}))
    return FlavorPools(chosen, shapes)
