"""The devices a DRA driver publishes in its ResourceSlices, as data: attribute values, devices, slices, pools
and one node's slices. Each driver's facts module (:mod:`oke_gpu_rdma.releases`) builds its slices from these;
the claim judge (:mod:`oke_gpu_rdma.claims`) allocates from them. Kept outside the claims package so a driver's
facts can build slices without importing the judge.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from oke_gpu_rdma.drivers import attributes as attr


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
