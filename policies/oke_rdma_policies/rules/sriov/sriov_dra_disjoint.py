"""sriov-dra-disjoint (stack): SR-IOV node policies and the DRA GPU/rail drivers never select the same nodes.

A node is on one path: SR-IOV pods get GPUs from the GPU Operator's device plugin, and the NVIDIA GPU
DRA driver must not serve the same GPUs beside it (they would be handed out twice); DRANET's oke-rdma
profile needs the shared RDMA mode and rails that stay IPvlan parents, while SR-IOV reconfigures the
rail PFs (VFs, drains) and may run them in the exclusive mode. Node selection is judged on the labels
each GPU node pool's nodes start with (initial node labels and the instance type); without pools in
the stack, on the labels an SR-IOV policy's nodeSelector requires.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from pulumi_policy import ReportViolation, StackValidationArgs

from oke_gpu_rdma.common import stack_keys
from oke_rdma_policies.kube import PlainResource
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter
from oke_rdma_policies.sriov_objects import known_pools, node_policies, selects, spec_of
from oke_rdma_policies.stack import StackView
from oke_rdma_policies.values import UNKNOWN, as_map, contains_unknown, dig


@dataclass
class Selection:
    """Which nodes one installation or policy runs on: a nodeSelector and a node affinity (either may be None)."""

    res: PlainResource
    what: str
    selector: Any
    affinity: Any

    def admits(self, labels: Mapping[str, Any]) -> bool:
        return selects(self.selector, self.affinity, labels)


def _drivers(view: StackView, reporter: Reporter) -> list[Selection]:
    found = []
    for res in view.resources:
        # The registered DRA drivers' releases, with the values that place each one's kubelet plugin.
        release = view.release_facts(res)
        if release is None or not release.drivers:
            continue
        plugin = release.drivers[0]
        what = release.title
        values = res.props.get("values")
        if values is UNKNOWN or contains_unknown(values):
            reporter.unchecked(f"{res.kind} {res.name}: values unknown until apply")
            continue
        values = as_map(values, "values")
        found.append(
            Selection(
                res,
                f"{what} ({res.kind} {res.name})",
                dig(values, plugin.plugin_node_selector_value, "values"),
                dig(values, plugin.plugin_affinity_value, "values"),
            )
        )
    return found


def _policies(view: StackView, reporter: Reporter) -> list[Selection]:
    found = []
    for res in node_policies(view):
        spec = spec_of(res)
        selector = UNKNOWN if spec is UNKNOWN else spec.get("nodeSelector")
        if selector is UNKNOWN or contains_unknown(selector):
            reporter.unchecked(f"{res.label}: spec.nodeSelector unknown until apply")
            continue
        found.append(Selection(res, res.label, as_map(selector, "spec.nodeSelector"), None))
    return found


WHY = (
    "SR-IOV pods get GPUs from the GPU Operator's device plugin, which the NVIDIA GPU DRA driver must never serve "
    "beside, and DRANET's oke-rdma profile needs rails in the shared mode that SR-IOV reconfigures"
)


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    reporter = Reporter(report_violation)
    view = StackView.of(args)
    policies = reporter.guard("SR-IOV node policies", None, partial(_policies, view, reporter)) or []
    drivers = reporter.guard("DRA drivers", None, partial(_drivers, view, reporter)) or []
    if not policies or not drivers:
        reporter.finish()
        return
    unchecked: list[str] = []
    pools = known_pools(view, unchecked)
    for item in unchecked:
        reporter.unchecked(item)
    fix = (
        "Fix: give the pool one path: rdma: sriov keeps the DRA drivers off it "
        f"({stack_keys.stack_setting(stack_keys.NODE_POOL_RDMA, 'sriov')}), or narrow the node policies' "
        "nodeSelector and the drivers' node selection so they share no node"
    )
    if pools:
        for pool in pools:
            sriov_hits = [p.what for p in policies if p.admits(pool.labels)]
            dra_hits = [d.what for d in drivers if d.admits(pool.labels)]
            if sriov_hits and dra_hits:
                reporter.violation(
                    f"{pool.label} is selected by SR-IOV node policies ({', '.join(sriov_hits[:3])}"
                    f"{', ...' if len(sriov_hits) > 3 else ''}) and by {', '.join(dra_hits)}: {WHY}. {fix}",
                    pool.res.urn,
                )
        reporter.finish()
        return
    for policy_sel in policies:
        labels = dict(policy_sel.selector or {})
        hits = [d.what for d in drivers if d.admits(labels)]
        if hits:
            shown = ", ".join(f"{k}={v}" for k, v in labels.items()) or "every node"
            reporter.violation(
                f"{policy_sel.what} selects nodes with {shown}, which {', '.join(hits)} also select: {WHY}. {fix}",
                policy_sel.res.urn,
            )
    reporter.finish()


RULE = stack_rule(
    name="sriov-dra-disjoint",
    level="mandatory",
    description="SR-IOV node policies and the DRA GPU/rail drivers (DRANET, NVIDIA GPU DRA driver) select disjoint nodes.",
    validate=validate,
)
