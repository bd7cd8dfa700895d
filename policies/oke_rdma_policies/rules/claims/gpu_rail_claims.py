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
:attr:`oke_gpu_rdma.nodes.topology.Topology.alignment`), and a claim whose ``oke-gpu-rdma/alignment``
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

import json
from collections.abc import Mapping
from functools import partial
from typing import Any

from pulumi_policy import StackValidationArgs

from oke_gpu_rdma.claims import (
    VerdictKind,
    claim_lands,
    claim_spec_to_v1,
    class_driver,
    devices_exist,
    excluded_on_shape,
    feature_gates,
    pinned_elsewhere,
)
from oke_gpu_rdma.claims.spec import admin_access_requests
from oke_gpu_rdma.common import release_registry as registry
from oke_gpu_rdma.common import resource_types, stack_keys
from oke_gpu_rdma.common.pack_settings import (
    MANAGED_DEVICE_CLASSES_KEY,
    ClaimsSettings,
)
from oke_gpu_rdma.nodes.labels import (
    ADMIN_ACCESS_ENABLED,
    ADMIN_ACCESS_NAMESPACE_LABEL,
    ALIGNMENT_ANNOTATION,
)
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from oke_gpu_rdma.nodes.topology import DEFAULT_SHAPE, Topology
from oke_rdma_policies import settings
from oke_rdma_policies.claim_landing import (
    Judging,
    gpu_pools,
    judge_cached,
    managed_hint,
    message,
    namespace_labels_of,
    stack_child_range,
    unseen_release,
)
from oke_rdma_policies.claim_pods import never_meet, split_pods
from oke_rdma_policies.kube import PlainResource, request_classes, resource_claim_spec
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter, guarded, stack_where
from oke_rdma_policies.stack import StackView
from oke_rdma_policies.values import UNKNOWN, contains_unknown


def _admin_access(claim: PlainResource, spec: Mapping[str, Any], how: Judging, reporter: Reporter) -> None:
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
            reporter.guard(res.label, res.urn, partial(unseen_release, res, managed_releases, reporter))
    for res, problem in view.classes.problems:
        reporter.violation(
            f"{res.label}: {problem}; the API server rejects such a DeviceClass, and claims that use it "
            "are judged as if it did not exist. Fix: give each selector a cel.expression string",
            res.urn,
        )
    if not view.claims:
        return
    for workload in view.workloads:
        reporter.guard(workload.label, workload.urn, partial(split_pods, view, workload, reporter))
    pools, deployed = gpu_pools(view, conf, reporter)
    classes = {**registry.device_class_selectors(), **view.classes.selectors}
    how = Judging(
        classes,
        json.dumps(classes, sort_keys=True),
        pools,
        deployed,
        namespaces=namespace_labels_of(view),
        kubernetes_version=conf.kubernetes_version,
        child_range=stack_child_range(view, conf),
        managed=frozenset(conf.managed_device_classes),
    )
    for claim in view.claims:
        reporter.guard(claim.label, claim.urn, partial(_check, claim, how, reporter))
    for workload in view.workloads:
        reporter.guard(workload.label, workload.urn, partial(never_meet, view, workload, how, reporter))


def _check(claim: PlainResource, how: Judging, reporter: Reporter) -> None:
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
                + managed_hint(MANAGED_DEVICE_CLASSES_KEY, stack_keys.MANAGED_DEVICE_CLASSES, "the class"),
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
    judged = [(t, pools, judge_cached(spec, api_version, t, how, name)) for t, pools in shapes.values()]
    if reached and all(v.kind is not VerdictKind.INVALID for _, _, v in judged):
        # The pools whose nodes can allocate it, for the pods that use it (never_meet); a claim whose drivers
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
        verdict = judge_cached(spec, api_version, topology, how, name)
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
                + managed_hint(
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
                f"(oke_gpu_rdma/nodes/shapes/{topology.shape}.yaml). Fix: set it to {topology.alignment!r}",
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
