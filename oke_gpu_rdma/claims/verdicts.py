"""The verdict on a claim on a shape, i.e. does every claimed GPU sit next to one of its rails?

This module is the model: what a verdict holds. :mod:`oke_gpu_rdma.claims.judging` decides it and
:mod:`oke_gpu_rdma.claims.messages` words it; callers get it from :func:`oke_gpu_rdma.claims.judge_claim`.

For one claim against one shape (an empty node of it) the verdict kind (:class:`VerdictKind`) is, in
this order:

* ``invalid``: the API server would reject the claim (:mod:`oke_gpu_rdma.claims.spec`, per API version);
* ``not checked``: the claim is valid but a selector uses a Kubernetes CEL function this model does not
  evaluate; advisory, never a rejection;
* ``unsatisfiable``: no allocation exists even on an empty node, or the allocator always aborts (CEL
  runtime error, unknown DeviceClass, more than 32 devices, ``allocationMode: All`` whose devices break
  a constraint); the pod would stay Pending. ``Verdict.cause`` says which (:class:`UnsatisfiableCause`);
* ``order-dependent``: an ``allocationMode: All`` request shares a constraint with an earlier request, and
  the allocator aborts or succeeds depending on which devices the earlier request takes first (upstream
  aborts the claim when an All device fails the constraint, ``allocateDevice`` with ``must`` in
  ``structured/internal/stable/allocator_stable.go``);
* ``not applicable``: the claim asks only for GPUs or only for rails (or neither): alignment between
  GPUs and rails does not apply; ``allocatable`` says whether it fits an empty node;
* ``unaligned``: some allocation the scheduler could pick puts a claimed GPU on a PCIe root with none
  of the claim's rails, or a claimed rail on a root with none of the claim's GPUs (on a shape aligned at
  the NUMA node, :attr:`oke_gpu_rdma.nodes.topology.Topology.alignment`: in a NUMA node);
* ``aligned``: no such allocation exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from oke_gpu_rdma.claims.inventory import Device, DeviceKind


class VerdictKind(StrEnum):
    """What the judge decided; compare with the members (they also equal their string values)."""

    INVALID = "invalid"
    NOT_CHECKED = "not checked"
    UNSATISFIABLE = "unsatisfiable"
    ORDER_DEPENDENT = "order-dependent"
    NOT_APPLICABLE = "not applicable"
    UNALIGNED = "unaligned"
    ALIGNED = "aligned"

    @property
    def blocks_deploy(self) -> bool:
        """True for kinds a deploy must not pass: the claim is rejected, can stay Pending, or misaligns."""
        return self in _BLOCKING


_BLOCKING = frozenset(
    {VerdictKind.INVALID, VerdictKind.UNSATISFIABLE, VerdictKind.ORDER_DEPENDENT, VerdictKind.UNALIGNED}
)


class UnsatisfiableCause(StrEnum):
    """Why an ``unsatisfiable`` claim cannot be allocated."""

    NO_ALLOCATION = "no allocation"  # requests and constraints cannot be met together
    ROOT_CAPACITY = "root capacity"  # a pcieRoot matchAttribute group needs more than one root holds
    ALL_MODE_CONSTRAINT = "allocationMode All breaks a constraint"
    CEL_ERROR = "CEL error"
    UNKNOWN_DEVICE_CLASS = "unknown device class"
    TOO_MANY_DEVICES = "too many devices"


@dataclass(frozen=True)
class GroupNeed:
    """What the requests of one ``matchAttribute`` group need, against what one value (root) holds."""

    requests: tuple[str, ...]
    attribute: str
    gpus: int
    rails: int
    root_gpus: int
    root_rails: int


@dataclass(frozen=True)
class DeviceRef:
    """A device in a verdict or report: which request got it, what it is, where it sits."""

    request: str
    driver: str
    pool: str
    name: str
    kind: DeviceKind
    root: str | None
    label: str
    domain: str | None = None
    """Where it sits at the shape's alignment level when that is not its PCIe root (``NUMA node 0``)."""

    @classmethod
    def of(cls, request: str, device: Device, domain: str | None = None) -> DeviceRef:
        return cls(
            request, device.driver, device.pool, device.name, device.kind, device.root, device.display, domain
        )

    @property
    def where(self) -> str | None:
        """The domain GPUs and rails must share: ``domain``, else the PCIe root."""
        return self.domain or self.root

    def __str__(self) -> str:
        return f"{self.label} on {self.where}" if self.where else self.label


@dataclass(frozen=True)
class Verdict:
    """The judgement of one claim on one shape.

    ``message`` is one paragraph a user can act on; ``fix`` the change it proposes, where there is one.
    ``requests`` are the requests the verdict is about, ``roots`` the PCIe roots it names, ``devices`` an
    allocation (the counterexample for ``unaligned``), ``misplaced`` its devices without a partner on
    their root, ``problems`` the API server's (``invalid``) or the unevaluated functions
    (``not checked``). ``nodes_visited`` counts the matcher's flow computations.
    """

    kind: VerdictKind
    message: str
    shape: str
    requests: tuple[str, ...] = ()
    roots: tuple[str, ...] = ()
    devices: tuple[DeviceRef, ...] = ()
    misplaced: tuple[DeviceRef, ...] = ()
    fix: str | None = None
    problems: tuple[str, ...] = ()
    allocatable: bool | None = None
    nodes_visited: int = 0
    cause: UnsatisfiableCause | None = None
    group: GroupNeed | None = None


def misplaced_devices(devices: Sequence[DeviceRef]) -> tuple[DeviceRef, ...]:
    """GPUs on roots (or NUMA nodes, :attr:`DeviceRef.where`) with none of the set's rails, and rails on
    roots with none of its GPUs."""
    gpu_roots = {d.where for d in devices if d.kind == "gpu"}
    rail_roots = {d.where for d in devices if d.kind == "rail"}
    if not gpu_roots or not rail_roots:
        return ()
    return tuple(
        d
        for d in devices
        if (d.kind == "gpu" and d.where not in rail_roots) or (d.kind == "rail" and d.where not in gpu_roots)
    )
