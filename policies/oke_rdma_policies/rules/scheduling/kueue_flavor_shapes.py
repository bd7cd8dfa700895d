"""kueue-flavor-shapes (stack): every flavor Kueue may admit a job on is a shape its claims can be allocated on.

Kueue assigns a pod set one of its ClusterQueue's flavors by quota and by the pod set's nodeSelector and
required node affinity on the keys the flavor's nodeLabels set (:mod:`oke_gpu_rdma.scheduling.kueue_jobs`); it counts
DRA devices by DeviceClass and never reads a claim's selectors or its GPU/rail pairing. A job whose claim cannot be allocated on a flavor's
shape (a selector that pins another shape, more devices than the shape has, a pairing it lacks) can be
admitted there, and its pods then stay Pending while they hold the quota. The claim is judged by the DRA
core on that shape (:func:`oke_gpu_rdma.claims.judge_claim`, the catalog's topologies; a shape without a
verified topology only by whether its selectors rule the shape out); the pack config's kubernetesVersion and
child range of gpu-rail-claims-aligned are not read here (their defaults are used). Judged for jobs whose
queue chain (LocalQueue, ClusterQueue, ResourceFlavors) the stack declares.

Where the pods then go follows what places them after Kueue. A flavor's pools count only where the pod set's own
nodeSelector and required node affinity admit them (kube-scheduler's NodeAffinity Filter). On a flavor without
a topology, Kueue only adds the flavor's nodeLabels to the pods' nodeSelector and kube-scheduler's DRA Filter
takes the nodes where the claims can be allocated: a flavor spanning two shapes leaves the pods Pending only when
neither fits. On a topology-aware flavor (spec.topologyName) Kueue's TAS picks each pod's node without reading
its claims and pins it there, so every shape of the flavor the pods can be placed on must fit.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from pulumi_policy import StackValidationArgs

from oke_gpu_rdma.claims import VerdictKind, excluded_on_shape, judge_claim
from oke_gpu_rdma.common import release_registry as registry
from oke_gpu_rdma.common.errors import TopologyError
from oke_gpu_rdma.nodes.labels import INSTANCE_TYPE_LABEL
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from oke_gpu_rdma.nodes.topology import DEFAULT_SHAPE
from oke_gpu_rdma.scheduling import kueue_jobs
from oke_gpu_rdma.scheduling.node_selection import may_select
from oke_rdma_policies.kube import PlainResource, resource_claim_spec
from oke_rdma_policies.kueue_view import (
    KueueObjects,
    PoolLabels,
    flavor_labels,
    flavor_pools,
    pod_sets,
    pool_labels,
)
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter, guarded, stack_where
from oke_rdma_policies.stack import StackView
from oke_rdma_policies.values import UNKNOWN, contains_unknown, dig


def why_not_on(claim: PlainResource, shape: str, classes: Mapping[str, tuple[str, ...]]) -> str | None:
    """Why ``claim`` cannot be allocated on a node of ``shape`` (the judge's sentence, `claim X can never be
    allocated on S: ...`), or None (it can, or that is not known)."""
    spec = resource_claim_spec(claim)
    if not isinstance(spec, Mapping) or contains_unknown(spec):
        return None
    api_version = claim.group_version
    name = claim.object_name if isinstance(claim.object_name, str) else claim.name
    try:
        topology = CATALOG.topology(shape)
    except TopologyError:
        if excluded_on_shape(spec, shape, CATALOG.topology(DEFAULT_SHAPE), classes, api_version):
            return f"claim {name} can never be allocated on {shape}: its selectors rule the shape out"
        return None
    verdict = judge_claim(spec, topology, name=name, device_classes=classes, api_version=api_version)
    return verdict.message if verdict.kind is VerdictKind.UNSATISFIABLE else None


def _check(
    view: StackView,
    kueue: KueueObjects,
    pools: PoolLabels,
    classes: Mapping[str, tuple[str, ...]],
    judged: dict[tuple[str, str], str | None],
    workload: PlainResource,
    reporter: Reporter,
) -> None:
    sets = [s for s in pod_sets(view, workload) if s.claims]
    if not sets:
        return
    flavors, chain = kueue.flavors_of(workload)
    if not flavors:
        if chain:
            reporter.unchecked(f"{chain}: its flavors' shapes not checked")
        return
    for pod_set in sets:
        # flavor -> (its pools the pod set's pods can be placed on, by shape; topology-aware) for the flavors
        # Kueue may assign this pod set
        assignable: dict[str, tuple[dict[str, list[str]], bool]] = {}
        for name in flavors:
            res = kueue.flavors.get(name)
            labels: Any = flavor_labels(res) if res is not None else UNKNOWN
            if labels is UNKNOWN:
                reporter.unchecked(
                    f"{chain}: ResourceFlavor {name} is not declared in this stack or its nodeLabels are unknown"
                )
                continue
            if not kueue_jobs.flavor_admits(labels, pod_set.pod.spec):
                continue
            assert res is not None
            chosen = flavor_pools(labels, pools)
            by_shape: dict[str, list[str]] = {}
            for pool in chosen.pools:
                if _may_place(pod_set.pod.spec, pools, pool):
                    by_shape.setdefault(pools.pools[pool][0], []).append(pool)
            assignable[name] = (by_shape, _topology_aware(res))
        shapes = sorted({shape for by_shape, _ in assignable.values() for shape in by_shape})
        for claim in pod_set.claims:
            for shape in shapes:
                if (claim.urn, shape) not in judged:  # jobs share claim templates: judge each once per run
                    judged[(claim.urn, shape)] = why_not_on(claim, shape, classes)
        failing = {
            (claim.label, shape): reason
            for claim in pod_set.claims
            for shape in shapes
            if (reason := judged[(claim.urn, shape)]) is not None
        }
        fitting = sorted(set(shapes) - {shape for _, shape in failing})
        # shape -> (flavor, its pools of that shape) where the pods can be left on a node of that shape
        stuck: dict[str, list[tuple[str, list[str]]]] = {}
        for name, (by_shape, topology_aware) in assignable.items():
            if not topology_aware and any(shape in fitting for shape in by_shape):
                # Without topology-aware scheduling kube-scheduler picks the node among the flavor's (Kueue adds
                # the flavor's nodeLabels to the pods' nodeSelector: kubernetes-sigs/kueue v0.19.2
                # pkg/podset/podset.go FromAssignment l. 87), and its DRA Filter keeps only the nodes where every
                # claim of the pod can be allocated (kubernetes v1.36.4 pkg/scheduler/framework/plugins/
                # dynamicresources/dynamicresources.go l. 848-879): a shape of the flavor that fits is where the
                # pods go.
                continue
            # Topology-aware: Kueue's TAS picks each pod's node among the flavor's by its nodeSelector, affinity
            # and requests, never its claims (pkg/cache/scheduler/tas_flavor_snapshot.go l. 963-985), and the
            # ungater pins the pod there (pkg/controller/tas/topology_ungater.go l. 312-315): any shape it can
            # pick counts. Without TAS, no shape of the flavor fits: each one leaves the pods Pending.
            for shape, names in by_shape.items():
                stuck.setdefault(shape, []).append((name, names))
        for (claim_label, shape), reason in sorted(failing.items()):
            if shape not in stuck:
                continue
            on = ", ".join(f"{flavor} (pools {', '.join(names)})" for flavor, names in stuck[shape])
            fix = (
                f"pin the pod set to a shape its claims fit (nodeSelector {INSTANCE_TYPE_LABEL}: {fitting[0]}), or "
                "submit it to a queue whose flavors fit"
                if fitting
                else "submit it to a queue whose flavors are a shape the claim fits, or change the claim"
            )
            reporter.violation(
                f"{workload.label}: {pod_set.pod.where} uses {claim_label}, and {reason}. Its queue ({chain}) may "
                f"admit it on flavor {on} of that shape: Kueue counts DRA devices by "
                "DeviceClass, not by the claim's selectors, so it can admit the job there and the pods then stay "
                f"Pending holding the quota. Fix: {fix}",
                workload.urn,
            )


def _topology_aware(flavor: PlainResource) -> bool:
    """A flavor with spec.topologyName admits pod sets only with topology-aware scheduling
    (pkg/scheduler/flavorassigner/tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS l. 166-204); unknown
    until apply counts as topology-aware (the stricter reading)."""
    name = dig(flavor.props, "spec.topologyName")
    return name is not None


def _may_place(pod_spec: Mapping[str, Any], pools: PoolLabels, pool: str) -> bool:
    """Whether the pod's own nodeSelector and required node affinity admit the pool's nodes
    (:func:`oke_gpu_rdma.scheduling.node_selection.may_select`: kube-scheduler's NodeAffinity Filter, and TAS's node filter
    too); values unknown until apply admit every pool."""
    selector, affinity = pod_spec.get("nodeSelector"), pod_spec.get("affinity")
    if contains_unknown(selector) or contains_unknown(affinity):
        return True
    return may_select(
        selector if isinstance(selector, Mapping) else {},
        affinity if isinstance(affinity, Mapping) else {},
        pools.pools[pool][1],
        pools.keys(pool),
    )


def check(args: StackValidationArgs, reporter: Reporter) -> None:
    view = StackView.of(args)
    kueue = KueueObjects.of(view)
    if not kueue.local_queues or not view.claims:
        return
    pools = pool_labels(view)
    classes = {**registry.device_class_selectors(), **view.classes.selectors}
    judged: dict[tuple[str, str], str | None] = {}
    for workload in view.workloads:
        reporter.guard(
            workload.label,
            workload.urn,
            partial(_check, view, kueue, pools, classes, judged, workload, reporter),
        )


RULE = stack_rule(
    name="kueue-flavor-shapes",
    level="mandatory",
    description=(
        "Every flavor of a job's ClusterQueue that Kueue may assign its pod set is a shape where the pod "
        "set's ResourceClaims can be allocated."
    ),
    validate=guarded(check, stack_where),
)
