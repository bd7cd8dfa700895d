"""sriov-vf-pool-range (stack): the VF address pool (NVIDIA IPAM IPPool) overlaps nothing else of the address plan.

Each VF interface gets an address in the pool, and its pod an on-link route for the whole pool; the
sbr plugin routes the VF's own traffic by source. An overlap with a VCN, a subnet, the pods or services
CIDR, the OCA RDMA network of the rails or a DRANET child range sends traffic for those ranges out of
the VFs. Seed 001 used 192.168.0.0/16 on a cluster whose plan is all in 10.0.0.0/8.
"""

from __future__ import annotations

from functools import partial

from pulumi_policy import ReportViolation, StackValidationArgs

from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.common.pack_settings import VfPoolSettings
from oke_gpu_rdma.nodes.cidr_rules import (
    DEFAULT_CHILD_RANGE,
    CidrError,
    NamedRange,
    parse_ipv4_network,
    vf_pool_problems,
)
from oke_rdma_policies import settings
from oke_rdma_policies.kube import PlainResource
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter
from oke_rdma_policies.rules.nodes.dranet_child_range import deployments, stack_ranges
from oke_rdma_policies.stack import StackView
from oke_rdma_policies.values import UNKNOWN, dig

OCA_KEY = VfPoolSettings.key("oca_rdma_network")
EXISTING_KEY = VfPoolSettings.key("existing_cidrs")


def _check(res: PlainResource, plan: list[NamedRange], reporter: Reporter) -> None:
    subnet = dig(res.props, "spec.subnet")
    if subnet is UNKNOWN:
        reporter.unchecked(f"{res.label}: spec.subnet unknown until apply")
        return
    if subnet is None:
        return
    try:
        pool = parse_ipv4_network(subnet)
    except CidrError as err:
        reporter.violation(
            f"{res.label}: spec.subnet: {err}; NVIDIA IPAM refuses the pool. Fix the CIDR", res.urn
        )
        return
    for problem in vf_pool_problems(pool, plan):
        reporter.violation(
            f"{res.label}: {problem}. Fix: set spec.subnet to a range free in the whole plan", res.urn
        )


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    reporter = Reporter(report_violation)
    conf, problems = settings.read_section(VfPoolSettings, args.get_config())
    for problem in problems:
        reporter.violation(f"{problem}; the VF pool was checked without this section of the pack config")
    view = StackView.of(args)
    pools = view.of_type(resource_types.IP_POOL)
    if not pools:
        reporter.finish()
        return
    plan = stack_ranges(view, reporter)
    plan.append(NamedRange(f"the OCA RDMA network (pack config {OCA_KEY})", conf.oca_rdma_network))
    plan += [NamedRange(f"{r.name} (pack config {EXISTING_KEY})", r.cidr) for r in conf.existing_cidrs]
    for dep in deployments(view, reporter):
        if dep.value is None:
            plan.append(NamedRange(f"{dep.label}'s child range (its default)", DEFAULT_CHILD_RANGE))
            continue
        try:
            plan.append(NamedRange(f"{dep.label}'s child range", parse_ipv4_network(dep.value)))
        except CidrError:
            continue  # dranet-child-range reports it
    for res in pools:
        reporter.guard(res.label, res.urn, partial(_check, res, plan, reporter))
    reporter.finish()


RULE = stack_rule(
    name=VfPoolSettings.policy,
    level="mandatory",
    description=(
        "An NVIDIA IPAM IPPool for VFs must overlap no VCN, subnet, pods or services CIDR, the OCA RDMA network or "
        "a DRANET child range."
    ),
    validate=validate,
    settings=VfPoolSettings,
)
