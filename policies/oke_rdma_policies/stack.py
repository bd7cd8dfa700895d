"""The stack as the stack policies see it: plain resources, claims by name, references resolved."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from pulumi_policy import PolicyResource, ReportViolation, ResourceValidationArgs, StackValidationArgs

from oke_gpu_rdma.common import release_registry as registry
from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.common.release_facts import ReleaseFacts
from oke_gpu_rdma.nodes.cloud_init import registered_taints
from oke_gpu_rdma.nodes.labels import (
    GPU_PRESENT,
    GPU_PRESENT_LABEL,
    INSTANCE_TYPE_LABEL,
    NFD_NVIDIA_PCI_LABEL,
)
from oke_gpu_rdma.nodes.shape_catalog import CATALOG

from .kube import (
    ClaimRef,
    DeviceClasses,
    PlainResource,
    PodSpec,
    chart_basename,
    claim_refs,
    class_drivers,
    device_classes,
    gpu_requests,
    is_claim,
    is_workload,
    rail_requests,
    resource_claim_spec_v1,
)
from .report import Reporter, guarded, resource_where, stack_where
from .sdk_adapter import stack_state
from .values import UNKNOWN, PropertyTypeError, as_list, as_map

STACK_TYPE = "pulumi:pulumi:Stack"


def from_resource_args(args: ResourceValidationArgs) -> PlainResource:
    provider = args.provider.urn if args.provider is not None else ""
    return PlainResource(args.urn, args.resource_type, args.name, args.props, args.opts.parent, provider)


ResourceCheck = Callable[[PlainResource, Reporter], None]


def validate_resources_of(
    types: Collection[str], check: ResourceCheck
) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    """A resource policy's `validate` that runs `check` on resources of these types, guarded."""

    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if args.resource_type not in types:
            return
        res = from_resource_args(args)
        reporter = Reporter(report_violation)
        reporter.guard(res.label, None, partial(check, res, reporter))
        reporter.finish()

    return validate


def from_policy_resources(resources: list[PolicyResource]) -> list[PlainResource]:
    """The stack's resources; properties are converted when a policy first reads them."""
    return [
        PlainResource(
            urn=r.urn,
            type=r.resource_type,
            name=r.name,
            raw=r.props,
            parent=r.parent.urn if r.parent is not None else None,
            provider=r.provider.urn if r.provider is not None else "",
            dependencies=tuple(d.urn for d in r.dependencies),
        )
        for r in resources
    ]


def _is_stack(urn: str) -> bool:
    """Whether ``urn`` is the stack's own resource (`...::pulumi:pulumi:Stack::<name>`)."""
    return urn.rsplit("::", 2)[-2].rsplit("$", 1)[-1] == STACK_TYPE if urn.count("::") >= 3 else False


def _driver_links(resources: list[PlainResource]) -> dict[str, set[str]]:
    """The registered drivers the stack's DeviceClasses select, by what each class is tied to: the URN of
    every resource the class depends on, and ``parent:<urn>`` of the class's parent component."""
    links: dict[str, set[str]] = {}
    known = {d.name for d in registry.dra_drivers()}
    for res in resources:
        drivers = class_drivers(res) & known
        if not drivers:
            continue
        # The stack itself is no component: everything declared at the top level is its child.
        parent = [f"parent:{res.parent}"] if res.parent and not _is_stack(res.parent) else []
        for key in [*res.dependencies, *parent]:
            links.setdefault(key, set()).update(drivers)
    return links


def is_gpu_shape(shape: object) -> bool:
    return isinstance(shape, str) and (shape in CATALOG or ".GPU." in shape)


@dataclass
class Resolved:
    """What a pod's claim reference points to: claims found, or why none was."""

    ref: ClaimRef
    claims: list[PlainResource]
    missing: str | None = None  # why the claim could not be looked at


class StackView:
    """Indexes built once per stack policy run."""

    def __init__(self, resources: list[PlainResource]) -> None:
        self.resources = resources
        self.by_urn = {r.urn: r for r in resources}
        self.classes: DeviceClasses = device_classes(resources)
        self.claims = [r for r in resources if is_claim(r)]
        self.claim_index: dict[tuple[str, Any, Any], list[PlainResource]] = {}
        for claim in self.claims:
            key = (claim.kind, claim.namespace, claim.object_name)
            self.claim_index.setdefault(key, []).append(claim)
        self.workloads = [r for r in resources if is_workload(r)]
        self._rails: dict[str, list[str]] = {}
        self._gpus: dict[str, list[str]] = {}
        self._driver_links = _driver_links(resources)

    @classmethod
    def of(cls, args: StackValidationArgs) -> StackView:
        """The view of ``args.resources``; the stack policies of one AnalyzeStack share it through the
        request's state (:class:`oke_rdma_policies.sdk_adapter.StackState`), so the stack is converted
        to plain values once. Policies only read the view."""
        return stack_state(args).get(cls, lambda: cls(from_policy_resources(args.resources)))

    def release_facts(self, res: PlainResource) -> ReleaseFacts | None:
        """The registered release a Helm release or chart of the stack installs, by what it is, not by the
        name its reference ends in (issue 28: a renamed chart must not hide DRANET from the pack):

        - the chart's own identity: its reference (a recognised name, or the facts' OCI reference), or the
          chart name Helm recorded from the chart's Chart.yaml (a Release's ``status.chart``, known once
          installed), or the repository and chart the facts name;
        - the driver it runs: a DeviceClass of the stack whose selectors name a registered driver
          (``device.driver == "dra.net"``) and that sits beside the release (the same parent component) or
          depends on it, as a component declaring a driver and its class does.
        """
        if res.type not in resource_types.HELM_TYPES:
            return None
        props = res.props
        status = props.get("status")
        recorded = status.get("chart") if isinstance(status, Mapping) else None
        repo = props.get("repositoryOpts")
        repo_url = repo.get("repo") if isinstance(repo, Mapping) else None
        for facts in registry.releases():
            if chart_basename(props.get("chart")) in facts.names or props.get("chart") == facts.chart:
                return facts
            if isinstance(recorded, str) and recorded in facts.names:
                return facts
            if (
                facts.repository is not None
                and repo_url == facts.repository
                and props.get("chart") in facts.names
            ):
                return facts
        drivers = self._driver_links.get(res.urn, set()) | self._driver_links.get(
            f"parent:{res.parent}", set()
        )
        if len(drivers) != 1:
            return None  # no class tied to it, or classes of several drivers: not one driver's release
        return next(
            (f for f in registry.dra_driver_releases() if drivers & {d.name for d in f.drivers}), None
        )

    def releases_of(self, facts: Collection[ReleaseFacts]) -> list[PlainResource]:
        """The stack's Helm releases and charts that install one of ``facts`` (:meth:`release_facts`)."""
        return [r for r in self.resources if self.release_facts(r) in facts]

    def of_type(self, type_: str) -> list[PlainResource]:
        return [r for r in self.resources if r.type == type_]

    def ancestors(self, res: PlainResource) -> Iterator[PlainResource]:
        seen = set()
        parent = res.parent
        while parent and parent not in seen and parent in self.by_urn:
            seen.add(parent)
            found = self.by_urn[parent]
            yield found
            parent = found.parent

    def gpu_node_pools(self) -> list[PlainResource]:
        return [r for r in self.of_type(resource_types.NODE_POOL) if is_gpu_shape(r.props.get("nodeShape"))]

    def rails_of(self, claim: PlainResource) -> list[str]:
        """Requests of ``claim`` that ask for DRANET devices (cached); [] if unreadable."""
        if claim.urn not in self._rails:
            try:
                spec = resource_claim_spec_v1(claim)
            except PropertyTypeError:
                spec = None
            self._rails[claim.urn] = rail_requests(spec, self.classes)
        return self._rails[claim.urn]

    def gpus_of(self, claim: PlainResource) -> list[str]:
        """Requests of ``claim`` that can get NVIDIA GPUs through DRA (cached); [] if unreadable."""
        if claim.urn not in self._gpus:
            try:
                spec = resource_claim_spec_v1(claim)
            except PropertyTypeError:
                spec = None
            self._gpus[claim.urn] = gpu_requests(spec, self.classes)
        return self._gpus[claim.urn]

    def resolve(self, workload: PlainResource, pod: PodSpec) -> list[Resolved]:
        """The claims each of the pod's `resourceClaims` entries names (same namespace)."""
        out = []
        namespace = workload.namespace
        for ref in claim_refs(pod):
            if ref.target is UNKNOWN or namespace is UNKNOWN:
                # The name is an output (an auto-named claim): the workload depends on the claim.
                deps = [
                    self.by_urn[d]
                    for d in workload.dependencies
                    if d in self.by_urn and is_claim(self.by_urn[d]) and self.by_urn[d].kind == ref.kind
                ]
                if deps:
                    out.append(Resolved(ref, deps))
                else:
                    out.append(
                        Resolved(ref, [], f"claim {ref.pod_claim} names a {ref.kind} unknown until apply")
                    )
                continue
            found = self.claim_index.get((ref.kind, namespace, ref.target), [])
            if found:
                out.append(Resolved(ref, found))
            else:
                out.append(
                    Resolved(
                        ref,
                        [],
                        f"{ref.kind} {namespace}/{ref.target} (claim {ref.pod_claim}) is not declared in this stack",
                    )
                )
        return out

    def rail_claims(
        self, workload: PlainResource, pod: PodSpec
    ) -> tuple[list[tuple[Resolved, PlainResource, list[str]]], list[str]]:
        """(reference, claim, rail requests) for referenced claims with DRANET rails; and unresolved notes."""
        rails = []
        notes = []
        for resolved in self.resolve(workload, pod):
            if resolved.missing:
                notes.append(resolved.missing)
            for claim in resolved.claims:
                names = self.rails_of(claim)
                if names:
                    rails.append((resolved, claim, names))
        return rails, notes


def node_pool_labels(pool: PlainResource) -> dict[str, Any] | Any:
    """The labels a node pool's nodes start with: its initial node labels and the instance type (its shape).

    UNKNOWN when they are unknown until apply; PropertyTypeError for a malformed label list.
    """
    items = pool.props.get("initialNodeLabels")
    if items is UNKNOWN:
        return UNKNOWN
    labels: dict[str, Any] = {INSTANCE_TYPE_LABEL: pool.props.get("nodeShape")}
    for i, item in enumerate(as_list(items, "initialNodeLabels")):
        if item is UNKNOWN:
            return UNKNOWN
        item = as_map(item, f"initialNodeLabels[{i}]")
        if item.get("key") is UNKNOWN:
            return UNKNOWN
        labels[str(item.get("key"))] = item.get("value")
    return labels


def node_labels(pool: PlainResource) -> dict[str, Any] | Any:
    """:func:`node_pool_labels` plus, on GPU shapes, the labels set at run time: `nvidia.com/gpu.present` by
    the GPU Operator (GPU feature discovery) and NFD's `feature.node.kubernetes.io/pci-10de.present`."""
    labels = node_pool_labels(pool)
    if labels is UNKNOWN:
        return UNKNOWN
    if is_gpu_shape(pool.props.get("nodeShape")):
        labels[GPU_PRESENT_LABEL] = GPU_PRESENT
        labels[NFD_NVIDIA_PCI_LABEL] = "true"
    return labels


def node_cloud_init(pool: PlainResource) -> str | Any | None:
    """The text of a node pool's cloud-init (`nodeMetadata.user_data`, base64 or plain); None without one."""
    data = pool.props.get("nodeMetadata")
    if data is UNKNOWN:
        return UNKNOWN
    user_data = data.get("user_data") if isinstance(data, Mapping) else None
    if user_data is UNKNOWN:
        return UNKNOWN
    if not isinstance(user_data, str):
        return None
    try:
        return base64.b64decode(user_data, validate=True).decode(errors="replace")
    except (binascii.Error, ValueError):
        return user_data


def node_taints(pool: PlainResource) -> tuple[str, ...] | Any:
    """The taints (`key=value:Effect`) the pool's nodes register with, from its cloud-init; UNKNOWN if unknown."""
    text = node_cloud_init(pool)
    if text is UNKNOWN:
        return UNKNOWN
    return registered_taints(text) if text else ()


def labels_of(res: PlainResource) -> Mapping[str, Any] | Any:
    meta = res.props.get("metadata")
    if not isinstance(meta, Mapping):
        return {}
    labels = meta.get("labels")
    if labels is UNKNOWN:
        return UNKNOWN
    return labels if isinstance(labels, Mapping) else {}


WorkloadCheck = Callable[["StackView", Any, Reporter], None]


def validate_each_workload(check: WorkloadCheck) -> Callable[[StackValidationArgs, ReportViolation], None]:
    """A stack policy's `validate` that runs `check` on every workload, each guarded on its own."""

    def run(args: StackValidationArgs, reporter: Reporter) -> None:
        view = StackView.of(args)
        for workload in view.workloads:
            reporter.guard(workload.label, workload.urn, partial(check, view, workload, reporter))

    return guarded(run, stack_where)


def claim_validation(
    check: Callable[[PlainResource, Reporter], None],
) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    """A resource policy's ``validate`` that runs ``check`` on each ResourceClaim and ResourceClaimTemplate
    (every other resource passes untouched); an error that escapes it is reported at the resource."""

    def check_resource(args: ResourceValidationArgs, reporter: Reporter) -> None:
        if not args.resource_type.startswith(resource_types.DRA_GROUP_PREFIX):
            return
        res = from_resource_args(args)
        if is_claim(res):
            check(res, reporter)

    return guarded(check_resource, resource_where)
