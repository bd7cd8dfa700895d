"""sriov-network-references (stack): each SriovNetwork names a resource a node policy provides and an IPPool that exists.

A SriovNetwork becomes a NetworkAttachmentDefinition annotated with its `resourceName`; Multus then
asks the kubelet for a VF of that resource. A resource no SriovNetworkNodePolicy provides is offered by
no node, so pods listing the network stay Pending; an `nv-ipam` `poolName` no IPPool has leaves the VF
without an address (and so without a RoCE GID: seed 001's pods used the GID of the VF's address at
index 3), and the pod fails to start. Judged against the node policies and IPPools of the stack; when
the stack declares none, the references are reported as not checked.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from functools import partial

from pulumi_policy import ReportViolation, StackValidationArgs

from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.sriov import operator_objects as sriov
from oke_rdma_policies.kube import PlainResource
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter
from oke_rdma_policies.sriov_objects import node_policies, resource_of
from oke_rdma_policies.stack import StackView
from oke_rdma_policies.values import UNKNOWN, PropertyTypeError, dig


def _closest(name: str, known: set[str]) -> str:
    match = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {match[0]}?)" if match else ""


def _check(
    res: PlainResource,
    provided: set[str] | None,
    pools: set[str] | None,
    reporter: Reporter,
    unknown_pools: bool,
) -> None:
    resource = dig(res.props, "spec.resourceName")
    if resource is UNKNOWN:
        reporter.unchecked(f"{res.label}: spec.resourceName unknown until apply")
    elif isinstance(resource, str) and provided is not None and resource not in provided:
        reporter.violation(
            f"{res.label}: spec.resourceName {resource!r} is provided by no SriovNetworkNodePolicy of the stack"
            f"{_closest(resource, provided)}; resources there: {', '.join(sorted(provided))}. No node offers "
            f"{sriov.qualified(resource)}, so every pod that lists this network stays Pending. Fix: set "
            "spec.resourceName to the resourceName of the node policy for this rail",
            res.urn,
        )
    ipam = dig(res.props, "spec.ipam")
    if ipam is UNKNOWN:
        reporter.unchecked(f"{res.label}: spec.ipam unknown until apply")
        return
    if not isinstance(ipam, str) or not ipam.strip():
        return
    try:
        config = json.loads(ipam)
    except json.JSONDecodeError as err:
        reporter.violation(
            f"{res.label}: spec.ipam is not JSON ({err.msg}); the network gets no IPAM. Fix the text", res.urn
        )
        return
    if not isinstance(config, Mapping):
        raise PropertyTypeError("spec.ipam", "a JSON object", config)
    if config.get("type") != sriov.NV_IPAM_TYPE or config.get("poolType", "ippool") != "ippool":
        return
    if pools is None:
        if not unknown_pools:
            reporter.unchecked(
                f"{res.label}: no IPPool in the stack, pool {config.get('poolName')!r} not checked"
            )
        return
    for pool in sriov.ipam_pool_names(config):
        if pool not in pools:
            reporter.violation(
                f"{res.label}: spec.ipam names nv-ipam pool {pool!r}, which is no IPPool of the stack"
                f"{_closest(pool, pools)}; pools there: {', '.join(sorted(pools)) or 'none'}. The VF would get no "
                "address, so no RoCE GID, and the pod fails to start. Fix: set poolName to an IPPool's name",
                res.urn,
            )


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    reporter = Reporter(report_violation)
    view = StackView.of(args)
    networks = view.of_type(resource_types.SRIOV_NETWORK)
    if not networks:
        reporter.finish()
        return
    provided: set[str] | None = set()
    policies = node_policies(view)
    for res in policies:
        name = reporter.guard(res.label, res.urn, partial(resource_of, res))
        if name is UNKNOWN:
            provided = None
            reporter.unchecked(
                f"{res.label}: spec.resourceName unknown until apply; network resources not checked"
            )
            break
        if isinstance(name, str) and provided is not None:
            provided.add(name)
    if not policies:
        provided = None
        reporter.unchecked("no SriovNetworkNodePolicy in the stack: the networks' resourceName not checked")
    pool_objects = view.of_type(resource_types.IP_POOL)
    names = [p.object_name for p in pool_objects]
    unknown_pools = any(n is UNKNOWN for n in names)
    if unknown_pools:
        reporter.unchecked("an IPPool name is unknown until apply: the networks' IPAM pools not checked")
    pools = {n for n in names if isinstance(n, str)} if pool_objects and not unknown_pools else None
    for res in networks:
        reporter.guard(res.label, res.urn, partial(_check, res, provided, pools, reporter, unknown_pools))
    reporter.finish()


RULE = stack_rule(
    name="sriov-network-references",
    level="mandatory",
    description=(
        "A SriovNetwork's resourceName must be provided by a SriovNetworkNodePolicy and its nv-ipam poolName must "
        "be an IPPool of the stack."
    ),
    validate=validate,
)
