"""sriov-rdma-cni-mode: the RDMA CNI exactly when the nodes run the exclusive RDMA mode (seed 001)."""

from __future__ import annotations

from tests.fixtures import seed001
from tests.policies.policy_helpers import (
    analyze,
    notes,
    seed_sriov_final,
    violations,
)

POLICY = "sriov-rdma-cni-mode"


def exclusive_networks(network):
    out = []
    for per_rail in seed001.all("sriov-networks-per-rail"):
        n = {**per_rail, "spec": {**per_rail["spec"], "metaPlugins": network["spec"]["metaPlugins"]}}
        out.append(n)
    return out


def test_shared_mode_without_the_cni_and_exclusive_mode_with_it_pass():
    assert violations(analyze(seed_sriov_final(netns_mode=1)), POLICY) == []
    qos = exclusive_networks(seed001("sriov-network-exclusive-qos"))
    assert violations(analyze(seed_sriov_final(netns_mode=0, networks=qos)), POLICY) == []


def test_rdma_cni_on_shared_nodes_is_rejected():
    qos = exclusive_networks(seed001("sriov-network-exclusive-qos"))
    found = violations(analyze(seed_sriov_final(netns_mode=1, networks=qos)), POLICY)
    assert len(found) == 16
    v = found[0]
    assert "chains the RDMA CNI (type rdma in spec.metaPlugins)" in v.message
    assert "node pool gpu-b4-vf (BM.GPU.B4.8), whose nodes run the shared RDMA namespace mode" in v.message
    assert "pods stay in ContainerCreating" in v.message
    assert "stack config networkOperator.rdmaMode: exclusive" in v.message


def test_exclusive_nodes_without_the_cni_are_rejected():
    (v, *rest) = violations(analyze(seed_sriov_final(netns_mode=0)), POLICY)
    assert len(rest) == 15
    assert "has no RDMA CNI in spec.metaPlugins" in v.message
    assert "0 RDMA devices (seed 001)" in v.message


def test_without_pools_it_is_a_note():
    resources = seed_sriov_final()[1:]
    findings = analyze(resources)
    assert violations(findings, POLICY) == [] and len(notes(findings, POLICY)) == 1
