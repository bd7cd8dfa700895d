"""A validated claim spec as the judge reads it: its requests, their device selections, its constraints.

:func:`oke_gpu_rdma.claims.spec.parse_claim` builds one once the API server's rules accept the claim, in
the v1 form whatever version it was written in."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from oke_gpu_rdma.claims.api_versions import API_V1

AllocationMode = Literal["ExactCount", "All"]


@dataclass(frozen=True)
class DeviceSelection:
    """What one request (``exactly``) or one subrequest asks for. ``name`` is ``req`` or ``req/sub``."""

    name: str
    device_class: str
    selectors: tuple[str, ...]
    mode: AllocationMode
    count: int  # 0 for All

    # Cached: every constraint of a claim asks each selection for its request (32 x 32 times at most).
    @cached_property
    def request(self) -> str:
        return self.name.split("/")[0]

    @cached_property
    def subrequest(self) -> str | None:
        return self.name.split("/")[1] if "/" in self.name else None


@dataclass(frozen=True)
class DeviceRequest:
    """A request: one selection for ``exactly``, the alternatives in order for ``firstAvailable``."""

    name: str
    alternatives: tuple[DeviceSelection, ...]
    first_available: bool = False


@dataclass(frozen=True)
class MatchAttribute:
    """A matchAttribute constraint; empty ``requests`` means all requests of the claim."""

    index: int
    requests: tuple[str, ...]
    attribute: str

    def applies_to(self, selection: DeviceSelection) -> bool:
        return not self.requests or selection.request in self.requests or selection.name in self.requests

    @property
    def label(self) -> str:
        target = "[" + ", ".join(self.requests) + "]" if self.requests else "all requests"
        return f"constraint #{self.index} ({target}, matchAttribute {self.attribute})"


@dataclass(frozen=True)
class ClaimSpec:
    """A validated claim spec. ``unevaluated`` names selectors that are valid but use a Kubernetes CEL
    function this model does not evaluate (see :mod:`oke_gpu_rdma.claims.device_cel`)."""

    name: str
    requests: tuple[DeviceRequest, ...]
    constraints: tuple[MatchAttribute, ...]
    api_version: str = API_V1
    unevaluated: tuple[str, ...] = ()
    distinct: tuple[MatchAttribute, ...] = ()
    """distinctAttribute constraints (served where DRAConsumableCapacity is on): the devices of their
    requests must all have the attribute, each with a value no other of them has."""

    @property
    def request_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.requests)
