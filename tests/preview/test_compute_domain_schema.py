"""ComputeDomains against the NVIDIA DRA driver's CRD schema at the pinned commit (preview/schema_check.py,
oke_gpu_rdma/drivers/compute_domain_crd_schemas.json): what the API server refuses on create fails the preview, naming the
field; the CRD's one CEL rule (spec immutable, `self == oldSelf`) is a transition rule, counted and never
evaluated on a create."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from oke_gpu_rdma.common import crd_schemas
from oke_gpu_rdma.drivers import compute_domains
from preview import schema_check

KUBERNETES = "v1.36.4"
PROVENANCE = "https://github.com/kubernetes-sigs/dra-driver-nvidia-gpu commit 959320466837 CRDs"


def domain(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": compute_domains.API_VERSION,
        "kind": compute_domains.KIND,
        "metadata": {"name": "x", "namespace": "training"},
        "spec": spec,
    }


VALID: dict[str, Any] = {
    "numNodes": 0,
    "channel": {"resourceClaimTemplate": {"name": "x"}, "allocationMode": "Single"},
}


def test_the_schema_found_for_a_compute_domain_is_the_driver_s() -> None:
    found = crd_schemas.find(compute_domains.API_VERSION, compute_domains.KIND)
    assert found is not None and found[0] is crd_schemas.COMPUTE_DOMAINS
    assert crd_schemas.find("resource.nvidia.com/v1beta2", compute_domains.KIND) is None


def test_a_valid_compute_domain_passes_and_its_transition_rule_does_not_refuse_the_create() -> None:
    report = schema_check.check([domain(VALID)], KUBERNETES)
    assert report.errors == []
    assert report.crd_validated == {PROVENANCE: 1}
    assert (report.validated, report.unvalidated) == (0, {})
    # spec's `self == oldSelf`: only an update evaluates it (there is no oldSelf on a create).
    assert report.transition_rules == 1
    assert report.lines()[1:] == [
        f"  1 custom resource(s) valid against {PROVENANCE} (strict, with their CEL rules)",
        "  1 update-only CEL rule(s) of those CRDs not evaluated on a create",
    ]


def test_the_defaults_may_be_left_to_the_api_server() -> None:
    """numNodes (default 0) and allocationMode (default Single) are optional; the channel template is not."""
    report = schema_check.check([domain({"channel": {"resourceClaimTemplate": {"name": "x"}}})], KUBERNETES)
    assert report.errors == []


def test_the_project_s_own_compute_domain_passes() -> None:
    for mode in compute_domains.ALLOCATION_MODES:
        report = schema_check.check([compute_domains.manifest("job", "training", mode)], KUBERNETES)
        assert report.errors == [], mode


def bad(change: str) -> dict[str, Any]:
    spec = copy.deepcopy(VALID)
    if change == "allocationMode Many":
        spec["channel"]["allocationMode"] = "Many"
    elif change == "no channel":
        del spec["channel"]
    elif change == "negative numNodes":
        spec["numNodes"] = -1
    elif change == "no template name":
        spec["channel"]["resourceClaimTemplate"] = {}
    elif change == "misspelt field":
        spec["numNode"] = 2
    return domain(spec)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("allocationMode Many", ".spec.channel.allocationMode: 'Many' is not one of ['All', 'Single']"),
        ("no channel", ".spec: 'channel' is a required property"),
        ("negative numNodes", ".spec.numNodes: -1 is less than the minimum of 0"),
        ("no template name", ".spec.channel.resourceClaimTemplate: 'name' is a required property"),
        ("misspelt field", ".spec: Additional properties are not allowed ('numNode' was unexpected)"),
    ],
)
def test_what_the_api_server_refuses_fails_naming_the_field(change: str, expected: str) -> None:
    report = schema_check.check([bad(change)], KUBERNETES)
    assert report.errors == [f"resource.nvidia.com/v1beta1/ComputeDomain training/x: {expected}"]
    assert report.crd_validated == {}
    assert report.lines()[0].startswith("Schemas: 1 manifest(s) invalid")
