"""sriov-vf-pool-range: the VF pool against the address plan and the DRANET child range."""

from __future__ import annotations

import pytest

from tests.fixtures import seed001
from tests.policies.policy_helpers import (
    analyze,
    dranet_release,
    k8s,
    seed_plan,
    violations,
)

POLICY = "sriov-vf-pool-range"


def pool(subnet):
    obj = seed001("ip-pool")
    obj["spec"]["subnet"] = subnet
    return k8s(obj)


def test_the_seeds_pool_passes():
    assert violations(analyze([*seed_plan(), dranet_release(), k8s(seed001("ip-pool"))]), POLICY) == []


@pytest.mark.parametrize(
    ("subnet", "hit"),
    [
        ("10.140.0.0/20", "VCN vcn (oci:Core/vcn:Vcn) 10.140.0.0/16"),
        ("10.240.0.0/16", "cluster oke pods CIDR (options.kubernetesNetworkConfig.podsCidr"),
        ("10.224.0.0/16", "the OCA RDMA network (pack config ocaRdmaNetwork) 10.224.0.0/12"),
        ("10.208.0.0/16", "DRANET Release dranet's child range (its default) 10.208.0.0/12"),
    ],
)
def test_overlaps_are_rejected(subnet, hit):
    found = violations(analyze([*seed_plan(), dranet_release(), pool(subnet)]), POLICY)
    assert any(f"VF pool {subnet} overlaps {hit}" in v.message for v in found), [v.message for v in found]
    assert all(v.message.startswith("IPPool nvidia-network-operator/sriov-pool: ") for v in found)


def test_pack_config_ranges_and_bad_cidr():
    config = {POLICY: {"existingCidrs": [{"name": "peered VCN", "cidr": "192.168.128.0/17"}]}}
    (v,) = violations(analyze([k8s(seed001("ip-pool"))], config), POLICY)
    assert "overlaps peered VCN (pack config existingCidrs) 192.168.128.0/17" in v.message
    (v,) = violations(analyze([pool("192.168.0.1/16")]), POLICY)
    assert "host bits set" in v.message
