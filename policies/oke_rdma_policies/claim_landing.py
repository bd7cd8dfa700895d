"""Where the stack's claims can land, for gpu-rail-claims-aligned: the GPU pools and the drivers that run on
each (from the DRA drivers' Helm releases), the child range, and the judge's verdicts cached per claim and shape."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from oke_gpu_rdma.claims import (
    UnsatisfiableCause,
    Verdict,
    drivers_on_pools,
    judge_claim,
    parse_taint,
    plugin_drivers,
)
from oke_gpu_rdma.common import chart_workloads, resource_types, stack_keys
from oke_gpu_rdma.common import release_registry as registry
from oke_gpu_rdma.common.errors import TopologyError
from oke_gpu_rdma.common.pack_settings import (
    MANAGED_HELM_RELEASES_KEY,
    ClaimsSettings,
)
from oke_gpu_rdma.nodes.cidr_rules import DEFAULT_CHILD_RANGE
from oke_gpu_rdma.nodes.cloud_init import registered_label_keys
from oke_gpu_rdma.nodes.labels import (
    HOSTNAME_LABEL,
)
from oke_gpu_rdma.nodes.topology import Topology
from oke_gpu_rdma.scheduling.pod_admission import PodPlacement, PoolNodes
from oke_rdma_policies.helm import helm_values
from oke_rdma_policies.kube import PlainResource
from oke_rdma_policies.report import Reporter
from oke_rdma_policies.rules.nodes.dranet_child_range import DRANET_IMAGE, deployments
from oke_rdma_policies.stack import StackView, labels_of, node_cloud_init, node_labels, node_taints
from oke_rdma_policies.values import UNKNOWN, PropertyTypeError, contains_unknown

_CACHE_LIMIT: Final = 8192
_verdicts: dict[tuple[str, str, str, Topology, str, str, str], Verdict] = {}


@dataclass(frozen=True)
class LandingPool:
    """A GPU node pool (or the pack config's shape, ``res`` None) and what its nodes offer claims."""

    shape: str
    res: PlainResource | None
    topology: Topology | None
    error: str | None
    """Why the shape cannot be judged (no verified topology), when ``topology`` is None."""
    drivers: frozenset[str] | None
    """The DRA drivers the stack's releases run on its nodes; None: not known (every driver counts)."""
    onboarding: bool = False
    """Its shape is one the stack onboards (pack config onboardingShapes)."""
    nodes: PoolNodes | None = None
    """Its nodes' labels as the scheduler sees them; None when unknown until apply (or no pool: ``res`` None)."""
    later_keys: frozenset[str] = frozenset()
    """Label keys its nodes carry whose values are known only once they run (fabric levels, the hostname)."""


@dataclass
class Judging:
    """What every claim of one run is judged with."""

    classes: Mapping[str, tuple[str, ...]]
    classes_key: str
    pools: list[LandingPool]
    deployed: frozenset[str]
    """Drivers whose placement the stack declares (a Helm release of a registered DRA driver)."""
    namespaces: Mapping[str, Any] = field(default_factory=dict)
    """The labels of each namespace the stack declares (UNKNOWN when unknown until apply)."""
    kubernetes_version: str = ""
    """The cluster's release: which claim fields its API server serves (pack config kubernetesVersion)."""
    child_range: str = ""
    """The child range DRANET's rails publish as oke.dra.net/rdmaChildIpv4Cidr."""
    reported: set[int] = field(default_factory=set)
    """Pools whose missing topology was reported already (by index)."""
    managed: frozenset[str] = frozenset()
    """DeviceClasses the user marks as managed elsewhere (pack config managedDeviceClasses)."""
    places: dict[str, frozenset[int]] = field(default_factory=dict)
    """Claim URN -> the pools (by index) whose nodes can allocate it; a claim not in it may be anywhere."""


def judge_cached(
    spec: Mapping[str, Any], api_version: str, topology: Topology, how: Judging, name: str
) -> Verdict:
    """The verdict, cached by the claim's JSON: a stack repeats the same claim many times."""
    key = (
        json.dumps(spec, sort_keys=True, default=str),
        api_version,
        how.classes_key,
        topology,
        name,
        how.kubernetes_version,
        how.child_range,
    )
    verdict = _verdicts.get(key)
    if verdict is None:
        if len(_verdicts) > _CACHE_LIMIT:
            _verdicts.clear()
        verdict = judge_claim(
            spec,
            topology,
            name=name,
            device_classes=how.classes,
            api_version=api_version,
            kubernetes_version=how.kubernetes_version,
            child_range=how.child_range,
        )
        _verdicts[key] = verdict
    return verdict


def message(claim: PlainResource, verdict: Verdict, topology: Topology, pools: list[str]) -> str:
    where = f"{claim.label} on {topology.shape}" + (f" (node pools {', '.join(pools)})" if pools else "")
    text = f"{where}: {verdict.message}"
    if verdict.cause is UnsatisfiableCause.ROOT_CAPACITY and verdict.fix:
        text += f". Fix: {verdict.fix}"
    return text


def unjudgeable(shape: str, err: TopologyError) -> str:
    return (
        f"claims cannot be judged on {shape}: {err}. Supply its topology as pack config "
        f"{ClaimsSettings.policy}.shapeTopologies.{shape} (and as "
        f"{stack_keys.stack_setting(stack_keys.SHAPE_TOPOLOGIES)}), onboard it while `make topology` reads it "
        f"from a cluster ({stack_keys.stack_setting(stack_keys.NODE_POOL_ONBOARDING, 'true')}, pack config "
        f"{ClaimsSettings.policy}.onboardingShapes), or set this policy advisory for it"
    )


def managed_hint(key: str, stack_key: str, what: str) -> str:
    return (
        f"list {what} in pack config {ClaimsSettings.policy}.{key} "
        f"({stack_keys.stack_setting(stack_key)}) when another stack or an operator manages it and judges its claims"
    )


def unseen_release(res: PlainResource, managed: frozenset[str], reporter: Reporter) -> None:
    """A helm.sh/v3 Release of a chart the pack does not know: Helm installs its objects, so a claim in it is
    never in the stack (a helm.sh/v4 Chart registers each as its child, and they are judged)."""
    release = res.props.get("name")
    chart = res.props.get("chart")
    if res.name in managed or (isinstance(release, str) and release in managed):
        # A stack file can list a release here (policyPack.managedHelmReleases), so the list may excuse a chart
        # the pack does not know, never one that runs DRANET under another name: its child range would then go
        # unchecked by dranet-child-range (issue 36 item 6).
        named = names_dranet(chart) or names_dranet(res.props.get("values"))
        if not named:
            return
        reporter.violation(
            f"Helm release {res.name} (chart {chart if isinstance(chart, str) else '?'}) is listed in "
            f"{MANAGED_HELM_RELEASES_KEY}, but it runs DRANET ({named}): a DRANET release is never excused, since "
            "its child range must be checked against the network plan. Fix: install DRANET from its chart "
            "reference (oke_gpu_rdma/drivers/dranet.py) so the pack recognises it, and take the release off the "
            "list",
            res.urn,
        )
        return
    reporter.violation(
        f"Helm release {res.name} (chart {chart if isinstance(chart, str) else '?'}): Helm installs its objects "
        "outside the stack, so a ResourceClaim or ResourceClaimTemplate in it cannot be judged. Fix: install the "
        "chart as a helm.sh/v4 Chart (its objects are then in the stack and judged), or "
        + managed_hint(
            MANAGED_HELM_RELEASES_KEY, stack_keys.MANAGED_HELM_RELEASES, "the release (it holds no claim)"
        ),
        res.urn,
    )


def names_dranet(value: Any, path: str = "") -> str | None:
    """Where ``value`` (a chart reference, a release's values) names the DRANET image or chart, if it does."""
    if isinstance(value, str):
        return f"{path or 'chart'} = {value}" if DRANET_IMAGE.search(value.split("@")[0]) else None
    if isinstance(value, Mapping):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = names_dranet(item, f"{path}.{key}" if path else f"values.{key}")
        if found:
            return found
    return None


def quiet(message: str, urn: str | None = None) -> None:
    """Findings about a release's values belong to the policies that check them (dranet-child-range, ...)."""


def driver_plugins(
    view: StackView, classes: Mapping[str, tuple[str, ...]]
) -> tuple[list[PodPlacement], frozenset[str]]:
    """The kubelet plugins of the DRA drivers the stack installs with Helm, and those drivers. A release whose
    values are unknown until apply (or malformed) places its driver nowhere known: that driver is left out of
    the deployed ones, so it may be on any pool."""
    plugins: list[PodPlacement] = []
    unknown: set[str] = set()
    for res in view.releases_of(registry.dra_driver_releases()):
        facts = view.release_facts(res)
        assert facts is not None
        chart = facts.chart_name
        release = res.props.get("name")
        found = [
            p for p in chart_workloads.release_workloads(chart, res.name, {}) if p.provides_device_classes
        ]
        try:
            values = helm_values(res, Reporter(quiet))
        except PropertyTypeError:
            values = None
        if values is None:
            for plugin in found:
                unknown |= plugin_drivers(plugin, classes)
            continue
        name = release if isinstance(release, str) else res.name
        plugins += [
            p for p in chart_workloads.release_workloads(chart, name, values) if p.provides_device_classes
        ]
    deployed = frozenset().union(*(plugin_drivers(p, classes) for p in plugins)) - unknown
    return plugins, deployed


def pool_nodes(pool: PlainResource) -> PoolNodes | None:
    """The pool's nodes as the DaemonSet controller sees them; None when labels or taints are unknown or
    malformed (gpu-device-plugin-off reports a malformed label list): every driver may be there."""
    try:
        labels = node_labels(pool)
        taints = node_taints(pool)
    except PropertyTypeError:
        return None
    if labels is UNKNOWN or taints is UNKNOWN or contains_unknown(labels):
        return None
    return PoolNodes(
        pool.name, {str(k): str(v) for k, v in labels.items()}, tuple(parse_taint(t) for t in taints)
    )


def gpu_pools(
    view: StackView, conf: ClaimsSettings, reporter: Reporter
) -> tuple[list[LandingPool], frozenset[str]]:
    """The pools claims may land on: the GPU node pools, else the pack config's shape; and the drivers the
    stack deploys."""
    for pool in view.of_type(resource_types.NODE_POOL):
        if pool.props.get("nodeShape") is UNKNOWN:
            reporter.unchecked(f"node pool {pool.name}: nodeShape unknown until apply")
    classes = {**registry.device_class_selectors(), **view.classes.selectors}
    plugins, deployed = driver_plugins(view, classes)
    gpu_pools = view.gpu_node_pools()
    nodes = {p.urn: pool_nodes(p) for p in gpu_pools}
    reach = drivers_on_pools(plugins, [n for n in nodes.values() if n is not None], classes)
    catalog = conf.catalog()
    found: list[LandingPool] = []
    targets: list[tuple[str, PlainResource | None]] = [(p.props["nodeShape"], p) for p in gpu_pools]
    for shape, res in targets or [(conf.shape, None)]:
        node = nodes.get(res.urn) if res is not None else None
        drivers = reach.get(node.name) if node is not None else None
        onboarding = shape in conf.onboarding_shapes
        later = later_keys(res) if res is not None else frozenset()
        try:
            found.append(
                LandingPool(shape, res, catalog.topology(shape), None, drivers, onboarding, node, later)
            )
        except TopologyError as err:
            found.append(
                LandingPool(shape, res, None, unjudgeable(shape, err), drivers, onboarding, node, later)
            )
    return found, deployed


def later_keys(pool: PlainResource) -> frozenset[str]:
    """The label keys the pool's nodes register at boot (its cloud-init's topology labeller) and their hostname."""
    text = node_cloud_init(pool)
    registered = registered_label_keys(text) if isinstance(text, str) else ()
    return frozenset((*registered, HOSTNAME_LABEL))


def stack_child_range(view: StackView, conf: ClaimsSettings) -> str:
    """The range the rails publish as oke.dra.net/rdmaChildIpv4Cidr (DRANET's OKE provider puts the range it
    runs with there, seed 003): the one the stack's DRANET installations run with when they agree and are
    known (dranet-child-range reads them and reports their problems), else the pack config's childRange."""
    runs = {
        str(d.value) if d.value is not None else str(DEFAULT_CHILD_RANGE)
        for d in deployments(view, Reporter(quiet))
        if d.value is not UNKNOWN
    }
    return runs.pop() if len(runs) == 1 else str(conf.child_range)


def namespace_labels_of(view: StackView) -> dict[str, Any]:
    """Namespace name -> its labels, for the Namespaces the stack declares."""
    found: dict[str, Any] = {}
    for res in view.of_type(resource_types.NAMESPACE):
        if isinstance(res.object_name, str):
            found[res.object_name] = labels_of(res)
    # A NamespacePatch (server-side apply) labels a namespace the stack does not create, e.g. default.
    for res in view.of_type(resource_types.NAMESPACE_PATCH):
        if isinstance(res.object_name, str):
            before, labels = found.get(res.object_name, {}), labels_of(res)
            merged = UNKNOWN if UNKNOWN in (before, labels) else {**before, **labels}
            found[res.object_name] = merged
    return found
