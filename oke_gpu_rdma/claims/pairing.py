"""Aligned request layouts: how many GPU/rail pairs a worker needs, and the claim specs that ask for them.

At the PCIe root (a shape whose every GPU root has rails, :attr:`Topology.alignment` ``pcieRoot``), a
*pair* is one GPU request and one rail request tied by ``matchAttribute:
resource.kubernetes.io/pcieRoot``, so the scheduler puts both on one PCIe root. On BM.GPU.B4.8 each
root has 2 GPUs and 4 rails: 8 GPUs -> 4 pairs of (2 GPUs, 4 rails), 6 -> 3, 4 -> 2, 2 -> 1, and
1 GPU -> one pair of (1 GPU, 2 rails). Other counts cannot be split evenly over roots.

At the NUMA node (``numaNode``: BM.GPU.GB200-v3.4, where no root holds both) no attribute is shared:
the GPU driver publishes no NUMA node, so no ``matchAttribute`` can tie a GPU to a rail. Each group's
GPUs and rails are then selected explicitly, the GPUs by ``resource.kubernetes.io/pciBusID`` and the
rails by ``dra.net/pciAddress`` (both published on the shape's live nodes). A worker with every GPU gets
one claim with a GPU and a rail request per group; a worker with part of one group gets one claim per
group (:func:`aligned_claim_specs`: ``-numa0``, ``-numa1`` templates). Not ``firstAvailable``: the
structured allocator picks the subrequest of each request on its own (``allocator_stable.go``
``allocateOne``, subrequests in order), so a GPU request could fall back to NUMA 1 while its rail request
stays on NUMA 0, and without a shared attribute no constraint can forbid it. The addresses also keep the
claim on nodes of the shape, without ``oke.dra.net/shape`` (which the DRANET release on the published
GB200 node does not publish). On GB200 (2 GPUs and 4 rails per NUMA node): 4 GPUs -> one claim of
2 x (2 GPUs, 4 rails); 2 -> one claim per NUMA node of (2 GPUs, 4 rails); 1 -> (1 GPU, 2 rails) per node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oke_gpu_rdma.common.errors import PairingError
from oke_gpu_rdma.drivers import dranet, nvidia_gpu
from oke_gpu_rdma.drivers.attributes import PCI_BUS_ID, PCIE_ROOT
from oke_gpu_rdma.nodes.topology import AlignmentGroup, AlignmentLevel, Topology


@dataclass(frozen=True)
class Pair:
    """GPUs and rails that one pair of requests asks for, on one PCIe root."""

    gpus: int
    rails: int


def _uniform_root(topology: Topology) -> tuple[int, int, int]:
    """(GPUs per group, rails per group, groups with GPUs) at the shape's alignment level; PairingError
    if the groups differ or have no rails."""
    groups = [g for g in topology.groups if g.gpus]
    shapes = {(len(g.gpus), len(g.rails)) for g in groups}
    what = "roots" if topology.alignment == "pcieRoot" else "NUMA nodes"
    if not groups or len(shapes) != 1:
        layout = ", ".join(f"{g.name}: {len(g.gpus)} GPUs + {len(g.rails)} rails" for g in topology.groups)
        raise PairingError(
            f"{topology.shape}: aligned pairs need {what} with equal GPU and rail counts ({layout})"
        )
    ((gpus, rails),) = shapes
    if rails == 0:
        raise PairingError(
            f"{topology.shape}: the {'PCIe roots' if what == 'roots' else what} with GPUs have no rails, "
            "so no pair can be aligned"
        )
    return gpus, rails, len(groups)


def valid_gpu_counts(topology: Topology) -> list[int]:
    """GPU counts per worker that split into aligned pairs on ``topology``: at the NUMA node, every GPU
    or a part of one node's (a claim per node)."""
    g, r, n = _uniform_root(topology)
    counts = {k * g for k in range(1, n + 1)} if topology.alignment == "pcieRoot" else {g, g * n}
    counts.update(d for d in range(1, g) if g % d == 0 and (r * d) % g == 0)
    return sorted(counts)


def aligned_pairs(topology: Topology, gpus_per_worker: int) -> list[Pair]:
    """The pairs a worker with ``gpus_per_worker`` GPUs needs; :class:`PairingError` if none fit."""
    g, r, n = _uniform_root(topology)
    valid = valid_gpu_counts(topology)
    if gpus_per_worker not in valid:
        total = g * n
        where, each = (
            ("on one PCIe root", "roots")
            if topology.alignment == "pcieRoot"
            else ("in one NUMA node", "NUMA nodes")
        )
        why = (
            f"a {topology.shape} node has only {total} GPUs"
            if gpus_per_worker > total
            else f"{gpus_per_worker} GPUs cannot be split into pairs that each sit {where} "
            f"(each of the {n} {each} has {g} GPUs and {r} rails)"
        )
        raise PairingError(
            f"{gpus_per_worker} GPUs per worker cannot be aligned on {topology.shape}: {why}; "
            f"use one of {', '.join(map(str, valid))}"
        )
    if gpus_per_worker >= g:
        return [Pair(g, r) for _ in range(gpus_per_worker // g)]
    return [Pair(gpus_per_worker, r * gpus_per_worker // g)]


def suggest_pairs(topology: Topology, gpus: int, rails: int) -> list[Pair] | None:
    """Per-root pairs holding ``gpus`` GPUs and ``rails`` rails, as even as possible; None if impossible."""
    roots = [x for x in topology.roots if x.gpus and x.rails]
    if not roots or gpus <= 0 or rails <= 0:
        return None
    max_g = min(len(x.gpus) for x in roots)
    max_r = min(len(x.rails) for x in roots)
    lowest = max(-(-gpus // max_g), -(-rails // max_r), 1)
    for k in range(lowest, min(len(roots), gpus, rails) + 1):
        pairs = [
            Pair(gpus // k + (1 if i < gpus % k else 0), rails // k + (1 if i < rails % k else 0))
            for i in range(k)
        ]
        if all(p.gpus <= max_g and p.rails <= max_r for p in pairs):
            return pairs
    return None


def shape_selector(shape: str) -> str:
    """CEL that keeps a request to rails of nodes of ``shape``: DRANET's OKE provider publishes the instance
    shape as ``oke.dra.net/shape`` on every device (seed 000, seed 003). Guarded: later DRANET releases do
    not publish it (the BM.GPU.GB200-v3.4 node of kubernetes-sigs/dranet's OKE example publishes other
    oke.dra.net attributes and no shape), and selecting a missing key of a present domain is a CEL runtime
    error that aborts the allocation on that node (the scheduler's DRA Filter fails) instead of skipping it."""
    domain, _, name = dranet.OKE_SHAPE.partition("/")
    attribute = f'device.attributes["{domain}"].{name}'
    return f'has({attribute}) && {attribute} == "{shape}"'


def rail_request(name: str, count: int, shape: str | None = None) -> dict[str, Any]:
    """A DRANET rail request with the seed's rail selector; with ``shape``, only rails of that shape."""
    selectors = [{"cel": {"expression": dranet.RAIL_SELECTOR}}]
    if shape is not None:
        selectors.append({"cel": {"expression": shape_selector(shape)}})
    return {
        "name": name,
        "exactly": {"deviceClassName": dranet.DEVICE_CLASS, "count": count, "selectors": selectors},
    }


def gpu_request(name: str, count: int) -> dict[str, Any]:
    """A request for whole GPUs from the NVIDIA DRA driver."""
    return {"name": name, "exactly": {"deviceClassName": nvidia_gpu.DEVICE_CLASS, "count": count}}


def pairs_claim_spec(pairs: list[Pair], shape: str | None = None) -> dict[str, Any]:
    """A ResourceClaimSpec with requests gpus-i/rails-i and one pcieRoot constraint per pair; with ``shape``,
    the rails (and, through the constraint, the GPUs beside them) only on nodes of that shape."""
    requests: list[dict[str, Any]] = []
    constraints: list[dict[str, Any]] = []
    for i, pair in enumerate(pairs, start=1):
        requests.append(gpu_request(f"gpus-{i}", pair.gpus))
        requests.append(rail_request(f"rails-{i}", pair.rails, shape))
        constraints.append({"requests": [f"gpus-{i}", f"rails-{i}"], "matchAttribute": PCIE_ROOT})
    return {"devices": {"requests": requests, "constraints": constraints}}


def aligned_claim_spec(topology: Topology, gpus_per_worker: int, pin_shape: bool = False) -> dict[str, Any]:
    """The aligned ResourceClaimSpec for a worker (seed aligned-8gpu-16rails for 8 GPUs on B4.8); with
    ``pin_shape``, allocatable only on nodes of the topology's shape (a fleet of several shapes). On a
    shape aligned at the NUMA node, the first of :func:`aligned_claim_specs`."""
    if topology.alignment != "pcieRoot":
        return aligned_claim_specs(topology, gpus_per_worker, pin_shape)[0].spec
    return pairs_claim_spec(aligned_pairs(topology, gpus_per_worker), topology.shape if pin_shape else None)


@dataclass(frozen=True)
class AlignedSpec:
    """One aligned claim spec for a worker: the level it aligns at and, when it keeps to one group (a
    NUMA node), that group's name (``numa0``: the template's name ends with it); "" when it spans all."""

    spec: dict[str, Any]
    level: AlignmentLevel
    group: str = ""


def aligned_claim_specs(
    topology: Topology, gpus_per_worker: int, pin_shape: bool = False
) -> list[AlignedSpec]:
    """Every claim spec a worker of ``gpus_per_worker`` GPUs can be given (module docstring): one at the
    PCIe root; at the NUMA node one spanning every group, or one per group; :class:`PairingError` if none fit."""
    if topology.alignment == "pcieRoot":
        return [AlignedSpec(aligned_claim_spec(topology, gpus_per_worker, pin_shape), "pcieRoot")]
    pairs = aligned_pairs(topology, gpus_per_worker)  # checks the count
    groups = [g for g in topology.groups if g.gpus]
    if len(pairs) == len(groups) or len(groups) == 1:
        return [
            AlignedSpec(groups_claim_spec([(g, p) for g, p in zip(groups, pairs, strict=True)]), "numaNode")
        ]
    (pair,) = pairs
    return [AlignedSpec(groups_claim_spec([(g, pair)]), "numaNode", g.name) for g in groups]


def _in_list(domain: str, name: str, values: list[str]) -> str:
    listed = ", ".join(f'"{v}"' for v in values)
    return f'has(device.attributes["{domain}"].{name}) && device.attributes["{domain}"].{name} in [{listed}]'


def group_gpu_selector(group: AlignmentGroup) -> str:
    """CEL that keeps a GPU request to ``group``'s GPUs, by the bus IDs the GPU driver publishes."""
    domain, _, name = PCI_BUS_ID.partition("/")
    return _in_list(domain, name, [g.pci_bus_id for g in group.gpus])


def group_rail_selector(group: AlignmentGroup) -> str:
    """CEL that keeps a rail request to ``group``'s rails, by the PCI addresses DRANET publishes."""
    domain, _, name = dranet.PCI_ADDRESS.partition("/")
    return _in_list(domain, name, [r.pci_address for r in group.rails])


def groups_claim_spec(groups: list[tuple[AlignmentGroup, Pair]]) -> dict[str, Any]:
    """Requests gpus-i/rails-i per group, each selecting that group's devices by address: no constraint
    is needed (nor possible: the drivers share no attribute at this level)."""
    requests: list[dict[str, Any]] = []
    for i, (group, pair) in enumerate(groups, start=1):
        gpus = gpu_request(f"gpus-{i}", pair.gpus)
        gpus["exactly"]["selectors"] = [{"cel": {"expression": group_gpu_selector(group)}}]
        rails = rail_request(f"rails-{i}", pair.rails)
        rails["exactly"]["selectors"].append({"cel": {"expression": group_rail_selector(group)}})
        requests += [gpus, rails]
    return {"devices": {"requests": requests}}


def rails_only_claim_spec(topology: Topology, pin_shape: bool = False) -> dict[str, Any]:
    """All rails of a node in one request (seed all-rails); ``pin_shape`` as for :func:`aligned_claim_spec`
    (on a shape aligned at the NUMA node, by the rails' PCI addresses)."""
    if pin_shape and topology.alignment != "pcieRoot":
        every = AlignmentGroup("all", "every rail", (), topology.rails)
        request = rail_request("rails", len(topology.rails))
        request["exactly"]["selectors"].append({"cel": {"expression": group_rail_selector(every)}})
        return {"devices": {"requests": [request]}}
    shape = topology.shape if pin_shape else None
    return {"devices": {"requests": [rail_request("rails", len(topology.rails), shape)]}}
