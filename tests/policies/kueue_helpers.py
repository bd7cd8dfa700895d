"""A stack with Kueue's topology-aware scheduling, as the policy tests send it: the seed cluster's B4 pool and
an H100 pool, one Topology with the fabric levels, a ResourceFlavor per shape, a ClusterQueue over both and a
LocalQueue in the workload namespace (kubernetes-sigs/kueue v0.19.2 apis/kueue/v1beta2 field names)."""

from __future__ import annotations

import base64
from typing import Any

from oke_gpu_rdma.nodes.cloud_init import NodeBootstrap, render_cloud_init
from oke_gpu_rdma.nodes.labels import FABRIC_LEVEL_LABELS, INSTANCE_TYPE_LABEL, POOL_LABEL
from preview.mock_runtime import RecordedResource
from tests.fixtures import seed000
from tests.policies.policy_helpers import aligned_mpijob, dranet_release, k8s, resource, seed_plan

KUEUE = "kueue.x-k8s.io/v1beta2"
NAMESPACE = "rdma-dranet"
B4 = "BM.GPU.B4.8"
H100 = "BM.GPU.H100.8"


def topology(
    name: str = "rdma-fabric", levels: tuple[str, ...] = FABRIC_LEVEL_LABELS, api: str = KUEUE
) -> dict[str, Any]:
    return {
        "apiVersion": api,
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": level} for level in levels]},
    }


def flavor(
    name: str, node_labels: dict[str, str] | None, topology_name: str | None = "rdma-fabric", api: str = KUEUE
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if node_labels is not None:
        spec["nodeLabels"] = node_labels
    if topology_name:
        spec["topologyName"] = topology_name
    return {"apiVersion": api, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def cluster_queue(name: str, flavors: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["gpu.nvidia.com", "dra.net"],
                    "flavors": [
                        {
                            "name": f,
                            "resources": [
                                {"name": "gpu.nvidia.com", "nominalQuota": 16},
                                {"name": "dra.net", "nominalQuota": 32},
                            ],
                        }
                        for f in flavors
                    ],
                }
            ],
        },
    }


def local_queue(name: str, cq: str, namespace: str = NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cq},
    }


def user_data(rdma: bool = True) -> dict[str, str]:
    """nodeMetadata with the cloud-init the program renders: an RDMA pool's (with the topology labeller) or a
    pool's without rails."""
    text = render_cloud_init(NodeBootstrap((), "shared" if rdma else None))
    return {"user_data": base64.b64encode(text.encode()).decode()}


def h100_pool(rdma: bool = True) -> RecordedResource:
    return resource(
        "oci:ContainerEngine/nodePool:NodePool",
        "gpu-h100",
        {
            "nodeShape": H100,
            "initialNodeLabels": [{"key": POOL_LABEL, "value": "gpu-h100"}],
            "nodeMetadata": user_data(rdma),
        },
    )


def kueue_objects(flavors: list[str] | None = None) -> list[dict[str, Any]]:
    """The Topology, a flavor per shape (by instance type), ClusterQueue gpu over ``flavors`` (default: both)
    and LocalQueue rdma-dranet/gpu."""
    return [
        topology(),
        flavor("b4", {INSTANCE_TYPE_LABEL: B4}),
        flavor("h100", {INSTANCE_TYPE_LABEL: H100}),
        cluster_queue("gpu", flavors or ["b4", "h100"]),
        local_queue("gpu", "gpu"),
    ]


def queued_mpijob(queue: str | None = "gpu") -> dict[str, Any]:
    """seed 000's aligned MPIJob (two workers, GPUs and rails from aligned-4gpu-8rails-a, pinned to B4 by
    nodeSelector), submitted to ``queue``."""
    job = aligned_mpijob()
    if queue is not None:
        job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": queue}
    return job


def kueue_stack(
    *objects: dict[str, Any], kueue: list[dict[str, Any]] | None = None, h100_rails: bool = True
) -> list[RecordedResource]:
    """The seed plan (its pool with the RDMA cloud-init) with an H100 pool (without rails: ``h100_rails``
    False), DRANET, the aligned claim template, the Kueue objects and ``objects``."""
    kinds: dict[str, int] = {}
    plan = seed_plan()
    pool = plan[-1]
    plan[-1] = resource(
        pool.type, pool.name, {**pool.inputs, "nodeMetadata": user_data()}, dependencies=pool.dependencies
    )
    out = [*plan, h100_pool(h100_rails), dranet_release(), k8s(seed000("aligned-4gpu-8rails-a"))]
    for obj in [*(kueue_objects() if kueue is None else kueue), *objects]:
        key = f"{obj['kind'].lower()}-{obj['metadata']['name']}"
        kinds[key] = kinds.get(key, 0) + 1
        out.append(k8s(obj, key if kinds[key] == 1 else f"{key}-{kinds[key]}"))
    return out
