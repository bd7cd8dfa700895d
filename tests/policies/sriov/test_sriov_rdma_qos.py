"""sriov-rdma-qos: the RDMA CNI needs rdmaQoS at the top level of its plugin (seed 001's exclusive networks)."""

from __future__ import annotations

import json

from tests.fixtures import seed001
from tests.policies.policy_helpers import (
    UNKNOWN,
    analyze,
    exclusive_qos_under_args_cni,
    k8s,
    notes,
    violations,
)
from tests.support import meta_plugins

POLICY = "sriov-rdma-qos"


def test_the_seeds_final_exclusive_network_passes():
    assert violations(analyze([k8s(seed001("sriov-network-exclusive-qos"))]), POLICY) == []
    # Shared-mode networks have no RDMA CNI at all: nothing to check here.
    assert violations(analyze([k8s(seed001("sriov-network-shared"))]), POLICY) == []


def test_rdma_qos_missing_is_rejected():
    (v,) = violations(analyze([k8s(seed001("sriov-network-exclusive"))]), POLICY)
    assert v.level == "mandatory" and v.urn.endswith("::rdma-vf")
    assert v.message.startswith(
        "SriovNetwork nvidia-network-operator/rdma-vf: the RDMA CNI at spec.metaPlugins[1] has no rdmaQoS: "
    )
    assert "43.20 to 59.45 Gb/s per rail instead of 96.78 to 96.88" in v.message
    assert 'Fix: put "rdmaQoS": {"tc": 41}' in v.message


def test_rdma_qos_under_args_cni_is_rejected():
    (v,) = violations(analyze([k8s(exclusive_qos_under_args_cni())]), POLICY)
    assert "spec.metaPlugins[1] rdmaQoS is nested under args.cni, where the RDMA CNI ignores it" in v.message
    assert "args.cni holds only debug (k8snetworkplumbingwg/rdma-cni pkg/types/types.go)" in v.message


def test_network_attachment_definitions_are_checked_too():
    plugins = [{"type": "sriov"}, *meta_plugins(seed001("sriov-network-exclusive"))]
    nad = {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": "rdma-vf", "namespace": "default"},
        "spec": {"config": json.dumps({"cniVersion": "1.0.0", "name": "rdma-vf", "plugins": plugins})},
    }
    (v,) = violations(analyze([k8s(nad)]), POLICY)
    assert "the RDMA CNI at spec.config.plugins[2] has no rdmaQoS" in v.message


def test_bad_tc_unparsable_text_unknown_and_wrong_type():
    network = seed001("sriov-network-exclusive-qos")
    network["spec"]["metaPlugins"] = network["spec"]["metaPlugins"].replace('"tc": 41', '"tc": "41"')
    (v,) = violations(analyze([k8s(network)]), POLICY)
    assert "rdmaQoS.tc is '41', not a traffic class from 0 to 255" in v.message
    network["spec"]["metaPlugins"] = '{"type": "rdma",}'
    (v,) = violations(analyze([k8s(network)]), POLICY)
    assert "spec.metaPlugins is not a comma-separated list of JSON objects" in v.message
    network["spec"]["metaPlugins"] = UNKNOWN
    findings = analyze([k8s(network)])
    assert violations(findings, POLICY) == [] and len(notes(findings, POLICY)) == 1
    network["spec"]["metaPlugins"] = ["rdma"]
    (v,) = violations(analyze([k8s(network)]), POLICY)
    assert "spec.metaPlugins must be a string of JSON plugin objects, got a list" in v.message
