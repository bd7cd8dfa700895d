"""End to end: start the pack exactly as the Pulumi CLI does and speak gRPC to it.

The CLI runs `<pack dir>/venv/bin/python -u -m pulumi.policy <engine address> <pack dir>` from the
pack's directory, reads the port from the first line of stdout and calls the Analyzer service.
The SDK only uses the engine address to log a crash, so no engine is needed here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import empty_pb2
from pulumi.runtime.proto import analyzer_pb2

from preview.policy_check import analyze_requests, configure_request
from tests.fixtures import seed000
from tests.policies.kueue_helpers import flavor, kueue_objects, kueue_stack, queued_mpijob
from tests.policies.policy_helpers import (
    dranet_release,
    k8s,
    over_grpc,
    seed_plan,
    started_pack,
)

PACK_DIR = Path(__file__).resolve().parents[2] / "policies"
PACK_PYTHON = PACK_DIR / "venv" / "bin" / "python"


@pytest.fixture(scope="module")
def analyzer():
    if not PACK_PYTHON.exists():
        pytest.fail(f"{PACK_PYTHON} is missing: run make test (it builds policies/venv)")
    with started_pack(PACK_PYTHON, PACK_DIR) as stub:
        yield stub


def test_get_analyzer_info_lists_the_policies_with_levels_and_schemas(analyzer):
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == "oke-gpu-rdma" and info.supportsConfig
    levels = {p.name: p.enforcementLevel for p in info.policies}
    assert levels == {
        "dranet-child-range": analyzer_pb2.MANDATORY,
        "gpu-rail-claims-aligned": analyzer_pb2.MANDATORY,
        "no-device-plugin-gpus-with-dra-rails": analyzer_pb2.MANDATORY,
        "nccl-gid-index-with-dranet": analyzer_pb2.MANDATORY,
        "dranet-oke-profile-claims": analyzer_pb2.MANDATORY,
        "gpu-device-plugin-off": analyzer_pb2.MANDATORY,
        "rdma-workloads-baseline": analyzer_pb2.ADVISORY,
        "sriov-rdma-qos": analyzer_pb2.MANDATORY,
        "sriov-rdma-cni-mode": analyzer_pb2.MANDATORY,
        "sriov-node-policy-limits": analyzer_pb2.MANDATORY,
        "sriov-rail-root-devices": analyzer_pb2.MANDATORY,
        "sriov-resource-per-rail": analyzer_pb2.MANDATORY,
        "sriov-network-references": analyzer_pb2.MANDATORY,
        "sriov-vf-pool-range": analyzer_pb2.MANDATORY,
        "sriov-dra-disjoint": analyzer_pb2.MANDATORY,
        "sriov-pods-all-rails": analyzer_pb2.ADVISORY,
        "kueue-jobs-queued": analyzer_pb2.ADVISORY,
        "kueue-topology-levels": analyzer_pb2.MANDATORY,
        "kueue-pod-sets-request": analyzer_pb2.MANDATORY,
        "kueue-flavor-shapes": analyzer_pb2.MANDATORY,
        "kueue-flavor-pools": analyzer_pb2.MANDATORY,
        "health-taint-tolerations": analyzer_pb2.MANDATORY,
        "images-pinned-by-digest": analyzer_pb2.MANDATORY,
        "public-ingress-exposure": analyzer_pb2.MANDATORY,
        "compute-domain-placement": analyzer_pb2.MANDATORY,
    }
    child = next(p for p in info.policies if p.name == "dranet-child-range")
    assert child.policy_type == analyzer_pb2.POLICY_TYPE_STACK
    assert child.configSchema.properties["ocaRdmaNetwork"]["default"] == "10.224.0.0/12"


def test_configure_analyze_and_analyze_stack(analyzer):
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    analyzer.Configure(
        configure_request(
            {
                "dranet-child-range": {"workerSubnetCidrs": ["10.140.64.0/19"]},
                # The seed's DRANET image is a known gap (oke_gpu_rdma/common/images.py KNOWN_GAPS).
                "images-pinned-by-digest": {"allowUnpinned": ["registry.k8s.io/networking/dranet:v1.5.0"]},
            },
            info,
        )
    )
    claim = seed000("all-rails")
    claim = {
        **claim,
        "spec": {
            "spec": {
                **claim["spec"]["spec"],
                "devices": {
                    **claim["spec"]["spec"]["devices"],
                    "config": [
                        {
                            "opaque": {
                                "driver": "dra.net",
                                "parameters": {"interface": {"type": "Passthrough"}},
                            }
                        }
                    ],
                },
            }
        },
    }
    resources = [*seed_plan(pods="10.208.0.0/12"), dranet_release(), k8s(claim), k8s(seed000("shape-root"))]
    single, stack = analyze_requests(resources)
    diagnostics = [d for request in single for d in analyzer.Analyze(request).diagnostics]
    assert [d.policyName for d in diagnostics] == ["dranet-oke-profile-claims"]
    assert (
        diagnostics[0].enforcementLevel == analyzer_pb2.MANDATORY and "Passthrough" in diagnostics[0].message
    )
    stack_diagnostics = analyzer.AnalyzeStack(stack).diagnostics
    by_policy = {d.policyName: d for d in stack_diagnostics}
    assert set(by_policy) == {"dranet-child-range", "gpu-rail-claims-aligned"}
    assert "pods CIDR" in by_policy["dranet-child-range"].message
    assert by_policy["gpu-rail-claims-aligned"].urn.endswith("::shape-root")


def test_the_kueue_policies_judge_a_stack_with_topology_aware_scheduling(analyzer):
    """A job off the queue asking for a level the Topology lacks, and a flavor for a shape the stack has no pool
    of: each kueue policy's verdict, level and resource as the CLI gets them."""
    job = queued_mpijob(None)
    job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["metadata"] = {
        "annotations": {"kueue.x-k8s.io/podset-required-topology": "oke-gpu-rdma/rdma-rack"}
    }
    kueue = [*kueue_objects(), flavor("a100", {"node.kubernetes.io/instance-type": "BM.GPU.A100-v2.8"})]
    found = [k for k in over_grpc(analyzer, kueue_stack(job, kueue=kueue)) if k[0].startswith("kueue-")]
    assert [(policy, level, urn.rsplit("::", 1)[-1]) for policy, level, urn, _, _ in found] == [
        ("kueue-flavor-pools", "mandatory", "resourceflavor-a100"),
        ("kueue-jobs-queued", "advisory", "mpijob-nccl-dranet-a"),
        ("kueue-topology-levels", "mandatory", "mpijob-nccl-dranet-a"),
    ]
    messages = {policy: message for policy, _, _, _, message in found}
    assert messages["kueue-flavor-pools"].startswith(
        "ResourceFlavor a100: spec.nodeLabels node.kubernetes.io/instance-type=BM.GPU.A100-v2.8 select no node pool"
    )
    assert messages["kueue-jobs-queued"].startswith(
        "MPIJob rdma-dranet/nccl-dranet-a: a multi-node GPU job (replica Worker: 2 pods at once"
    )
    assert messages["kueue-topology-levels"].startswith(
        "MPIJob rdma-dranet/nccl-dranet-a: replica Worker asks kueue.x-k8s.io/podset-required-topology: "
        "oke-gpu-rdma/rdma-rack, a level no Topology of its flavors defines"
    )
