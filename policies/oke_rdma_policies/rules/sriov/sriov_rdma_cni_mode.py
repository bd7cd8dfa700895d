"""sriov-rdma-cni-mode (stack): the RDMA CNI in a network exactly when its nodes run the exclusive RDMA mode.

Seed 001, both ways: in the shared RDMA namespace mode (ib_core `netns_mode=1`) the RDMA CNI refuses to
run and pods stay in ContainerCreating; in the exclusive mode (`netns_mode=0`) a network without it
gives the pod the VF's interface and an address but 0 RDMA devices. A network's nodes are the GPU node
pools its resource's node policies select; their mode is the `ib_core` option their cloud-init writes.
"""

from __future__ import annotations

from functools import partial

from pulumi_policy import ReportViolation, StackValidationArgs

from oke_gpu_rdma.common import resource_types, stack_keys
from oke_gpu_rdma.sriov import operator_objects as sriov
from oke_rdma_policies.kube import PlainResource
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter
from oke_rdma_policies.sriov_objects import (
    ChainError,
    Pool,
    known_pools,
    network_chain,
    node_policies,
    rdma_netns,
    selects,
    spec_of,
)
from oke_rdma_policies.stack import StackView
from oke_rdma_policies.values import UNKNOWN, as_map

EXCLUSIVE_SETTING = stack_keys.stack_setting(stack_keys.NETWORK_OPERATOR_RDMA_MODE, "exclusive")
SHARED_SETTING = stack_keys.stack_setting(stack_keys.NETWORK_OPERATOR_RDMA_MODE, "shared")


def _pools_of(resource: str, view: StackView, pools: list[Pool], reporter: Reporter) -> list[Pool]:
    found: dict[str, Pool] = {}
    for res in node_policies(view):
        spec = spec_of(res)
        if spec is UNKNOWN or spec.get("resourceName") != resource:
            continue
        selector = spec.get("nodeSelector")
        if selector is UNKNOWN:
            reporter.unchecked(f"{res.label}: spec.nodeSelector unknown until apply")
            continue
        selector = as_map(selector, "spec.nodeSelector")
        for pool in pools:
            if selects(selector, None, pool.labels):
                found[pool.res.urn] = pool
    return list(found.values())


def _check(res: PlainResource, view: StackView, pools: list[Pool], reporter: Reporter) -> None:
    try:
        chain = network_chain(res)
    except ChainError:
        return  # sriov-rdma-qos reports a chain that does not parse
    if chain is None or chain is UNKNOWN:
        return
    spec = spec_of(res)
    resource = UNKNOWN if spec is UNKNOWN else spec.get("resourceName")
    if not isinstance(resource, str):
        return
    nodes = _pools_of(resource, view, pools, reporter)
    if not nodes:
        reporter.unchecked(
            f"{res.label}: no GPU node pool of the stack gets resource {resource}; RDMA mode not checked"
        )
        return
    with_cni = sriov.has_rdma_cni(chain.plugins)
    for pool in nodes:
        mode = rdma_netns(pool.res)
        if mode is UNKNOWN or mode is None:
            reporter.unchecked(
                f"{pool.label}: RDMA namespace mode unknown (no ib_core netns_mode in its cloud-init)"
            )
            continue
        if with_cni and mode == "shared":
            reporter.violation(
                f"{res.label} chains the RDMA CNI (type {sriov.RDMA_CNI_TYPE} in {chain.field}) but its VFs are on "
                f"{pool.label}, whose nodes run the shared RDMA namespace mode (netns_mode=1 in their cloud-init): "
                "the RDMA CNI refuses to run unless the mode is exclusive, so pods stay in ContainerCreating (seed "
                f"001). Fix: remove the rdma plugin from {chain.field}, or run the pool in the exclusive mode "
                f"({EXCLUSIVE_SETTING})",
                res.urn,
            )
        elif not with_cni and mode == "exclusive":
            reporter.violation(
                f"{res.label} has no RDMA CNI in {chain.field} but its VFs are on {pool.label}, whose nodes run the "
                "exclusive RDMA namespace mode (netns_mode=0): the VF's RDMA device stays in the host namespace, so "
                "pods get the interface and an address but 0 RDMA devices (seed 001). Fix: add "
                f'{{"type": "{sriov.RDMA_CNI_TYPE}", "{sriov.RDMA_QOS_KEY}": {{"{sriov.RDMA_QOS_TC_KEY}": '
                f"{sriov.JOB_TRAFFIC_CLASS}}}}} to {chain.field} ({EXCLUSIVE_SETTING} does), or go back to the shared "
                f"mode ({SHARED_SETTING})",
                res.urn,
            )


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    reporter = Reporter(report_violation)
    view = StackView.of(args)
    networks = view.of_type(resource_types.SRIOV_NETWORK)
    if networks:
        unchecked: list[str] = []
        pools = known_pools(view, unchecked)
        for item in unchecked:
            reporter.unchecked(item)
        for res in networks:
            reporter.guard(res.label, res.urn, partial(_check, res, view, pools, reporter))
    reporter.finish()


RULE = stack_rule(
    name="sriov-rdma-cni-mode",
    level="mandatory",
    description=(
        "A SriovNetwork chains the RDMA CNI if and only if the nodes of its resource run the exclusive RDMA namespace "
        "mode (ib_core netns_mode=0)."
    ),
    validate=validate,
)
