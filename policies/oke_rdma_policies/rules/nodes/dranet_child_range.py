"""dranet-child-range (stack): the DRANET OKE child range against the whole address plan.

Each pod gets an IPvlan child per claimed rail with an address in the child range and an on-link
route for the whole range (seed 003). DRANET checks only what one node sees; it "cannot see the
whole pod CIDR or service CIDR". This policy sees the stack: VCNs, subnets, the cluster's pods and
services CIDRs, the OCA RDMA network and what the pack config adds.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from ipaddress import IPv4Network
from typing import Any, Final

from pulumi_policy import StackValidationArgs

from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.common.pack_settings import ChildRangeSettings
from oke_gpu_rdma.drivers import dranet
from oke_gpu_rdma.drivers.dranet_options import DranetOptions, flag_options, helm_options
from oke_gpu_rdma.nodes.cidr_rules import (
    DEFAULT_CHILD_RANGE,
    OKE_DEFAULT_PODS_CIDR,
    OKE_DEFAULT_SERVICES_CIDR,
    CidrError,
    NamedRange,
    child_range_problems,
    parse_ipv4_network,
)
from oke_rdma_policies import settings
from oke_rdma_policies.environment import command_texts
from oke_rdma_policies.helm import helm_values
from oke_rdma_policies.kube import PlainResource, containers, pod_specs
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter, guarded, stack_where
from oke_rdma_policies.stack import StackView
from oke_rdma_policies.values import UNKNOWN, PropertyTypeError, as_list, as_map, contains_unknown, dig

CIDR_VALUE: Final = f"values.{dranet.CHILD_RANGE_VALUE}"
OPTION: Final = dranet.CHILD_RANGE_OPTION
OCA_KEY: Final = ChildRangeSettings.key("oca_rdma_network")
EXISTING_KEY: Final = ChildRangeSettings.key("existing_cidrs")
WORKERS_KEY: Final = ChildRangeSettings.key("worker_subnet_cidrs")
DRANET_IMAGE: Final = re.compile(r"(^|/)dranet([:@]|$)")


@dataclass
class Deployment:
    """One DRANET installation and the child range it runs with."""

    res: PlainResource
    what: str  # how the range is set, for messages
    value: Any  # the configured string, UNKNOWN, or None for the default
    fix: str  # where to change it

    @property
    def label(self) -> str:
        return f"DRANET {self.res.kind} {self.res.name}"


def _broken(res: PlainResource, where: str, opts: DranetOptions, fix: str, reporter: Reporter) -> None:
    for problem in opts.problems:
        reporter.violation(
            f"DRANET {where}: {problem}. A broken DRANET gives no rail an IPvlan child (seed 003), so RDMA "
            f"pods get no rails. Fix: {fix}",
            res.urn,
        )


def _deployment(res: PlainResource, opts: DranetOptions, how: str, fix: str) -> Deployment | None:
    if not opts.runs_oke:
        return None  # another provider runs, and without OKE options (checked): no child range
    if opts.child_range is not None:
        return Deployment(res, f"{how} = {opts.child_range!r}", opts.child_range, fix)
    return Deployment(res, f"uses DRANET's default child range {DEFAULT_CHILD_RANGE} (no {how})", None, fix)


def _helm_deployment(res: PlainResource, reporter: Reporter) -> Deployment | None:
    where = f"{res.kind} {res.name}"
    values = helm_values(res, reporter)
    if values is None:
        return None
    args = dig(values, "args", "values")
    if contains_unknown(args):
        reporter.unchecked(f"{where}: values.args unknown until apply, child range not checked")
        return None
    opts = helm_options(as_map(args, "values.args"))
    fix = f"set {CIDR_VALUE} of {where} (and {dranet.PROVIDER_HINT_VALUE}: {dranet.OKE_HINT} or unset)"
    _broken(res, where, opts, fix, reporter)
    return _deployment(res, opts, f"sets {CIDR_VALUE}", f"set {CIDR_VALUE} of {where}")


def _daemonset_deployment(view: StackView, res: PlainResource, reporter: Reporter) -> Deployment | None:
    for pod in pod_specs(res):
        for path, container in containers(pod):
            image = container.get("image")
            command = container.get("command")
            first = command[0] if isinstance(command, list) and command else None
            runs_dranet = (isinstance(image, str) and DRANET_IMAGE.search(image.split("@")[0])) or (
                isinstance(first, str) and first.rsplit("/", 1)[-1] == dranet.BINARY
            )
            if not runs_dranet:
                continue
            # What DRANET parses: command and args after the kubelet's $(VAR) expansion from the container's env.
            texts = command_texts(view, res, path, container)
            tokens: list[Any] = texts["command"] + texts["args"]
            where = f"{res.kind} {res.name} container {container.get('name') or path}"
            if any(t is UNKNOWN for t in tokens):
                reporter.unchecked(f"{where}: args unknown until apply, child range not checked")
                return None
            opts = flag_options([str(t) for t in tokens])
            fix = f"set --cloud-provider-options={OPTION}=<cidr> in {path}.args"
            _broken(
                res,
                where,
                opts,
                f"{fix} and --cloud-provider-hint={dranet.OKE_HINT} (or none)",
                reporter,
            )
            return _deployment(res, opts, f"passes --cloud-provider-options={OPTION}", fix)
    return None


def deployments(view: StackView, reporter: Reporter) -> list[Deployment]:
    """Every DRANET installation: Helm releases/charts of the dranet chart (by what it is, whatever its
    reference is called: :meth:`StackView.release_facts`), DaemonSets running it.

    A `helm.sh/v4:Chart` (and a v3 Chart) is a component: pulumi-kubernetes registers each object it
    renders as its child (provider/pkg/helm/v4 chart.go, via yaml/v2 `Register`), so the DaemonSet it
    renders is what runs, with the flags the chart made from the values. The chart is read through that
    DaemonSet, and through its values only when nothing is rendered (values unknown during preview). A
    `helm.sh/v3:Release` renders no children (Helm installs it), so its values are read (values files
    included, :func:`~oke_rdma_policies.helm.helm_values`).
    """
    found: list[Deployment] = []
    charts_by_urn: dict[str, PlainResource] = {}
    rendered: set[str] = set()
    for res in view.releases_of([dranet.FACTS]):
        charts_by_urn[res.urn] = res
    for res in view.resources:
        if res.type != resource_types.DAEMONSET:
            continue
        owners = [a for a in view.ancestors(res) if a.urn in charts_by_urn]
        if owners and owners[0].type == resource_types.HELM_RELEASE:
            continue  # Helm installs a Release's objects; they are not in the stack
        dep = reporter.guard(
            f"DaemonSet {res.name}", res.urn, partial(_daemonset_deployment, view, res, reporter)
        )
        if owners and (dep is not None or _runs_dranet_image(res)):
            rendered.add(owners[0].urn)
        if dep is not None:
            found.append(dep)
    for urn, res in charts_by_urn.items():
        if urn in rendered:
            continue
        dep = reporter.guard(f"{res.kind} {res.name}", res.urn, partial(_helm_deployment, res, reporter))
        if dep is not None:
            found.append(dep)
    return found


def _runs_dranet_image(res: PlainResource) -> bool:
    try:
        return any(
            isinstance(c.get("image"), str) and bool(DRANET_IMAGE.search(c["image"].split("@")[0]))
            for pod in pod_specs(res)
            for _, c in containers(pod)
        )
    except PropertyTypeError:
        return True


def _parse(value: Any, label: str, what: str, reporter: Reporter) -> list[NamedRange]:
    if value is UNKNOWN:
        reporter.unchecked(f"{what} unknown until apply, child range not checked against it")
    elif value is not None:
        # A value that is not a CIDR is OCI's to reject: nothing for the child range to avoid.
        with contextlib.suppress(CidrError):
            return [NamedRange(label, parse_ipv4_network(value))]
    return []


def _vcn_ranges(res: PlainResource, reporter: Reporter) -> list[NamedRange]:
    blocks = res.props.get("cidrBlocks")
    items = [] if blocks is None else [blocks] if blocks is UNKNOWN else as_list(blocks, "cidrBlocks")
    if res.props.get("cidrBlock") is not None:
        items = [*items, res.props.get("cidrBlock")]
    found: list[NamedRange] = []
    for value in items:
        found += _parse(value, f"VCN {res.name} ({res.type})", f"VCN {res.name} cidrBlocks", reporter)
    return found


def _cluster_ranges(res: PlainResource, reporter: Reporter) -> list[NamedRange]:
    """The cluster's pods and services CIDRs; OKE's defaults where unset or unknown.

    During preview a cluster being created reports `options.kubernetesNetworkConfig` as unknown when the
    program does not set it: OKE then uses its documented defaults (pods 10.244.0.0/16, services
    10.96.0.0/16; oke_gpu_rdma.nodes.cidr_rules), so the child range is checked against those.
    """
    network = dig(res.props, "options.kubernetesNetworkConfig", "")
    if network is not UNKNOWN:
        network = as_map(network, "options.kubernetesNetworkConfig")
    cni = res.props.get("clusterPodNetworkOptions")
    native = isinstance(cni, list) and any(
        isinstance(o, Mapping) and o.get("cniType") == "OCI_VCN_IP_NATIVE" for o in cni
    )
    found: list[NamedRange] = []
    for key, default in (("podsCidr", OKE_DEFAULT_PODS_CIDR), ("servicesCidr", OKE_DEFAULT_SERVICES_CIDR)):
        value = UNKNOWN if network is UNKNOWN else network.get(key)
        what = "pods" if key == "podsCidr" else "services"
        if native and key == "podsCidr":
            continue  # VCN-native pods take addresses from the pod subnets, which are checked as subnets
        if value is None or value is UNKNOWN:
            unknown = value is UNKNOWN
            found.append(
                NamedRange(
                    f"cluster {res.name} {what} CIDR (OKE default{', its value unknown until apply' if unknown else ''}"
                    f", {res.type})",
                    default,
                )
            )
            if unknown:
                reporter.unchecked(
                    f"cluster {res.name} options.kubernetesNetworkConfig.{key} unknown until apply: child range "
                    f"checked against OKE's default {default} only"
                )
            continue
        found += _parse(
            value,
            f"cluster {res.name} {what} CIDR (options.kubernetesNetworkConfig.{key}, {res.type})",
            f"cluster {res.name} {key}",
            reporter,
        )
    return found


def stack_ranges(view: StackView, reporter: Reporter) -> list[NamedRange]:
    """Every range of the stack the child range must not touch; a resource that cannot be read is a
    violation naming it, and the others still count."""
    found: list[NamedRange] = []
    for res in view.of_type(resource_types.VCN):
        found += reporter.guard(f"VCN {res.name}", res.urn, partial(_vcn_ranges, res, reporter)) or []
    for res in view.of_type(resource_types.SUBNET):
        found += _parse(
            res.props.get("cidrBlock"),
            f"subnet {res.name} ({res.type})",
            f"subnet {res.name} cidrBlock",
            reporter,
        )
    for res in view.of_type(resource_types.CLUSTER):
        found += reporter.guard(f"cluster {res.name}", res.urn, partial(_cluster_ranges, res, reporter)) or []
    return found


def _worker_subnets(view: StackView, conf: ChildRangeSettings, reporter: Reporter) -> list[NamedRange]:
    if conf.worker_subnet_cidrs:
        return [NamedRange(f"worker subnet (pack config {WORKERS_KEY})", n) for n in conf.worker_subnet_cidrs]
    found: dict[str, NamedRange] = {}
    for pool in view.gpu_node_pools():
        for dep in pool.dependencies:
            subnet = view.by_urn.get(dep)
            if subnet is None or subnet.type != resource_types.SUBNET:
                continue
            value = subnet.props.get("cidrBlock")
            if isinstance(value, str):
                try:
                    net = parse_ipv4_network(value)
                except CidrError:
                    continue
                label = f"subnet {subnet.name} (GPU node pool {pool.name} depends on it)"
                found.setdefault(subnet.urn, NamedRange(label, net))
    return list(found.values())


def check(args: StackValidationArgs, reporter: Reporter) -> None:
    conf, problems = settings.read_section(ChildRangeSettings, args.get_config())
    for problem in problems:
        reporter.violation(f"{problem}; the child range was checked without this section of the pack config")
    view = StackView.of(args)
    deps = deployments(view, reporter)
    if not deps:
        return
    plan = stack_ranges(view, reporter)
    plan.append(NamedRange(f"the OCA RDMA network (pack config {OCA_KEY})", conf.oca_rdma_network))
    plan += [NamedRange(f"{r.name} (pack config {EXISTING_KEY})", r.cidr) for r in conf.existing_cidrs]
    workers = _worker_subnets(view, conf, reporter)
    if not workers:
        reporter.unchecked(
            "no worker subnet known (no GPU node pool subnet in the stack and no pack config "
            f"{WORKERS_KEY}): the child range size for 16 rails was not checked"
        )
    by_cluster: dict[str, list[tuple[Deployment, IPv4Network]]] = {}
    for dep in deps:
        if dep.value is None:
            child = DEFAULT_CHILD_RANGE
        else:
            try:
                child = parse_ipv4_network(dep.value)
            except CidrError as err:
                reporter.violation(
                    f"{dep.label} {dep.what}: {err}. DRANET stops at startup when the range is not a valid "
                    f"IPv4 prefix, so no rail gets a child; {dep.fix}",
                    dep.res.urn,
                )
                continue
        for problem in child_range_problems(child, plan, workers):
            reporter.violation(
                f"{dep.label} {dep.what}: {problem}. Fix: {dep.fix} to a free range", dep.res.urn
            )
        by_cluster.setdefault(dep.res.provider, []).append((dep, child))
    for group in by_cluster.values():
        distinct = {child for _, child in group}
        if len(distinct) < 2:
            continue
        for dep, child in group:
            others = "; ".join(f"{o.label} uses {c}" for o, c in group if c != child)
            reporter.violation(
                f"{dep.label} {dep.what}, but on the same cluster {others}: a child reaches other children "
                f"through an on-link route for its range, so pods in {child} cannot reach pods in the other "
                f"range over the rails. Use one child range on every node of an RDMA network; {dep.fix}",
                dep.res.urn,
            )


RULE = stack_rule(
    name=ChildRangeSettings.policy,
    level="mandatory",
    description=(
        f"The DRANET OKE child range ({OPTION}, default {DEFAULT_CHILD_RANGE}) must be a valid "
        "IPv4 prefix from /8 to /30, hold 16 rails for the worker subnet, avoid special ranges, and "
        "overlap no VCN, subnet, pods or services CIDR nor the OCA RDMA network."
    ),
    validate=guarded(check, stack_where),
    settings=ChildRangeSettings,
)
