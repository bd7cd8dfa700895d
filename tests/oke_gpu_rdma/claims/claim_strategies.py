"""Claim builders and a hypothesis strategy of small random claims, shared by the claim tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from oke_gpu_rdma import attributes as attr
from oke_gpu_rdma.releases import dranet

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
