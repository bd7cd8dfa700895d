"""preview/policy_check.py: the pack on offline runs, the CLI's output format, the exit decision."""

from __future__ import annotations

import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2

from preview import policy_check
from preview.cli import load_stack
from preview.mock_runtime import run_program
from preview.policy_check import (
    Finding,
    PackConfigError,
    analyze_run,
    format_findings,
    has_mandatory,
    pack_version,
)
from preview.stacks import EXAMPLES
from tests.fixtures import seed000
from tests.policies.policy_helpers import dranet_release, k8s, seed_plan

# The known gaps among the images the example stacks write (stack_config/pack_config.py written_images).
IMAGES = {"images-pinned-by-digest": {"allowUnpinned": ["registry.k8s.io/networking/dranet:v1.5.0"]}}
FULL_IMAGES = {
    "images-pinned-by-digest": {
        "allowUnpinned": [
            "iad.ocir.io/idxzjcdglx2s/nccl-tests:cuda-13.4.1-ubuntu-24.04-nccl-2.32.3-100526.0",
            "mpioperator/mpi-operator:0.6.0",
            "registry.k8s.io/networking/dranet:v1.5.0",
        ]
    }
}
DEV_CONFIG = {
    **IMAGES,
    "dranet-child-range": {
        "ocaRdmaNetwork": "10.224.0.0/12",
        "workerSubnetCidrs": ["10.140.64.0/19"],
        "existingCidrs": [
            {"name": "existing VCN", "cidr": "10.140.0.0/16"},
            {"name": "existing cluster pods CIDR", "cidr": "10.240.0.0/12"},
            {"name": "existing cluster services CIDR", "cidr": "10.96.0.0/16"},
        ],
    },
}


@pytest.mark.parametrize("stack", ["dev", "full"])
def test_example_stacks_pass(stack):
    findings = analyze_run(
        run_program(stack, load_stack(stack, [EXAMPLES])), DEV_CONFIG if stack == "dev" else FULL_IMAGES
    )
    assert findings == []
    assert format_findings(findings) == "" and not has_mandatory(findings)


def test_dev_stack_with_a_conflicting_existing_cidr_fails():
    config = {
        **IMAGES,
        "dranet-child-range": {"existingCidrs": [{"name": "peered VCN", "cidr": "10.208.0.0/16"}]},
    }
    findings = analyze_run(run_program("dev", load_stack("dev", [EXAMPLES])), config)
    assert has_mandatory(findings)
    text = format_findings(findings)
    assert text.startswith(
        f"Policy Violations:\n    [mandatory]  oke-gpu-rdma v{pack_version()}  dranet-child-range ("
    )
    assert "kubernetes:helm.sh/v3:Release)" in text and "peered VCN" in text


def test_format_orders_mandatory_first_and_keeps_messages():
    findings = [
        Finding("b", "advisory", "", "not checked: x", "desc b", version="0.1.0"),
        Finding(
            "a",
            "mandatory",
            "urn:pulumi:s::p::oci:Core/vcn:Vcn::v",
            "line 1\nline 2",
            "desc a",
            version="0.1.0",
        ),
    ]
    assert format_findings(findings).splitlines() == [
        "Policy Violations:",
        "    [mandatory]  oke-gpu-rdma v0.1.0  a (v: oci:Core/vcn:Vcn)",
        "    desc a",
        "    line 1",
        "    line 2",
        "    [advisory]  oke-gpu-rdma v0.1.0  b",
        "    desc b",
        "    not checked: x",
    ]
    assert has_mandatory(findings) and not has_mandatory(findings[:1])


def test_a_finding_many_resources_share_is_said_once_naming_them() -> None:
    def about(name: str) -> Finding:
        urn = f"urn:pulumi:s::p::kubernetes:batch/v1:Job::{name}"
        return Finding("a", "advisory", urn, "not judged: x", "desc a", version="0.1.0")

    assert format_findings([about("j1"), about("j2"), about("j3")]).splitlines() == [
        "Policy Violations:",
        "    [advisory]  oke-gpu-rdma v0.1.0  a (3 resources)",
        "    desc a",
        "    not judged: x",
        "    on each of:",
        "      j1: kubernetes:batch/v1:Job",
        "      j2: kubernetes:batch/v1:Job",
        "      j3: kubernetes:batch/v1:Job",
    ]


@pytest.mark.parametrize(
    ("config", "text"),
    [
        ({"no-such-policy": "mandatory"}, "no-such-policy: no such policy"),
        ({"all": "loud"}, "all: 'loud' is not an enforcement level"),
        ({"dranet-child-range": {"ocaRdmaNetwork": "10.224.1.0/12"}}, "did you mean 10.224.0.0/12"),
        ({"dranet-child-range": {"colour": "red"}}, "dranet-child-range.colour: unknown key"),
        ({"gpu-rail-claims-aligned": {"shapeTopologies": {"X": {"roots": "no"}}}}, "shapeTopologies.X"),
        (
            {"sriov-rail-root-devices": {"shapeTopologies": {"X": {"roots": []}}}},
            "sriov-rail-root-devices.shapeTopologies.X: topology.roots: required, a non-empty list of PCIe roots",
        ),
    ],
)
def test_bad_pack_config_is_refused_with_the_key(config, text):
    with pytest.raises(PackConfigError, match="invalid policy pack config") as err:
        policy_check.analyze_resources([], config)
    assert text in str(err.value)


def test_all_sets_every_level_and_a_policy_overrides_it():
    resources = [*seed_plan(pods="10.208.0.0/12"), dranet_release(), k8s(seed000("shape-any"))]
    findings = policy_check.analyze_resources(
        resources, {**IMAGES, "all": "advisory", "gpu-rail-claims-aligned": "mandatory"}
    )
    levels = {f.policy: f.level for f in findings}
    assert levels == {"dranet-child-range": "advisory", "gpu-rail-claims-aligned": "mandatory"}


def test_hand_built_stack_request_reaches_the_same_servicer():
    """The property names the engine sends, in a Struct, straight to the SDK servicer."""
    servicer = policy_check.oke_rdma_policies.servicer()
    info = servicer.GetAnalyzerInfo(empty_pb2.Empty(), None)
    servicer.Configure(policy_check.configure_request({}, info), None)
    props = struct_pb2.Struct()
    props.update({"cidrBlock": "10.208.0.0/24", "vcnId": "ocid1.vcn.oc1.iad.x"})
    release = struct_pb2.Struct()
    release.update({"chart": "dranet", "values": {"args": {"cloudProviderHint": "OKE"}}})
    request = analyzer_pb2.AnalyzeStackRequest(
        resources=[
            analyzer_pb2.AnalyzerResource(
                type="oci:Core/subnet:Subnet",
                name="s",
                urn="urn:pulumi:t::p::oci:Core/subnet:Subnet::s",
                properties=props,
            ),
            analyzer_pb2.AnalyzerResource(
                type="kubernetes:helm.sh/v3:Release",
                name="d",
                urn="urn:pulumi:t::p::kubernetes:helm.sh/v3:Release::d",
                properties=release,
            ),
        ]
    )
    diagnostics = list(servicer.AnalyzeStack(request, None).diagnostics)
    mandatory = [d for d in diagnostics if d.enforcementLevel == analyzer_pb2.MANDATORY]
    assert len(mandatory) == 1 and "subnet s (oci:Core/subnet:Subnet) 10.208.0.0/24" in mandatory[0].message
    assert mandatory[0].urn.endswith("::d")


def test_the_offline_preview_runs_the_pack_pulumi_preview_runs():
    """issue 28: `make preview` and `pulumi preview --policy-pack policies` run one pack: the same folder,
    the version its PulumiPolicy.yaml names (which `make pack` replaces by the release tag), the SDK its
    requirements pin (the Makefile installs that pin into the preview's venv)."""
    import re
    from importlib.metadata import version

    from tests.strict_yaml import load_file

    assert policy_check.PACK_DIR == policy_check.ROOT / "policies"
    assert pack_version() == str(load_file(policy_check.PACK_DIR / "PulumiPolicy.yaml")["version"])
    pin = re.search(r"^pulumi-policy==(\S+)$", (policy_check.PACK_DIR / "requirements.txt").read_text(), re.M)
    assert pin is not None and version("pulumi-policy") == pin.group(1)
    makefile = (policy_check.ROOT / "Makefile").read_text()
    assert "PACK_SDK := $(shell grep -E '^pulumi-policy==' policies/requirements.txt)" in makefile
    for command in ("pulumi preview --policy-pack policies", "pulumi up --policy-pack policies"):
        assert command in (policy_check.ROOT / "README.md").read_text()
