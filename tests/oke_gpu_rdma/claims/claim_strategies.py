"""Claim builders, the API server's problems with a claim, and a hypothesis strategy of small random claims,
shared by the claim tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from oke_gpu_rdma.claims.spec import parse_claim
from oke_gpu_rdma.common.errors import ClaimValidationError
from oke_gpu_rdma.drivers import attributes as attr
from oke_gpu_rdma.drivers import dranet

RAIL = [{"cel": {"expression": dranet.RAIL_SELECTOR}}]


def gpus(name: str, count: int | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": "gpu.nvidia.com", **extra}
    if count is not None:
        body["count"] = count
    return {"name": name, "exactly": body}


def rails(name: str, count: int | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": "dra.net", "selectors": RAIL, **extra}
    if count is not None:
        body["count"] = count
    return {"name": name, "exactly": body}


def req(name: str, cls: str = "dra.net", **exactly: Any) -> dict[str, Any]:
    """An `exactly` request of class ``cls`` with the given fields."""
    return {"name": name, "exactly": {"deviceClassName": cls, **exactly}}


def spec(*requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A ResourceClaimSpec of ``requests`` (and ``constraints``, when given)."""
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints is not None:
        devices["constraints"] = constraints
    return {"devices": devices}


def claim_problems(claim: dict[str, Any], api_version: str | None = None) -> list[str]:
    """Every problem the API server would report (empty when the claim is valid)."""
    try:
        parse_claim(claim, api_version=api_version)
    except ClaimValidationError as exc:
        return list(exc.problems)
    return []


def problems_at(claim: dict[str, Any], version: str) -> list[str]:
    """Every problem the API server of Kubernetes ``version`` would report."""
    try:
        parse_claim(claim, kubernetes_version=version)
    except ClaimValidationError as exc:
        return list(exc.problems)
    return []


@st.composite
def claims(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 4))
    requests = []
    for i in range(n):
        if draw(st.booleans()):
            requests.append(gpus(f"g{i}", draw(st.integers(1, 4))))
        else:
            requests.append(rails(f"r{i}", draw(st.integers(1, 6))))
    names = [r["name"] for r in requests]
    constraints = []
    for _ in range(draw(st.integers(0, 2))):
        members = draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
        attribute = draw(st.sampled_from([attr.PCIE_ROOT, attr.PCIE_ROOT, attr.NUMA_NODE]))
        constraints.append({"requests": members, "matchAttribute": attribute})
    return {"devices": {"requests": requests, "constraints": constraints}}
