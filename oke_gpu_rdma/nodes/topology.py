"""Shape topologies: the PCIe layout of an OCI GPU shape, and the format it is written in.

A :class:`Topology` lists a node's PCIe roots; each root has a NUMA node, GPUs (PCI bus IDs) and
rails (RDMA NICs, by interface name, PCI address and, where known, RDMA device name).

Topologies are data. The shape catalog (:mod:`oke_gpu_rdma.nodes.shape_catalog`) reads one file per shape
from ``oke_gpu_rdma/shapes/`` (the file name is the shape) and adds the topologies a user supplies
(the stack's ``shapeTopologies``, the pack config's). A file *verifies* its shape (BM.GPU.B4.8) or
only lists it, with its evidence level and no topology: code that generates or judges claims on a
listed shape needs a supplied topology (:func:`topology_from_dict`). The dict format (YAML-able,
camelCase like Kubernetes)::

    shape: BM.GPU.A100-v2.8                  # the shapeTopologies key supplies it
    evidence: user-supplied                  # optional: user-supplied (default) or from-cluster
    source: "nvidia-smi topo -m on node x"   # optional: where the layout comes from
    gpuProduct: NVIDIA A100-SXM4-80GB        # optional
    gpuMemoryBytes: 85899345920              # optional
    roots:
      - name: pci0000:00
        numaNode: 3
        gpus: ["0000:0f:00.0", "0000:15:00.0"]
        rails:
          - {name: rdma0, pciAddress: "0000:0c:00.0", rdmaDevice: mlx5_5}   # rdmaDevice optional
      - name: pci0008:00                     # a root with GPUs and no rail (BM.GPU.GB200-v3.4)
        numaNode: 0
        numaFrom: pciDomain                  # optional, only on a root without rails: see below
        gpus: ["0008:06:00.0"]
    gpuDriverOrder: ["0000:50:00.0", ...]    # optional: the GPU driver's gpu-0, gpu-1, ... order
    frontEndInterfaces: [eth1]               # optional: non-rail NICs DRANET publishes
    virtualInterfaces: [cni0]                # optional: virtual interfaces DRANET publishes

A shape file (``oke_gpu_rdma/nodes/shapes/<shape>.yaml``) has the same keys but ``shape`` (its file name),
``evidence: verified`` or ``unverified``, the ``source`` of what it says (for a verified shape, where
the PCIe layout comes from) and a one-line ``note``; an unverified shape has no ``roots``. Adding a
verified shape is adding its file.

Alignment level (:attr:`Topology.alignment`): the nearest domain GPUs and rails share. Where every root
with GPUs has rails (BM.GPU.B4.8), it is the PCIe root, which both drivers publish as
``resource.kubernetes.io/pcieRoot``, so a claim ties GPUs to rails with ``matchAttribute``. Where a root
has GPUs and no rail (BM.GPU.GB200-v3.4: the GPUs hang off the Grace CPU by NVLink C2C, each on a PCIe
root of its own, the NICs on others), it is the NUMA node; the GPU driver publishes no NUMA attribute,
so no attribute is shared and claims select each NUMA group's devices explicitly (GPU bus IDs, rail PCI
addresses: :mod:`oke_gpu_rdma.claims.pairing`). How a root's NUMA node is known (:attr:`PcieRoot.numa_from`):
``rails`` (DRANET publishes ``dra.net/numaNode`` on the root's rails), ``pciDomain`` (a root without
rails whose PCI domain's socket digits, all but the last hex digit, are those of rails that all publish
one NUMA node: `make topology` infers it so, :mod:`oke_gpu_rdma.nodes.topology_from_slices`) or ``stated``
(a root without rails and without ``numaFrom``: the topology's author says so).

GPU numbering: ``Gpu.index`` is the PCI bus order (nvidia-smi order, the numbering of the seed's
tables: GPUs 0,1 on pci0000:00, 2,3 on 3e, 4,5 on 7d, 6,7 on ba). ``Gpu.driver_name`` is the NVIDIA
DRA driver's device name, in ``gpuDriverOrder`` (bus order when absent): on BM.GPU.B4.8 the driver's
``gpu-0`` is the GPU at bus 50 on pci0000:3e and ``gpu-1`` the one at bus 53 (seed 000; the rest of
the order is an assumption, see the shape's file).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Final, Literal, Self, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo

from oke_gpu_rdma.common.errors import TopologyError, TopologyFormatError

Evidence = Literal["verified", "unverified", "user-supplied", "from-cluster"]
"""How sure a topology is: a shape file verifies or only lists a shape; a user supplies one, or a tool
reads it from a cluster's ResourceSlices."""
SuppliedEvidence = Literal["user-supplied", "from-cluster"]
ListedEvidence = Literal["verified", "unverified"]

# The shape this project targets and verifies (seed 000); the default wherever a shape is optional.
DEFAULT_SHAPE: Final = "BM.GPU.B4.8"

_PCI_ADDRESS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_PCIE_ROOT = re.compile(r"^pci[0-9a-f]{4}:[0-9a-f]{2}$")
_RAIL_NAME = re.compile(r"^rdma[0-9]+$")


def shape_slug(shape: str) -> str:
    """`bm-gpu-b4-8` for BM.GPU.B4.8: a shape as part of a Kubernetes object or resource name."""
    return re.sub(r"[^a-z0-9]+", "-", shape.lower()).strip("-")


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


NumaFrom = Literal["rails", "pciDomain", "stated"]
"""How a root's NUMA node is known (module docstring)."""
AlignmentLevel = Literal["pcieRoot", "numaNode"]
"""The nearest domain GPUs and rails of a shape share (module docstring)."""


@dataclass(frozen=True)
class PcieRoot:
    """A PCIe root complex with its NUMA node, GPUs and rails."""

    name: str
    numa_node: int
    gpus: tuple[Gpu, ...]
    rails: tuple[Rail, ...]
    numa_from: NumaFrom = "rails"


@dataclass(frozen=True)
class AlignmentGroup:
    """The GPUs and rails of one domain at a shape's alignment level: a PCIe root or a NUMA node."""

    name: str
    """``pci0000:3e`` for a root, ``numa0`` for a NUMA node: part of a template's name."""
    label: str
    """``PCIe root pci0000:3e`` or ``NUMA node 0``, as messages name it."""
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
    rail_gbps: float = 0.0
    """One rail's line rate (Gb/s) where the shape file states it (``railGbps``); 0: not stated."""
    nvlink_gbps: float = 0.0
    """NVLink bandwidth per GPU and direction to GPUs of other nodes (GB/s); 0: the shape has no multi-node NVLink.
    Only a shape file of the catalog states it (``multiNodeNvlinkGBps``), never a supplied topology."""

    @property
    def multi_node_nvlink(self) -> bool:
        """Whether the shape's nodes share GPU memory over NVLink across nodes (ComputeDomains, docs/compute-domains.md)."""
        return self.nvlink_gbps > 0

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

    @property
    def alignment(self) -> AlignmentLevel:
        """``pcieRoot`` when every root with GPUs has rails, else ``numaNode`` (module docstring)."""
        return "pcieRoot" if all(r.rails for r in self.roots if r.gpus) else "numaNode"

    @property
    def groups(self) -> tuple[AlignmentGroup, ...]:
        """The domains at :attr:`alignment`: each root, or each NUMA node (ascending), with its devices."""
        if self.alignment == "pcieRoot":
            return tuple(AlignmentGroup(r.name, f"PCIe root {r.name}", r.gpus, r.rails) for r in self.roots)
        numa = sorted({r.numa_node for r in self.roots})
        return tuple(
            AlignmentGroup(
                f"numa{n}",
                f"NUMA node {n}",
                tuple(
                    sorted((g for r in self.roots if r.numa_node == n for g in r.gpus), key=lambda g: g.index)
                ),
                tuple(
                    sorted(
                        (x for r in self.roots if r.numa_node == n for x in r.rails), key=lambda x: x.index
                    )
                ),
            )
            for n in numa
        )

    def group_of_root(self, root: str) -> AlignmentGroup | None:
        """The group holding PCIe root ``root`` (None for a root the topology does not list)."""
        if root not in self.root_names:
            return None
        if self.alignment == "pcieRoot":
            return next(g for g in self.groups if g.name == root)
        return next(g for g in self.groups if g.name == f"numa{self.root(root).numa_node}")


@dataclass(frozen=True)
class ShapeInfo:
    """A catalog entry: what is known about a shape, how sure we are and where it comes from."""

    shape: str
    evidence: Evidence
    note: str
    topology: Topology | None = None
    source: str = ""


# The format, as pydantic models. Messages: a validator's own ValueError names the value; any other
# error says what the key takes, from its field's description (see _problems).


def _matching(pattern: re.Pattern[str], what: str) -> BeforeValidator:
    def check(value: Any) -> Any:
        if not isinstance(value, str) or not pattern.match(value):
            raise ValueError(f"{value!r} is not {what}")
        return value

    return BeforeValidator(check)


def _one_of(allowed: tuple[str, ...], why: str) -> BeforeValidator:
    def check(value: Any) -> Any:
        if value not in allowed:
            raise ValueError(f"{value!r} is not {' or '.join(allowed)}: {why}")
        return value

    return BeforeValidator(check)


_ROOT_NAME = "a PCIe root like pci0000:3e"
_GPU_ADDRESS = "a PCI address like 0000:50:00.0"
_RAIL_ADDRESS = "a PCI address like 0000:47:00.0"
_RAIL = "a rail name like rdma4 (the rail selector matches the rdma prefix)"

RootName = Annotated[str, _matching(_PCIE_ROOT, _ROOT_NAME)]
GpuAddress = Annotated[str, _matching(_PCI_ADDRESS, _GPU_ADDRESS)]
RailAddress = Annotated[str, _matching(_PCI_ADDRESS, _RAIL_ADDRESS)]
RailName = Annotated[str, _matching(_RAIL_NAME, _RAIL)]


class _Problems(ValueError):
    """Problems a model validator finds across keys, each with its key path."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{k}: {m}" for k, m in problems))


class _Spec(BaseModel):
    # strict: YAML and JSON carry real ints and lists; "3" is no NUMA node and true no byte count.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    expected: ClassVar[str] = "a mapping"
    """What one value of this model is, for "must be ..." messages."""


class RailSpec(_Spec):
    expected: ClassVar[str] = "a mapping with name, pciAddress and optional rdmaDevice"

    name: RailName = Field(description=_RAIL)
    pci_address: RailAddress = Field(alias="pciAddress", description=_RAIL_ADDRESS)
    rdma_device: str | None = Field(None, alias="rdmaDevice", description="a string like mlx5_5")


class RootSpec(_Spec):
    expected: ClassVar[str] = "a mapping with name, numaNode, gpus, rails"

    name: RootName = Field(description=_ROOT_NAME)
    numa_node: int = Field(alias="numaNode", ge=0, description="an int >= 0")
    numa_from: Annotated[
        Literal["pciDomain"] | None,
        _one_of(
            ("pciDomain",),
            "the one inference of a rail-less root's NUMA node (oke_gpu_rdma/nodes/topology.py)",
        ),
    ] = Field(
        None,
        alias="numaFrom",
        description="pciDomain (the NUMA node of rails in the same PCI domain socket), only on a root without rails",
    )
    gpus: list[GpuAddress] = Field(default_factory=list, description="a list of GPU PCI addresses")
    rails: list[RailSpec] = Field(default_factory=list, description="a list of rails")


class _Layout(_Spec):
    """The keys a supplied topology and a shape file share, and the checks across them."""

    shape: str = Field(min_length=1, description="a shape name like BM.GPU.B4.8")
    gpu_product: str = Field("unknown", alias="gpuProduct", description="a string")
    gpu_memory_bytes: int = Field(0, alias="gpuMemoryBytes", ge=0, description="an int >= 0")
    roots: list[RootSpec] = Field(default_factory=list, description="a list of PCIe roots")
    gpu_driver_order: list[GpuAddress] | None = Field(
        None,
        alias="gpuDriverOrder",
        description="a list of every GPU's bus ID in the NVIDIA DRA driver's order (gpu-0 first)",
    )
    front_end_interfaces: list[str] = Field(
        default_factory=list, alias="frontEndInterfaces", description="a list of interface names like eth1"
    )
    virtual_interfaces: list[str] = Field(
        default_factory=list, alias="virtualInterfaces", description="a list of interface names like cni0"
    )

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        problems: list[tuple[str, str]] = []
        seen: set[str] = set()

        def once(value: str, path: str, message: str) -> None:
            if value in seen:
                problems.append((path, message))
            seen.add(value)

        for i, root in enumerate(self.roots):
            p = f"roots[{i}]"
            once(root.name, f"{p}.name", f"duplicate PCIe root {root.name}")
            if root.numa_from is not None and root.rails:
                problems.append(
                    (
                        f"{p}.numaFrom",
                        "a root with rails has the NUMA node its rails publish; remove numaFrom",
                    )
                )
            for j, bus in enumerate(root.gpus):
                once(bus, f"{p}.gpus[{j}]", f"{bus} is listed twice")
            for j, rail in enumerate(root.rails):
                q = f"{p}.rails[{j}]"
                once(rail.name, f"{q}.name", f"rail {rail.name} is listed twice")
                once(rail.pci_address, f"{q}.pciAddress", f"{rail.pci_address} is listed twice")
        if self.gpu_driver_order is not None and sorted(self.gpu_driver_order) != self._buses():
            problems.append(("gpuDriverOrder", "must list every GPU bus ID of the roots exactly once"))
        for key, names in (
            ("frontEndInterfaces", self.front_end_interfaces),
            ("virtualInterfaces", self.virtual_interfaces),
        ):
            for j, ifname in enumerate(names):
                if ifname.startswith("rdma"):
                    problems.append(
                        (f"{key}[{j}]", f"{ifname!r}: non-rail interfaces must not use the rdma prefix")
                    )
        if problems:
            raise _Problems(problems)
        return self

    def _buses(self) -> list[str]:
        return sorted(bus for root in self.roots for bus in root.gpus)

    def _topology(
        self, evidence: Evidence, source: str, nvlink_gbps: float = 0.0, rail_gbps: float = 0.0
    ) -> Topology:
        by_bus = self._buses()
        index_of = {b: i for i, b in enumerate(by_bus)}
        driver_index = {b: i for i, b in enumerate(self.gpu_driver_order or by_bus)}
        roots = tuple(
            PcieRoot(
                name=root.name,
                numa_node=root.numa_node,
                gpus=tuple(Gpu(index_of[b], b, f"gpu-{driver_index[b]}", root.name) for b in root.gpus),
                rails=tuple(Rail(r.name, r.pci_address, root.name, r.rdma_device) for r in root.rails),
                numa_from="rails" if root.rails else root.numa_from or "stated",
            )
            for root in self.roots
        )
        return Topology(
            shape=self.shape,
            roots=roots,
            evidence=evidence,
            source=source,
            gpu_product=self.gpu_product,
            gpu_memory_bytes=self.gpu_memory_bytes,
            front_end_interfaces=tuple(self.front_end_interfaces),
            virtual_interfaces=tuple(self.virtual_interfaces),
            nvlink_gbps=nvlink_gbps,
            rail_gbps=rail_gbps,
        )


class TopologySpec(_Layout):
    """A supplied topology: a ``shapeTopologies`` entry (its key is ``shape``)."""

    evidence: Annotated[
        SuppliedEvidence,
        _one_of(
            get_args(SuppliedEvidence), "only a shape file of oke_gpu_rdma/nodes/shapes/ verifies a shape"
        ),
    ] = Field("user-supplied", description="user-supplied or from-cluster")
    source: str = Field("user-supplied topology", description="a string saying where the layout comes from")
    roots: list[RootSpec] = Field(min_length=1, description="a non-empty list of PCIe roots")

    def topology(self) -> Topology:
        return self._topology(self.evidence, self.source)


class ShapeFile(_Layout):
    """A shape file of the catalog (``oke_gpu_rdma/nodes/shapes/<shape>.yaml``, ``shape`` from its name)."""

    evidence: Annotated[
        ListedEvidence,
        _one_of(get_args(ListedEvidence), "a supplied topology belongs under shapeTopologies"),
    ] = Field(description="verified or unverified")
    source: str = Field(min_length=1, description="a string saying where the layout comes from")
    note: str = Field(min_length=1, description="a one-line summary of what is known about the shape")
    multi_node_nvlink_gbps: float = Field(
        0.0,
        alias="multiNodeNvlinkGBps",
        ge=0,
        description="the NVLink bandwidth per GPU and direction to other nodes' GPUs in GB/s, as its vendor "
        "publishes it (0: no multi-node NVLink)",
    )
    rail_gbps: float = Field(
        0.0, alias="railGbps", ge=0, description="one rail's line rate in Gb/s (0: not stated)"
    )

    @model_validator(mode="after")
    def _roots_match_evidence(self) -> Self:
        if self.evidence == "verified" and not self.roots:
            raise _Problems([("roots", "required for a verified shape, a non-empty list of PCIe roots")])
        if self.evidence == "unverified" and self.roots:
            raise _Problems(
                [
                    (
                        "roots",
                        "an unverified shape's roots are never used: verify them (evidence: verified) or drop them",
                    )
                ]
            )
        return self

    def info(self) -> ShapeInfo:
        topology = (
            self._topology("verified", self.source, self.multi_node_nvlink_gbps, self.rail_gbps)
            if self.evidence == "verified"
            else None
        )
        return ShapeInfo(self.shape, self.evidence, self.note, topology, self.source)


def parse(model: type[_Layout], data: Any, where: str, joiner: str = ".") -> _Layout:
    """``data`` validated by ``model``; :class:`TopologyFormatError` with one line per problem, each
    starting with ``where``, ``joiner`` and the key path (``topology.roots[0].name: ...``)."""
    if not isinstance(data, Mapping):
        raise TopologyError(f"{where}: expected a mapping, got {type(data).__name__}")
    try:
        return model.model_validate(dict(data))
    except ValidationError as err:
        problems = _problems(model, err)
        raise TopologyFormatError([f"{where}{joiner if p else ''}{p}: {m}" for p, m in problems]) from None


def topology_from_dict(data: Mapping[str, Any]) -> Topology:
    """Parse and validate a supplied topology (format in the module docstring)."""
    spec = parse(TopologySpec, data, "topology")
    assert isinstance(spec, TopologySpec)
    return spec.topology()


def _problems(model: type[_Spec], err: ValidationError) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for item in err.errors(include_url=False):
        loc = item["loc"]
        cause = item.get("ctx", {}).get("error")
        if isinstance(cause, _Problems):
            out += cause.problems
            continue
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).removeprefix(".")
        if isinstance(cause, ValueError):
            message = str(cause)
        elif item["type"] == "extra_forbidden":
            allowed = ", ".join(f.alias or n for n, f in _model_at(model, loc[:-1]).model_fields.items())
            message = f"unknown key; allowed: {allowed}"
        else:
            message = _expected(model, loc)
        out.append((path, message))
    return out


def _field(model: type[_Spec], key: str | int) -> FieldInfo:
    return next(f for n, f in model.model_fields.items() if (f.alias or n) == key)


def _spec_of(info: FieldInfo) -> type[_Spec] | None:
    """The model a field holds (itself or as list items), if any."""
    for arg in (info.annotation, *get_args(info.annotation)):
        if isinstance(arg, type) and issubclass(arg, _Spec):
            return arg
    return None


def _model_at(model: type[_Spec], loc: tuple[str | int, ...]) -> type[_Spec]:
    for part in loc:
        if isinstance(part, str):
            model = _spec_of(_field(model, part)) or model
    return model


def _expected(model: type[_Spec], loc: tuple[str | int, ...]) -> str:
    """What the value at ``loc`` must be: "required, <description>" for a required key, "must be ..."."""
    if isinstance(loc[-1], int):
        spec = _spec_of(_field(_model_at(model, loc[:-2]), loc[-2]))
        return f"must be {spec.expected if spec else 'a string'}"  # lists hold models or strings
    info = _field(_model_at(model, loc[:-1]), loc[-1])
    return f"required, {info.description}" if info.is_required() else f"must be {info.description}"
