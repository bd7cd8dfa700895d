"""The analyzer the CLI talks to: the SDK's servicer, with each resource deserialized at most once.

The SDK's `_PolicyAnalyzerServicer.AnalyzeStack` (pulumi-policy 1.21.0, `policy.py`) converts every
resource's properties (`MessageToDict`, `deserialize_properties`, `unknown_checking_proxy`) once *per
stack policy*: with six stack policies that is six passes over the stack, about 1.6 s each on 2,000
claim templates, before any policy runs. :class:`PackAnalyzer` builds the `PolicyResource` list once
and hands the same list to every stack policy (the policies only read it), so the stack policies also
share one plain copy (:meth:`oke_rdma_policies.stack.StackView.of`); and each resource's properties
are converted only when a policy reads them (:class:`~oke_rdma_policies.values.LazyProps`, a Mapping
that is the SDK's proxy when read as one). `Analyze` does the same for the resource policies. Everything else (levels,
violations, the "can't run policy ... during preview" advisory, not-applicable answers) is the SDK's
own code path.
"""

from __future__ import annotations

import asyncio
import sys
import time
from concurrent import futures
from inspect import isawaitable
from typing import Any

import grpc  # type: ignore[import-untyped]
from pulumi.runtime import proto
from pulumi.runtime.proto import analyzer_pb2_grpc
from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyResource,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.policy import _GRPC_CHANNEL_OPTIONS, _NotApplicableError, _PolicyAnalyzerServicer
from pulumi_policy.proxy import UnknownValueError

from .values import LazyProps


class PackAnalyzer(_PolicyAnalyzerServicer):
    """`_PolicyAnalyzerServicer` whose AnalyzeStack deserializes the stack once for all stack policies."""

    def __init__(self, name: str, version: str, policies: list[Policy], description: str) -> None:
        super().__init__(name, version, policies, EnforcementLevel.ADVISORY, None, description)
        self._pack = (name, version, policies)

    def _stack_resources(self, request: Any) -> list[PolicyResource]:
        """The SDK's PolicyResources for the request (parents and dependencies linked), built once."""
        by_urn: dict[str, PolicyResource] = {}
        links: list[tuple[PolicyResource, Any]] = []
        for r in request.resources:
            res = PolicyResource(
                r.type,
                LazyProps(r.properties),
                r.urn,
                r.name,
                self._get_resource_options(r),
                self._get_provider_resource(r),
                None,
                [],
                {},
            )
            by_urn[res.urn] = res
            links.append((res, r))
        for res, r in links:
            if r.parent in by_urn:
                res.parent = by_urn[r.parent]
            res.dependencies.extend(by_urn[d] for d in r.dependencies if d in by_urn)
            for key, deps in r.propertyDependencies.items():
                res.property_dependencies[key] = [by_urn[d] for d in deps.urns if d in by_urn]
        return [res for res, _ in links]

    def Analyze(self, request: Any, _context: Any) -> Any:
        """The SDK's Analyze (policy.py), with the properties converted only if a policy reads them."""
        self._configure_runtime_settings()  # type: ignore[no-untyped-call]
        name, version, policies = self._pack
        response = proto.AnalyzeResponse()
        props: LazyProps | None = None
        for policy in policies:
            level = self._get_enforcement_level(policy)
            if level == EnforcementLevel.DISABLED or not isinstance(policy, ResourceValidationPolicy):
                continue
            if not policy.has_validation():
                reason = "Policy does not implement validate"
                response.not_applicable.append(
                    proto.PolicyNotApplicable(policy_name=policy.name, reason=reason)
                )
                continue
            if level == EnforcementLevel.REMEDIATE:
                level = EnforcementLevel.MANDATORY
            report = self._create_report_violation(
                response, policy.name, policy.description, level, policy.severity
            )
            if props is None:  # not `props or ...`: truth-testing a Mapping converts it
                props = LazyProps(request.properties)
            args = ResourceValidationArgs(
                request.type,
                props,
                request.urn,
                request.name,
                self._get_resource_options(request),
                self._get_provider_resource(request),
                self._get_policy_config(policy.name),
                self._stack_tags(),
            )
            self._run(policy, args, report, response, name, version)
        return response

    def _run(self, policy: Policy, args: Any, report: Any, response: Any, name: str, version: str) -> None:
        """Call the policy as the SDK does: an unknown is its advisory line, not-applicable is recorded."""
        try:
            result = policy.validate(args, report)  # type: ignore[attr-defined]
            if isawaitable(result):
                loop = asyncio.new_event_loop()
                loop.run_until_complete(result)
                loop.close()
        except UnknownValueError as e:
            response.diagnostics.append(
                proto.AnalyzeDiagnostic(
                    policyName=policy.name,
                    policyPackName=name,
                    policyPackVersion=version,
                    message=(
                        f"can't run policy '{policy.name}' from policy pack "
                        f"'{name}@v{version}' during preview: {e.message}"
                    ),
                    urn="",
                    description=policy.description,
                    enforcementLevel=self._map_enforcement_level(EnforcementLevel.ADVISORY),
                )
            )
        except _NotApplicableError as e:
            response.not_applicable.append(
                proto.PolicyNotApplicable(policy_name=policy.name, reason=e.reason or "")
            )

    def AnalyzeStack(self, request: Any, _context: Any) -> Any:
        self._configure_runtime_settings()  # type: ignore[no-untyped-call]
        name, version, policies = self._pack
        response = proto.AnalyzeResponse()
        resources: list[PolicyResource] | None = None
        for policy in policies:
            level = self._get_enforcement_level(policy)
            if level == EnforcementLevel.DISABLED or not isinstance(policy, StackValidationPolicy):
                continue
            if level == EnforcementLevel.REMEDIATE:
                level = EnforcementLevel.MANDATORY  # stack policies cannot remediate (as the SDK does)
            report = self._create_report_violation(
                response, policy.name, policy.description, level, policy.severity
            )
            if resources is None:
                resources = self._stack_resources(request)
            args = StackValidationArgs(resources, self._get_policy_config(policy.name), self._stack_tags())
            self._run(policy, args, report, response, name, version)
        return response

    def _stack_tags(self) -> Any:
        return self._PolicyAnalyzerServicer__stack_tags  # type: ignore[attr-defined]


def serve(servicer: PackAnalyzer) -> None:
    """Serve as `pulumi_policy.PolicyPack` does: a local gRPC port printed on stdout, then block."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=_GRPC_CHANNEL_OPTIONS)
    analyzer_pb2_grpc.add_AnalyzerServicer_to_server(servicer, server)
    port = server.add_insecure_port(address="127.0.0.1:0")
    server.start()
    sys.stdout.buffer.write(f"{port}\n".encode())
    sys.stdout.flush()
    try:
        while True:
            time.sleep(24 * 60 * 60)
    except KeyboardInterrupt:
        server.stop(0)
