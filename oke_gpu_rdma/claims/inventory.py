"""What the two DRA drivers publish in their ResourceSlices for one node of a shape.

Devices keep the attribute names and types the drivers publish (kubernetes-sigs/dranet `pkg/apis/attributes.go`,
kubernetes-sigs/dra-driver-nvidia-gpu `cmd/gpu-kubelet-plugin/deviceinfo.go`, seed 000's slices):

* DRANET v1.5.0 (driver ``dra.net``), one slice per node, devices sorted by name as DRANET sorts them.
  Each rail carries the attributes seed 000 shows for ``rdma0`` (``dra.net/ifName``, ``dra.net/rdma``,
  ``dra.net/rdmaDevice`` where the seed names it, ``dra.net/pciAddress``, ``dra.net/numaNode``,
  ``resource.kubernetes.io/numaNode``, ``resource.kubernetes.io/pcieRoot``, ``oke.dra.net/shape``,
  ``oke.dra.net/rdmaChildIpv4Cidr``) plus ``dra.net/virtual``. The slice also lists the front-end NIC
  ``eth1`` and virtual interfaces: they have an ``ifName`` but ``rdma`` false, so only a careless
  selector matches them. The IMDS attributes (``oke.dra.net/hpcIslandId`` ...) are left out: their
  values are per node and unknown. Device names are modelled: ``pci-<address>`` for PCI functions
  (DRANET names devices after their normalised PCI address) and the interface name otherwise.
* The NVIDIA DRA driver 0.5.1 (driver ``gpu.nvidia.com``), one slice per node, ``gpu-0`` .. ``gpu-7`` in
  the driver's own order, with ``type``, ``uuid``, ``productName``, ``brand``, ``architecture``, the
  three version attributes, ``resource.kubernetes.io/pciBusID`` and ``resource.kubernetes.io/pcieRoot``,
  and the capacity ``memory``. UUIDs and driver versions are placeholders.

The order of devices matters only for which devices a first-fit allocation picks; slices, pools and the
devices inside a slice can be reordered with :meth:`NodeInventory.reordered`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from oke_gpu_rdma import attributes as attr
from oke_gpu_rdma.topology import Topology


@dataclass(frozen=True)
class Version:
    """A ``version`` attribute value (semantic version string)."""

    value: str


AttributeValue = bool | int | str | Version
DeviceKind = Literal["gpu", "rail", "other"]


@dataclass(frozen=True)
class DeviceID:
    """Driver, pool and device name: unique on a cluster, as in the allocator."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


@dataclass(frozen=True, eq=False)
class Device:
    """One published device. ``kind`` and ``label`` are this library's annotations, not published."""

    driver: str
    pool: str
    name: str
    attributes: Mapping[str, AttributeValue]
    capacity: Mapping[str, int] = field(default_factory=dict)
    kind: DeviceKind = "other"
    label: str = ""

    @property
    def id(self) -> DeviceID:
        return DeviceID(self.driver, self.pool, self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def attribute(self, qualified_name: str) -> AttributeValue | None:
        """Look up a fully qualified attribute like the allocator does.

        The name as published wins; an unqualified attribute matches when the domain is the driver name.
        """
        if qualified_name in self.attributes:
            return self.attributes[qualified_name]
        domain, _, ident = qualified_name.partition("/")
        if ident and domain == self.driver and ident in self.attributes:
            return self.attributes[ident]
        return None

    @property
    def root(self) -> str | None:
        value = self.attribute(attr.PCIE_ROOT)
        return value if isinstance(value, str) else None

    @property
    def display(self) -> str:
        return self.label or self.name


@dataclass(frozen=True)
class ResourceSlice:
    """One ResourceSlice: a driver's devices of one pool on one node, in published order."""

    driver: str
    pool: str
    node_name: str
    devices: tuple[Device, ...]


@dataclass(frozen=True)
class Pool:
    """The slices of one driver and pool name; the allocator walks pools, then slices, then devices."""

    driver: str
    name: str
    slices: tuple[ResourceSlice, ...]


@dataclass(frozen=True)
class NodeInventory:
    """All slices published for one node."""

    node_name: str
    slices: tuple[ResourceSlice, ...]
    shape: str = ""

    @property
    def pools(self) -> tuple[Pool, ...]:
        """Pools in the order their first slice appears."""
        order: list[tuple[str, str]] = []
        groups: dict[tuple[str, str], list[ResourceSlice]] = {}
        for s in self.slices:
            key = (s.driver, s.pool)
            if key not in groups:
                order.append(key)
                groups[key] = []
            groups[key].append(s)
        return tuple(Pool(d, p, tuple(groups[(d, p)])) for d, p in order)

    def devices(self) -> tuple[Device, ...]:
        """Every device in allocator order: pool by pool, slice by slice."""
        return tuple(d for pool in self.pools for s in pool.slices for d in s.devices)

    def __iter__(self) -> Iterator[Device]:
        return iter(self.devices())

    def device(self, name: str) -> Device:
        for d in self.devices():
            if d.name == name or d.label == name:
                return d
        raise KeyError(f"no device {name!r} on node {self.node_name}")

    def reordered(
        self,
        slice_order: Sequence[int] | None = None,
        device_orders: Mapping[int, Sequence[int]] | None = None,
    ) -> NodeInventory:
        """The same devices with slices (and devices inside slices) in another order.

        ``slice_order`` is a permutation of slice positions; ``device_orders`` maps a slice position
        (before reordering) to a permutation of its devices.
        """
        slices = list(self.slices)
        if device_orders:
            for pos, perm in device_orders.items():
                s = slices[pos]
                if sorted(perm) != list(range(len(s.devices))):
                    raise ValueError(f"device order for slice {pos} is not a permutation of {len(s.devices)}")
                slices[pos] = ResourceSlice(s.driver, s.pool, s.node_name, tuple(s.devices[i] for i in perm))
        if slice_order is not None:
            if sorted(slice_order) != list(range(len(slices))):
                raise ValueError(f"slice order is not a permutation of {len(slices)}")
            slices = [slices[i] for i in slice_order]
        return NodeInventory(self.node_name, tuple(slices), self.shape)

    def with_slices(self, *extra: ResourceSlice) -> NodeInventory:
        """This inventory plus more slices (e.g. a device the model does not include)."""
        return NodeInventory(self.node_name, self.slices + extra, self.shape)


_GPU_FAMILIES = {"A100": ("Ampere", "8.0.0"), "H100": ("Hopper", "9.0.0"), "H200": ("Hopper", "9.0.0")}


def _pci_device_name(address: str) -> str:
    return "pci-" + address.replace(":", "-").replace(".", "-")


def _iface_device_name(ifname: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in ifname.lower())


def dranet_slice(
    topology: Topology, node_name: str, child_cidr: str = attr.OKE_DEFAULT_CHILD_IPV4_CIDR
) -> ResourceSlice:
    """The slice DRANET v1.5.0 publishes on a node of ``topology`` (devices sorted by name)."""
    devices: list[Device] = []
    for root in topology.roots:
        for rail in root.rails:
            attrs: dict[str, AttributeValue] = {
                attr.DRANET_IF_NAME: rail.name,
                attr.DRANET_RDMA: True,
                attr.DRANET_PCI_ADDRESS: rail.pci_address,
                attr.DRANET_NUMA_NODE: root.numa_node,
                attr.DRANET_VIRTUAL: False,
                attr.NUMA_NODE: root.numa_node,
                attr.PCIE_ROOT: root.name,
                attr.OKE_SHAPE: topology.shape,
                attr.OKE_RDMA_CHILD_IPV4_CIDR: child_cidr,
            }
            if rail.rdma_device:
                attrs[attr.DRANET_RDMA_DEVICE] = rail.rdma_device
            devices.append(
                Device(
                    attr.DRANET_DRIVER,
                    node_name,
                    _pci_device_name(rail.pci_address),
                    attrs,
                    {},
                    "rail",
                    rail.name,
                )
            )
    for ifname in topology.front_end_interfaces:
        attrs = {
            attr.DRANET_IF_NAME: ifname,
            attr.DRANET_RDMA: False,
            attr.DRANET_VIRTUAL: False,
            attr.OKE_SHAPE: topology.shape,
        }
        devices.append(
            Device(attr.DRANET_DRIVER, node_name, _iface_device_name(ifname), attrs, {}, "other", ifname)
        )
    for ifname in topology.virtual_interfaces:
        attrs = {
            attr.DRANET_IF_NAME: ifname,
            attr.DRANET_RDMA: False,
            attr.DRANET_VIRTUAL: True,
            attr.DRANET_DEVICE_TYPE: "vxlan" if "flannel" in ifname else "bridge",
            attr.OKE_SHAPE: topology.shape,
        }
        devices.append(
            Device(attr.DRANET_DRIVER, node_name, _iface_device_name(ifname), attrs, {}, "other", ifname)
        )
    devices.sort(key=lambda d: d.name)
    return ResourceSlice(attr.DRANET_DRIVER, node_name, node_name, tuple(devices))


def nvidia_gpu_slice(
    topology: Topology,
    node_name: str,
    driver_version: str = "550.0.0",
    cuda_driver_version: str = "12.4.0",
) -> ResourceSlice:
    """The slice the NVIDIA DRA driver 0.5.1 publishes: full GPUs in the driver's gpu-N order."""
    family = next((v for k, v in _GPU_FAMILIES.items() if k in topology.gpu_product), ("unknown", "0.0.0"))
    devices: list[Device] = []
    for gpu in topology.gpus_in_driver_order:
        attrs: dict[str, AttributeValue] = {
            attr.GPU_TYPE: "gpu",
            attr.GPU_UUID: f"GPU-{node_name}-{gpu.driver_name}",
            attr.GPU_PRODUCT_NAME: topology.gpu_product,
            attr.GPU_BRAND: "Nvidia",
            attr.GPU_ARCHITECTURE: family[0],
            attr.GPU_CUDA_COMPUTE_CAPABILITY: Version(family[1]),
            attr.GPU_DRIVER_VERSION: Version(driver_version),
            attr.GPU_CUDA_DRIVER_VERSION: Version(cuda_driver_version),
            attr.PCI_BUS_ID: gpu.pci_bus_id,
            attr.PCIE_ROOT: gpu.root,
        }
        capacity = {attr.GPU_MEMORY_CAPACITY: topology.gpu_memory_bytes}
        devices.append(
            Device(attr.NVIDIA_GPU_DRIVER, node_name, gpu.driver_name, attrs, capacity, "gpu", gpu.label)
        )
    return ResourceSlice(attr.NVIDIA_GPU_DRIVER, node_name, node_name, tuple(devices))


def node_inventory(
    topology: Topology, node_name: str = "node-1", child_cidr: str = attr.OKE_DEFAULT_CHILD_IPV4_CIDR
) -> NodeInventory:
    """Both drivers' slices for one node: the GPU slice first, then DRANET's, whose rails publish the
    child range DRANET runs with (``child_cidr``: the stack's `dranet.childRange`, seed 003)."""
    return NodeInventory(
        node_name,
        (nvidia_gpu_slice(topology, node_name), dranet_slice(topology, node_name, child_cidr)),
        topology.shape,
    )


@lru_cache(maxsize=32)
def shape_inventory(topology: Topology, child_cidr: str = attr.OKE_DEFAULT_CHILD_IPV4_CIDR) -> NodeInventory:
    """:func:`node_inventory` of ``topology`` with rails publishing ``child_cidr``, built once per topology
    and range: the judge and the landing check ask for it on every claim."""
    return node_inventory(topology, child_cidr=child_cidr)
