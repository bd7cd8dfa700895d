"""The API versions a claim is written in (v1, v1beta2, v1beta1) and the conversion to the v1 form."""

from __future__ import annotations

from oke_gpu_rdma.claims.spec import claim_spec_to_v1, parse_claim
from tests.fixtures import seed000
from tests.oke_gpu_rdma.claims.claim_strategies import claim_problems

# -- issue 11 item 4: the API server decides "invalid", per API version ----------------------------

V1BETA1_FLAT = {
    "apiVersion": "resource.k8s.io/v1beta1",
    "kind": "ResourceClaim",
    "metadata": {"name": "flat"},
    "spec": {"devices": {"requests": [{"name": "gpus", "deviceClassName": "gpu.nvidia.com", "count": 2}]}},
}


def test_v1beta1_flat_request_is_valid_and_converted() -> None:
    """k8s.io/api/resource/v1beta1 DeviceRequest carries deviceClassName/count itself."""
    parsed = parse_claim(V1BETA1_FLAT)
    assert parsed.api_version == "resource.k8s.io/v1beta1"
    assert parsed.requests[0].alternatives[0].count == 2
    converted = claim_spec_to_v1(V1BETA1_FLAT["spec"], "resource.k8s.io/v1beta1")
    assert converted["devices"]["requests"][0] == {
        "name": "gpus",
        "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2},
    }


def test_v1beta1_claim_written_with_exactly_is_rejected() -> None:
    """v1beta1 has no `exactly` (it came with v1beta2 and v1): the API server rejects the field."""
    claim = {**seed000("pair-check"), "apiVersion": "resource.k8s.io/v1beta1"}
    problems = claim_problems(claim)
    assert problems and all("unknown field `exactly` in resource.k8s.io/v1beta1" in p for p in problems)
    assert claim_problems(seed000("pair-check")) == []  # the same claim as v1 is valid
    assert claim_problems(seed000("pair-check"), api_version="resource.k8s.io/v1beta2") == []


def test_v1_claim_with_v1beta1_fields_is_rejected() -> None:
    as_v1 = {**V1BETA1_FLAT, "apiVersion": "resource.k8s.io/v1"}
    problems = claim_problems(as_v1)
    assert any("belong under 'exactly' in resource.k8s.io/v1 and v1beta2" in p for p in problems)
    assert any("exactly one of `exactly` or `firstAvailable` is required" in p for p in problems)


def test_v1beta1_defaulting_of_count() -> None:
    """pkg/apis/resource/v1beta1/defaults.go SetDefaults_DeviceRequest: count 0 -> 1 when a class is set."""
    claim = {"devices": {"requests": [{"name": "g", "deviceClassName": "gpu.nvidia.com", "count": 0}]}}
    assert parse_claim(claim, api_version="resource.k8s.io/v1beta1").requests[0].alternatives[0].count == 1


def test_unserved_api_version() -> None:
    (problem,) = claim_problems({"apiVersion": "resource.k8s.io/v2", "devices": {"requests": []}})
    assert "is not served" in problem
