"""dranet-oke-profile-claims: dra.net opaque config the oke-rdma profile rejects (a resource policy)."""

from __future__ import annotations

import copy

import pytest

from tests.fixtures import seed000
from tests.policies.policy_helpers import (
    UNKNOWN,
    analyze,
    k8s,
    notes,
    violations,
)

POLICY = "dranet-oke-profile-claims"


def with_config(interface, driver="dra.net", requests=None, claim=None):
    claim = copy.deepcopy(claim or seed000("all-rails"))
    entry = {"opaque": {"driver": driver, "parameters": {"interface": interface}}}
    if requests is not None:
        entry["requests"] = requests
    claim["spec"]["spec"]["devices"]["config"] = [entry]
    return k8s(claim)


@pytest.mark.parametrize(
    ("interface", "text"),
    [
        ({"type": "Passthrough"}, "type: Passthrough"),
        ({"addressing": "DHCP"}, "addressing: DHCP"),
        ({"addressing": "Unnumbered"}, "addressing: Unnumbered"),
        ({"dhcp": True}, "dhcp: true"),
        ({"addresses": ["10.208.2.66/12"]}, "addresses: [10.208.2.66/12]"),
    ],
)
def test_rejected_settings(interface, text):
    (v,) = violations(analyze([with_config(interface)]), POLICY)
    assert v.level == "mandatory" and v.urn.endswith("::all-rails")
    assert "ResourceClaimTemplate rdma-dranet/all-rails" in v.message
    assert f"spec.spec.devices.config[0].opaque.parameters.interface.{text}" in v.message
    assert "Fix: remove" in v.message


def test_fine_settings_and_other_drivers_pass():
    assert violations(analyze([with_config({"type": "IPVLAN", "mtu": 9000})]), POLICY) == []
    assert violations(analyze([with_config({"type": "Passthrough"}, driver="gpu.nvidia.com")]), POLICY) == []


def test_config_only_for_gpu_requests_is_ignored():
    claim = with_config({"type": "Passthrough"}, requests=["gpus"], claim=_template(seed000("pair-check")))
    assert violations(analyze([claim]), POLICY) == []
    claim = with_config({"type": "Passthrough"}, requests=["rails"], claim=_template(seed000("pair-check")))
    assert len(violations(analyze([claim]), POLICY)) == 1


def _template(claim):
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": dict(claim["metadata"]),
        "spec": {"spec": copy.deepcopy(claim["spec"])},
    }


def test_unknown_parameters_are_a_note_wrong_types_a_violation():
    findings = analyze([with_config(UNKNOWN)])
    assert violations(findings, POLICY) == [] and len(notes(findings, POLICY)) == 1
    (v,) = violations(analyze([with_config(["Passthrough"])]), POLICY)
    assert "interface must be an object, got a list" in v.message


# -- issue 11 item 8: claim config for a driver applies only where the claim allocates its devices -----


def test_dra_net_config_on_a_gpu_only_claim_reaches_no_dranet_device():
    """DeviceClaimConfiguration.requests (k8s.io/api resource/v1): none named means every request; the
    kubelet gives a driver only its own config for its own devices. A GPU-only claim has no DRANET device."""
    gpus_only = seed000("all-rails")
    gpus_only["metadata"]["name"] = "gpus-only"
    gpus_only["spec"]["spec"]["devices"]["requests"] = [
        {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}
    ]
    assert violations(analyze([with_config({"type": "Passthrough"}, claim=gpus_only)]), POLICY) == []
    # Failing variant: the same config on a claim with rails.
    assert len(violations(analyze([with_config({"type": "Passthrough"})]), POLICY)) == 1
