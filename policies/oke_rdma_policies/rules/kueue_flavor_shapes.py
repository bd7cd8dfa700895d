"""kueue-flavor-shapes (stack): every flavor Kueue may admit a job on is a shape its claims can be allocated on.

Kueue assigns a pod set one of its ClusterQueue's flavors by quota and by the pod set's nodeSelector and
required node affinity on the keys the flavor's nodeLabels set (:mod:`oke_gpu_rdma.kueue_jobs`); it counts
DRA devices by DeviceClass and never reads a claim's selectors or its GPU/rail pairing. A job whose claim cannot be allocated on a flavor's
shape (a selector that pins another shape, more devices than the shape has, a pairing it lacks) can be
admitted there, and its pods then stay Pending while they hold the quota. The claim is judged by the DRA
core on that shape (:func:`oke_gpu_rdma.claims.judge_claim`, the catalog's topologies; a shape without a
verified topology only by whether its selectors rule the shape out); the pack config's kubernetesVersion and
child range of gpu-rail-claims-aligned are not read here (their defaults are used). Judged for jobs whose
queue chain (LocalQueue, ClusterQueue, ResourceFlavors) the stack declares.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from pulumi_policy import StackValidationArgs

from oke_gpu_rdma import kueue_jobs
from oke_gpu_rdma.claims import VerdictKind, excluded_on_shape, judge_claim
from oke_gpu_rdma.errors import TopologyError
from oke_gpu_rdma.labels import INSTANCE_TYPE_LABEL
from oke_gpu_rdma.releases import registry
from oke_gpu_rdma.shape_catalog import CATALOG
from oke_gpu_rdma.topology import DEFAULT_SHAPE

from ..kube import PlainResource, resource_claim_spec
from ..kueue_objects import KueueObjects, PoolLabels, flavor_labels, flavor_pools, pod_sets, pool_labels
from ..registry import stack_rule
from ..report import Reporter, guarded, stack_where
from ..stack import StackView
from ..values import UNKNOWN, contains_unknown


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
        # shape -> (flavor, its pools of that shape) for the flavors Kueue may assign this pod set
        shapes: dict[str, list[tuple[str, list[str]]]] = {}
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
            chosen = flavor_pools(labels, pools)
            for shape in chosen.shapes:
                of_shape = [p for p in chosen.pools if pools.pools[p][0] == shape]
                shapes.setdefault(shape, []).append((name, of_shape))
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
        for (claim_label, shape), reason in sorted(failing.items()):
            on = ", ".join(f"{flavor} (pools {', '.join(names)})" for flavor, names in shapes[shape])
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
