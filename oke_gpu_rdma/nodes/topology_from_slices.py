"""Onboard a shape from the cluster: the ``shapeTopologies`` entry a node's ResourceSlices describe.

OCI publishes no GPU-to-NIC pairing for most shapes, but the two DRA drivers publish it on every node
(``kubectl get resourceslices -o yaml``, a ``List`` of resource.k8s.io/v1 ``ResourceSlice``). What this
reads, and from whom (the names are :mod:`oke_gpu_rdma.drivers.attributes`'; the devices are read into the
claim judge's own :class:`~oke_gpu_rdma.claims.inventory.Device`, so attribute lookup is the
allocator's):

* **GPUs**: the NVIDIA DRA driver's devices (driver ``gpu.nvidia.com``) of ``type: gpu``, each with the
  standard ``resource.kubernetes.io/pciBusID`` and ``resource.kubernetes.io/pcieRoot`` (the driver sets
  both from sysfs with ``deviceattribute.GetPCIeRootAttributeByPCIBusID``: NVIDIA/k8s-dra-driver-gpu
  ``cmd/gpu-kubelet-plugin/nvlib.go``, ``deviceinfo.go``), its ``productName`` and ``memory`` capacity.
  The device name is ``gpu-<minor>`` (``GpuInfo.CanonicalName``): the driver's order, ``gpuDriverOrder``.
  MIG and VFIO devices are not GPUs of the node's layout and are skipped.
* **Rails**: DRANET's devices (driver ``dra.net``) with ``dra.net/rdma: true``, an interface name
  ``dra.net/ifName`` and ``dra.net/virtual`` not true, each with ``dra.net/pciAddress``,
  ``resource.kubernetes.io/pcieRoot`` and a NUMA node (``dra.net/numaNode``, else the standard
  ``resource.kubernetes.io/numaNode``), and ``dra.net/rdmaDevice`` when published (kubernetes-sigs/dranet
  ``pkg/apis/attributes.go``; ``pkg/inventory/db.go`` ``addPCIAttributes`` sets the standard ones from
  sysfs). DRANET's other interfaces become ``frontEndInterfaces`` (``dra.net/virtual`` false) and
  ``virtualInterfaces``; RDMA devices without an interface (IB-only) are no rails and are skipped.
* **Roots**: the PCIe roots the GPUs and rails name, each with the NUMA node its rails publish. The GPU
  driver publishes none for full GPUs, so a root with GPUs and no rail (BM.GPU.GB200-v3.4) gets the NUMA
  node of the rails on PCI domains with its socket digits (all but the domain's last hex digit), when they
  all publish one, and says so (``numaFrom: pciDomain``); otherwise it is refused.
* **The shape**: a ResourceSlice names its node (``spec.nodeName``), not the node's instance type. Three
  sources name it, and those present must agree: the ``shape`` argument (``SHAPE=``), the node's
  ``node.kubernetes.io/instance-type`` label in a dump of ``kubectl get nodes -o yaml`` (``NODES=``,
  :func:`node_shapes`; OKE's cloud provider sets it to the OCI shape), and the ``oke.dra.net/shape``
  attribute DRANET's OKE provider publishes on its devices (seed 000's DRANET v1.5.0 does; later DRANET
  releases publish only the IMDS topology ids). With none of them the node is refused, naming both
  ways to give it.

Without a node, every node with slices of either driver is read (with a shape, those of that shape and
those that say none); they must be of one shape and agree on roots, GPUs and rails (the interfaces are
merged), which checks the layout on more than one host.
A dump that lacks what the layout needs is refused with one :class:`ResourceSliceDumpError` naming what
is missing; the result passes :func:`oke_gpu_rdma.nodes.topology.topology_from_dict` (checked before it is
returned), with ``evidence: from-cluster`` and a ``source`` naming the dump and the nodes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Final, Literal

import yaml

from oke_gpu_rdma.claims import AttributeValue, Device, Version
from oke_gpu_rdma.common.errors import ResourceSliceDumpError, TopologyError
from oke_gpu_rdma.drivers import attributes as attr
from oke_gpu_rdma.drivers import dranet, nvidia_gpu
from oke_gpu_rdma.nodes.topology import RailSpec, RootSpec, TopologySpec, topology_from_dict

SLICE_API_VERSION: Final = "resource.k8s.io/v1"
SLICE_KIND: Final = "ResourceSlice"
GPU_DEVICE_TYPE: Final = "gpu"  # the driver's type of a full GPU (GpuDeviceType; MIG: "mig", VFIO: "vfio")
INSTANCE_TYPE_LABEL: Final = "node.kubernetes.io/instance-type"
DUMP_COMMAND: Final = "kubectl get resourceslices -o yaml"
NODES_COMMAND: Final = "kubectl get nodes -o yaml"

# The one-of keys of a v1 DeviceAttribute (k8s.io/api/resource/v1 types.go: bool, int, string, version).
_ATTRIBUTE_TYPES: Final = ("bool", "int", "string", "version")

# Kubernetes resource.Quantity suffixes (k8s.io/apimachinery/pkg/api/resource/suffix.go).
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


@dataclass(frozen=True)
class NodeDevices:
    """The devices both drivers publish for one node, in dump order."""

    node: str
    gpus: tuple[Device, ...]
    network: tuple[Device, ...]
    gpu_slices: int
    dranet_slices: int


def quantity_value(text: Any) -> int | None:
    """The integer value of a Kubernetes quantity (``40Gi``, ``42949672960``, ``4e10``), else None."""
    match = _QUANTITY.match(str(text).strip())
    if not match:
        return None
    number, suffix = match.groups()
    try:
        value = Decimal(number)
    except InvalidOperation:
        return None
    if suffix in _BINARY:
        value *= 1024 ** _BINARY[suffix]
    elif suffix in _DECIMAL:
        value *= Decimal(10) ** _DECIMAL[suffix]
    elif suffix:
        value *= Decimal(10) ** int(suffix[1:])
    return int(value)


def _attribute(value: Any) -> AttributeValue | None:
    if not isinstance(value, Mapping):
        return None
    for key in _ATTRIBUTE_TYPES:
        if key in value:
            found = value[key]
            return Version(str(found)) if key == "version" else found
    return None


def _device(driver: str, pool: str, raw: Mapping[str, Any]) -> Device:
    attributes = {
        str(k): v
        for k, v in ((k, _attribute(a)) for k, a in (raw.get("attributes") or {}).items())
        if v is not None
    }
    capacity: dict[str, int] = {}
    for k, c in (raw.get("capacity") or {}).items():
        value = quantity_value(c.get("value") if isinstance(c, Mapping) else c)
        if value is not None:
            capacity[str(k)] = value
    return Device(driver, pool, str(raw.get("name", "")), attributes, capacity)


def _objects(text: str, where: str, command: str) -> list[Any]:
    """The objects of a ``kubectl get ... -o yaml`` dump: a List's items, or the documents themselves."""
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(err, "problem", None) or type(err).__name__
        raise ResourceSliceDumpError(
            f"{where}: not YAML ({at}{problem}); dump it with `{command} > {where}`"
        ) from None
    objects: list[Any] = []
    for document in documents:
        items = document.get("items") if isinstance(document, Mapping) and "items" in document else [document]
        objects += items if isinstance(items, list) else []
    return objects


def load_dump(text: str, where: str) -> list[Mapping[str, Any]]:
    """The ResourceSlices of a ``kubectl get resourceslices -o yaml`` dump (a List, a ResourceSliceList,
    or ResourceSlice documents)."""
    slices: list[Mapping[str, Any]] = []
    for item in _objects(text, where, DUMP_COMMAND):
        if not isinstance(item, Mapping) or item.get("kind") != SLICE_KIND:
            continue
        if item.get("apiVersion") != SLICE_API_VERSION:
            name = (item.get("metadata") or {}).get("name", "?")
            raise ResourceSliceDumpError(
                f"{where}: ResourceSlice {name} is {item.get('apiVersion')}, this reads {SLICE_API_VERSION} "
                f"(Kubernetes v1.34 or later serves it: dump again with `{DUMP_COMMAND}`)"
            )
        slices.append(item)
    if not slices:
        raise ResourceSliceDumpError(
            f"{where}: holds no {SLICE_API_VERSION} ResourceSlice; dump them with `{DUMP_COMMAND} > {where}`"
        )
    return slices


def node_devices(slices: Iterable[Mapping[str, Any]]) -> dict[str, NodeDevices]:
    """Per node (``spec.nodeName``), the devices of the two drivers, in dump order."""
    found: dict[str, dict[str, list[Device]]] = {}
    counts: dict[tuple[str, str], int] = {}
    for item in slices:
        spec = item.get("spec") or {}
        driver, node = spec.get("driver"), spec.get("nodeName")
        if driver not in (nvidia_gpu.DRIVER, dranet.DRIVER) or not isinstance(node, str):
            continue
        pool = str((spec.get("pool") or {}).get("name", node))
        devices = found.setdefault(node, {nvidia_gpu.DRIVER: [], dranet.DRIVER: []})
        devices[driver] += [
            _device(driver, pool, d) for d in spec.get("devices") or [] if isinstance(d, Mapping)
        ]
        counts[(node, driver)] = counts.get((node, driver), 0) + 1
    return {
        node: NodeDevices(
            node,
            tuple(
                d for d in devices[nvidia_gpu.DRIVER] if d.attribute(nvidia_gpu.GPU_TYPE) == GPU_DEVICE_TYPE
            ),
            tuple(devices[dranet.DRIVER]),
            counts.get((node, nvidia_gpu.DRIVER), 0),
            counts.get((node, dranet.DRIVER), 0),
        )
        for node, devices in found.items()
    }


def _string(device: Device, name: str) -> str | None:
    value = device.attribute(name)
    return value if isinstance(value, str) else None


def _int(device: Device, *names: str) -> int | None:
    for name in names:
        value = device.attribute(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _rail_number(ifname: str) -> tuple[int, str]:
    digits = re.sub(r"^\D*", "", ifname)
    return (int(digits) if digits.isdigit() else -1, ifname)


def _gpu_number(device: Device) -> tuple[int, str]:
    number = device.name.removeprefix("gpu-")
    return (int(number) if number.isdigit() else -1, device.name)


def _published_shapes(node: NodeDevices) -> list[str]:
    return sorted({s for d in node.network if (s := _string(d, dranet.OKE_SHAPE))})


def _shape(node: NodeDevices, shape: str | None, labelled: str | None) -> tuple[str | None, str | None]:
    """The node's shape and, if it cannot be told, what is missing. Every source that names it
    (SHAPE=, the nodes dump's instance-type label, DRANET's oke.dra.net/shape) must agree."""
    named = [(f"SHAPE={shape}", shape)] if shape else []
    if labelled:
        named.append((f"its {INSTANCE_TYPE_LABEL} label {labelled}", labelled))
    named += [(f"its devices' {dranet.OKE_SHAPE} {s}", s) for s in _published_shapes(node)]
    if not named:
        return None, (
            f"its shape: no device publishes {dranet.OKE_SHAPE} (DRANET's OKE provider adds it only in some "
            f"releases); give it with SHAPE= (kubectl get node {node.node} -L {INSTANCE_TYPE_LABEL}) or "
            f"NODES=<the output of {NODES_COMMAND}>"
        )
    if len({value for _, value in named}) > 1:
        return (
            None,
            f"one agreed shape: {' but '.join(what for what, _ in named)} (give the node's own shape)",
        )
    return named[0][1], None


def node_shapes(text: str, where: str) -> dict[str, str]:
    """Node name -> its ``node.kubernetes.io/instance-type`` label, from ``kubectl get nodes -o yaml``
    (the label the kubelet sets from the cloud provider: the OCI shape on OKE)."""
    shapes: dict[str, str] = {}
    for item in _objects(text, where, NODES_COMMAND):
        if not isinstance(item, Mapping) or item.get("kind") != "Node":
            continue
        metadata = item.get("metadata") or {}
        label = (metadata.get("labels") or {}).get(INSTANCE_TYPE_LABEL)
        if isinstance(metadata.get("name"), str) and isinstance(label, str):
            shapes[metadata["name"]] = label
    if not shapes:
        raise ResourceSliceDumpError(
            f"{where}: holds no Node with a {INSTANCE_TYPE_LABEL} label; dump them with `{NODES_COMMAND} > {where}`"
        )
    return shapes


def _socket(root: str) -> str:
    """The socket digits of a root's PCI domain: ``000`` for pci0008:00 (all but the domain's last digit)."""
    return root.removeprefix("pci")[:3]


def _numa_of_socket(root: str, numa_by_root: Mapping[str, set[int]]) -> set[int]:
    """The NUMA nodes the rails publish on PCI domains with the socket digits of ``root`` (a root with
    GPUs and no rail). On BM.GPU.GB200-v3.4 the GPUs of domains 0008 and 0009 sit with the rails of
    domains 0000 and 0002 (NUMA 0), those of 0018 and 0019 with 0010 and 0012 (NUMA 1): the node's slices
    as kubernetes-sigs/dranet publishes them (examples/oci_oke_examples/BM.GPU.GB200-v3.4/, whose README
    gives the GPUs' NUMA nodes and whose GPU slice names this rule). One NUMA node there proves it; none or
    several leave the root refused."""
    return {n for other, nodes in numa_by_root.items() if _socket(other) == _socket(root) for n in nodes}


def node_layout(
    node: NodeDevices, shape: str | None, labelled: str | None = None
) -> tuple[str, TopologySpec]:
    """The shape and layout one node's devices describe; :class:`ResourceSliceDumpError` naming
    everything that is missing."""
    missing: list[str] = []
    if not node.gpu_slices:
        missing.append(
            f"GPU driver slices (driver {nvidia_gpu.DRIVER}: is the NVIDIA DRA driver's kubelet plugin running there?)"
        )
    elif not node.gpus:
        missing.append(f"GPUs ({nvidia_gpu.DRIVER} devices of type {GPU_DEVICE_TYPE})")
    if not node.dranet_slices:
        missing.append(f"DRANET slices (driver {dranet.DRIVER}: is DRANET running there?)")
    named_shape, shape_missing = _shape(node, shape, labelled)
    if shape_missing:
        missing.append(shape_missing)

    gpus_by_root: dict[str, list[str]] = {}
    bus_of: dict[str, str] = {}
    for gpu in node.gpus:
        bus, root = _string(gpu, attr.PCI_BUS_ID), _string(gpu, attr.PCIE_ROOT)
        absent = [n for n, v in ((attr.PCI_BUS_ID, bus), (attr.PCIE_ROOT, root)) if v is None]
        if absent:
            missing.append(f"{' and '.join(absent)} on GPU {gpu.name}")
        elif bus is not None and root is not None:
            gpus_by_root.setdefault(root, []).append(bus)
            bus_of[gpu.name] = bus

    rails_by_root: dict[str, list[RailSpec]] = {}
    numa_by_root: dict[str, set[int]] = {}
    front_end: list[str] = []
    virtual: list[str] = []
    for device in node.network:
        ifname = _string(device, dranet.IF_NAME)
        if ifname is None:
            continue
        if device.attribute(dranet.VIRTUAL) is True:
            virtual.append(ifname)
            continue
        if device.attribute(dranet.RDMA) is not True:
            front_end.append(ifname)
            continue
        address, root = _string(device, dranet.PCI_ADDRESS), _string(device, attr.PCIE_ROOT)
        numa = _int(device, dranet.NUMA_NODE, attr.NUMA_NODE)
        absent = [
            n
            for n, v in (
                (dranet.PCI_ADDRESS, address),
                (attr.PCIE_ROOT, root),
                (dranet.NUMA_NODE, numa),
            )
            if v is None
        ]
        if absent:
            missing.append(f"{' and '.join(absent)} on rail {ifname} ({device.name})")
            continue
        assert address is not None and root is not None and numa is not None
        rails_by_root.setdefault(root, []).append(
            RailSpec.model_construct(
                name=ifname, pci_address=address, rdma_device=_string(device, dranet.RDMA_DEVICE)
            )
        )
        numa_by_root.setdefault(root, set()).add(numa)
    if node.dranet_slices and not rails_by_root and not any("on rail" in m for m in missing):
        missing.append(f"RDMA rails ({dranet.DRIVER} devices with {dranet.RDMA}: true and an ifName)")

    roots: list[RootSpec] = []
    for root in sorted({*gpus_by_root, *rails_by_root}):
        numa_nodes = numa_by_root.get(root, set())
        numa_from: Literal["pciDomain"] | None = None
        if root not in rails_by_root:
            numa_nodes, numa_from = _numa_of_socket(root, numa_by_root), "pciDomain"
        if len(numa_nodes) != 1:
            missing.append(
                f"one NUMA node for PCIe root {root} (its rails publish {sorted(numa_nodes)})"
                if numa_from is None
                else f"a NUMA node for PCIe root {root}: it has GPUs but no rail, the GPU driver publishes "
                f"none, and the rails of PCI domains {_socket(root)}x publish {sorted(numa_nodes) or 'none'}"
            )
            continue
        roots.append(
            RootSpec.model_construct(
                name=root,
                numa_node=next(iter(numa_nodes)),
                numa_from=numa_from,
                gpus=sorted(gpus_by_root.get(root, [])),
                rails=sorted(rails_by_root.get(root, []), key=lambda r: _rail_number(r.name)),
            )
        )
    if missing:
        raise ResourceSliceDumpError(f"node {node.node}: missing {'; '.join(missing)}")
    assert named_shape is not None

    products = sorted({p for g in node.gpus if (p := _string(g, nvidia_gpu.GPU_PRODUCT_NAME))})
    memories = sorted({m for g in node.gpus if (m := g.capacity.get(nvidia_gpu.GPU_MEMORY_CAPACITY))})
    spec = TopologySpec.model_construct(
        shape=named_shape,
        gpu_product=products[0] if len(products) == 1 else "unknown",
        gpu_memory_bytes=memories[0] if len(memories) == 1 else 0,
        roots=roots,
        gpu_driver_order=[bus_of[g.name] for g in sorted(node.gpus, key=_gpu_number)],
        front_end_interfaces=sorted(set(front_end)),
        virtual_interfaces=sorted(set(virtual)),
        evidence="from-cluster",
    )
    return named_shape, spec


def _layout_key(spec: TopologySpec) -> Any:
    """What two nodes of a shape must agree on: everything but the interfaces (node-local) and source."""
    return spec.model_dump(exclude={"front_end_interfaces", "virtual_interfaces", "source"})


def _first_difference(a: TopologySpec, b: TopologySpec) -> str:
    da, db = a.model_dump(by_alias=True), b.model_dump(by_alias=True)
    for key in da:
        if da[key] != db[key]:
            return key
    return "roots"


def topology_entry(
    slices: Sequence[Mapping[str, Any]],
    dump_name: str,
    node: str | None = None,
    shape: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> tuple[str, dict[str, Any]]:
    """The shape and its ``shapeTopologies`` entry (the dict format, without ``shape``) that the
    ResourceSlices of ``node`` describe. Without a node: every node with slices of either driver, or
    with ``shape`` those whose label or published shape says so (and those that say none). ``labels``:
    node -> instance type (:func:`node_shapes`)."""
    labels = labels or {}
    nodes = node_devices(slices)
    if node is None and shape is not None:
        nodes = {
            name: n
            for name, n in nodes.items()
            if {*([labels[name]] if name in labels else []), *_published_shapes(n)} <= {shape}
        }
        if not nodes:
            raise ResourceSliceDumpError(
                f"{dump_name}: no node of {shape} has {dranet.DRIVER} or {nvidia_gpu.DRIVER} slices"
            )
    if node is not None:
        if node not in nodes:
            known = ", ".join(sorted(nodes)) or "none"
            raise ResourceSliceDumpError(
                f"{dump_name}: no {dranet.DRIVER} or {nvidia_gpu.DRIVER} ResourceSlice of node {node} "
                f"(nodes with one: {known}); pick one with NODE="
            )
        chosen = [nodes[node]]
    elif nodes:
        chosen = [nodes[n] for n in sorted(nodes)]
    else:
        raise ResourceSliceDumpError(
            f"{dump_name}: missing the slices of both drivers ({nvidia_gpu.DRIVER}, {dranet.DRIVER}): "
            "are the NVIDIA DRA driver and DRANET running on the GPU nodes?"
        )
    try:
        layouts = [(n.node, *node_layout(n, shape, labels.get(n.node))) for n in chosen]
    except ResourceSliceDumpError as err:
        hint = "" if node is not None else " (or pick another node with NODE=)"
        raise ResourceSliceDumpError(f"{dump_name}: {err}{hint}") from None

    shapes: dict[str, list[str]] = {}
    for name, node_shape, _ in layouts:
        shapes.setdefault(node_shape, []).append(name)
    if len(shapes) > 1:
        listed = "; ".join(f"{s} ({', '.join(ns)})" for s, ns in sorted(shapes.items()))
        raise ResourceSliceDumpError(
            f"{dump_name}: nodes of several shapes: {listed}; pick one node with NODE="
        )
    first_node, the_shape, first = layouts[0]
    for name, _, spec in layouts[1:]:
        if _layout_key(spec) != _layout_key(first):
            raise ResourceSliceDumpError(
                f"{dump_name}: nodes {first_node} and {name} of {the_shape} publish different "
                f"{_first_difference(first, spec)}; check the odd node, or pick one with NODE="
            )
    names = [n for n, _, _ in layouts]
    merged = first.model_copy(
        update={
            "front_end_interfaces": sorted({i for _, _, s in layouts for i in s.front_end_interfaces}),
            "virtual_interfaces": sorted({i for _, _, s in layouts for i in s.virtual_interfaces}),
            "source": f"ResourceSlices of node{'s' if len(names) > 1 else ''} {', '.join(names)} in {dump_name} "
            f"({nvidia_gpu.DRIVER}, {dranet.DRIVER})",
        }
    )
    entry = {
        k: v
        for k, v in merged.model_dump(by_alias=True, exclude_none=True).items()
        if v != [] and k != "shape"
    }
    ordered = {k: entry.pop(k) for k in ("evidence", "source")} | entry
    try:  # the format's own checks: a rail name the rail selector would miss, a duplicate address, ...
        topology_from_dict({**ordered, "shape": the_shape})
    except TopologyError as err:
        raise ResourceSliceDumpError(
            f"{dump_name}: the slices of {', '.join(names)} give no valid topology: {err}"
        ) from None
    return the_shape, ordered
