"""public-ingress-exposure (stack): no network security group or security list lets in more of the internet
than the bar (pack config `maxPublicPrefix`, default one /16's worth of public addresses).

Refusing only `0.0.0.0/0` is beaten by its halves, so each NSG's ingress rules (each an
`oci:Core/NetworkSecurityGroupSecurityRule` of the NSG) and each security list's `ingressSecurityRules` are
judged together, as the union of their CIDR sources less the space no internet host holds
(:mod:`oke_gpu_rdma.nodes.public_exposure`). Only CIDR sources count: a rule whose `sourceType` is
`SERVICE_CIDR_BLOCK` (the Oracle Services Network) or `NETWORK_SECURITY_GROUP` names no internet range
(terraform-provider-oci, core_network_security_group_security_rule and core_security_list: `source_type`
CIDR_BLOCK, SERVICE_CIDR_BLOCK, NETWORK_SECURITY_GROUP; an absent type on a security list is CIDR_BLOCK).
The bar is the organisation's: the program writes no section for this policy, so a stack file cannot widen it
(the stack's own `network.create.apiMaxPublicPrefix` is a second, separate check).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from pulumi_policy import StackValidationArgs

from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.common.pack_settings import PublicIngressSettings
from oke_gpu_rdma.nodes import public_exposure
from oke_rdma_policies import settings
from oke_rdma_policies.kube import PlainResource
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter, guarded, stack_where
from oke_rdma_policies.stack import StackView
from oke_rdma_policies.values import UNKNOWN, as_list, as_map

CIDR_SOURCE: Final = "CIDR_BLOCK"
SECURITY_LISTS: Final = (resource_types.SECURITY_LIST, resource_types.DEFAULT_SECURITY_LIST)


@dataclass
class RuleSet:
    """The ingress sources of one NSG or security list, and the resources that declare them."""

    label: str
    urn: str
    sources: list[tuple[str, str]] = field(default_factory=list)
    """(the CIDR as written, how the message shows it)"""


def _source(rule: Any, path: str, where: str, default_type: str | None, reporter: Reporter) -> str | None:
    """The CIDR a rule lets in, or None (not ingress from a CIDR, or unknown until apply)."""
    rule = as_map(rule, path)
    kind = rule.get("sourceType", default_type)
    source = rule.get("source")
    if source is UNKNOWN or kind is UNKNOWN:
        reporter.unchecked(f"{where}: its source is known only at apply")
        return None
    if kind not in (CIDR_SOURCE, None) or not isinstance(source, str):
        return None
    return source


def _nsg_of(view: StackView, res: PlainResource) -> tuple[str, str]:
    """The NSG a rule belongs to (its id when known, else the NSG resource it depends on), as (key, label)."""
    nsg = res.props.get("networkSecurityGroupId")
    for urn in res.dependencies:
        dep = view.by_urn.get(urn)
        if dep is not None and dep.type == resource_types.NSG:
            return urn, f"NetworkSecurityGroup {dep.name}"
    if isinstance(nsg, str):
        return nsg, f"network security group {nsg}"
    return res.urn, f"the network security group of {res.label}"


def _rule_sets(view: StackView, reporter: Reporter) -> Iterator[RuleSet]:
    by_nsg: dict[str, RuleSet] = {}
    for res in view.resources:
        if res.type == resource_types.NSG_RULE:
            if res.props.get("direction") != "INGRESS":
                continue
            source = _source(res.props, "", f"{res.kind} {res.name}", None, reporter)
            if source is not None:
                key, label = _nsg_of(view, res)
                found = by_nsg.setdefault(key, RuleSet(label, res.urn))
                found.sources.append((source, f"{source} ({res.name})"))
        elif res.type in SECURITY_LISTS:
            found = RuleSet(f"{res.kind} {res.name}", res.urn)
            rules = res.props.get("ingressSecurityRules")
            if rules is UNKNOWN:
                reporter.unchecked(f"{res.kind} {res.name}: its ingress rules are known only at apply")
                continue
            for i, rule in enumerate(as_list(rules, "ingressSecurityRules")):
                path = f"ingressSecurityRules[{i}]"
                source = _source(rule, path, f"{res.kind} {res.name} {path}", CIDR_SOURCE, reporter)
                if source is not None:
                    found.sources.append((source, source))
            yield found
    yield from by_nsg.values()


def check(args: StackValidationArgs, reporter: Reporter) -> None:
    conf, problems = settings.read_section(PublicIngressSettings, args.get_config())
    for problem in problems:
        reporter.violation(f"{problem}; ingress was judged against the default bar")
    view = StackView.of(args)
    for found in _rule_sets(view, reporter):
        parsed: list[tuple[public_exposure.IPNetwork, str]] = []
        for cidr, shown in found.sources:
            try:
                parsed.append((public_exposure.parse_source(cidr), shown))
            except ValueError:
                reporter.violation(f"{found.label}: ingress source {cidr!r} is not a CIDR block", found.urn)
        bars = (conf.max_public_prefix, conf.max_public_prefix_v6)
        for exposure in public_exposure.too_open([n for n, _ in parsed], *bars):
            key = "maxPublicPrefix" if exposure.version == 4 else "maxPublicPrefixV6"
            listed = ", ".join(shown for n, shown in parsed if n.version == exposure.version)
            reporter.violation(
                f"{found.label}: its ingress sources [{listed}] {exposure.describe()} (pack config {key}). "
                "Split or not, these ranges open it to most of the internet: list only the networks that need "
                "it (office or VPN egress CIDRs, a /32 per admin host), or keep the endpoint private and reach "
                "it from inside the VCN",
                found.urn,
            )


RULE = stack_rule(
    name=PublicIngressSettings.policy,
    level="mandatory",
    description=(
        "The CIDR ingress sources of each network security group and security list, as one union, cover no "
        "more public addresses than one /16 (pack config maxPublicPrefix): 0.0.0.0/0 split into halves "
        "counts as 0.0.0.0/0."
    ),
    validate=guarded(check, stack_where),
    settings=PublicIngressSettings,
)
