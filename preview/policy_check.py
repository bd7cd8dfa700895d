"""Run the policy pack on an offline run, in-process, through the analyzer the Pulumi CLI talks to.

`pulumi preview --policy-pack policies` starts `policies/` as a gRPC Analyzer and sends it
`GetAnalyzerInfo`, `Configure` (the pack config, with each policy's enforcement level), one
`Analyze` per resource and one `AnalyzeStack` at the end. This module sends the same protobuf
requests to the same SDK servicer class, built from the same policies (`oke_rdma_policies.RULES`),
with each resource's inputs as the SDK sent them (`RecordedResource.struct`), and prints the
diagnostics the way the CLI does.

    findings = analyze_run(run, {"dranet-child-range": {"workerSubnetCidrs": ["10.140.64.0/19"]}})
    print(format_findings(findings)); sys.exit(1 if has_mandatory(findings) else 0)
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2

from .mock_runtime import ROOT, STACK_TYPE, ProgramRun, RecordedResource

PACK_DIR = ROOT / "policies"
if str(PACK_DIR) not in sys.path:
    sys.path.insert(0, str(PACK_DIR))

import oke_rdma_policies  # noqa: E402  (the pack's package lives in policies/)

from oke_gpu_rdma.common.pack_settings import ALL_KEY, LEVEL_KEY  # noqa: E402

_LEVEL_NAMES = {
    analyzer_pb2.ADVISORY: "advisory",
    analyzer_pb2.MANDATORY: "mandatory",
    analyzer_pb2.DISABLED: "disabled",
    analyzer_pb2.REMEDIATE: "remediate",
}
_LEVEL_VALUES = {v: k for k, v in _LEVEL_NAMES.items()}


class PackConfigError(ValueError):
    """The pack config does not fit the pack's schemas; one problem per line."""


@dataclass(frozen=True)
class Finding:
    """One diagnostic of the pack: which policy, at which level, about which resource, and why."""

    policy: str
    level: str  # mandatory, advisory (remediate is reported as mandatory, as the CLI does)
    urn: str  # "" for the stack as a whole
    message: str
    description: str
    pack: str = oke_rdma_policies.PACK_NAME
    version: str = ""

    @property
    def resource(self) -> str:
        """`name (type)` of the resource the finding is about, or "" for the stack."""
        if not self.urn:
            return ""
        name, type_ = urn_name_type(self.urn)
        return f"{name}: {type_}"


def urn_name_type(urn: str) -> tuple[str, str]:
    """(name, type) from urn:pulumi:<stack>::<project>::<parent$...$type>::<name>."""
    parts = urn.split("::")
    if len(parts) < 4:
        return urn, ""
    return "::".join(parts[3:]), parts[2].rsplit("$", 1)[-1]


def pack_version(pack_dir: Path = PACK_DIR) -> str:
    """The version the CLI shows: PulumiPolicy.yaml's `version`."""
    match = re.search(r"^version:\s*['\"]?([^'\"\s]+)", (pack_dir / "PulumiPolicy.yaml").read_text(), re.M)
    return match.group(1) if match else oke_rdma_policies.SDK_VERSION


def configure_request(
    pack_config: Mapping[str, Any], info: analyzer_pb2.AnalyzerInfo
) -> analyzer_pb2.ConfigureAnalyzerRequest:
    """The Configure request the engine sends: every policy's level and properties (schema defaults filled)."""
    problems = oke_rdma_policies.validate_file(pack_config)
    if problems:
        raise PackConfigError("invalid policy pack config:\n  " + "\n  ".join(problems))
    return configure_request_of(reconciled_config(info, [pack_config]))


PolicyConfigs = dict[str, tuple[str, dict[str, Any]]]
"""Policy name -> (enforcement level, properties): what a Configure request carries."""


def reconciled_config(info: analyzer_pb2.AnalyzerInfo, layers: Sequence[Mapping[str, Any]]) -> PolicyConfigs:
    """Every policy's level and properties as the CLI reconciles them before Configure: the pack's levels and
    its schemas' defaults, then each layer of pack config in turn, `all` first and then each policy's own
    entry (a level, or an object whose `enforcementLevel` sets the level and whose other keys are merged over
    the properties). pulumi/pulumi pkg/resource/analyzer/config.go, ReconcilePolicyPackConfig and applyConfig;
    its layers are the pack's initialConfig and the --policy-pack-config file. Entries naming no policy of the
    pack are left out (the CLI forwards them; the SDK never reads them)."""
    result: PolicyConfigs = {}
    for policy in info.policies:
        schema = json_format.MessageToDict(policy.configSchema.properties)
        defaults = {key: prop["default"] for key, prop in schema.items() if "default" in prop}
        result[policy.name] = (_LEVEL_NAMES[policy.enforcementLevel], defaults)
    for layer in layers:
        everyone = layer.get(ALL_KEY)
        if isinstance(everyone, Mapping):
            everyone = everyone.get(LEVEL_KEY)
        if isinstance(everyone, str):
            result = {name: (everyone, properties) for name, (_, properties) in result.items()}
        for name, given in layer.items():
            if name == ALL_KEY or name not in result:
                continue
            level, properties = result[name]
            if isinstance(given, str):
                level = given
            elif isinstance(given, Mapping):
                level = given.get(LEVEL_KEY, level)
                properties = {**properties, **{k: v for k, v in given.items() if k != LEVEL_KEY}}
            result[name] = (level, properties)
    return result


def configure_request_of(configs: PolicyConfigs) -> analyzer_pb2.ConfigureAnalyzerRequest:
    """The Configure request of reconciled policy configs (levels already checked)."""
    request = analyzer_pb2.ConfigureAnalyzerRequest()
    for name, (level, properties) in configs.items():
        entry = analyzer_pb2.PolicyConfig(enforcementLevel=_LEVEL_VALUES[level])
        entry.properties.update(properties)
        request.policyConfig[name].CopyFrom(entry)
    return request


def _provider(
    ref: str, by_urn: Mapping[str, RecordedResource]
) -> analyzer_pb2.AnalyzerProviderResource | None:
    # A provider reference is `<provider URN>::<provider id>`.
    urn_text = ref.rsplit("::", 1)[0] if ref.count("::") >= 4 else ref
    if not urn_text.startswith("urn:"):
        return None
    found = by_urn.get(urn_text)
    name, type_ = urn_name_type(urn_text)
    return analyzer_pb2.AnalyzerProviderResource(type=found.type if found else type_, urn=urn_text, name=name)


def _struct(res: RecordedResource) -> struct_pb2.Struct:
    return res.struct if res.struct is not None else struct_pb2.Struct()


def analyze_requests(
    resources: Sequence[RecordedResource],
) -> tuple[list[analyzer_pb2.AnalyzeRequest], analyzer_pb2.AnalyzeStackRequest]:
    """One AnalyzeRequest per resource (not the stack, not providers) and the AnalyzeStackRequest."""
    by_urn = {r.urn: r for r in resources}
    single = []
    stack = analyzer_pb2.AnalyzeStackRequest()
    for res in resources:
        provider = _provider(res.provider, by_urn) if res.provider else None
        options = analyzer_pb2.AnalyzerResourceOptions(parent=res.parent or "")
        if res.type != STACK_TYPE and not res.type.startswith("pulumi:providers:"):
            request = analyzer_pb2.AnalyzeRequest(
                type=res.type, properties=_struct(res), urn=res.urn, name=res.name, options=options
            )
            if provider is not None:
                request.provider.CopyFrom(provider)
            single.append(request)
        item = analyzer_pb2.AnalyzerResource(
            type=res.type,
            properties=_struct(res),
            urn=res.urn,
            name=res.name,
            options=options,
            parent=res.parent or "",
            dependencies=list(res.dependencies),
        )
        if provider is not None:
            item.provider.CopyFrom(provider)
        stack.resources.append(item)
    return single, stack


def _findings(response: analyzer_pb2.AnalyzeResponse, version: str) -> list[Finding]:
    out = []
    for d in response.diagnostics:
        message = d.message
        if d.description and message.startswith(d.description):
            message = message[len(d.description) :].lstrip("\n")
        out.append(
            Finding(
                policy=d.policyName,
                level=_LEVEL_NAMES.get(d.enforcementLevel, "advisory"),
                urn=d.urn,
                message=message,
                description=d.description,
                pack=d.policyPackName,
                version=version,
            )
        )
    return out


def analyze_resources(
    resources: Sequence[RecordedResource], pack_config: Mapping[str, Any] | None = None
) -> list[Finding]:
    """Configure a fresh servicer like the engine does, then Analyze each resource and AnalyzeStack."""
    servicer = oke_rdma_policies.servicer()
    info = servicer.GetAnalyzerInfo(empty_pb2.Empty(), None)
    servicer.Configure(configure_request(pack_config or {}, info), None)
    return analyze_with(_InProcess(servicer), resources, pack_version())


class Analyzer(Protocol):
    """The two calls the engine analyzes with: a started pack's gRPC stub, or a servicer in-process."""

    def Analyze(self, request: analyzer_pb2.AnalyzeRequest, /) -> analyzer_pb2.AnalyzeResponse: ...

    def AnalyzeStack(self, request: analyzer_pb2.AnalyzeStackRequest, /) -> analyzer_pb2.AnalyzeResponse: ...


@dataclass(frozen=True)
class _InProcess:
    """A servicer called without gRPC (its methods take the call context too, unused by the SDK's)."""

    servicer: Any

    def Analyze(self, request: analyzer_pb2.AnalyzeRequest, /) -> analyzer_pb2.AnalyzeResponse:
        response: analyzer_pb2.AnalyzeResponse = self.servicer.Analyze(request, None)
        return response

    def AnalyzeStack(self, request: analyzer_pb2.AnalyzeStackRequest, /) -> analyzer_pb2.AnalyzeResponse:
        response: analyzer_pb2.AnalyzeResponse = self.servicer.AnalyzeStack(request, None)
        return response


def analyze_with(analyzer: Analyzer, resources: Sequence[RecordedResource], version: str) -> list[Finding]:
    """Analyze each resource and AnalyzeStack once, as the engine does, on a configured analyzer; the findings
    carry `version` (PulumiPolicy.yaml's, which the CLI shows instead of the SDK's)."""
    single, stack = analyze_requests(resources)
    findings: list[Finding] = []
    for request in single:
        for finding in _findings(analyzer.Analyze(request), version):
            # A resource policy's diagnostic has no URN: it is about the analyzed resource.
            findings.append(finding if finding.urn else _with_urn(finding, request.urn))
    findings += _findings(analyzer.AnalyzeStack(stack), version)
    return findings


def _with_urn(finding: Finding, urn: str) -> Finding:
    return Finding(
        finding.policy,
        finding.level,
        urn,
        finding.message,
        finding.description,
        finding.pack,
        finding.version,
    )


def analyze_run(run: ProgramRun, pack_config: Mapping[str, Any] | None = None) -> list[Finding]:
    """The pack's findings on an offline run (preview.mock_runtime.run_program)."""
    return analyze_resources(run.resources, pack_config)


def format_findings(findings: Sequence[Finding]) -> str:
    """The findings as `pulumi preview` prints policy violations; "" when there are none."""
    if not findings:
        return ""
    order = {"mandatory": 0, "remediate": 1, "advisory": 2}
    # One finding that many resources share (the same policy, level and message) is said once, naming them all.
    about: dict[tuple[str, str, str, str, str, str], list[str]] = {}
    for f in sorted(findings, key=lambda f: order.get(f.level, 3)):
        about.setdefault((f.level, f.pack, f.version, f.policy, f.description, f.message), []).append(
            f.resource
        )
    lines = ["Policy Violations:"]
    for (level, pack, version, policy, description, message), resources in about.items():
        named = [r for r in resources if r]
        about_text = f" ({named[0]})" if len(named) == 1 else f" ({len(named)} resources)" if named else ""
        lines.append(f"    [{level}]  {pack} v{version}  {policy}{about_text}")
        if description:
            lines.append(f"    {description}")
        lines += [f"    {line}" for line in message.splitlines()]
        if len(named) > 1:
            lines.append("    on each of:")
            lines += [f"      {r}" for r in named]
    return "\n".join(lines)


def has_mandatory(findings: Sequence[Finding]) -> bool:
    """Whether any finding blocks a deployment (the CLI fails the preview on these)."""
    return any(f.level in ("mandatory", "remediate") for f in findings)
