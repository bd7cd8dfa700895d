"""Kueue with topology-aware scheduling over the RDMA fabric: the pinned chart with its configuration (DRA device
class mappings for GPUs and rails), one Topology, the ResourceFlavors, one ClusterQueue and the LocalQueues.

The objects' specs are built by oke_gpu_rdma/scheduling/kueue_objects.py, the same functions the stack's plan
(stack_config/scheduling/scheduling_plan.py) and its tests use; docs/scheduling.md explains the design.
"""

import typing
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from components.component_inputs import (
    ComponentInputError,
    PoolTaint,
    from_wire,
    schema_name,
    taint_inputs,
    taints,
    value_problems,
)
from components.drivers.dra_drivers import _documented, _release
from oke_gpu_rdma.common import pod_security, resource_types
from oke_gpu_rdma.drivers import dranet, nvidia_gpu
from oke_gpu_rdma.nodes.labels import HOSTNAME_LABEL, NVLINK_LEVEL_LABELS
from oke_gpu_rdma.scheduling import kueue_chart, kueue_objects
from oke_gpu_rdma.scheduling.kueue_objects import Flavor
from stack_config.nodes.pool_settings import tolerations
from stack_config.problems import ConfigProblem
from stack_config.scheduling.scheduling_plan import SchedulingPlan, nvlink_topology_name
from stack_config.settings_types import DnsLabel


class KueueFlavor(TypedDict):
    """A ResourceFlavor and its quotas in the ClusterQueue."""

    name: str
    """Flavor name (a DNS label); the object's name adds a digest of its node labels, tolerations and topology."""
    node_labels: dict[str, str]
    """The node labels that select its nodes (Kueue injects them into an admitted pod set's nodeSelector)."""
    taints: NotRequired[list[PoolTaint]]
    """Taints of its nodes, which the flavor tolerates (Kueue injects the tolerations)."""
    hosts_only: NotRequired[bool]
    """Schedules over the Topology of hosts alone (`hosts`: kubernetes.io/hostname) instead of the fabric's
    (default false): a flavor of nodes without fabric labels, for pod sets without GPUs (the system pool). Every
    flavor has a Topology either way, so the ClusterQueue is TAS-only and admits pod sets without a topology
    annotation (docs/kueue-flavors-and-quotas.md)."""
    nvlink: NotRequired[bool]
    """Nodes of a multi-node NVLink shape: schedules over the Topology `<topology>-nvlink`, the fabric's levels
    with the GPU memory fabric below the local block (oke_gpu_rdma/nodes/labels.py NVLINK_LEVEL_LABELS), so a
    ComputeDomain job can require one NVLink domain (default false)."""
    quotas: dict[str, str]
    """Resource name -> nominal quota (a Kubernetes quantity), e.g. oke-gpu-rdma/gpus: "32"."""


class KueueArgs(TypedDict):
    """The inputs of Kueue. The Kubernetes provider of the cluster comes from the resource options
    (``providers``); the release waits for the component's ``depends_on`` (the pools and namespaces)."""

    flavors: list[KueueFlavor]
    """The ResourceFlavors, in the order Kueue tries them."""
    levels: list[str]
    """The Topology's levels: node label keys, outermost first (kubernetes.io/hostname only last)."""
    namespaces: list[str]
    """The workload namespaces: each gets a LocalQueue, and the ClusterQueue admits workloads from them."""
    topology: NotRequired[str]
    """Name of the Topology (default rdma-fabric)."""
    cluster_queue: NotRequired[str]
    """Name of the ClusterQueue (default rdma-gpus)."""
    local_queue: NotRequired[str]
    """Name of the LocalQueues (default rdma-gpus)."""
    chart_version: NotRequired[str]
    """Version of the kueue Helm chart."""
    namespace: NotRequired[str]
    """Namespace of Kueue (created)."""
    gpu_device_classes: NotRequired[list[str]]
    """DeviceClasses Kueue counts as GPUs (default gpu.nvidia.com)."""
    rail_device_classes: NotRequired[list[str]]
    """DeviceClasses Kueue counts as rails (default dra.net)."""
    channel_device_classes: NotRequired[list[str]]
    """DeviceClasses Kueue counts as ComputeDomain channels (default none; with ComputeDomains,
    compute-domain-default-channel.nvidia.com)."""
    pods_ready_timeout_minutes: NotRequired[int]
    """Minutes an admitted workload's pods have to become Ready before Kueue evicts and requeues it (default 15)."""


# What Kueue's CRDs refuse to change (their transition rules at v0.19.2: Topology spec.levels, a ResourceFlavor's
# nodeLabels, tolerations and topologyName once it has a topology, LocalQueue spec.clusterQueue): a change
# replaces the object, the old one first (same name). Kueue keeps a flavor a ClusterQueue uses until the queue
# drops it (its resource-in-use finalizer), so the replacement waits for the queue's update.
IMMUTABLE = {
    kueue_chart.TOPOLOGY_KIND: pulumi.ResourceOptions(
        replace_on_changes=["spec.levels"], delete_before_replace=True
    ),
    kueue_chart.RESOURCE_FLAVOR_KIND: pulumi.ResourceOptions(
        replace_on_changes=["spec.nodeLabels", "spec.tolerations", "spec.topologyName"],
        delete_before_replace=True,
    ),
    kueue_chart.LOCAL_QUEUE_KIND: pulumi.ResourceOptions(
        replace_on_changes=["spec.clusterQueue"], delete_before_replace=True
    ),
}


def kueue_args(plan: SchedulingPlan, taints_of: dict[str, list[PoolTaint]]) -> KueueArgs:
    """The Args of the stack's plan (what __main__.py declares); ``taints_of``: flavor -> its pools' taints."""
    return KueueArgs(
        flavors=[
            KueueFlavor(
                name=f.name,
                node_labels=dict(f.node_labels),
                taints=taints_of.get(f.name, []),
                hosts_only=f.topology == kueue_objects.HOSTS_TOPOLOGY,
                nvlink=f.topology == plan.nvlink_topology,
                quotas=dict(f.quotas),
            )
            for f in plan.flavors
        ],
        channel_device_classes=[
            c
            for m in plan.device_class_mappings
            if m["name"] == kueue_chart.CHANNEL_RESOURCE
            for c in typing.cast(list[str], m["deviceClassNames"])
        ],
        levels=list(plan.levels),
        namespaces=list(plan.namespaces),
        topology=plan.topology,
        cluster_queue=plan.cluster_queue,
        local_queue=plan.local_queue,
        chart_version=plan.chart_version,
        namespace=plan.namespace,
        pods_ready_timeout_minutes=plan.pods_ready_timeout_minutes,
    )


def flavor_taint_inputs(
    plan: SchedulingPlan, pool_taints: dict[str, list[Any]]
) -> dict[str, list[PoolTaint]]:
    """Flavor -> the taints of the pools it selects (pool_taints: pool name -> its validated taints)."""
    return {
        flavor: taint_inputs(list(dict.fromkeys(t for pool in pools for t in pool_taints.get(pool, []))))
        for flavor, pools in plan.flavor_pools.items()
    }


def _problems(args: KueueArgs) -> list[ConfigProblem]:
    found: list[ConfigProblem] = []
    given = typing.cast(Mapping[str, Any], args)
    for key in ("topology", "cluster_queue", "local_queue", "namespace"):
        if key in given:
            found += value_problems(schema_name(key), given[key], DnsLabel)
    if given.get("topology") == kueue_objects.HOSTS_TOPOLOGY:
        found.append(
            ConfigProblem(
                "topology",
                kueue_objects.HOSTS_TOPOLOGY,
                "is the name of the hosts-only Topology the component declares; name the fabric's another",
            )
        )
    timeout = given.get("pods_ready_timeout_minutes", kueue_chart.DEFAULT_PODS_READY_TIMEOUT_MINUTES)
    if not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 1:
        found.append(
            ConfigProblem(
                "podsReadyTimeoutMinutes", timeout, "must be a whole number of minutes, at least 1 (e.g. 15)"
            )
        )
    for i, namespace in enumerate(args["namespaces"]):
        found += value_problems(f"namespaces[{i}]", namespace, DnsLabel)
    if not args["namespaces"]:
        found.append(ConfigProblem("namespaces", [], "is empty; name the namespaces the workloads run in"))
    if not args["flavors"]:
        found.append(ConfigProblem("flavors", [], "is empty; give a flavor per GPU shape"))
    for i, flavor in enumerate(args["flavors"]):
        found += value_problems(f"flavors[{i}].name", flavor["name"], DnsLabel)
        if not flavor["node_labels"]:
            found.append(
                ConfigProblem(
                    f"flavors[{i}].nodeLabels",
                    {},
                    "is empty; a flavor with a topology needs at least one node label (Kueue's CRD)",
                )
            )
    levels = args["levels"]
    if not levels:
        found.append(
            ConfigProblem("levels", [], "is empty; give the Topology's node labels, outermost first")
        )
    if HOSTNAME_LABEL in levels[:-1]:
        found.append(
            ConfigProblem("levels", levels, f"{HOSTNAME_LABEL} may only be the last level (Kueue's CRD)")
        )
    return found


class Kueue(pulumi.ComponentResource):
    """Kueue (chart kueue from registry.k8s.io) configured to count DRA GPUs and rails, with one Topology, the
    ResourceFlavors, one ClusterQueue and a LocalQueue in each workload namespace."""

    cluster_queue: pulumi.Output[str]
    """Name of the ClusterQueue."""
    local_queue: pulumi.Output[str]
    """Name of the LocalQueues (the jobs' kueue.x-k8s.io/queue-name label)."""
    topology: pulumi.Output[str]
    """Name of the Topology."""
    flavors: pulumi.Output[list[str]]
    """Names of the ResourceFlavors."""
    release_name: pulumi.Output[str | None]
    """Name of the Helm release."""

    def __init__(self, name: str, args: KueueArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(resource_types.KUEUE_COMPONENT, name, None, opts)
        args = typing.cast(KueueArgs, from_wire(args))
        found = _problems(args)
        if found:
            raise ComponentInputError("Kueue", name, found)
        topology_name = args.get("topology", "rdma-fabric")
        cluster_queue = args.get("cluster_queue", "rdma-gpus")
        local_queue = args.get("local_queue", "rdma-gpus")
        flavors = [
            Flavor(
                f["name"],
                dict(f["node_labels"]),
                tuple(tolerations(taints(f.get("taints", []), "Kueue", name, f"flavors[{i}].taints"))),
                kueue_objects.HOSTS_TOPOLOGY
                if f.get("hosts_only", False)
                else nvlink_topology_name(topology_name)
                if f.get("nvlink", False)
                else topology_name,
                dict(f["quotas"]),
            )
            for i, f in enumerate(args["flavors"])
        ]
        mappings = kueue_chart.device_class_mappings(
            args.get("gpu_device_classes", [nvidia_gpu.DEVICE_CLASS]),
            args.get("rail_device_classes", [dranet.DEVICE_CLASS]),
            args.get("channel_device_classes", []),
        )
        values = _documented(
            kueue_chart.values(
                mappings,
                args["namespaces"],
                args.get("pods_ready_timeout_minutes", kueue_chart.DEFAULT_PODS_READY_TIMEOUT_MINUTES),
            ),
            kueue_chart.VALUE_PATHS,
            kueue_chart.CHART_NAME,
        )
        release = _release(
            name,
            self,
            opts,
            kueue_chart.RELEASE,
            kueue_chart.CHART,
            args.get("chart_version", kueue_chart.DEFAULT_VERSION),
            args.get("namespace", kueue_chart.NAMESPACE),
            values,
            create_namespace=True,
            # Kueue's controller and webhook are a Deployment with no host access: baseline holds them.
            namespace_level=pod_security.BASELINE,
        )
        # The chart installs the CRDs and the webhooks that check these objects: they go after it.
        after = pulumi.ResourceOptions(parent=self, depends_on=[release])

        def declare(kind: str, object_name: str, spec: dict[str, Any], namespace: str | None = None) -> None:
            suffix = f"{namespace}-{object_name}" if namespace else object_name
            k8s.apiextensions.CustomResource(
                f"{name}-{kind.lower()}-{suffix}",
                api_version=kueue_chart.API_VERSION,
                kind=kind,
                metadata=k8s.meta.v1.ObjectMetaArgs(name=object_name, namespace=namespace),
                spec=spec,
                opts=pulumi.ResourceOptions.merge(after, IMMUTABLE.get(kind)),
            )

        declare(kueue_chart.TOPOLOGY_KIND, topology_name, kueue_objects.topology_spec(args["levels"]))
        if any(f.topology == nvlink_topology_name(topology_name) for f in flavors):
            declare(
                kueue_chart.TOPOLOGY_KIND,
                nvlink_topology_name(topology_name),
                kueue_objects.topology_spec(NVLINK_LEVEL_LABELS),
            )
        if any(f.topology == kueue_objects.HOSTS_TOPOLOGY for f in flavors):
            declare(
                kueue_chart.TOPOLOGY_KIND,
                kueue_objects.HOSTS_TOPOLOGY,
                kueue_objects.topology_spec(kueue_objects.HOSTS_LEVELS),
            )
        for flavor in flavors:
            declare(kueue_chart.RESOURCE_FLAVOR_KIND, flavor.object_name, kueue_objects.flavor_spec(flavor))
        declare(
            kueue_chart.CLUSTER_QUEUE_KIND,
            cluster_queue,
            kueue_objects.cluster_queue_spec(flavors, args["namespaces"]),
        )
        for namespace in args["namespaces"]:
            declare(
                kueue_chart.LOCAL_QUEUE_KIND,
                local_queue,
                kueue_objects.local_queue_spec(cluster_queue),
                namespace,
            )
        self.cluster_queue = pulumi.Output.from_input(cluster_queue)
        self.local_queue = pulumi.Output.from_input(local_queue)
        self.topology = pulumi.Output.from_input(topology_name)
        self.flavors = pulumi.Output.from_input([f.object_name for f in flavors])
        self.release_name = release.name
        self.register_outputs(
            {
                "clusterQueue": self.cluster_queue,
                "localQueue": self.local_queue,
                "topology": self.topology,
                "flavors": self.flavors,
                "releaseName": self.release_name,
            }
        )
