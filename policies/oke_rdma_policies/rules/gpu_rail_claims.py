"""gpu-rail-claims-aligned (stack): every claim judged by the DRA core on the shapes it can land on.

A stack policy, so that it knows the shapes of the stack's GPU node pools (a claim must be aligned
on each of them: the scheduler may place the pod on any). Without GPU node pools in the stack (an
existing cluster) claims are judged on the pack config's `shape`. Every ResourceClaim and
ResourceClaimTemplate of resource.k8s.io v1, v1beta2 and v1beta1 is judged; none is skipped
silently. A value unknown during preview is named in the policy's advisory line; the rest fails closed
(issue 28): a claim on a DeviceClass the stack does not declare, a verdict the model cannot reach, a
helm.sh/v3 Release of a chart the pack does not know (its claims are never in the stack) and a shape
without verified topology are violations, unless the pack config marks the classes or the release as
managed elsewhere (`managedDeviceClasses`, `managedHelmReleases`: then a note). Aligned means at the
shape's alignment level (the PCIe root, or the NUMA node where no root holds a GPU and a rail:
:attr:`oke_gpu_rdma.topology.Topology.alignment`), and a claim whose ``oke-gpu-rdma/alignment``
annotation names another level than the shape's is a violation.

In a mixed fleet a claim is judged only on the pools where it can land (:mod:`oke_gpu_rdma.claims.landing`):
first, the pools where every driver it asks for publishes devices, read from how the stack deploys the
drivers (the DRANET and NVIDIA GPU DRA driver Helm releases' nodeSelector, affinity and tolerations
against each pool's initial labels, instance type, GPU run-time labels and the taints its cloud-init
registers); a driver the stack does not install, or whose values are unknown, may be on any pool. So an
H100 pool that DRANET does not select, an A10 pool without DRANET or a CPU pool never blocks a rail claim.
A pool the claim can reach whose shape has no verified topology blocks it (once per pool) only when the
claim asks for rails and its selectors do not rule that shape out (`oke.dra.net/shape`,
:func:`oke_gpu_rdma.claims.excluded_on_shape`): a claim for no rails has no pairing to judge there. A pool
of a shape the stack onboards (pack config `onboardingShapes`, from `nodePools[].onboarding`: the drivers
run there so that `make topology` can read the shape) is named as not judged instead, once: the stack
asked for that pool to run without a topology until its entry exists. What needs no topology is still checked
for a claim that lands only on such pools: what the API server refuses (validation, device tolerations, CEL
compilation) it refuses on every shape. Then,
among those, the shapes where its devices exist: the scheduler never places a claim for rails on a node
without rails, nor a claim pinned (`oke.dra.net/shape`) to the shape of a pool without a topology on a shape
where it finds no device (:func:`oke_gpu_rdma.claims.pinned_elsewhere`). A claim that can land nowhere, or whose
devices exist on no shape, is judged on every shape.
Claims go to the judge as written, in their API version (`resource.k8s.io/v1beta1` has no `exactly`), at
the cluster's Kubernetes version (pack config `kubernetesVersion`: the fields its API server serves), on
nodes whose rails publish the stack's child range.

A pod that can never run is rejected too: one whose nodeSelector and required node affinity admit only GPU
node pools where one of its claims can never be allocated (its drivers do not run there, its selectors rule the
shape out, or the judge finds it unsatisfiable on the shape: a GB200 template for a pod pinned to BM.GPU.B4.8),
or where its claims cannot all be allocated together; kube-scheduler needs one node that passes both its
NodeAffinity and its DynamicResources Filter. The pods are found in every workload of the stack by the claims
their `resourceClaims` name (namespace and name, or the workload's dependencies when the name is an output).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

from pulumi_policy import StackValidationArgs

from oke_gpu_rdma import chart_workloads, resource_types, stack_keys
from oke_gpu_rdma.attributes import PCIE_ROOT
from oke_gpu_rdma.cidr_rules import DEFAULT_CHILD_RANGE
from oke_gpu_rdma.claims import (
    UnsatisfiableCause,
    Verdict,
    VerdictKind,
    claim_lands,
    claim_spec_to_v1,
    class_driver,
    devices_exist,
    drivers_on_pools,
    excluded_on_shape,
    feature_gates,
    judge_claim,
    parse_taint,
    pinned_elsewhere,
    plugin_drivers,
)
from oke_gpu_rdma.claims.spec import admin_access_requests
from oke_gpu_rdma.cloud_init import registered_label_keys
from oke_gpu_rdma.errors import TopologyError
from oke_gpu_rdma.labels import (
    ADMIN_ACCESS_ENABLED,
    ADMIN_ACCESS_NAMESPACE_LABEL,
    ALIGNMENT_ANNOTATION,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
)
from oke_gpu_rdma.node_selection import may_select
from oke_gpu_rdma.pack_settings import MANAGED_DEVICE_CLASSES_KEY, MANAGED_HELM_RELEASES_KEY, ClaimsSettings
from oke_gpu_rdma.releases import registry
from oke_gpu_rdma.scheduling import PodPlacement, PoolNodes
from oke_gpu_rdma.shape_catalog import CATALOG
from oke_gpu_rdma.topology import DEFAULT_SHAPE, Topology

from .. import settings
from ..helm import helm_values
from ..kube import (
    PlainResource,
    pod_specs,
    request_classes,
    resource_claim_spec,
)
from ..registry import stack_rule
from ..report import Reporter, guarded, stack_where
from ..stack import StackView, labels_of, node_cloud_init, node_labels, node_taints
from ..values import UNKNOWN, PropertyTypeError, contains_unknown
from .dranet_child_range import DRANET_IMAGE, deployments

_CACHE_LIMIT: Final = 8192
_verdicts: dict[tuple[str, str, str, Topology, str, str, str], Verdict] = {}


@dataclass(frozen=True)
class _Pool:
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
class _Judging:
    """What every claim of one run is judged with."""

    classes: Mapping[str, tuple[str, ...]]
    classes_key: str
    pools: list[_Pool]
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


def _judge(
    spec: Mapping[str, Any], api_version: str, topology: Topology, how: _Judging, name: str
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


def _unjudgeable(shape: str, err: TopologyError) -> str:
    return (
        f"claims cannot be judged on {shape}: {err}. Supply its topology as pack config "
        f"{ClaimsSettings.policy}.shapeTopologies.{shape} (and as "
        f"{stack_keys.stack_setting(stack_keys.SHAPE_TOPOLOGIES)}), onboard it while `make topology` reads it "
        f"from a cluster ({stack_keys.stack_setting(stack_keys.NODE_POOL_ONBOARDING, 'true')}, pack config "
        f"{ClaimsSettings.policy}.onboardingShapes), or set this policy advisory for it"
    )


def _managed_hint(key: str, stack_key: str, what: str) -> str:
    return (
        f"list {what} in pack config {ClaimsSettings.policy}.{key} "
        f"({stack_keys.stack_setting(stack_key)}) when another stack or an operator manages it and judges its claims"
    )


def _unseen_release(res: PlainResource, managed: frozenset[str], reporter: Reporter) -> None:
    """A helm.sh/v3 Release of a chart the pack does not know: Helm installs its objects, so a claim in it is
    never in the stack (a helm.sh/v4 Chart registers each as its child, and they are judged)."""
    release = res.props.get("name")
    chart = res.props.get("chart")
    if res.name in managed or (isinstance(release, str) and release in managed):
        # A stack file can list a release here (policyPack.managedHelmReleases), so the list may excuse a chart
        # the pack does not know, never one that runs DRANET under another name: its child range would then go
        # unchecked by dranet-child-range (issue 36 item 6).
        named = _names_dranet(chart) or _names_dranet(res.props.get("values"))
        if not named:
            return
        reporter.violation(
            f"Helm release {res.name} (chart {chart if isinstance(chart, str) else '?'}) is listed in "
            f"{MANAGED_HELM_RELEASES_KEY}, but it runs DRANET ({named}): a DRANET release is never excused, since "
            "its child range must be checked against the network plan. Fix: install DRANET from its chart "
            "reference (oke_gpu_rdma/releases/dranet.py) so the pack recognises it, and take the release off the "
            "list",
            res.urn,
        )
        return
    reporter.violation(
        f"Helm release {res.name} (chart {chart if isinstance(chart, str) else '?'}): Helm installs its objects "
        "outside the stack, so a ResourceClaim or ResourceClaimTemplate in it cannot be judged. Fix: install the "
        "chart as a helm.sh/v4 Chart (its objects are then in the stack and judged), or "
        + _managed_hint(
            MANAGED_HELM_RELEASES_KEY, stack_keys.MANAGED_HELM_RELEASES, "the release (it holds no claim)"
        ),
        res.urn,
    )


def _names_dranet(value: Any, path: str = "") -> str | None:
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
        found = _names_dranet(item, f"{path}.{key}" if path else f"values.{key}")
        if found:
            return found
    return None


def _quiet(message: str, urn: str | None = None) -> None:
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
            values = helm_values(res, Reporter(_quiet))
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


def _pools(view: StackView, conf: ClaimsSettings, reporter: Reporter) -> tuple[list[_Pool], frozenset[str]]:
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
    found: list[_Pool] = []
    targets: list[tuple[str, PlainResource | None]] = [(p.props["nodeShape"], p) for p in gpu_pools]
    for shape, res in targets or [(conf.shape, None)]:
        node = nodes.get(res.urn) if res is not None else None
        drivers = reach.get(node.name) if node is not None else None
        onboarding = shape in conf.onboarding_shapes
        later = _later_keys(res) if res is not None else frozenset()
        try:
            found.append(_Pool(shape, res, catalog.topology(shape), None, drivers, onboarding, node, later))
        except TopologyError as err:
            found.append(_Pool(shape, res, None, _unjudgeable(shape, err), drivers, onboarding, node, later))
    return found, deployed


def _later_keys(pool: PlainResource) -> frozenset[str]:
    """The label keys the pool's nodes register at boot (its cloud-init's topology labeller) and their hostname."""
    text = node_cloud_init(pool)
    registered = registered_label_keys(text) if isinstance(text, str) else ()
    return frozenset((*registered, HOSTNAME_LABEL))


def _child_range(view: StackView, conf: ClaimsSettings) -> str:
    """The range the rails publish as oke.dra.net/rdmaChildIpv4Cidr (DRANET's OKE provider puts the range it
    runs with there, seed 003): the one the stack's DRANET installations run with when they agree and are
    known (dranet-child-range reads them and reports their problems), else the pack config's childRange."""
    runs = {
        str(d.value) if d.value is not None else str(DEFAULT_CHILD_RANGE)
        for d in deployments(view, Reporter(_quiet))
        if d.value is not UNKNOWN
    }
    return runs.pop() if len(runs) == 1 else str(conf.child_range)


def _namespace_labels(view: StackView) -> dict[str, Any]:
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


def _admin_access(claim: PlainResource, spec: Mapping[str, Any], how: _Judging, reporter: Reporter) -> None:
    """`adminAccess: true` needs the namespace label (kube-apiserver `AuthorizedForAdmin`,
    kubernetes pkg/registry/resource/utils.go, called by the ResourceClaim and ResourceClaimTemplate
    strategies' Validate): the API server refuses the claim in a namespace without it. Only a label the
    stack sets counts: a namespace the stack does not declare carries no label this policy can see."""
    if not feature_gates.enabled(feature_gates.DRA_ADMIN_ACCESS, how.kubernetes_version):
        return  # dropped by the API server; the judge reports the drop
    requests = admin_access_requests(claim_spec_to_v1(spec, claim.group_version))
    if not requests:
        return
    namespace = claim.namespace
    labels = how.namespaces.get(namespace) if isinstance(namespace, str) else UNKNOWN
    if labels is UNKNOWN or (
        isinstance(labels, Mapping) and labels.get(ADMIN_ACCESS_NAMESPACE_LABEL) is UNKNOWN
    ):
        reporter.unchecked(
            f"{claim.label}: the labels of namespace {namespace} are unknown until apply, adminAccess not checked"
        )
        return
    value = labels.get(ADMIN_ACCESS_NAMESPACE_LABEL) if isinstance(labels, Mapping) else None
    if value == ADMIN_ACCESS_ENABLED:
        return
    where = (
        f"the stack's Namespace {namespace} has {ADMIN_ACCESS_NAMESPACE_LABEL}={value!r}"
        if value is not None
        else f"the stack's Namespace {namespace} does not set {ADMIN_ACCESS_NAMESPACE_LABEL}"
        if labels is not None
        else f"the stack does not declare namespace {namespace}, so nothing labels it"
    )
    reporter.violation(
        f"{claim.label}: request {', '.join(requests)} asks for adminAccess, and {where}: kube-apiserver "
        'refuses the claim ("admin access to devices requires the `resource.kubernetes.io/admin-access: true` '
        'label on the containing namespace", AuthorizedForAdmin in kubernetes pkg/registry/resource/utils.go). '
        f'Fix: label Namespace {namespace} {ADMIN_ACCESS_NAMESPACE_LABEL}: "{ADMIN_ACCESS_ENABLED}" in the '
        "stack, or drop adminAccess",
        claim.urn,
    )


def check(args: StackValidationArgs, reporter: Reporter) -> None:
    conf, problems = settings.read_section(ClaimsSettings, args.get_config())
    for problem in [*problems, *conf.override_problems()]:
        reporter.violation(problem)
    view = StackView.of(args)
    managed_releases = frozenset(conf.managed_helm_releases)
    for res in view.resources:
        if res.type == resource_types.HELM_RELEASE and view.release_facts(res) is None:
            reporter.guard(res.label, res.urn, partial(_unseen_release, res, managed_releases, reporter))
    for res, problem in view.classes.problems:
        reporter.violation(
            f"{res.label}: {problem}; the API server rejects such a DeviceClass, and claims that use it "
            "are judged as if it did not exist. Fix: give each selector a cel.expression string",
            res.urn,
        )
    if not view.claims:
        return
    for workload in view.workloads:
        reporter.guard(workload.label, workload.urn, partial(_split_pods, view, workload, reporter))
    pools, deployed = _pools(view, conf, reporter)
    classes = {**registry.device_class_selectors(), **view.classes.selectors}
    how = _Judging(
        classes,
        json.dumps(classes, sort_keys=True),
        pools,
        deployed,
        namespaces=_namespace_labels(view),
        kubernetes_version=conf.kubernetes_version,
        child_range=_child_range(view, conf),
        managed=frozenset(conf.managed_device_classes),
    )
    for claim in view.claims:
        reporter.guard(claim.label, claim.urn, partial(_check, claim, how, reporter))
    for workload in view.workloads:
        reporter.guard(workload.label, workload.urn, partial(_never_meet, view, workload, how, reporter))


@dataclass(frozen=True)
class _PodClaim:
    """One entry of a pod's `resourceClaims` (its own claim, even when two entries name one template) and
    which of its requests can get GPUs and rails."""

    name: str
    claim: PlainResource
    gpus: tuple[str, ...]
    rails: tuple[str, ...]

    @property
    def shown(self) -> str:
        return f"claim {self.name} = {self.claim.label}"


def _split_pods(view: StackView, workload: PlainResource, reporter: Reporter) -> None:
    """A pod's GPUs and rails from different claims are unaligned: the allocator builds the matchAttribute
    constraints of each claim from that claim's requests only and allocates the pod's claims one after the
    other (kubernetes staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/
    allocator_stable.go, tag v1.36.0: `Allocate` loops over `claimsToAllocate`, `constraints[claimIndex]`
    holds one claim's `matchAttribute` constraints), so no pcieRoot constraint ties a GPU of one claim to a
    rail of another. A claim that gives GPUs and rails itself is judged on its own (above); a pod is
    reported when one of its claims gives GPUs without rails, or rails without GPUs, while another gives
    the other kind."""
    for pod in pod_specs(workload):
        found: list[_PodClaim] = []
        for resolved in view.resolve(workload, pod):
            for claim in resolved.claims:
                gpus, rails = tuple(view.gpus_of(claim)), tuple(view.rails_of(claim))
                if gpus or rails:
                    found.append(_PodClaim(resolved.ref.pod_claim, claim, gpus, rails))
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


def _selection(pod: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
    """The pod's nodeSelector and affinity; None when unknown until apply."""
    selector, affinity = pod.get("nodeSelector"), pod.get("affinity")
    if contains_unknown(selector) or contains_unknown(affinity):
        return None
    return (
        selector if isinstance(selector, Mapping) else {},
        affinity if isinstance(affinity, Mapping) else {},
    )


def _selection_shown(selector: Mapping[str, Any], affinity: Mapping[str, Any]) -> str:
    parts = []
    if selector:
        parts.append("nodeSelector " + ", ".join(f"{k}={v}" for k, v in selector.items()))
    if affinity:
        parts.append("required node affinity")
    return " and ".join(parts)


def _pools_shown(how: _Judging, indices: frozenset[int] | set[int]) -> tuple[list[str], str]:
    """The shapes of the pools ``indices`` and `node pools a, b`."""
    chosen = [how.pools[i] for i in sorted(indices)]
    shapes = list(dict.fromkeys(p.shape for p in chosen))
    return shapes, "node pools " + ", ".join(p.res.name for p in chosen if p.res is not None)


def _never_meet(view: StackView, workload: PlainResource, how: _Judging, reporter: Reporter) -> None:
    """A pod whose node selection and claims can never meet on one node stays Pending forever: kube-scheduler
    runs each node through every Filter plugin and keeps only the nodes that pass all of them (kubernetes
    v1.36.4 pkg/scheduler/schedule_one.go findNodesThatPassFilters l. 777-815, pkg/scheduler/framework/runtime/
    framework.go RunFilterPlugins l. 1093-1121: the first failing plugin rejects the node): the NodeAffinity
    Filter takes only nodes its nodeSelector and required node affinity admit (pkg/scheduler/framework/plugins/
    nodeaffinity/node_affinity.go l. 218-239; :func:`oke_gpu_rdma.node_selection.may_select`), and the
    DynamicResources Filter only nodes where every claim of the pod can be allocated together
    (pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go l. 848-879). The pools where a claim
    can be allocated are its drivers' pools less those whose shape it is never allocated on (:func:`_check`
    fills ``how.places``). A pod that selects no GPU pool of the stack, a claim not judged or refused by the
    API server, and a stack without pools say nothing here."""
    if any(p.res is None for p in how.pools):
        return
    for pod in pod_specs(workload):
        selection = _selection(pod.spec)
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
        pod_shapes, pod_pools = _pools_shown(how, selected)
        admits = (
            f"its {_selection_shown(selector, affinity)} admits only {pod_pools} ({', '.join(pod_shapes)})"
        )
        apart = [(shown, claim, places) for shown, claim, places in claims if not places & selected]
        if apart:
            shown, claim, places = apart[0]
            claim_shapes, claim_pools = _pools_shown(how, places)
            instead = _template_instead(view, how, claim, selected)
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
            f"{shown} only on {', '.join(_pools_shown(how, places)[0])}" for shown, _, places in claims
        )
        reporter.violation(
            f"{workload.label} {pod.where}: its claims can never be allocated on one node ({each})"
            + (f", and {admits}" if selector or affinity else "")
            + ": no node passes kube-scheduler's DynamicResources Filter for all of them, so the pod stays "
            "Pending forever. Fix: give the pod claims that can all be allocated on one shape (the stack's "
            "templates for one shape end in its name)",
            workload.urn,
        )


def _template_instead(view: StackView, how: _Judging, claim: PlainResource, selected: set[int]) -> str | None:
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


def _check(claim: PlainResource, how: _Judging, reporter: Reporter) -> None:
    spec = resource_claim_spec(claim)
    if spec is UNKNOWN:
        reporter.unchecked(f"{claim.label}: spec unknown until apply, not judged")
        return
    spec = dict(spec or {})
    devices = spec.get("devices")
    if devices is UNKNOWN:
        reporter.unchecked(f"{claim.label}: spec.devices unknown until apply, not judged")
        return
    if isinstance(devices, Mapping):
        # Allocation ignores config (opaque driver parameters): unknowns there do not matter.
        if contains_unknown(devices.get("config")):
            devices = {k: v for k, v in devices.items() if k != "config"}
            spec["devices"] = devices
        unknown = contains_unknown(devices, "spec.devices")
        if unknown:
            reporter.unchecked(f"{claim.label}: {', '.join(unknown[:3])} unknown until apply, not judged")
            return
    api_version = claim.group_version  # is_claim: one of the served versions
    _admin_access(claim, spec, how, reporter)
    wanted = request_classes(claim_spec_to_v1(spec, api_version))
    for request, used in wanted.items():
        missing = sorted(str(c) for c in used if isinstance(c, str) and c not in how.classes)
        if missing and set(missing) <= how.managed:
            reporter.unchecked(
                f"{claim.label}: request {request} uses DeviceClass {', '.join(missing)}, managed elsewhere "
                f"(pack config {MANAGED_DEVICE_CLASSES_KEY}), not judged here"
            )
            return
        if missing:
            # Fails closed (issue 28): a class the pack cannot read may select anything, so the claim's
            # alignment is unknown; the user says where it is judged, or declares the class.
            unmanaged = [c for c in missing if c not in how.managed]
            reporter.violation(
                f"{claim.label}: request {request} uses DeviceClass {', '.join(unmanaged)}, which this stack "
                "does not declare: its selectors are unknown here, so the claim cannot be judged. Fix: declare "
                "the DeviceClass in this stack, or "
                + _managed_hint(MANAGED_DEVICE_CLASSES_KEY, stack_keys.MANAGED_DEVICE_CLASSES, "the class"),
                claim.urn,
            )
            return
    # Only the pools where the drivers of every request publish devices can run the claim (module docstring);
    # when none can, it is judged on every pool.
    reached = [
        (i, p)
        for i, p in enumerate(how.pools)
        if p.drivers is None or claim_lands(wanted, how.classes, p.drivers, how.deployed)
    ]
    landing = reached or list(enumerate(how.pools))
    shapes: dict[str, tuple[Topology, list[str]]] = {}
    reference = next((p.topology for p in how.pools if p.topology is not None), None)
    rail_drivers = registry.drivers_serving("rails")
    asks_rails = any(
        class_driver(how.classes.get(c, ())) in rail_drivers
        for used in wanted.values()
        for c in used
        if isinstance(c, str)
    )
    # Shapes of the pools without a topology where the claim may land (onboarding, or refused below).
    unjudged: list[str] = []
    # Pools whose nodes can never allocate it: its selectors rule the shape out, or its verdict there.
    never: set[int] = {i for i in range(len(how.pools)) if i not in dict(reached)}
    for i, pool in landing:
        if pool.topology is None:
            # Without the shape's topology the claim is still judged where it can land: a claim for no rails
            # has no GPU/rail pairing to judge there, and one whose selectors rule the shape out
            # (oke.dra.net/shape) is never placed there (module docstring).
            if not asks_rails or excluded_on_shape(
                spec,
                pool.shape,
                reference or CATALOG.topology(DEFAULT_SHAPE),
                how.classes,
                api_version,
                how.kubernetes_version,
                how.child_range,
            ):
                if asks_rails:
                    never.add(i)
                continue
            if pool.onboarding:
                where = f"node pool {pool.res.name}" if pool.res else "pack config shape"
                reporter.unchecked(
                    f"{where}: {pool.shape} is onboarding ({stack_keys.stack_setting(stack_keys.NODE_POOL_ONBOARDING)}, "
                    f"pack config {ClaimsSettings.policy}.onboardingShapes), "
                    f"so claims that can land there are not judged on it until its topology is supplied "
                    f"({stack_keys.stack_setting(stack_keys.SHAPE_TOPOLOGIES)}.{pool.shape}); pods that must get "
                    "aligned GPUs and rails select the pools whose shape has templates"
                )
                unjudged.append(pool.shape)
                continue
            if i not in how.reported:
                how.reported.add(i)
                where = f"node pool {pool.res.name}" if pool.res else "pack config shape"
                reporter.violation(f"{where}: {pool.error}", pool.res.urn if pool.res else None)
            unjudged.append(pool.shape)
            continue
        shapes.setdefault(pool.shape, (pool.topology, []))[1].extend([pool.res.name] if pool.res else [])
    name = claim.object_name if isinstance(claim.object_name, str) else claim.name
    judged = [(t, pools, _judge(spec, api_version, t, how, name)) for t, pools in shapes.values()]
    if reached and all(v.kind is not VerdictKind.INVALID for _, _, v in judged):
        # The pools whose nodes can allocate it, for the pods that use it (_never_meet); a claim whose drivers
        # are on no pool, or that the API server refuses, is reported as such and says nothing about them.
        unsatisfiable = {t.shape for t, _, v in judged if v.kind is VerdictKind.UNSATISFIABLE}
        never |= {i for i, pool in landing if pool.topology is not None and pool.shape in unsatisfiable}
        how.places[claim.urn] = frozenset(range(len(how.pools))) - never
    if len(judged) > 1:
        # A mixed fleet: only the shapes where the claim's devices exist can run it (module docstring).
        placed = [
            (t, pools, v)
            for t, pools, v in judged
            if v.kind is not VerdictKind.UNSATISFIABLE
            or devices_exist(spec, t, how.classes, api_version, how.kubernetes_version, how.child_range)
        ]
        judged = placed or judged
    if unjudged:
        # It may land on a pool without a topology too: a shape where it is never allocated because its
        # selectors pin it to that pool's shape (oke.dra.net/shape) is a shape the DRA Filter never places it
        # on (oke_gpu_rdma.claims.pinned_elsewhere), not one where it stays Pending.
        judged = [
            (t, pools, v)
            for t, pools, v in judged
            if v.kind is not VerdictKind.UNSATISFIABLE
            or not pinned_elsewhere(
                spec, t, unjudged, how.classes, api_version, how.kubernetes_version, how.child_range
            )
        ]
    if not judged:
        # It lands only where no topology is known (no pairing asked there, an onboarding pool, a pool refused
        # above): what the API server refuses does not depend on the shape (kubernetes v1.36.4
        # pkg/apis/resource/validation/validation.go validateCELSelector l. 316-331 compiles each selector,
        # validateDeviceToleration l. 1524-1540 checks the operator), so an invalid claim is reported,
        # onboarding or not.
        topology = reference or CATALOG.topology(DEFAULT_SHAPE)
        verdict = _judge(spec, api_version, topology, how, name)
        if verdict.kind is VerdictKind.INVALID:
            how.places.pop(claim.urn, None)  # refused: it says nothing about the pods that name it
            reporter.violation(f"{claim.label}: {verdict.message}", claim.urn)
        return
    stated = _stated_alignment(claim)
    used_classes = {c for used in wanted.values() for c in used if isinstance(c, str)}
    for topology, pools, verdict in judged:
        if verdict.kind is VerdictKind.NOT_CHECKED and used_classes and used_classes <= how.managed:
            reporter.unchecked(f"{claim.label} on {topology.shape}: {verdict.message} (managed elsewhere)")
        elif verdict.kind is VerdictKind.NOT_CHECKED:
            # Fails closed (issue 28): what the pack cannot evaluate may be unaligned.
            reporter.violation(
                f"{claim.label} on {topology.shape}: {verdict.message}; the pack cannot judge it. Fix: write "
                "the selector with what the pack evaluates, or "
                + _managed_hint(
                    MANAGED_DEVICE_CLASSES_KEY,
                    stack_keys.MANAGED_DEVICE_CLASSES,
                    f"its DeviceClass{'es' if len(used_classes) > 1 else ''} {', '.join(sorted(used_classes))}",
                ),
                claim.urn,
            )
        elif verdict.kind.blocks_deploy:
            reporter.violation(message(claim, verdict, topology, pools), claim.urn)
        elif verdict.kind is VerdictKind.ALIGNED and stated is not None and stated != topology.alignment:
            reporter.violation(
                f"{claim.label} on {topology.shape}: its annotation {ALIGNMENT_ANNOTATION} says {stated!r}, "
                f"but {topology.shape} aligns GPUs and rails at {topology.alignment} "
                f"(oke_gpu_rdma/shapes/{topology.shape}.yaml). Fix: set it to {topology.alignment!r}",
                claim.urn,
            )


def _stated_alignment(claim: PlainResource) -> str | None:
    """The level a claim's ``oke-gpu-rdma/alignment`` annotation states (the stack's templates carry it)."""
    meta = claim.props.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    stated = annotations.get(ALIGNMENT_ANNOTATION) if isinstance(annotations, Mapping) else None
    return stated if isinstance(stated, str) else None  # unknown until apply: not a statement


RULE = stack_rule(
    name=ClaimsSettings.policy,
    level="mandatory",
    description=(
        "ResourceClaims and ResourceClaimTemplates must be valid, allocatable and, when they ask for "
        "GPUs and DRANET rails, aligned: every GPU on a PCIe root with one of the claim's rails, on "
        "every GPU node pool shape of the stack where the claim's devices exist."
    ),
    validate=guarded(check, stack_where),
    settings=ClaimsSettings,
)
