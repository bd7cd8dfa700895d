"""Pods that can never run, for gpu-rail-claims-aligned: a pod whose node selection admits only pools where one
of its claims can never be allocated, or where its claims cannot all be allocated together."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oke_gpu_rdma.drivers.attributes import PCIE_ROOT
from oke_gpu_rdma.nodes.labels import (
    INSTANCE_TYPE_LABEL,
)
from oke_gpu_rdma.scheduling.node_selection import may_select
from oke_rdma_policies.claim_landing import Judging
from oke_rdma_policies.kube import PlainResource, pod_specs
from oke_rdma_policies.report import Reporter
from oke_rdma_policies.stack import StackView
from oke_rdma_policies.values import contains_unknown


@dataclass(frozen=True)
class PodClaim:
    """One entry of a pod's `resourceClaims` (its own claim, even when two entries name one template) and
    which of its requests can get GPUs and rails."""

    name: str
    claim: PlainResource
    gpus: tuple[str, ...]
    rails: tuple[str, ...]

    @property
    def shown(self) -> str:
        return f"claim {self.name} = {self.claim.label}"


def split_pods(view: StackView, workload: PlainResource, reporter: Reporter) -> None:
    """A pod's GPUs and rails from different claims are unaligned: the allocator builds the matchAttribute
    constraints of each claim from that claim's requests only and allocates the pod's claims one after the
    other (kubernetes staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/
    allocator_stable.go, tag v1.36.0: `Allocate` loops over `claimsToAllocate`, `constraints[claimIndex]`
    holds one claim's `matchAttribute` constraints), so no pcieRoot constraint ties a GPU of one claim to a
    rail of another. A claim that gives GPUs and rails itself is judged on its own (above); a pod is
    reported when one of its claims gives GPUs without rails, or rails without GPUs, while another gives
    the other kind."""
    for pod in pod_specs(workload):
        found: list[PodClaim] = []
        for resolved in view.resolve(workload, pod):
            for claim in resolved.claims:
                gpus, rails = tuple(view.gpus_of(claim)), tuple(view.rails_of(claim))
                if gpus or rails:
                    found.append(PodClaim(resolved.ref.pod_claim, claim, gpus, rails))
        split = [
            (a, b)
            for a in found
            for b in found
            if a is not b and a.gpus and b.rails and not (a.rails and b.gpus)
        ]
        if not split:
            continue
        with_gpus, with_rails = split[0]
        reporter.violation(
            f"{workload.label} {pod.where}: unaligned: GPUs from {with_gpus.shown} (requests "
            f"{', '.join(with_gpus.gpus)}) and DRANET rails from {with_rails.shown} (requests "
            f"{', '.join(with_rails.rails)}). The allocator applies "
            "a claim's matchAttribute constraints only among that claim's own requests and allocates each "
            "claim on its own (kubernetes dynamic-resource-allocation structured allocator), so nothing keeps "
            "these GPUs on the PCIe roots of these rails, exactly as with device-plugin GPUs next to claimed "
            "rails. Fix: ask for the GPUs and the rails in one claim, one gpus-i/rails-i pair per PCIe root "
            f"with a {PCIE_ROOT} constraint (like seed 000's aligned-4gpu-8rails-a)",
            workload.urn,
        )


def pod_selection(pod: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
    """The pod's nodeSelector and affinity; None when unknown until apply."""
    selector, affinity = pod.get("nodeSelector"), pod.get("affinity")
    if contains_unknown(selector) or contains_unknown(affinity):
        return None
    return (
        selector if isinstance(selector, Mapping) else {},
        affinity if isinstance(affinity, Mapping) else {},
    )


def selection_shown(selector: Mapping[str, Any], affinity: Mapping[str, Any]) -> str:
    parts = []
    if selector:
        parts.append("nodeSelector " + ", ".join(f"{k}={v}" for k, v in selector.items()))
    if affinity:
        parts.append("required node affinity")
    return " and ".join(parts)


def pools_shown(how: Judging, indices: frozenset[int] | set[int]) -> tuple[list[str], str]:
    """The shapes of the pools ``indices`` and `node pools a, b`."""
    chosen = [how.pools[i] for i in sorted(indices)]
    shapes = list(dict.fromkeys(p.shape for p in chosen))
    return shapes, "node pools " + ", ".join(p.res.name for p in chosen if p.res is not None)


def never_meet(view: StackView, workload: PlainResource, how: Judging, reporter: Reporter) -> None:
    """A pod whose node selection and claims can never meet on one node stays Pending forever: kube-scheduler
    runs each node through every Filter plugin and keeps only the nodes that pass all of them (kubernetes
    v1.36.4 pkg/scheduler/schedule_one.go findNodesThatPassFilters l. 777-815, pkg/scheduler/framework/runtime/
    framework.go RunFilterPlugins l. 1093-1121: the first failing plugin rejects the node): the NodeAffinity
    Filter takes only nodes its nodeSelector and required node affinity admit (pkg/scheduler/framework/plugins/
    nodeaffinity/node_affinity.go l. 218-239; :func:`oke_gpu_rdma.scheduling.node_selection.may_select`), and the
    DynamicResources Filter only nodes where every claim of the pod can be allocated together
    (pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go l. 848-879). The pools where a claim
    can be allocated are its drivers' pools less those whose shape it is never allocated on (:func:`_check`
    fills ``how.places``). A pod that selects no GPU pool of the stack, a claim not judged or refused by the
    API server, and a stack without pools say nothing here."""
    if any(p.res is None for p in how.pools):
        return
    for pod in pod_specs(workload):
        selection = pod_selection(pod.spec)
        if selection is None:
            continue
        selector, affinity = selection
        selected = {
            i
            for i, p in enumerate(how.pools)
            if p.nodes is None or may_select(selector, affinity, p.nodes.labels, p.later_keys)
        }
        if not selected:
            continue
        claims: list[tuple[str, PlainResource, frozenset[int]]] = []
        for resolved in view.resolve(workload, pod):
            for claim in resolved.claims:
                places = how.places.get(claim.urn)
                if places:  # a claim allocatable nowhere is reported on its own
                    claims.append((f"claim {resolved.ref.pod_claim} = {claim.label}", claim, places))
        if not claims or frozenset.intersection(*(places for _, _, places in claims)) & selected:
            continue
        pod_shapes, pod_pools = pools_shown(how, selected)
        admits = (
            f"its {selection_shown(selector, affinity)} admits only {pod_pools} ({', '.join(pod_shapes)})"
        )
        apart = [(shown, claim, places) for shown, claim, places in claims if not places & selected]
        if apart:
            shown, claim, places = apart[0]
            claim_shapes, claim_pools = pools_shown(how, places)
            instead = template_instead(view, how, claim, selected)
            reporter.violation(
                f"{workload.label} {pod.where}: {shown} can be allocated only on {', '.join(claim_shapes)} "
                f"({claim_pools}), and {admits}: no node passes both kube-scheduler's NodeAffinity Filter and "
                "its DynamicResources Filter, so the pod stays Pending forever. Fix: select nodes of "
                f"{claim_shapes[0]} (nodeSelector {INSTANCE_TYPE_LABEL}: {claim_shapes[0]}), or use a claim "
                f"template that can be allocated on {', '.join(pod_shapes)}"
                + (f", such as {instead}" if instead else ""),
                workload.urn,
            )
            continue
        each = "; ".join(
            f"{shown} only on {', '.join(pools_shown(how, places)[0])}" for shown, _, places in claims
        )
        reporter.violation(
            f"{workload.label} {pod.where}: its claims can never be allocated on one node ({each})"
            + (f", and {admits}" if selector or affinity else "")
            + ": no node passes kube-scheduler's DynamicResources Filter for all of them, so the pod stays "
            "Pending forever. Fix: give the pod claims that can all be allocated on one shape (the stack's "
            "templates for one shape end in its name)",
            workload.urn,
        )


def template_instead(view: StackView, how: Judging, claim: PlainResource, selected: set[int]) -> str | None:
    """The name closest to ``claim``'s among the claims of its kind and namespace that can be allocated on one of
    the pools ``selected`` (the stack names a template per shape: ``aligned-4gpu-8rails-bm-gpu-b4-8``)."""
    if not isinstance(claim.object_name, str):
        return None
    names = sorted(
        c.object_name
        for c in view.claims
        if c.kind == claim.kind
        and c.namespace == claim.namespace
        and isinstance(c.object_name, str)
        and c.object_name != claim.object_name
        and how.places.get(c.urn, frozenset()) & selected
        and bool(view.gpus_of(c)) == bool(view.gpus_of(claim))
        and bool(view.rails_of(c)) == bool(view.rails_of(claim))
    )
    close = difflib.get_close_matches(claim.object_name, names, n=1, cutoff=0.6)
    return close[0] if close else None
