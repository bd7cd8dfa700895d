"""The stack config's `workloads.scheduling`: Kueue's topology-aware scheduling and its node sizes."""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    AfterValidator,
    Field,
    StrictBool,
    StrictInt,
)

from oke_gpu_rdma.nodes.labels import (
    FABRIC_LEVEL_LABELS,
    HOSTNAME_LABEL,
    RDMA_NETWORK_BLOCK_LABEL,
)
from oke_gpu_rdma.scheduling import kueue_chart as kueue
from stack_config.settings_types import ConfigModel, DnsLabel, ShapeName


def _fabric_level(level: str) -> str:
    # A job's whole pod set within one domain of this level (the Topology's levels, oke_gpu_rdma/nodes/labels.py); the
    # acceptance job has at least two workers, one per node, so one host is never enough.
    levels = [label for label in FABRIC_LEVEL_LABELS if label != HOSTNAME_LABEL]
    if level not in levels:
        raise ValueError(f"{level!r} is not a fabric level of the Topology; use one of {', '.join(levels)}")
    return level


class NodeSizeConfig(ConfigModel):
    """What the kubelet of one node of a shape reports: `kubectl get node <node> -o jsonpath='{.status.capacity}'`."""

    cpus: StrictInt = Field(ge=1, description="The node's CPUs (status.capacity.cpu).")
    memory_gib: StrictInt = Field(
        alias="memoryGiB", ge=1, description="The node's memory in GiB (status.capacity.memory)."
    )


class SchedulingConfig(ConfigModel):
    """Kueue with topology-aware scheduling over the RDMA fabric (docs/scheduling.md): the chart, one Topology with
    the fabric levels, a ResourceFlavor per RDMA shape, a ClusterQueue with the pools' GPUs, rails, CPUs and memory,
    and a LocalQueue in each workload namespace."""

    enabled: StrictBool = Field(
        False, description="Install Kueue and the queue; the acceptance jobs then run through it."
    )
    chart_version: str = Field(
        kueue.DEFAULT_VERSION, alias="chartVersion", description="Version of the kueue Helm chart."
    )
    namespace: DnsLabel = Field(kueue.NAMESPACE, description="Namespace of Kueue (created).")
    topology: DnsLabel = Field("rdma-fabric", description="Name of the Topology (the RDMA fabric's levels).")
    cluster_queue: DnsLabel = Field(
        "rdma-gpus", alias="clusterQueue", description="Name of the ClusterQueue."
    )
    local_queue: DnsLabel = Field(
        "rdma-gpus",
        alias="localQueue",
        description="Name of the LocalQueue in each workload namespace (the jobs' kueue.x-k8s.io/queue-name).",
    )
    acceptance_level: Annotated[str, AfterValidator(_fabric_level)] = Field(
        RDMA_NETWORK_BLOCK_LABEL,
        alias="acceptanceLevel",
        description="The Topology level the NCCL acceptance job's workers must share "
        "(kueue.x-k8s.io/podset-required-topology).",
    )
    node_sizes: dict[ShapeName, NodeSizeConfig] = Field(
        default_factory=dict,
        alias="nodeSizes",
        description="CPUs and memory of a node per shape, for a shape OCI's table in oke_gpu_rdma/nodes/node_sizes.py "
        "lacks or where the tenancy's nodes differ: the flavors' quotas and the whole-node workers' CPU requests "
        "are built from them.",
    )
    pods_ready_timeout_minutes: int = Field(
        kueue.DEFAULT_PODS_READY_TIMEOUT_MINUTES,
        ge=1,
        alias="podsReadyTimeoutMinutes",
        description="Minutes an admitted job's pods have to become Ready (image pulls included) before Kueue evicts "
        "the job, frees its quota and requeues it (waitForPodsReady; backoff from 60 s doubling to an hour).",
    )
