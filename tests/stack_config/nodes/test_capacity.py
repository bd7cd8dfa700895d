"""The stack's numbers together: nodes in the cluster, acceptance workers in their pool (stack_config/nodes/capacity.py)."""

from __future__ import annotations

from typing import Any

import pytest

from stack_config.loading import load_stack
from stack_config.problems import ConfigError
from tests.support import EXAMPLE_REGION, raw_config, without_remediation

SOURCE = "stacks/Pulumi.dev.yaml"


def lines(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_stack(raw, SOURCE, EXAMPLE_REGION)
    return [f"{SOURCE}: {p.render()}" for p in caught.value.problems]


def test_more_nodes_than_an_enhanced_cluster_takes_are_refused() -> None:
    raw = raw_config("full")
    raw["nodePools"][0]["count"] = 1000
    raw["nodePools"][1]["count"] = 999
    assert lines(raw) == [
        f"{SOURCE}: nodePools is 2001 nodes in all (with the system pool); an OKE enhanced cluster takes at most "
        "2000 managed nodes (Kubernetes Engine Limits), so lower the counts"
    ]
    raw["nodePools"][1]["count"] = 998
    load_stack(raw, SOURCE, EXAMPLE_REGION)


def test_more_mpi_workers_than_nodes_can_never_pass() -> None:
    raw = without_remediation(raw_config("full"))
    raw["workloads"] = {"acceptanceJobs": {"enabled": True, "workers": 3, "nodePool": "gpu-b4-b"}}
    assert lines(raw) == [
        f"{SOURCE}: workloads.acceptanceJobs.workers = 3: is more than the 2 nodes of pool gpu-b4-b: the MPIJob runs "
        "one worker per node, so the job would wait for nodes forever and `pulumi up` time out; set at most 2, or "
        "add nodes"
    ]
    raw["nodePools"][1]["count"] = 3
    load_stack(raw, SOURCE, EXAMPLE_REGION)
