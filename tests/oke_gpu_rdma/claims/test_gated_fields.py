"""Claim fields judged at the cluster's release: what the API server drops where a feature gate is off."""

from __future__ import annotations

from oke_gpu_rdma.claims.spec import parse_claim
from tests.oke_gpu_rdma.claims.claim_strategies import problems_at, req, spec

# -- issue 22 item 3: fields judged at the cluster's release (feature gates) ---------------------------------


DISTINCT = spec(
    req("rails", count=2),
    constraints=[{"requests": ["rails"], "distinctAttribute": "resource.kubernetes.io/pcieRoot"}],
)


def test_distinct_attribute_is_served_from_v1_36_and_dropped_before() -> None:
    """DRAConsumableCapacity: alpha (off) in v1.34 and v1.35, beta and on in v1.36 (kube_features.go);
    pkg/api/resourceclaimspec/util.go drops distinctAttribute where the gate is off."""
    assert problems_at(DISTINCT, "v1.36.4") == []
    parsed = parse_claim(DISTINCT, kubernetes_version="v1.36.4")
    assert parsed.constraints == () and parsed.unevaluated == ()
    assert [(c.requests, c.attribute) for c in parsed.distinct] == [
        (("rails",), "resource.kubernetes.io/pcieRoot")
    ]
    assert problems_at(DISTINCT, "v1.35.2") == [
        "claim claim: constraint #0: distinctAttribute is dropped by the API server: feature gate "
        "DRAConsumableCapacity is alpha and off at v1.35; on from v1.36; the constraint is left without an "
        "attribute",
        "claim claim: constraint #0: matchAttribute is required",
    ]
    bad = spec(req("rails"), constraints=[{"distinctAttribute": "pcieRoot"}])
    assert problems_at(bad, "v1.36.0") == [
        "claim claim: constraint #0: distinctAttribute 'pcieRoot' must be fully qualified as domain/name, "
        "e.g. resource.kubernetes.io/pcieRoot"
    ]
    both = spec(req("rails"), constraints=[{"matchAttribute": "a.b/c", "distinctAttribute": "a.b/c"}])
    assert "exactly one of matchAttribute or distinctAttribute" in problems_at(both, "v1.36.0")[0]


def test_tolerations_are_served_from_v1_36_and_dropped_before() -> None:
    """DRADeviceTaints: alpha (off) until v1.35, beta and on in v1.36."""
    claim = spec(req("rails", tolerations=[{"key": "example.com/maintenance", "operator": "Exists"}]))
    assert problems_at(claim, "v1.36.4") == []
    (problem,) = problems_at(claim, "v1.35.2")
    assert (
        "request rails: tolerations is dropped by the API server: feature gate DRADeviceTaints is alpha"
        in problem
    )


def test_first_available_and_admin_access_at_their_gates() -> None:
    """DRAPrioritizedList and DRAAdminAccess are beta and on from v1.34 (alpha and off in v1.33)."""
    first = spec({"name": "gpu", "firstAvailable": [{"name": "one", "deviceClassName": "gpu.nvidia.com"}]})
    assert problems_at(first, "v1.34.0") == []
    problems = problems_at(first, "v1.33.5")
    assert (
        "firstAvailable is dropped by the API server: feature gate DRAPrioritizedList is alpha and off"
        in problems[0]
    )
    assert "exactly one of `exactly` or `firstAvailable` is required" in problems[1]
    admin = spec(req("rails", adminAccess=True))
    assert problems_at(admin, "v1.34.0") == []
    assert "adminAccess is dropped" in problems_at(admin, "v1.33.0")[0]
    assert problems_at(admin, "1.x") == ["Kubernetes version '1.x' is not of the form v1.36.4"]
