"""sriov-network-references: networks name a provided resource and an existing IPPool."""

from __future__ import annotations

import copy

from tests.fixtures import seed001
from tests.policies.policy_helpers import (
    analyze,
    k8s,
    misspelt_network,
    notes,
    seed_sriov_final,
    violations,
)

POLICY = "sriov-network-references"


def test_the_seeds_final_design_passes():
    assert violations(analyze(seed_sriov_final()), POLICY) == []


def test_a_misspelt_resource_name_is_rejected():
    networks = [*seed001.all("sriov-networks-per-rail")]
    networks[3] = misspelt_network(3, "rdma-vf3")
    (v,) = violations(analyze(seed_sriov_final(networks=networks)), POLICY)
    assert v.message.startswith(
        "SriovNetwork nvidia-network-operator/rdma-vf-3: spec.resourceName 'rdma-vf3' is provided by no "
        "SriovNetworkNodePolicy of the stack (did you mean rdma-vf-3?)"
    )
    assert "stays Pending" in v.message


def test_a_missing_ip_pool_is_rejected():
    network = copy.deepcopy(seed001.all("sriov-networks-per-rail")[0])
    network["spec"]["ipam"] = network["spec"]["ipam"].replace("sriov-pool", "sriov-pol")
    (v,) = violations(analyze(seed_sriov_final(networks=[network])), POLICY)
    assert (
        "spec.ipam names nv-ipam pool 'sriov-pol', which is no IPPool of the stack (did you mean sriov-pool?)"
        in (v.message)
    )


def test_without_node_policies_or_pools_it_is_a_note():
    findings = analyze([k8s(seed001("sriov-network-shared"))])
    assert violations(findings, POLICY) == []
    (note,) = notes(findings, POLICY)
    assert "no SriovNetworkNodePolicy in the stack" in note.message
