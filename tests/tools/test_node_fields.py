"""oke_gpu_rdma/common/node_fields.json is what tools/node_fields.py writes from the pinned kubernetes-validate."""

from __future__ import annotations

import pytest

from oke_gpu_rdma.common import admission_cel
from tools import node_fields


def test_the_node_fields_are_current() -> None:
    assert admission_cel.NODE_FIELDS_FILE.read_text() == node_fields.render(), (
        "oke_gpu_rdma/common/node_fields.json is stale: run venv/bin/python -m tools.node_fields"
    )


def test_each_minor_gets_its_own_servers_fields() -> None:
    # 1.37 serves spec.podPreemptionPolicy; a 1.36 API server would not compile a policy naming it.
    assert "podPreemptionPolicy" not in admission_cel.node_fields(36)["spec"]
    assert "podPreemptionPolicy" in admission_cel.node_fields(37)["spec"]
    assert "declaredFeatures" not in admission_cel.node_fields(34)["status"]
    assert admission_cel.node_fields(40) == admission_cel.node_fields(37)  # the newest known
    with pytest.raises(ValueError, match=r"lists no Kubernetes minor up to 1\.20"):
        admission_cel.node_fields(20)


def test_a_policy_names_only_fields_the_server_serves() -> None:
    expr = admission_cel.node_unchanged_but(36, "spec.taints")
    assert "podPreemptionPolicy" not in expr and "object.metadata.ownerReferences" in expr
    assert "spec.taints" not in expr and "metadata.managedFields" not in expr
    with pytest.raises(ValueError, match="not Node fields"):
        admission_cel.node_unchanged_but(36, "spec.podPreemptionPolicy")
