"""Issue 11 item 10: no crash drops the other policies' findings.

The SDK's AnalyzeStack catches only UnknownValueError (pulumi-policy policy.py): any other exception
leaves the servicer, the CLI gets an error and every policy's findings are lost. Every policy's
validate is built by report.guarded, so a failure is that policy's violation naming the resource.
"""

from __future__ import annotations

from oke_rdma_policies.report import Reporter, guarded, stack_where
from pulumi_policy import StackValidationPolicy

from tests.fixtures import seed000
from tests.policies.policy_helpers import (
    analyze,
    dranet_release,
    k8s,
    of,
    resource,
    seed_plan,
    violations,
)

CHILD = "dranet-child-range"
CLAIMS = "gpu-rail-claims-aligned"

DEVICE_CLASS_NOT_AN_OBJECT = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "broken"},
    "spec": "not an object",
}


def test_device_class_spec_not_an_object_is_one_violation_and_claims_are_still_judged():
    findings = analyze([*seed_plan(), k8s(DEVICE_CLASS_NOT_AN_OBJECT), k8s(seed000("shape-any"))])
    found = violations(findings, CLAIMS)
    assert [v.urn.rsplit("::", 1)[-1] for v in found] == ["broken", "shape-any"]
    assert "DeviceClass broken: spec must be an object, got a string" in found[0].message


def test_cluster_options_not_an_object_names_the_cluster_and_the_child_range_is_still_checked():
    cluster = resource("oci:ContainerEngine/cluster:Cluster", "broken", {"options": ["x"]})
    findings = analyze([*seed_plan(), cluster, dranet_release(child="10.128.0.0/12")])
    found = violations(findings, CHILD)
    assert any(
        v.urn.endswith("::broken") and "options must be an object, got a list" in v.message for v in found
    )
    assert any("overlaps VCN vcn" in v.message for v in found)


def test_absurd_subnet_and_pack_config_prefixes_are_findings_not_crashes():
    """/0 to /3 subnets leave no room for the 4 extra bits 16 rails need (seed 003)."""
    huge = resource("oci:Core/subnet:Subnet", "huge", {"cidrBlock": "0.0.0.0/2"})
    config = {
        CHILD: {"workerSubnetCidrs": ["0.0.0.0/1"], "existingCidrs": [{"name": "all", "cidr": "0.0.0.0/0"}]}
    }
    findings = analyze([*seed_plan(), huge, dranet_release(), k8s(seed000("shape-any"))], config)
    found = violations(findings, CHILD)
    assert any("no IPv4 range holds 16 rails" in v.message and "0.0.0.0/1" in v.message for v in found)
    assert any("overlaps subnet huge" in v.message for v in found)
    assert len(violations(findings, CLAIMS)) == 1  # the other policies still report


def test_an_exception_inside_a_check_is_that_policys_violation_naming_the_resource():
    reported: list[tuple[str, str | None]] = []
    rep = Reporter(lambda message, urn=None: reported.append((message, urn)))
    assert rep.guard("ResourceClaim ns/x", "urn:x", lambda: 1 // 0) is None
    ((message, urn),) = reported
    assert urn == "urn:x" and message.startswith("ResourceClaim ns/x: this policy failed while checking it")
    assert "ZeroDivisionError" in message and "Fix:" in message


def test_guarded_keeps_findings_made_before_the_failure():
    def check(_args, rep):
        rep.violation("first finding", "urn:a")
        rep.unchecked("something unknown")
        raise RuntimeError("boom")

    policy = StackValidationPolicy("p", "d", validate=guarded(check, stack_where))
    reported: list[str] = []
    try:
        policy.validate(None, lambda message, urn=None: reported.append(message))
    except Exception as err:  # the advisory "not checked" line, as the SDK expects
        assert "something unknown" in err.message  # type: ignore[attr-defined]
    assert reported[0] == "first finding" and "RuntimeError: boom" in reported[1]


def test_wrong_typed_claim_and_wrong_typed_cluster_together_leave_every_policy_reporting():
    claim = seed000("shape-any")
    claim["spec"]["spec"] = 7
    cluster = resource("oci:ContainerEngine/cluster:Cluster", "broken", {"options": 3})
    findings = analyze([*seed_plan(), cluster, dranet_release(), k8s(claim), k8s(seed000("shape-root"))])
    assert of(findings, CHILD) and len(violations(findings, CLAIMS)) == 2
