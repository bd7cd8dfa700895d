"""health-taint-tolerations: no claim or claim template tolerates the taints that take bad GPUs and rails out
of scheduling (a resource policy)."""

from __future__ import annotations

import pytest

from oke_gpu_rdma.drivers import nvidia_gpu
from oke_gpu_rdma.health import health_marks as health
from tests.fixtures import seed000
from tests.policies.policy_helpers import UNKNOWN, analyze, k8s, notes, tolerating_health_taints, violations

POLICY = "health-taint-tolerations"


def test_the_seeds_claims_tolerate_nothing_and_pass():
    claims = [k8s(seed000(name)) for name in seed000.claims()]
    assert violations(analyze(claims), POLICY) == []


def test_a_template_tolerating_the_rail_mark_is_flagged():
    (v,) = violations(analyze([k8s(tolerating_health_taints())]), POLICY)
    assert v.level == "mandatory" and v.urn.endswith("::rails-despite-health")
    assert v.message == (
        "ResourceClaimTemplate rdma-dranet/rails-despite-health: spec.spec.devices.requests[0].exactly.tolerations[0] "
        "tolerates the health taint oke-gpu-rdma/rail-unhealthy, so a GPU or rail marked bad "
        f"({', '.join(health.HEALTH_TAINT_KEYS)}) is given to this claim again: a bad device stays out of new "
        "claims only while no claim tolerates its taint (effect NoSchedule: pods already holding it keep "
        "running). Fix: remove the toleration; to use a marked device on purpose (a diagnostic), create a claim "
        "for it by hand outside the stack"
    )


@pytest.mark.parametrize(
    ("toleration", "key"),
    [
        ({"key": nvidia_gpu.TAINT_KEY_XID, "operator": "Equal", "value": "79"}, "gpu.nvidia.com/xid"),
        ({"key": nvidia_gpu.TAINT_KEY_GPU_LOST, "operator": "Exists"}, "gpu.nvidia.com/gpu-lost"),
        ({"operator": "Exists"}, "every key (operator Exists with no key)"),
        ({"operator": "Exists", "effect": "NoSchedule"}, "every key (operator Exists with no key)"),
    ],
)
def test_the_gpu_drivers_keys_and_a_keyless_exists_are_flagged(toleration, key):
    (v,) = violations(analyze([k8s(tolerating_health_taints(toleration))]), POLICY)
    assert f"tolerates the health taint {key}, so" in v.message


@pytest.mark.parametrize(
    "toleration",
    [
        {"key": "example.com/maintenance", "operator": "Exists"},
        # A toleration of one effect matches only taints of that effect: the health marks are NoSchedule.
        {"operator": "Exists", "effect": "NoExecute"},
        {"key": "oke-gpu-rdma/rail-unhealthy", "operator": "Exists", "effect": "NoExecute"},
    ],
)
def test_tolerations_that_match_no_health_mark_pass(toleration):
    assert violations(analyze([k8s(tolerating_health_taints(toleration))]), POLICY) == []


def test_a_claim_and_a_first_available_subrequest_are_read_too():
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "one-gpu", "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "firstAvailable": [
                            {"name": "any", "deviceClassName": "gpu.nvidia.com"},
                            {
                                "name": "tainted-ok",
                                "deviceClassName": "gpu.nvidia.com",
                                "tolerations": [{"key": "gpu.nvidia.com/xid", "operator": "Exists"}],
                            },
                        ],
                    }
                ]
            }
        },
    }
    (v,) = violations(analyze([k8s(claim)]), POLICY)
    assert v.message.startswith(
        "ResourceClaim default/one-gpu: spec.devices.requests[0].firstAvailable[1].tolerations[0] tolerates the "
        "health taint gpu.nvidia.com/xid"
    )


def test_unknown_tolerations_are_reported_not_checked():
    claim = tolerating_health_taints()
    claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = UNKNOWN
    found = analyze([k8s(claim)])
    assert violations(found, POLICY) == []
    (note,) = notes(found, POLICY)
    assert "spec.spec.devices.requests[0].exactly.tolerations unknown until apply" in note.message
