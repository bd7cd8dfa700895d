"""Shape catalog: the single source of truth for the PCIe layout of OCI GPU shapes.

A :class:`Topology` lists a node's PCIe roots; each root has a NUMA node, GPUs (PCI bus IDs) and
rails (RDMA NICs, by interface name, PCI address and, where known, RDMA device name).

Only BM.GPU.B4.8 is *verified* (seed 000, the table under "What DRANET publishes", and the NCCL
topology ``samples/gpu/topo-flattened-b4.xml`` of oracle-quickstart/oci-hpc). Other shapes are listed
with their evidence level and no topology: code that generates or judges claims calls
:func:`resolve_topology`, which refuses them unless the caller supplies a topology with
:func:`topology_from_dict`. The dict format (YAML-able, camelCase like Kubernetes)::

    shape: BM.GPU.A100-v2.8
    gpuProduct: NVIDIA A100-SXM4-80GB        # optional
    gpuMemoryBytes: 85899345920              # optional
    roots:
      - name: pci0000:00
        numaNode: 3
        gpus: ["0000:0f:00.0", "0000:15:00.0"]
        rails:
          - {name: rdma0, pciAddress: "0000:0c:00.0", rdmaDevice: mlx5_5}   # rdmaDevice optional
    gpuDriverOrder: ["0000:50:00.0", ...]    # optional: the GPU driver's gpu-0, gpu-1, ... order
    frontEndInterfaces: [eth1]               # optional: non-rail NICs DRANET publishes
    virtualInterfaces: [cni0]                # optional: virtual interfaces DRANET publishes

GPU numbering: ``Gpu.index`` is the PCI bus order (nvidia-smi order, the numbering of the seed's
tables: GPUs 0,1 on pci0000:00, 2,3 on 3e, 4,5 on 7d, 6,7 on ba). ``Gpu.driver_name`` is the NVIDIA
DRA driver's device name; the driver numbers GPUs in its own order: its ``gpu-0`` is the GPU at bus 50
on pci0000:3e and ``gpu-1`` the one at bus 53 (seed 000). The seed shows no other names; this catalog
assumes the driver continues root by root (7d, ba, then 00), which only affects which devices a
default-order allocation picks, never a verdict (verdicts do not depend on device order).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from oke_gpu_rdma.errors import TopologyError, UnverifiedTopologyError

Evidence = Literal["verified", "unverified", "user-supplied"]

_PCI_ADDRESS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_PCIE_ROOT = re.compile(r"^pci[0-9a-f]{4}:[0-9a-f]{2}$")
_RAIL_NAME = re.compile(r"^rdma[0-9]+$")


@dataclass(frozen=True)
class Gpu:
    """One GPU: ``index`` in PCI bus order, ``pci_bus_id`` like 0000:50:00.0, ``driver_name`` like gpu-0."""

    index: int
    pci_bus_id: str
    driver_name: str
    root: str

    @property
    def bus(self) -> str:
        """The bus number alone, as the seed writes it (``50``)."""
        return self.pci_bus_id.split(":")[1]

    @property
    def label(self) -> str:
        return f"GPU {self.index} ({self.driver_name}, bus {self.bus})"


@dataclass(frozen=True)
class Rail:
    """One RDMA rail: interface ``name`` (rdma4), PF ``pci_address``, ``rdma_device`` when known."""

    name: str
    pci_address: str
    root: str
    rdma_device: str | None = None

    @property
    def index(self) -> int:
        return int(self.name.removeprefix("rdma"))


@dataclass(frozen=True)
class PcieRoot:
    """A PCIe root complex with its NUMA node, GPUs and rails."""

    name: str
    numa_node: int
    gpus: tuple[Gpu, ...]
    rails: tuple[Rail, ...]


@dataclass(frozen=True)
class Topology:
    """The device layout of one node of a shape."""

    shape: str
    roots: tuple[PcieRoot, ...]
    evidence: Evidence
    source: str
    gpu_product: str = "unknown"
    gpu_memory_bytes: int = 0
    front_end_interfaces: tuple[str, ...] = ()
    virtual_interfaces: tuple[str, ...] = ()

    @property
    def gpus(self) -> tuple[Gpu, ...]:
        """All GPUs in index (PCI bus) order."""
        return tuple(sorted((g for r in self.roots for g in r.gpus), key=lambda g: g.index))

    @property
    def rails(self) -> tuple[Rail, ...]:
        """All rails in rail-number order."""
        return tuple(sorted((x for r in self.roots for x in r.rails), key=lambda x: x.index))

    @property
    def gpus_in_driver_order(self) -> tuple[Gpu, ...]:
        """GPUs as the NVIDIA DRA driver numbers them (gpu-0 first)."""
        return tuple(sorted(self.gpus, key=lambda g: int(g.driver_name.removeprefix("gpu-"))))

    def root(self, name: str) -> PcieRoot:
        for r in self.roots:
            if r.name == name:
                return r
        raise TopologyError(f"{self.shape} has no PCIe root {name!r}; roots: {', '.join(self.root_names)}")

    @property
    def root_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.roots)


@dataclass(frozen=True)
class ShapeInfo:
    """A catalog entry: what is known about a shape and how sure we are."""

    shape: str
    evidence: Evidence
    note: str
    topology: Topology | None = None


# The shape this project targets and verifies (seed 000); the default wherever a shape is optional.
DEFAULT_SHAPE = "BM.GPU.B4.8"


def _b4_8() -> Topology:
    rows: list[tuple[str, int, tuple[str, str], tuple[str, str, str, str]]] = [
        ("pci0000:00", 3, ("0f", "15"), ("0c:00.0", "0c:00.1", "16:00.0", "16:00.1")),
        ("pci0000:3e", 1, ("50", "53"), ("47:00.0", "47:00.1", "4b:00.0", "4b:00.1")),
        ("pci0000:7d", 7, ("8c", "91"), ("89:00.0", "89:00.1", "93:00.0", "93:00.1")),
        ("pci0000:ba", 5, ("d6", "da"), ("c3:00.0", "c3:00.1", "d1:00.0", "d1:00.1")),
    ]
    known_rdma = {"rdma0": "mlx5_5", "rdma1": "mlx5_6", "rdma15": "mlx5_12"}  # seed 000, rail-map.sh
    roots: list[dict[str, Any]] = []
    rail_no = 0
    for name, numa, buses, pfs in rows:
        rails = []
        for pf in pfs:
            rail: dict[str, Any] = {"name": f"rdma{rail_no}", "pciAddress": f"0000:{pf}"}
            if rail["name"] in known_rdma:
                rail["rdmaDevice"] = known_rdma[rail["name"]]
            rails.append(rail)
            rail_no += 1
        roots.append(
            {"name": name, "numaNode": numa, "gpus": [f"0000:{b}:00.0" for b in buses], "rails": rails}
        )
    # gpu-0 = bus 50 and gpu-1 = bus 53 are from seed 000; the rest is an assumption (module docstring).
    driver_order = [f"0000:{b}:00.0" for b in ("50", "53", "8c", "91", "d6", "da", "0f", "15")]
    return _parse(
        {
            "shape": DEFAULT_SHAPE,
            "gpuProduct": "NVIDIA A100-SXM4-40GB",
            "gpuMemoryBytes": 40 * 1024**3,
            "roots": roots,
            "gpuDriverOrder": driver_order,
            # The seed says the slice lists eth1 and "some virtual interfaces" without naming them:
            # cni0 and flannel.1 stand for them (flannel CNI), with ifName but no rdma.
            "frontEndInterfaces": ["eth1"],
            "virtualInterfaces": ["cni0", "flannel.1"],
        },
        evidence="verified",
        source="seed 000 (DRANET ResourceSlice table); oci-hpc samples/gpu/topo-flattened-b4.xml",
    )


def _catalog() -> dict[str, ShapeInfo]:
    unpaired = "8 x 400 Gb/s single-port NICs; no published GPU/NIC pairing (oci-hpc files)"
    entries = [
        ShapeInfo(
            DEFAULT_SHAPE, "verified", "8 x A100 40 GB, 16 x 100 Gb/s RoCE rails, 4 PCIe roots", _b4_8()
        ),
        ShapeInfo(
            "BM.GPU.A100-v2.8",
            "unverified",
            "same NIC PCI addresses as BM.GPU.B4.8 in oci-hpc files, probably the same layout (unverified)",
        ),
        ShapeInfo(
            "BM.GPU.H100.8",
            "unverified",
            "16 x 200 Gb/s; each GPU shares a PCIe switch with one dual-port NIC; addresses not recorded",
        ),
        ShapeInfo("BM.GPU.H200.8", "unverified", unpaired),
        ShapeInfo("BM.GPU.B200.8", "unverified", unpaired),
        ShapeInfo("BM.GPU.MI300X.8", "unverified", unpaired),
    ]
    return {e.shape: e for e in entries}


def shape_info(shape: str) -> ShapeInfo:
    """The catalog entry of ``shape``; :class:`TopologyError` for a shape the catalog does not list."""
    try:
        return SHAPES[shape]
    except KeyError:
        raise TopologyError(
            f"shape {shape!r} is not in the catalog (known: {', '.join(SHAPES)}); "
            "supply its topology with topology_from_dict"
        ) from None


def get_topology(shape: str) -> Topology:
    """The verified topology of ``shape``; refuses shapes whose pairing is not verified."""
    info = shape_info(shape)
    if info.topology is None or info.evidence != "verified":
        raise UnverifiedTopologyError(
            f"shape {shape} has no verified GPU/NIC pairing ({info.note}); "
            "supply its topology with topology_from_dict (see oke_gpu_rdma.topology for the format)"
        )
    return info.topology


def resolve_topology(shape: str | Topology | Mapping[str, Any]) -> Topology:
    """A :class:`Topology` from a shape name (verified only), a Topology, or a topology dict."""
    if isinstance(shape, Topology):
        return shape
    if isinstance(shape, str):
        return get_topology(shape)
    if isinstance(shape, Mapping):
        return topology_from_dict(shape)
    raise TopologyError(f"expected a shape name, a Topology or a topology dict, got {type(shape).__name__}")


def topology_from_dict(data: Mapping[str, Any]) -> Topology:
    """Parse and validate a user-supplied topology (format in the module docstring)."""
    return _parse(data, evidence="user-supplied", source="user-supplied topology")


def _need(cond: bool, path: str, message: str) -> None:
    if not cond:
        raise TopologyError(f"topology.{path}: {message}")


def _str_list(value: Any, path: str) -> list[str]:
    _need(
        isinstance(value, list) and all(isinstance(v, str) for v in value), path, "must be a list of strings"
    )
    return list(value)


def _parse(data: Mapping[str, Any], *, evidence: Evidence, source: str) -> Topology:
    if not isinstance(data, Mapping):
        raise TopologyError(f"topology: expected a mapping, got {type(data).__name__}")
    known = {
        "shape",
        "gpuProduct",
        "gpuMemoryBytes",
        "roots",
        "gpuDriverOrder",
        "frontEndInterfaces",
        "virtualInterfaces",
    }
    for key in data:
        _need(key in known, str(key), f"unknown key; allowed keys: {', '.join(sorted(known))}")
    shape = data.get("shape")
    _need(isinstance(shape, str) and bool(shape), "shape", "required, a shape name like BM.GPU.B4.8")
    assert isinstance(shape, str)
    product = data.get("gpuProduct", "unknown")
    _need(isinstance(product, str), "gpuProduct", "must be a string")
    memory = data.get("gpuMemoryBytes", 0)
    _need(
        isinstance(memory, int) and not isinstance(memory, bool) and memory >= 0,
        "gpuMemoryBytes",
        "must be an int >= 0",
    )
    raw_roots = data.get("roots")
    _need(
        isinstance(raw_roots, list) and len(raw_roots) > 0,
        "roots",
        "required, a non-empty list of PCIe roots",
    )
    assert isinstance(raw_roots, list)

    seen: dict[str, str] = {}
    gpu_rows: list[tuple[str, str]] = []  # (bus id, root)
    root_rows: list[tuple[str, int, list[str], list[Rail]]] = []
    for i, raw in enumerate(raw_roots):
        p = f"roots[{i}]"
        _need(isinstance(raw, Mapping), p, "must be a mapping with name, numaNode, gpus, rails")
        for key in raw:
            _need(
                key in {"name", "numaNode", "gpus", "rails"},
                f"{p}.{key}",
                "unknown key; allowed: name, numaNode, gpus, rails",
            )
        name = raw.get("name")
        _need(
            isinstance(name, str) and bool(_PCIE_ROOT.match(name)),
            f"{p}.name",
            f"{name!r} is not a PCIe root like pci0000:3e",
        )
        assert isinstance(name, str)
        _need(name not in seen, f"{p}.name", f"duplicate PCIe root {name}")
        seen[name] = p
        numa = raw.get("numaNode")
        _need(
            isinstance(numa, int) and not isinstance(numa, bool) and numa >= 0,
            f"{p}.numaNode",
            "required, an int >= 0",
        )
        assert isinstance(numa, int)
        gpus = _str_list(raw.get("gpus", []), f"{p}.gpus")
        for j, bus in enumerate(gpus):
            _need(
                bool(_PCI_ADDRESS.match(bus)),
                f"{p}.gpus[{j}]",
                f"{bus!r} is not a PCI address like 0000:50:00.0",
            )
            _need(bus not in seen, f"{p}.gpus[{j}]", f"{bus} is listed twice")
            seen[bus] = p
            gpu_rows.append((bus, name))
        raw_rails = raw.get("rails", [])
        _need(isinstance(raw_rails, list), f"{p}.rails", "must be a list")
        rails: list[Rail] = []
        for j, rr in enumerate(raw_rails):
            q = f"{p}.rails[{j}]"
            _need(
                isinstance(rr, Mapping), q, "must be a mapping with name, pciAddress and optional rdmaDevice"
            )
            for key in rr:
                _need(
                    key in {"name", "pciAddress", "rdmaDevice"},
                    f"{q}.{key}",
                    "unknown key; allowed: name, pciAddress, rdmaDevice",
                )
            rname = rr.get("name")
            _need(
                isinstance(rname, str) and bool(_RAIL_NAME.match(rname)),
                f"{q}.name",
                f"{rname!r} is not a rail name like rdma4 (the rail selector matches the rdma prefix)",
            )
            assert isinstance(rname, str)
            _need(rname not in seen, f"{q}.name", f"rail {rname} is listed twice")
            seen[rname] = q
            addr = rr.get("pciAddress")
            _need(
                isinstance(addr, str) and bool(_PCI_ADDRESS.match(addr)),
                f"{q}.pciAddress",
                f"{addr!r} is not a PCI address like 0000:47:00.0",
            )
            assert isinstance(addr, str)
            _need(addr not in seen, f"{q}.pciAddress", f"{addr} is listed twice")
            seen[addr] = q
            rdma = rr.get("rdmaDevice")
            _need(rdma is None or isinstance(rdma, str), f"{q}.rdmaDevice", "must be a string like mlx5_5")
            rails.append(Rail(name=rname, pci_address=addr, root=name, rdma_device=rdma))
        root_rows.append((name, numa, gpus, rails))

    by_bus = sorted(b for b, _ in gpu_rows)
    index_of = {b: i for i, b in enumerate(by_bus)}
    order = data.get("gpuDriverOrder")
    if order is None:
        driver_order = by_bus
    else:
        driver_order = _str_list(order, "gpuDriverOrder")
        _need(
            sorted(driver_order) == by_bus,
            "gpuDriverOrder",
            "must list every GPU bus ID of the roots exactly once",
        )
    driver_index = {b: i for i, b in enumerate(driver_order)}
    roots = tuple(
        PcieRoot(
            name=name,
            numa_node=numa,
            gpus=tuple(Gpu(index_of[b], b, f"gpu-{driver_index[b]}", name) for b in gpus),
            rails=tuple(rails),
        )
        for name, numa, gpus, rails in root_rows
    )
    front = _str_list(data.get("frontEndInterfaces", []), "frontEndInterfaces")
    virtual = _str_list(data.get("virtualInterfaces", []), "virtualInterfaces")
    for ifname in front + virtual:
        _need(
            not ifname.startswith("rdma"),
            "frontEndInterfaces",
            f"{ifname!r}: non-rail interfaces must not use the rdma prefix",
        )
    return Topology(
        shape=shape,
        roots=roots,
        evidence=evidence,
        source=source,
        gpu_product=product,
        gpu_memory_bytes=memory,
        front_end_interfaces=tuple(front),
        virtual_interfaces=tuple(virtual),
    )


SHAPES: dict[str, ShapeInfo] = _catalog()
"""Every shape the catalog knows, by name, with its evidence level."""
