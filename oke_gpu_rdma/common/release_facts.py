"""What the project knows about one Helm release it installs, and about a DRA driver a release runs.

Each release has one facts module beside this one (dranet.py, nvidia_gpu.py, ...) holding its chart, the
values paths its templates read, the function placing its pods and, for a DRA driver, the driver name, the
DeviceClasses it serves and the slices it publishes. :mod:`oke_gpu_rdma.common.release_registry` lists them; the
policy pack, the claim inventory and the schedulability check read them from there, so a new driver is its
facts module, its component, its tests and one line in the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from oke_gpu_rdma.drivers.resource_slices import ResourceSlice
from oke_gpu_rdma.nodes.topology import Topology
from oke_gpu_rdma.scheduling.pod_admission import PodPlacement

# (release name, the release's values) -> the pods the chart renders, placed as its templates place them.
Workloads = Callable[[str, Mapping[str, Any]], list[PodPlacement]]


@dataclass(frozen=True)
class NodeSlices:
    """What a driver's slices on one node depend on besides the node's topology: the DRANET child range the
    rails publish (the stack's `dranet.childRange`); a driver ignores what it does not publish."""

    child_range: str


# What a driver's devices are to a training pod: RDMA rails or GPUs (the claim judge pairs one with the other).
Serves = Literal["rails", "gpus"]

# (topology of the node's shape, node name, settings) -> the slice the driver publishes on that node.
SliceBuilder = Callable[[Topology, str, NodeSlices], ResourceSlice]


@dataclass(frozen=True)
class DriverFacts:
    """A DRA driver: its name in ResourceSlices and `device.driver`, what its devices are, the DeviceClasses that
    select them (name -> CEL selectors, all of which must match), the slice it publishes on a node, and the
    values paths of the nodeSelector and affinity that place its kubelet plugin (the nodes it publishes on)."""

    name: str
    serves: Serves
    device_classes: Mapping[str, tuple[str, ...]]
    publishes: SliceBuilder
    plugin_node_selector_value: str
    plugin_affinity_value: str


@dataclass(frozen=True)
class ReleaseFacts:
    """A Helm release the stack installs.

    ``chart`` is the reference the component installs (an OCI URL, or the chart's name in ``repository``);
    ``chart_names`` the names the policy pack recognises an installation by (the chart's name now and any
    earlier one); ``value_paths`` the dot-joined values its templates read, ``.*`` admitting any keys below;
    ``workloads`` places the pods the chart renders from the values; ``drivers`` the DRA drivers it runs.
    """

    title: str
    """How a message names it in a sentence: "DRANET", "the NVIDIA GPU DRA driver"."""
    chart_name: str
    chart: str
    repository: str | None
    default_version: str
    release: str
    namespace: str
    value_paths: frozenset[str]
    workloads: Workloads
    chart_names: tuple[str, ...] = ()
    drivers: tuple[DriverFacts, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """The chart's names the policy pack recognises an installation by (a reference's last part)."""
        return tuple(dict.fromkeys((self.chart_name, *self.chart_names)))

    @property
    def references(self) -> tuple[str, ...]:
        """Every way a recorded release can name this chart: its names and its OCI reference."""
        return tuple(dict.fromkeys((*self.names, self.chart)))
