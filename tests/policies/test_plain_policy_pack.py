"""The pack's policies inside an organisation's own pack: `pulumi_policy.PolicyPack` with
`oke_rdma_policies.POLICIES`, started as the CLI starts a pack and spoken to over the analyzer protocol,
gives the same verdicts as the shipped pack (which serves them through its own analyzer)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pulumi.runtime.proto import analyzer_pb2_grpc

from tests.policies.policy_helpers import over_grpc, started_pack, tripping_every_policy

ROOT = Path(__file__).resolve().parents[2]
PACK_DIR = ROOT / "policies"
PACK_PYTHON = PACK_DIR / "venv" / "bin" / "python"

ORG_PACK = '''\
"""An organisation's own pack: its policies and this repository's, under the SDK's PolicyPack."""
from pulumi_policy import EnforcementLevel, PolicyPack, ResourceValidationPolicy

from oke_rdma_policies import POLICIES


def no_default_namespace(args, report_violation):
    if args.resource_type == "kubernetes:core/v1:Pod" and args.props.get("metadata", {}).get("namespace") is None:
        report_violation("pods name their namespace")


PolicyPack(
    name="acme-platform",
    enforcement_level=EnforcementLevel.ADVISORY,
    policies=[
        *POLICIES,
        ResourceValidationPolicy(name="acme-namespaces", description="d", validate=no_default_namespace),
    ],
)
'''


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    if not PACK_PYTHON.exists():
        pytest.fail(f"{PACK_PYTHON} is missing: run make test (it builds policies/venv)")
    pack = tmp_path_factory.mktemp("acme-pack")
    (pack / "PulumiPolicy.yaml").write_text("runtime: python\nversion: 1.0.0\n")
    (pack / "__main__.py").write_text(ORG_PACK)
    # The organisation's pack imports this repository's policy package (policies/oke_rdma_policies).
    env = {**os.environ, "PYTHONPATH": str(PACK_DIR)}
    with started_pack(PACK_PYTHON, pack, env=env) as stub:
        yield stub


@pytest.fixture(scope="module")
def shipped() -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    with started_pack(PACK_PYTHON, PACK_DIR) as stub:
        yield stub


def test_every_policy_gives_the_shipped_packs_verdicts_under_a_plain_policy_pack(
    plain: analyzer_pb2_grpc.AnalyzerStub, shipped: analyzer_pb2_grpc.AnalyzerStub
) -> None:
    resources = tripping_every_policy()
    expected = over_grpc(shipped, resources)
    # The SDK's "can't run policy ... from policy pack '<name>@v<version>'" names the pack it runs in.
    found = [
        (*key[:4], key[4].replace("'acme-platform@v", "'oke-gpu-rdma@v"))
        for key in over_grpc(plain, resources)
        if key[0] != "acme-namespaces"
    ]
    assert len({key[0] for key in expected}) >= 10
    assert found == expected
