"""The one module that uses pulumi-policy's private internals; everything else of the pack uses its public API.

What it copies is pinned: :data:`SDK_VERSION` is the pulumi-policy release whose `policy.py` and
`deserialize.py` the code below follows, and tests/policies/test_sdk_adapter.py fails when the
installed SDK is another release, or when the SDK methods copied here changed, so an SDK upgrade is
a deliberate edit of this module.

The analyzer the CLI talks to is the SDK's servicer, with each resource deserialized at most once:
the SDK's `_PolicyAnalyzerServicer.AnalyzeStack` converts every resource's properties
(`MessageToDict`, `deserialize_properties`, `unknown_checking_proxy`) once *per stack policy*: with
six stack policies that is six passes over the stack, about 1.6 s each on 2,000 claim templates,
before any policy runs. :class:`PackAnalyzer` builds the `PolicyResource` list once per request and
hands the same list to every stack policy, with the request's :class:`StackState`, where the stack
policies keep what they build from it for each other (the plain copy of the stack,
:meth:`oke_rdma_policies.stack.StackView.of`); the state goes with the request. Each resource's
properties are converted only when a policy reads them (:class:`~oke_rdma_policies.values.LazyProps`,
a Mapping that is the SDK's proxy when read as one). `Analyze` does the same for the resource
policies. Everything else (levels, violations, the "can't run policy ... during preview" advisory,
not-applicable answers) is the SDK's own code path.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Mapping
from concurrent import futures
from inspect import isawaitable
from typing import Any, Final, TypeVar, cast

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
from pulumi_policy.deserialize import _deserialize_property
from pulumi_policy.policy import _GRPC_CHANNEL_OPTIONS, _NotApplicableError, _PolicyAnalyzerServicer
from pulumi_policy.proxy import UnknownValueError, _DictProxy, _ListProxy

SDK_VERSION: Final = "1.21.0"
"""The pulumi-policy release this module copies from (policies/requirements.txt pins it)."""

COPIED: Final = ("Analyze", "AnalyzeStack")
"""The SDK servicer's methods :class:`PackAnalyzer` re-writes; the test pins their source."""

T = TypeVar("T")

NOT_A_FAILURE: Final = (UnknownValueError, _NotApplicableError)
"""What a policy raises that the SDK answers itself (an unknown value during preview: its advisory line;
not applicable), which the registry's guard lets through."""


def deserialize_signed(value: Mapping[str, Any]) -> Any:
    """An asset, archive or secret (a Struct with the SDK's signature key) as the SDK deserializes it."""
    return _deserialize_property(value)


def proxy_target(value: Any) -> Any:
    """The plain dict or list behind the SDK's unknown-checking proxy; any other value unchanged."""
    if isinstance(value, _DictProxy | _ListProxy):
        return value["__target"]
    return value


class StackState:
    """What the stack policies of one AnalyzeStack request build from the stack and share.

    The first policy that asks for a kind of thing builds it, the others get the same object; the
    state is dropped with the request, so nothing outlives the stack it was built from.
    """

    def __init__(self) -> None:
        self._built: dict[type, object] = {}

    def get(self, kind: type[T], build: Callable[[], T]) -> T:
        found = self._built.get(kind)
        if found is None:
            found = self._built[kind] = build()
        return cast(T, found)


class StackArgs(StackValidationArgs):
    """The SDK's StackValidationArgs, with the :class:`StackState` of the request they come from."""

    def __init__(self, resources: list[PolicyResource], config: Any, tags: Any, state: StackState) -> None:
        super().__init__(resources, config, tags)
        self.state = state


def stack_state(args: StackValidationArgs) -> StackState:
    """The request's shared state under :class:`PackAnalyzer`; under the SDK's own `PolicyPack` (an
    organisation's pack that includes these policies), a state for these args alone: the SDK builds
    each stack policy its own args from the request, so nothing can be shared, only rebuilt."""
    if isinstance(args, StackArgs):
        return args.state
    state = getattr(args, "_oke_rdma_state", None)
    if not isinstance(state, StackState):
        state = StackState()
        args._oke_rdma_state = state  # type: ignore[attr-defined]
    return state


class PackAnalyzer(_PolicyAnalyzerServicer):
    """`_PolicyAnalyzerServicer` whose AnalyzeStack deserializes the stack once for all stack policies."""

    def __init__(
        self,
        name: str,
        version: str,
        policies: list[Policy],
        description: str,
        props: Callable[[Any], Mapping[str, Any]],
    ) -> None:
        """``props`` wraps a resource's properties Struct (the pack's :class:`~oke_rdma_policies.values.LazyProps`)."""
        super().__init__(name, version, policies, EnforcementLevel.ADVISORY, None, description)
        self._pack = (name, version, policies)
        self._props = props

    def _stack_resources(self, request: Any) -> list[PolicyResource]:
        """The SDK's PolicyResources for the request (parents and dependencies linked), built once."""
        by_urn: dict[str, PolicyResource] = {}
        links: list[tuple[PolicyResource, Any]] = []
        for r in request.resources:
            resource = PolicyResource(
                r.type,
                self._props(r.properties),
                r.urn,
                r.name,
                self._get_resource_options(r),
                self._get_provider_resource(r),
                None,
                [],
                {},
            )
            by_urn[resource.urn] = resource
            links.append((resource, r))
        for resource, r in links:
            if r.parent in by_urn:
                resource.parent = by_urn[r.parent]
            resource.dependencies.extend(by_urn[d] for d in r.dependencies if d in by_urn)
            for key, deps in r.propertyDependencies.items():
                resource.property_dependencies[key] = [by_urn[d] for d in deps.urns if d in by_urn]
        return [resource for resource, _ in links]

    def Analyze(self, request: Any, _context: Any) -> Any:
        """The SDK's Analyze (policy.py), with the properties converted only if a policy reads them."""
        self._configure_runtime_settings()  # type: ignore[no-untyped-call]
        name, version, policies = self._pack
        response = proto.AnalyzeResponse()
        props: Mapping[str, Any] | None = None
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
                props = self._props(request.properties)
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
        """The SDK's AnalyzeStack (policy.py), the stack converted once and its state shared (module docstring)."""
        self._configure_runtime_settings()  # type: ignore[no-untyped-call]
        name, version, policies = self._pack
        response = proto.AnalyzeResponse()
        resources: list[PolicyResource] | None = None
        state = StackState()
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
            args = StackArgs(resources, self._get_policy_config(policy.name), self._stack_tags(), state)
            self._run(policy, args, report, response, name, version)
        return response

    def _stack_tags(self) -> Any:
        # The SDK keeps the tags Configure sent in a name-mangled attribute of its servicer.
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
