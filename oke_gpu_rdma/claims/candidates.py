"""A claim with each request's candidate devices: what the judge and the reference allocator share.

The judge (:mod:`oke_gpu_rdma.claims.matching`) and the depth-first reference allocator the tests compare
it with (``tests/oke_gpu_rdma/claims/reference_allocator.py``) start from the same prepared claim, so the
rules below have one definition:

* :class:`ClaimToAllocate` (upstream ``ClaimToAllocate`` and ``requestData`` in
  ``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/allocator_stable.go``): for
  each request, and for ``firstAvailable`` each subrequest in order, the devices in pool/slice order that
  the DeviceClass selectors and then the request's selectors accept. A CEL runtime error aborts
  (:class:`~oke_gpu_rdma.common.errors.SelectorError`), an unknown DeviceClass too
  (:class:`~oke_gpu_rdma.common.errors.AllocationAbortedError`). An ``ExactCount`` request never gets a device
  without the attribute of a ``matchAttribute`` constraint on it (``constraint.add`` fails for it);
  ``allocationMode: All`` takes every matching device.
* value keys (:func:`value_key`): attribute values compared with their type, as upstream compares
  ``DeviceAttribute`` values (the string "1" is not the int 1);
* the 32-device limit (:meth:`CandidateList.fits_after`, :meth:`ClaimToAllocate.device_limit_problem`,
  upstream ``resourceapi.AllocationResultsMaxSize``);
* the ``allocationMode: All`` abort rule (:meth:`ClaimToAllocate.all_mode_misfit`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from oke_gpu_rdma.claims.device_cel import CompiledSelector, compile_selector
from oke_gpu_rdma.claims.inventory import AttributeValue, Device
from oke_gpu_rdma.claims.spec import MAX_DEVICES_PER_CLAIM
from oke_gpu_rdma.claims.spec_types import ClaimSpec, DeviceSelection
from oke_gpu_rdma.common import release_registry as registry
from oke_gpu_rdma.common.errors import AllocationAbortedError

ValueKey = tuple[str, object]
"""An attribute value with its type name: equal keys are equal values of one type."""


def value_key(value: AttributeValue | None) -> ValueKey | None:
    """The key of an attribute value; None for a device without the attribute."""
    if value is None:
        return None
    return (type(value).__name__, value)


@dataclass(frozen=True)
class CandidateList:
    """A request or subrequest with its candidate device positions, in allocator order, and the positions
    of the claim's constraints that apply to it."""

    selection: DeviceSelection
    request_index: int
    candidates: tuple[int, ...]
    constraints: tuple[int, ...]

    @cached_property
    def need(self) -> int:
        """Devices it takes: its count, or every candidate for ``allocationMode: All``."""
        return self.selection.count if self.selection.mode == "ExactCount" else len(self.candidates)

    def fits_after(self, taken: int) -> bool:
        """Whether the allocator can choose this (sub)request after ``taken`` devices of the claim: All
        needs at least one device, and a claim gets at most 32 devices (upstream fails the alternative with
        ``errAllocationResultMaxSizeExceeded`` and tries the next subrequest)."""
        if self.selection.mode == "All" and self.need == 0:
            return False
        return taken + self.need <= MAX_DEVICES_PER_CLAIM


_MATCHING: dict[
    tuple[tuple[int, ...], tuple[str, ...], tuple[str, ...]], tuple[tuple[Device, ...], list[int]]
] = {}


def _selectable(device: Device, expressions: Sequence[str], compiled: list[CompiledSelector | None]) -> bool:
    # Class selectors first, then the request's; evaluation stops at the first false one. Each is compiled
    # when first needed, once per device list (a class selector that does not compile fails where the
    # allocator first evaluates it).
    for k, expression in enumerate(expressions):
        selector = compiled[k]
        if selector is None:
            selector = compiled[k] = compile_selector(expression)
        if not selector.matches(device):
            return False
    return True


def _matching(
    devices: tuple[Device, ...],
    device_ids: tuple[int, ...],
    class_selectors: tuple[str, ...],
    selectors: tuple[str, ...],
) -> list[int]:
    """Positions of the devices that the class selectors and then the request's selectors accept, cached
    by the identity of the device objects (the cache holds them, so identities stay unique)."""
    key = (device_ids, class_selectors, selectors)
    hit = _MATCHING.get(key)
    if hit is not None:
        return hit[1]
    expressions = (*class_selectors, *selectors)
    compiled: list[CompiledSelector | None] = [None] * len(expressions)
    found = [pos for pos, device in enumerate(devices) if _selectable(device, expressions, compiled)]
    if len(_MATCHING) >= 4096:
        _MATCHING.clear()
    _MATCHING[key] = (devices, found)
    return found


_VALUES: dict[tuple[tuple[int, ...], str], tuple[tuple[Device, ...], list[ValueKey | None]]] = {}


def _attribute_values(
    devices: tuple[Device, ...], device_ids: tuple[int, ...], attribute: str
) -> list[ValueKey | None]:
    """The value key of ``attribute`` per device position, cached like :func:`_matching` (by the devices'
    identity: the claims of a run share one inventory, and most constraints name pcieRoot). Read-only."""
    key = (device_ids, attribute)
    hit = _VALUES.get(key)
    if hit is not None:
        return hit[1]
    found = [value_key(device.attribute(attribute)) for device in devices]
    if len(_VALUES) >= 1024:
        _VALUES.clear()
    _VALUES[key] = (devices, found)
    return found


class ClaimToAllocate:
    """The claim being allocated: for each (sub)request, the devices its selectors accept."""

    def __init__(
        self,
        spec: ClaimSpec,
        devices: Sequence[Device],
        device_classes: Mapping[str, Sequence[str]] = registry.DEVICE_CLASS_SELECTORS,
    ) -> None:
        self.spec = spec
        self.devices = tuple(devices)
        device_ids = tuple(map(id, self.devices))
        self.constraint_specs = spec.constraints
        # Per constraint, per device position: the value key of the constraint's attribute (constraints
        # on one attribute share one list; nothing writes to them).
        self.values: list[list[ValueKey | None]] = [
            _attribute_values(self.devices, device_ids, c.attribute) for c in spec.constraints
        ]
        self.requests: list[list[CandidateList]] = []
        # Requests with the same class and selectors match the same devices: evaluate CEL once (and once
        # per device list across claims, see _matching).
        matching: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        for index, request in enumerate(spec.requests):
            alternatives: list[CandidateList] = []
            for selection in request.alternatives:
                if selection.device_class not in device_classes:
                    known = ", ".join(sorted(device_classes))
                    raise AllocationAbortedError(
                        f"claim {spec.name}, request {selection.name}: could not retrieve device class "
                        f"{selection.device_class} (classes in this model: {known})"
                    )
                applying = tuple(i for i, c in enumerate(spec.constraints) if c.applies_to(selection))
                key = (selection.device_class, selection.selectors)
                if key not in matching:
                    matching[key] = _matching(
                        self.devices,
                        device_ids,
                        tuple(device_classes[selection.device_class]),
                        selection.selectors,
                    )
                candidates = matching[key]
                if selection.mode == "ExactCount" and applying:
                    # One value list per attribute, however many constraints name it.
                    columns = list({id(self.values[c]): self.values[c] for c in applying}.values())
                    # A device without a matchAttribute attribute is never chosen.
                    candidates = [pos for pos in candidates if all(col[pos] is not None for col in columns)]
                alternatives.append(CandidateList(selection, index, tuple(candidates), applying))
            self.requests.append(alternatives)

    def min_devices(self) -> int:
        """Devices the claim takes at least: each request's smallest alternative."""
        return sum(min((a.need for a in alternatives), default=0) for alternatives in self.requests)

    def device_limit_problem(self) -> str | None:
        """Why the claim always exceeds the 32-device limit, or None."""
        if self.min_devices() <= MAX_DEVICES_PER_CLAIM:
            return None
        return (
            f"number of requested devices {self.min_devices()} exceeds the claim limit of "
            f"{MAX_DEVICES_PER_CLAIM}"
        )

    def all_mode_misfit(self, alternative: CandidateList, constraint: int) -> int | None:
        """The position of a device that makes ``allocationMode: All`` break ``constraint``, or None.

        All takes every matching device, and upstream adds each with ``must`` set (``allocateDevice`` in
        allocator_stable.go): a device the constraint rejects aborts the whole claim ("cannot add device
        ... because a claim constraint would not be satisfied"). The device named is the first without
        the attribute, else the first whose value differs from the first device's.
        """
        values = self.values[constraint]
        positions = alternative.candidates
        missing = next((p for p in positions if values[p] is None), None)
        if missing is not None or not positions:
            return missing
        first = values[positions[0]]
        return next((p for p in positions if values[p] != first), None)
