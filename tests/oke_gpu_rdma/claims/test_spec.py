"""API validation of claims: each v1 limit and rule gives a message naming the request or constraint."""

from __future__ import annotations

from typing import Any

import pytest

from oke_gpu_rdma.claims.spec import parse_claim, unwrap_claim
from oke_gpu_rdma.common.errors import ClaimValidationError
from tests.fixtures import seed000
from tests.oke_gpu_rdma.claims.claim_strategies import claim_problems, problems_at, req, spec


def one_problem(claim: dict[str, Any]) -> str:
    problems = claim_problems(claim)
    assert len(problems) == 1, problems
    return problems[0]


def test_seed_claims_are_valid_and_unwrapped() -> None:
    for name, claim in seed000.claims().items():
        parsed = parse_claim(claim)
        assert parsed.name == name
    assert unwrap_claim(seed000("all-rails"))[1] == seed000("all-rails")["spec"]["spec"]
    assert unwrap_claim(seed000("pair-check"))[1] == seed000("pair-check")["spec"]
    assert parse_claim(seed000("pair-check")["spec"]).name == "claim"


def test_defaults_count_one_and_exact_count() -> None:
    parsed = parse_claim(spec(req("rails")))
    sel = parsed.requests[0].alternatives[0]
    assert (sel.mode, sel.count) == ("ExactCount", 1)


def test_request_limit() -> None:
    assert (
        one_problem(spec(*[req(f"r{i}") for i in range(33)])) == "claim claim: 33 requests; the limit is 32"
    )


def test_constraint_limit() -> None:
    cons = [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}] * 33
    assert "33 constraints; the limit is 32" in one_problem(spec(req("rails"), constraints=cons))


def test_selector_limit() -> None:
    sels = [{"cel": {"expression": "true"}}] * 33
    assert (
        one_problem(spec(req("rails", selectors=sels)))
        == "claim claim: request rails: 33 selectors; the limit is 32"
    )


def test_subrequest_limit() -> None:
    subs = [{"name": f"s{i}", "deviceClassName": "dra.net"} for i in range(9)]
    message = one_problem(spec({"name": "rails", "firstAvailable": subs}))
    assert message == "claim claim: request rails: 9 subrequests in firstAvailable; the limit is 8"


def test_cel_length_limit() -> None:
    long = "true && " * 1300 + "true"
    message = one_problem(spec(req("rails", selectors=[{"cel": {"expression": long}}])))
    assert message.startswith("claim claim: request rails: selector #0: CEL expression is 10404 characters")
    assert "10240 (10 Ki)" in message


def test_cel_compile_error_is_invalid_and_quotes_the_expression() -> None:
    message = one_problem(spec(req("rails", selectors=[{"cel": {"expression": "device.driver =="}}])))
    assert "request rails: selector #0: CEL compile error in selector 'device.driver =='" in message


@pytest.mark.parametrize("name", ["Rails", "rails_1", "-rails", "r" * 64])
def test_request_names_are_dns_labels(name: str) -> None:
    assert "must be a DNS label" in one_problem(spec(req(name)))


def test_duplicate_request_names() -> None:
    assert (
        one_problem(spec(req("rails"), req("rails"))) == "claim claim: request rails: duplicate request name"
    )


def test_exactly_xor_first_available() -> None:
    assert "exactly one of `exactly` or `firstAvailable` is required" in one_problem(spec({"name": "rails"}))
    both = {
        "name": "rails",
        "exactly": {"deviceClassName": "dra.net"},
        "firstAvailable": [{"name": "a", "deviceClassName": "dra.net"}],
    }
    assert "but both are set" in one_problem(spec(both))


def test_device_class_required() -> None:
    assert (
        one_problem(spec({"name": "rails", "exactly": {}}))
        == "claim claim: request rails: deviceClassName is required"
    )


def test_count_rules() -> None:
    """validation.go validateDeviceAllocationMode; v1/defaults.go SetDefaults_ExactDeviceRequest."""
    assert "count must be greater than zero (got -1)" in one_problem(spec(req("rails", count=-1)))
    # Defaulting runs before validation: ExactCount with count 0 (the unset value) gets 1.
    assert parse_claim(spec(req("rails", count=0))).requests[0].alternatives[0].count == 1
    assert "count must not be specified when allocationMode is 'All'" in one_problem(
        spec(req("rails", allocationMode="All", count=2))
    )
    assert "allocationMode 'Some' is not supported" in one_problem(spec(req("rails", allocationMode="Some")))


def test_match_attribute_needs_a_domain() -> None:
    message = one_problem(
        spec(req("gpus", "gpu.nvidia.com"), req("rails"), constraints=[{"matchAttribute": "pcieRoot"}])
    )
    assert message == (
        "claim claim: constraint #0: matchAttribute 'pcieRoot' must be fully qualified as domain/name, "
        "e.g. resource.kubernetes.io/pcieRoot"
    )


def test_match_attribute_required() -> None:
    assert one_problem(spec(req("rails"), constraints=[{"requests": ["rails"]}])) == (
        "claim claim: constraint #0: matchAttribute is required"
    )


def test_constraint_request_names_must_exist() -> None:
    message = one_problem(
        spec(
            req("gpus"), req("rails"), constraints=[{"requests": ["gpus", "nics"], "matchAttribute": "a.b/c"}]
        )
    )
    assert message == (
        "claim claim: constraint #0: 'nics' must be the name of a request in the claim or request/subrequest "
        "(requests: gpus, rails)"
    )


def test_constraint_may_name_a_subrequest() -> None:
    first = {"name": "rails", "firstAvailable": [{"name": "four", "deviceClassName": "dra.net", "count": 4}]}
    parsed = parse_claim(spec(first, constraints=[{"requests": ["rails/four"], "matchAttribute": "a.b/c"}]))
    assert parsed.constraints[0].requests == ("rails/four",)


def test_all_problems_are_reported_and_the_exception_is_one_line() -> None:
    with pytest.raises(ClaimValidationError) as info:
        parse_claim(spec(req("Bad", count=-2), constraints=[{"matchAttribute": "x"}]))
    assert len(info.value.problems) == 3
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


def test_all_mode_with_count_zero_is_valid() -> None:
    """validation.go validateDeviceAllocationMode: All forbids a count other than 0 (the unset value)."""
    assert claim_problems(spec(req("rails", allocationMode="All", count=0))) == []


def test_selector_type_errors_are_invalid_at_admission() -> None:
    """validation.go validateCELExpression -> cel/compile.go: compile errors and non-bool types."""
    assert "must evaluate to bool" in one_problem(
        spec(req("rails", selectors=[{"cel": {"expression": "device.driver"}}]))
    )
    cap = 'device.capacity["gpu.nvidia.com"].memory > 1'
    assert "no matching overload" in one_problem(spec(req("rails", selectors=[{"cel": {"expression": cap}}])))


def test_match_attribute_domain_is_lower_cased_before_it_is_checked() -> None:
    """kubernetes validation.go: the domain goes through ValidateCSIDriverName, which checks
    IsDNS1123Subdomain(strings.ToLower(name)): a capitalised domain is valid, an underscore is not."""
    claim = spec(
        req("gpus", "gpu.nvidia.com"),
        req("rails"),
        constraints=[{"matchAttribute": "Resource.kubernetes.io/pcieRoot"}],
    )
    assert claim_problems(claim) == []
    assert one_problem(spec(req("rails"), constraints=[{"matchAttribute": "Bad_Domain.io/pcieRoot"}])) == (
        "claim claim: constraint #0: matchAttribute 'Bad_Domain.io/pcieRoot': domain 'Bad_Domain.io' "
        "must be a DNS subdomain of at most 63 characters"
    )


# -- issue 22 item 3: device tolerations as upstream validates them ---------------------------------------


@pytest.mark.parametrize(
    ("toleration", "problem"),
    [
        ({"key": "example.com/a", "operator": "Exists", "effect": "NoSchedule"}, None),
        ({"key": "a", "value": "b"}, None),  # operator defaults to Equal (k8s.io/api/resource/v1)
        ({"operator": "Exists"}, None),  # an empty key with Exists tolerates every taint
        ({"key": "a", "operator": "Equal", "value": "", "effect": "None"}, None),
        ({"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}, None),
        ({"key": "a", "operator": "Exists", "value": "b"}, "value 'b': must be empty for operator `Exists`"),
        ({"key": "a", "operator": "Equal", "value": "-b"}, "value '-b': a label value must be at most 63"),
        ({"key": "a", "value": "x" * 64}, "a label value must be at most 63 characters"),
        (
            {"key": "a", "operator": "In"},
            'operator \'In\': Unsupported value; supported values: "Equal", "Exists"',
        ),
        ({"key": "a_", "operator": "Exists"}, "key 'a_': its name must be at most 63 characters"),
        (
            {"key": "Example.com/a", "operator": "Exists"},
            "key 'Example.com/a': its prefix must be a DNS subdomain",
        ),
        (
            {"key": "a", "operator": "Exists", "effect": "PreferNoSchedule"},
            'effect \'PreferNoSchedule\': Unsupported value; supported values: "NoExecute", "NoSchedule", "None"',
        ),
        (
            {"key": "a", "operator": "Exists", "tolerationSeconds": "30"},
            "tolerationSeconds must be an integer",
        ),
    ],
)
def test_device_tolerations_are_validated_as_validate_device_toleration_does(toleration, problem) -> None:
    for claim in (
        spec(req("rails", tolerations=[toleration])),
        spec(
            {
                "name": "r",
                "firstAvailable": [{"name": "s", "deviceClassName": "dra.net", "tolerations": [toleration]}],
            }
        ),
    ):
        found = problems_at(claim, "v1.36.4")
        if problem is None:
            assert found == []
        else:
            (only,) = found
            assert problem in only and "tolerations[0]" in only, only
