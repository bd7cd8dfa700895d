"""The Kueue objects of a stack with topology-aware scheduling, as plain data: one Topology, a ResourceFlavor per
flavor, one ClusterQueue and a LocalQueue per namespace (kueue.x-k8s.io/v1beta2, the storage version at the
pinned tag; field names from kubernetes-sigs/kueue v0.19.2 apis/kueue/v1beta2: topology_types.go l. 113-135,
resourceflavor_types.go l. 53-112, clusterqueue_types.go l. 66-344, localqueue_types.go).

The component (components/scheduling/kueue.py) declares exactly these specs; the preview validates them against Kueue's
CRD schemas (preview/schema_check.py, oke_gpu_rdma/scheduling/kueue_crd_schemas.json).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from oke_gpu_rdma.nodes.labels import HOSTNAME_LABEL
from oke_gpu_rdma.scheduling import kueue_chart as kueue

CPU = "cpu"
MEMORY = "memory"
# The pod count as a quota resource. With it among a ClusterQueue's covered resources Kueue gives every pod set a
# request of its pod count (pkg/scheduler/flavorassigner/flavorassigner.go l. 739-745), so a pod set that requests
# nothing else (an MPIJob's launcher) still gets a flavor, and with it the flavor's nodeLabels and a topology
# assignment; without one its flavor assignment is empty (l. 747-752) and, in a queue where every flavor has a
# topology, it finds no topology flavor at all (tas_flavorassigner.go onlyTASFlavor, l. 143-163).
PODS = "pods"
# kubelet's --max-pods default (kubernetes pkg/kubelet/apis/config/v1beta1/defaults.go: MaxPods 110): the pods
# quota per node, an upper bound as the CPU and memory quotas are (TAS places by each node's allocatable pods).
MAX_PODS_PER_NODE = 110
# The Topology of the flavors of nodes without fabric labels (the system pool): the host alone. Every flavor of
# the ClusterQueue then has a topology, which makes the queue TAS-only (pkg/cache/scheduler/clusterqueue.go
# isTASOnly, l. 741-750): a pod set with no topology annotation is then scheduled by TAS as if it asked for the
# lowest level unconstrained (tas_flavorassigner.go isTASImplied l. 219-221; tas_flavor_snapshot.go
# levelKeyWithImpliedFallback l. 1212-1220) on whichever flavor fits, instead of being refused by every flavor
# with a topology ("supports only TopologyAwareScheduling", tas_flavorassigner.go l. 198-201).
HOSTS_TOPOLOGY = "hosts"
HOSTS_LEVELS = (HOSTNAME_LABEL,)


@dataclass(frozen=True)
class Flavor:
    """A ResourceFlavor and its quotas in the ClusterQueue (resource name -> quantity)."""

    name: str
    node_labels: Mapping[str, str]
    tolerations: tuple[Mapping[str, str], ...] = ()
    topology: str | None = None
    """The Topology it schedules over (None: a flavor without topology-aware scheduling)."""
    quotas: Mapping[str, str] = field(default_factory=dict)

    @property
    def object_name(self) -> str:
        """The ResourceFlavor's name: ``name`` and a digest of what its CRD makes immutable once it has a topology
        (nodeLabels, tolerations, topologyName: resourceflavor_types.go l. 49-51). A change is then a new flavor
        that the ClusterQueue names in the same apply, and the old one is deleted after, once no queue uses it:
        Kueue holds a flavor a ClusterQueue names until the queue drops it (its resource-in-use finalizer,
        pkg/controller/core/resourceflavor_controller.go l. 107-117), so deleting it first would wait forever."""
        fixed = [dict(self.node_labels), [dict(t) for t in self.tolerations], self.topology]
        digest = hashlib.sha256(json.dumps(fixed, sort_keys=True).encode()).hexdigest()[:6]
        return f"{self.name}-{digest}"


def topology_spec(levels: Sequence[str]) -> dict[str, Any]:
    """The Topology's spec: its levels outermost first, kubernetes.io/hostname last (the CRD allows it there only)."""
    return {"levels": [{"nodeLabel": label} for label in levels]}


def flavor_spec(flavor: Flavor) -> dict[str, Any]:
    """A ResourceFlavor's spec: the node labels Kueue injects into an admitted pod set's nodeSelector, the
    tolerations it injects, and its Topology."""
    spec: dict[str, Any] = {"nodeLabels": dict(flavor.node_labels)}
    if flavor.tolerations:
        spec["tolerations"] = [dict(t) for t in flavor.tolerations]
    if flavor.topology is not None:
        spec["topologyName"] = flavor.topology
    return spec


def covered_resources(flavors: Sequence[Flavor]) -> list[str]:
    """Every resource any flavor has a quota for, in a fixed order (CPU, memory, pods, then the device
    resources)."""
    names = {name for f in flavors for name in f.quotas}
    order = [CPU, MEMORY, PODS, kueue.GPU_RESOURCE, kueue.RAIL_RESOURCE]
    return [n for n in order if n in names] + sorted(names - set(order))


def cluster_queue_spec(flavors: Sequence[Flavor], namespaces: Sequence[str]) -> dict[str, Any]:
    """One resource group over every flavor, each flavor with a quota for every covered resource (the CRD
    requires as many as coveredResources: clusterqueue_types.go l. 254), a missing one being 0. Workloads come
    from the given namespaces (a nil namespaceSelector admits none: l. 109-115)."""
    covered = covered_resources(flavors)
    return {
        "namespaceSelector": kueue.namespace_selector(namespaces),
        "resourceGroups": [
            {
                "coveredResources": covered,
                "flavors": [
                    {
                        "name": f.object_name,
                        "resources": [{"name": r, "nominalQuota": f.quotas.get(r, "0")} for r in covered],
                    }
                    for f in flavors
                ],
            }
        ],
    }


def local_queue_spec(cluster_queue: str) -> dict[str, Any]:
    return {"clusterQueue": cluster_queue}


def manifest(kind: str, name: str, spec: Mapping[str, Any], namespace: str | None = None) -> dict[str, Any]:
    """An object as the API server gets it (what the preview validates)."""
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": kueue.API_VERSION, "kind": kind, "metadata": metadata, "spec": dict(spec)}


def quota_count(quantity: str) -> int:
    """A quota written by this module as an int (``2048Gi`` -> bytes; ``16`` -> 16)."""
    if quantity.endswith("Gi"):
        return int(quantity[:-2]) << 30
    return int(quantity)


def pod_topology_annotation(level: str, required: bool = True) -> dict[str, str]:
    """The pod-template annotation that asks Kueue to place a pod set within one domain of ``level``."""
    key = kueue.REQUIRED_TOPOLOGY_ANNOTATION if required else kueue.PREFERRED_TOPOLOGY_ANNOTATION
    return {key: level}


def queue_label(local_queue: str) -> dict[str, str]:
    """The job label that submits it to ``local_queue``."""
    return {kueue.QUEUE_LABEL: local_queue}
