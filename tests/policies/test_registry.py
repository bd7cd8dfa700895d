"""Issue 18 item 4: a policy is one module of `oke_rdma_policies/rules/<capability>/`; the pack collects it.

The test adds a policy the way a contributor would, as one new module in a copy of `policies/`, and
starts that pack as the Pulumi CLI starts it: the new policy is listed with its level and settings
schema, is configured and reports, next to every policy the pack had, with nothing else edited.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from google.protobuf import empty_pb2, json_format
from pulumi.runtime.proto import analyzer_pb2

from preview import policy_check
from preview.policy_check import analyze_requests
from tests.policies.policy_helpers import k8s, started_pack

from oke_rdma_policies import RULES, registry  # isort: skip

ROOT = Path(__file__).resolve().parents[2]

NEW_POLICY = '''\
"""configmap-max-keys (resource): a ConfigMap holds at most `maxKeys` keys."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field
from pulumi_policy import ReportViolation, ResourceValidationArgs

from oke_gpu_rdma.common.pack_settings import PolicySettings

from ...registry import resource_rule


class MaxKeysSettings(PolicySettings):
    policy: ClassVar[str] = "configmap-max-keys"

    max_keys: int = Field(2, alias="maxKeys", description="The most keys a ConfigMap may hold.")


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type != "kubernetes:core/v1:ConfigMap":
        return
    most = MaxKeysSettings.from_properties(args.get_config()).max_keys
    data: Any = args.props.get("data") or {}
    if len(data) > most:
        report_violation(f"ConfigMap {args.name} holds {len(data)} keys, at most {most}", None)


RULE = resource_rule(
    name=MaxKeysSettings.policy,
    level="advisory",
    description="A ConfigMap holds at most maxKeys keys.",
    validate=validate,
    settings=MaxKeysSettings,
)
'''


def test_a_new_module_in_rules_is_a_new_policy_of_the_started_pack(tmp_path: Path) -> None:
    pack = tmp_path / "policies"
    shutil.copytree(ROOT / "policies", pack, ignore=shutil.ignore_patterns("venv", "__pycache__"))
    (pack / "oke_rdma_policies" / "rules" / "common" / "configmap_max_keys.py").write_text(NEW_POLICY)
    config_map = k8s(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"a": "1", "b": "2"}}
    )
    with started_pack(ROOT / "policies" / "venv" / "bin" / "python", pack) as stub:
        info = stub.GetAnalyzerInfo(empty_pb2.Empty())
        listed = {p.name: p for p in info.policies}
        assert set(listed) == {rule.name for rule in RULES} | {"configmap-max-keys"}
        new = listed["configmap-max-keys"]
        assert new.enforcementLevel == analyzer_pb2.ADVISORY
        assert json_format.MessageToDict(new.configSchema.properties) == {
            "maxKeys": {"default": 2, "description": "The most keys a ConfigMap may hold.", "type": "integer"}
        }
        request = analyzer_pb2.ConfigureAnalyzerRequest()
        entry = analyzer_pb2.PolicyConfig(enforcementLevel=analyzer_pb2.ADVISORY)
        entry.properties.update({"maxKeys": 1})
        request.policyConfig["configmap-max-keys"].CopyFrom(entry)
        stub.Configure(request)
        single, _ = analyze_requests([config_map])
        found = [(d.policyName, d.message) for d in stub.Analyze(single[0]).diagnostics]
    assert found == [
        (
            "configmap-max-keys",
            "A ConfigMap holds at most maxKeys keys.\nConfigMap big holds 2 keys, at most 1",
        )
    ]


def test_every_module_of_rules_is_one_policy_in_module_order() -> None:
    # Each policy sits in the folder of its capability (rules/<capability>/); the order is the modules' names.
    modules = sorted(p.stem for p in (ROOT / "policies" / "oke_rdma_policies" / "rules").glob("*/[!_]*.py"))
    assert [rule.module.rsplit(".", 1)[-1] for rule in RULES] == modules
    assert [rule.policy for rule in RULES] == policy_check.oke_rdma_policies.POLICIES


def test_a_module_without_a_rule_is_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "extra_rules"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("LIMIT = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import extra_rules  # type: ignore[import-not-found]

        with pytest.raises(registry.RegistryError, match=r"extra_rules\.helper declares no RULE"):
            registry.collect(extra_rules)
    finally:
        for name in ("extra_rules", "extra_rules.helper"):
            sys.modules.pop(name, None)


def test_a_settings_model_of_another_policy_is_refused() -> None:
    claims = next(rule.settings for rule in RULES if rule.name == "gpu-rail-claims-aligned")
    assert claims is not None
    with pytest.raises(
        registry.RegistryError, match="settings model ClaimsSettings is for gpu-rail-claims-aligned"
    ):
        registry.stack_rule(name="other", level="advisory", description="", validate=print, settings=claims)


def _raising(args: object, report: object) -> None:
    raise KeyError("spec")


def _analyzed(policy_kind: str) -> analyzer_pb2.AnalyzeResponse:
    """One raising policy of ``policy_kind`` (resource or stack) through the pack's analyzer."""
    import oke_rdma_policies
    from oke_rdma_policies.sdk_adapter import PackAnalyzer
    from oke_rdma_policies.values import LazyProps

    build = registry.resource_rule if policy_kind == "resource" else registry.stack_rule
    rule = build(name="always-raises", level="mandatory", description="d", validate=_raising)
    analyzer = PackAnalyzer("p", oke_rdma_policies.SDK_VERSION, [rule.policy], "d", LazyProps)
    single, stack = analyze_requests(
        [k8s({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})]
    )
    return (
        analyzer.Analyze(single[0], None) if policy_kind == "resource" else analyzer.AnalyzeStack(stack, None)
    )


@pytest.mark.parametrize("policy_kind", ["resource", "stack"])
def test_a_policy_that_raises_is_one_mandatory_violation_naming_what_it_judged(policy_kind: str) -> None:
    (diagnostic,) = _analyzed(policy_kind).diagnostics
    assert diagnostic.policyName == "always-raises"
    assert diagnostic.enforcementLevel == analyzer_pb2.MANDATORY
    what = "kubernetes:core/v1:ConfigMap c" if policy_kind == "resource" else "the stack"
    # The SDK puts the policy's description first.
    assert diagnostic.message.startswith(f"d\n{what}: this policy failed while checking it (KeyError: 'spec'")
    assert "report this message as a bug of the oke-gpu-rdma policy pack" in diagnostic.message
