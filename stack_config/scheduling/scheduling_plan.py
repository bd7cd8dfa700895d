"""What Kueue gets in a stack with `workloads.scheduling.enabled`: the flavors of its RDMA shapes, their quotas
and the queue (docs/scheduling.md says why each is so).

- One ResourceFlavor per shape of the rdma: dranet pools, selecting their nodes by the kubelet's instance-type
  label and the device-plugin-off label only those pools carry (stack_config/scheduling/pool_nodes.py gpu_pool_labels:
  SR-IOV and rdma: none pools keep the device plugin on), so it selects exactly that shape's DRA pools. It
  tolerates the taints of those pools (Kueue injects its tolerations into the admitted pod sets, and TAS
  drops a node whose taints a pod set does not tolerate), and schedules over the stack's Topology.
- Quotas are the pools' capacity: their nodes' GPUs and rails as Kueue counts DRA devices (one per device of a
  mapped DeviceClass: oke_gpu_rdma/scheduling/kueue_chart.py), and their CPUs and memory (oke_gpu_rdma/nodes/node_sizes.py, or the stack's
  workloads.scheduling.nodeSizes).
- With a system pool, a flavor of its own for pod sets that need no GPU (an MPIJob's launcher), first in the
  queue: Kueue tries a pod set's flavors in the queue's order and takes the first that fits
  (pkg/scheduler/flavorassigner/flavorassigner.go findFlavorForPodSets, l. 1089-1190), and the system flavor has no GPU or rail quota,
  so a pod set that claims one goes on to its shape's flavor. It schedules over a Topology of its own, the host
  alone (the system nodes carry no fabric labels): every flavor then has a topology, so the queue is TAS-only and
  admits a pod set without a topology annotation (oke_gpu_rdma/scheduling/kueue_objects.py HOSTS_TOPOLOGY).
- Every flavor has a `pods` quota (kueue_objects.PODS): a pod set that requests nothing (a launcher) gets a
  flavor, hence that flavor's node labels, instead of none and any node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from oke_gpu_rdma.drivers import compute_domains, dranet, nvidia_gpu
from oke_gpu_rdma.nodes.labels import (
    DEVICE_PLUGIN_LABEL,
    DEVICE_PLUGIN_OFF,
    FABRIC_LEVEL_LABELS,
    INSTANCE_TYPE_LABEL,
    NVLINK_LEVEL_LABELS,
    POOL_LABEL,
    RAILS_UNMARKED_LABEL,
)
from oke_gpu_rdma.nodes.node_sizes import SIZES
from oke_gpu_rdma.nodes.topology import shape_slug
from oke_gpu_rdma.scheduling import kueue_chart as kueue
from oke_gpu_rdma.scheduling import kueue_objects
from oke_gpu_rdma.scheduling.kueue_objects import (
    CPU,
    HOSTS_LEVELS,
    HOSTS_TOPOLOGY,
    MAX_PODS_PER_NODE,
    MEMORY,
    PODS,
    Flavor,
)
from stack_config.claims.template_requests import pool_shapes, shape_catalog
from stack_config.drivers import compute_domain_plan
from stack_config.health import health_plan
from stack_config.model import StackConfig
from stack_config.nodes.pool_settings import tolerations
from stack_config.problems import ConfigProblem

KEY = "workloads.scheduling.enabled"
NODE_SIZES_KEY = "workloads.scheduling.nodeSizes"
# apis/kueue/v1beta2/resourceflavor_types.go l. 65 and l. 98: at most 8 node labels and 8 tolerations.
MAX_FLAVOR_TOLERATIONS = 8
# The system flavor's name (no shape has it: shape slugs start with bm- or vm-).
SYSTEM_FLAVOR = "system"


@dataclass(frozen=True)
class SchedulingPlan:
    """The Kueue release and objects of a stack."""

    chart_version: str
    namespace: str
    topology: str
    levels: tuple[str, ...]
    flavors: tuple[Flavor, ...]
    """The system flavor if any, then the shapes' flavors (Kueue tries them in this order)."""
    flavor_pools: dict[str, tuple[str, ...]]
    """Flavor name -> the pools whose nodes it selects (the system flavor: the system pool)."""
    cluster_queue: str
    local_queue: str
    namespaces: tuple[str, ...]
    acceptance_level: str
    device_class_mappings: tuple[dict[str, object], ...] = field(default=())
    pods_ready_timeout_minutes: int = kueue.DEFAULT_PODS_READY_TIMEOUT_MINUTES

    def topologies(self) -> dict[str, tuple[str, ...]]:
        """Each Topology a flavor schedules over -> its levels: the fabric's where a flavor uses it, the NVLink
        shapes' (the fabric's with the GPU memory fabric below the local block) and the hosts'."""
        found = {self.topology: self.levels}
        if any(f.topology == self.nvlink_topology for f in self.flavors):
            found[self.nvlink_topology] = NVLINK_LEVEL_LABELS
        if any(f.topology == HOSTS_TOPOLOGY for f in self.flavors):
            found[HOSTS_TOPOLOGY] = HOSTS_LEVELS
        return found

    @property
    def nvlink_topology(self) -> str:
        """The Topology of the multi-node NVLink shapes' flavors (oke_gpu_rdma/nodes/labels.py NVLINK_LEVEL_LABELS)."""
        return nvlink_topology_name(self.topology)

    @property
    def system_flavor(self) -> Flavor | None:
        """The flavor of the system pool, for pod sets without GPUs (None without a system pool)."""
        return next((f for f in self.flavors if f.name == SYSTEM_FLAVOR), None)

    def shape_flavor(self, shape: str) -> Flavor:
        return next(f for f in self.flavors if f.name == flavor_name(shape))


def nvlink_topology_name(topology: str) -> str:
    """The NVLink shapes' Topology beside the stack's ``topology``."""
    return f"{topology}-nvlink"


def flavor_name(shape: str) -> str:
    """A shape's ResourceFlavor: the shape as a DNS label (`bm-gpu-b4-8`)."""
    return shape_slug(shape)


def shape_flavor_labels(shape: str, rails_unmarked: bool = False) -> dict[str, str]:
    """The node labels of a shape's flavor: that shape, on a pool whose GPUs come from the DRA driver; with
    ``rails_unmarked`` (rails marked per device) only nodes whose rail agent marks none of their rails, which
    TAS cannot tell from the device taints (oke_gpu_rdma/nodes/labels.py RAILS_UNMARKED_LABEL)."""
    labels = {INSTANCE_TYPE_LABEL: shape, DEVICE_PLUGIN_LABEL: DEVICE_PLUGIN_OFF}
    if rails_unmarked:
        labels[RAILS_UNMARKED_LABEL] = "true"
    return labels


def problems(config: StackConfig) -> list[ConfigProblem]:
    """Why the stack cannot schedule through Kueue as configured (none when scheduling is off)."""
    if not config.workloads.scheduling.enabled:
        return []
    found: list[ConfigProblem] = []
    if config.workloads.scheduling.topology == HOSTS_TOPOLOGY:
        found.append(
            ConfigProblem(
                "workloads.scheduling.topology",
                HOSTS_TOPOLOGY,
                "is the name of the stack's Topology of the system pool's hosts; name the fabric's another "
                "(the default is rdma-fabric)",
            )
        )
    if not config.dra_pools:
        found.append(
            ConfigProblem(KEY, True, "needs an rdma: dranet pool (Kueue queues the DRA pools' GPUs)")
        )
    for key, on in (
        ("dranet.enabled", config.dranet.enabled),
        ("gpuDriver.enabled", config.gpu_driver.enabled),
    ):
        if not on:
            found.append(
                ConfigProblem(
                    KEY,
                    True,
                    f"needs {key}: Kueue counts GPUs and rails as DRA devices; turn {key} on or scheduling off",
                )
            )
    shapes = pool_shapes(config)
    for shape in settings_shapes(config):
        if shape not in shapes:
            found.append(
                ConfigProblem(
                    f"{NODE_SIZES_KEY}.{shape}",
                    None,
                    f"no rdma: dranet pool with claim templates has shape {shape} (theirs: "
                    f"{', '.join(shapes) or 'none'}); remove the entry or add a pool of that shape",
                )
            )
    for shape in shapes:
        if config.node_size(shape) is None:
            found.append(
                ConfigProblem(
                    f"{NODE_SIZES_KEY}.{shape}",
                    None,
                    f"shape {shape} has no known CPUs and memory (OCI's table in oke_gpu_rdma/nodes/node_sizes.py lists "
                    f"{', '.join(SIZES)}); set them from a node's `kubectl get node <node> -o "
                    "jsonpath='{.status.capacity}'`: "
                    f"{NODE_SIZES_KEY}: {{{shape}: {{cpus: <cpu>, memoryGiB: <memory in GiB>}}}}",
                )
            )
        taints = {(t.key, t.effect) for p in config.dra_pools if p.shape == shape for t in p.taints}
        if len(taints) > MAX_FLAVOR_TOLERATIONS:
            found.append(
                ConfigProblem(
                    KEY,
                    True,
                    f"the {shape} pools carry {len(taints)} taint keys and effects; a ResourceFlavor tolerates at "
                    f"most {MAX_FLAVOR_TOLERATIONS} (Kueue's CRD); use fewer distinct taints on those pools",
                )
            )
    return found


def settings_shapes(config: StackConfig) -> list[str]:
    """The shapes workloads.scheduling.nodeSizes gives figures for."""
    return list(config.workloads.scheduling.node_sizes)


def plan_scheduling(config: StackConfig, namespaces: tuple[str, ...]) -> SchedulingPlan | None:
    """The plan of a valid stack (None when scheduling is off); ``namespaces``: where workloads run."""
    settings = config.workloads.scheduling
    if not settings.enabled:
        return None
    catalog = shape_catalog(config)
    flavors: list[Flavor] = []
    flavor_pools: dict[str, tuple[str, ...]] = {}
    unmarked = health_plan.rails_unmarked_pools(config)
    channels = compute_domain_plan.enabled(config)
    for shape in pool_shapes(config):
        pools = [p for p in config.dra_pools if p.shape == shape]
        topology = catalog.topology(shape)
        size = config.node_size(shape)
        assert size is not None  # problems() refused the stack otherwise
        nodes = sum(p.count for p in pools)
        name = flavor_name(shape)
        quotas = {
            CPU: str(nodes * size.cpus),
            MEMORY: f"{nodes * size.memory_gib}Gi",
            PODS: str(nodes * MAX_PODS_PER_NODE),
            kueue.GPU_RESOURCE: str(nodes * len(topology.gpus)),
            kueue.RAIL_RESOURCE: str(nodes * len(topology.rails)),
        }
        if topology.multi_node_nvlink and channels:
            quotas[kueue.CHANNEL_RESOURCE] = str(nodes * compute_domains.CHANNELS_PER_NODE)
        flavors.append(
            Flavor(
                name,
                shape_flavor_labels(shape, any(p.name in unmarked for p in pools)),
                tuple(tolerations(list(dict.fromkeys(t for p in pools for t in p.taints)))),
                nvlink_topology_name(settings.topology) if topology.multi_node_nvlink else settings.topology,
                quotas,
            )
        )
        flavor_pools[name] = tuple(p.name for p in pools)
    if config.creates_system_pool:
        system = config.system_pool
        flavors.insert(
            0,
            Flavor(
                SYSTEM_FLAVOR,
                {POOL_LABEL: system.name},
                topology=HOSTS_TOPOLOGY,
                quotas={
                    CPU: str(system.count * system.ocpus * 2),
                    MEMORY: f"{system.count * system.memory_gbs}Gi",
                    PODS: str(system.count * MAX_PODS_PER_NODE),
                },
            ),
        )
        flavor_pools = {SYSTEM_FLAVOR: (system.name,), **flavor_pools}
    return SchedulingPlan(
        chart_version=settings.chart_version,
        namespace=settings.namespace,
        topology=settings.topology,
        levels=FABRIC_LEVEL_LABELS,
        flavors=tuple(flavors),
        flavor_pools=flavor_pools,
        cluster_queue=settings.cluster_queue,
        local_queue=settings.local_queue,
        namespaces=namespaces,
        acceptance_level=settings.acceptance_level,
        device_class_mappings=tuple(
            kueue.device_class_mappings(
                [nvidia_gpu.DEVICE_CLASS],
                [dranet.DEVICE_CLASS],
                [compute_domains.CHANNEL_DEVICE_CLASS] if channels else [],
            )
        ),
        pods_ready_timeout_minutes=settings.pods_ready_timeout_minutes,
    )


def objects(plan: SchedulingPlan) -> list[dict[str, object]]:
    """The Kueue objects of the plan as manifests (the component declares the same specs)."""
    found = [
        kueue_objects.manifest(kueue.TOPOLOGY_KIND, name, kueue_objects.topology_spec(levels))
        for name, levels in plan.topologies().items()
    ]
    found += [
        kueue_objects.manifest(kueue.RESOURCE_FLAVOR_KIND, f.object_name, kueue_objects.flavor_spec(f))
        for f in plan.flavors
    ]
    found.append(
        kueue_objects.manifest(
            kueue.CLUSTER_QUEUE_KIND,
            plan.cluster_queue,
            kueue_objects.cluster_queue_spec(plan.flavors, plan.namespaces),
        )
    )
    found += [
        kueue_objects.manifest(
            kueue.LOCAL_QUEUE_KIND, plan.local_queue, kueue_objects.local_queue_spec(plan.cluster_queue), ns
        )
        for ns in plan.namespaces
    ]
    return found
