"""gpu-rail-claims-aligned (stack): every claim judged by the DRA core on the shapes it can land on.

A stack policy, so that it knows the shapes of the stack's GPU node pools (a claim must be aligned
on each of them: the scheduler may place the pod on any). Without GPU node pools in the stack (an
existing cluster) claims are judged on the pack config's `shape`. Every ResourceClaim and
ResourceClaimTemplate of resource.k8s.io v1, v1beta2 and v1beta1 is judged; none is skipped
silently: a claim that cannot be judged (a value unknown during preview, a DeviceClass the stack
does not declare, a shape without verified topology) is named in the policy's advisory line or, for
the shape, in a violation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import partial
from typing import Any, Final

from pulumi_policy import ReportViolation, StackValidationArgs, StackValidationPolicy

from oke_gpu_rdma import resource_types
from oke_gpu_rdma.attributes import DEVICE_CLASS_SELECTORS, PCIE_ROOT
from oke_gpu_rdma.errors import TopologyError
from oke_gpu_rdma.pack_config import PolicyName
from oke_gpu_rdma.topology import Topology
from oke_gpu_rdma.verdicts import Verdict, judge

from . import settings
from .kube import Res, request_classes, resource_claim_spec
from .report import Reporter
from .stack import StackView
from .values import UNKNOWN, contains_unknown

VIOLATIONS: Final = ("invalid", "unsatisfiable", "unaligned")
_CACHE_LIMIT: Final = 4096
_verdicts: dict[tuple[str, str, Topology, str], Verdict] = {}


def _judge(
    spec: Mapping[str, Any],
    topology: Topology,
    classes: Mapping[str, tuple[str, ...]],
    classes_key: str,
    name: str,
) -> Verdict:
    """The verdict, cached by the claim's JSON: a stack repeats the same claim many times."""
    key = (json.dumps(spec, sort_keys=True, default=str), classes_key, topology, name)
    verdict = _verdicts.get(key)
    if verdict is None:
        if len(_verdicts) > _CACHE_LIMIT:
            _verdicts.clear()
        verdict = judge(spec, topology, device_classes=classes, name=name)
        _verdicts[key] = verdict
    return verdict


def _capacity(topology: Topology) -> str:
    gpus = max(len(r.gpus) for r in topology.roots)
    rails = max(len(r.rails) for r in topology.roots)
    return f"{gpus} GPUs and {rails} rails"


def message(claim: Res, verdict: Verdict, topology: Topology, pools: list[str]) -> str:
    where = f"{claim.label} on {topology.shape}" + (f" (node pools {', '.join(pools)})" if pools else "")
    text = f"{where}: {verdict.message}"
    if verdict.kind == "unsatisfiable" and "no PCIe root has" in verdict.message:
        text += (
            f". Fix: a {PCIE_ROOT} constraint can hold at most what one root has ({_capacity(topology)}): "
            "split the requests into per-root pairs gpus-i/rails-i, each pair with its own constraint "
            "(oke_gpu_rdma.claims.aligned_claim_spec), or ask for fewer devices"
        )
    return text


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    rep = Reporter(report_violation)
    conf = settings.claims_config(args.get_config())
    for problem in conf.problems:
        rep.violation(problem)
    view = StackView.of(args)
    if not view.claims:
        rep.finish()
        return
    shapes: dict[str, list[str]] = {}
    pools_by_shape: dict[str, list[Res]] = {}
    for pool in view.of_type(resource_types.NODE_POOL):
        shape = pool.props.get("nodeShape")
        if shape is UNKNOWN:
            rep.unchecked(f"node pool {pool.name}: nodeShape unknown until apply")
    for pool in view.gpu_node_pools():
        shape = pool.props["nodeShape"]
        shapes.setdefault(shape, []).append(pool.name)
        pools_by_shape.setdefault(shape, []).append(pool)
    if not shapes:
        shapes[conf.shape] = []
    topologies: list[tuple[Topology, list[str]]] = []
    for shape, pools in shapes.items():
        try:
            topologies.append((settings.topology_for(conf, shape), pools))
        except TopologyError as err:
            text = (
                f"claims cannot be judged on {shape}: {err}. Supply its topology as pack config "
                f"{PolicyName.CLAIMS_ALIGNED}.shapeTopologies.{shape}, or set this policy advisory for it"
            )
            targets: list[Res | None] = list(pools_by_shape.get(shape, [])) or [None]
            for target in targets:
                rep.violation(
                    f"node pool {target.name}: {text}" if target else f"pack config shape: {text}",
                    target.urn if target else None,
                )
    classes = {**DEVICE_CLASS_SELECTORS, **view.classes.selectors}
    classes_key = json.dumps(classes, sort_keys=True)
    for claim in view.claims:
        rep.guard(claim.label, claim.urn, partial(_check, claim, classes, classes_key, topologies, rep))
    rep.finish()


def _check(
    claim: Res,
    classes: Mapping[str, tuple[str, ...]],
    classes_key: str,
    topologies: list[tuple[Topology, list[str]]],
    rep: Reporter,
) -> None:
    spec = resource_claim_spec(claim)
    if spec is UNKNOWN:
        rep.unchecked(f"{claim.label}: spec unknown until apply, not judged")
        return
    spec = dict(spec or {})
    devices = spec.get("devices")
    if devices is UNKNOWN:
        rep.unchecked(f"{claim.label}: spec.devices unknown until apply, not judged")
        return
    if isinstance(devices, Mapping):
        # Allocation ignores config (opaque driver parameters): unknowns there do not matter.
        if contains_unknown(devices.get("config")):
            devices = {k: v for k, v in devices.items() if k != "config"}
            spec["devices"] = devices
        unknown = contains_unknown(devices, "spec.devices")
        if unknown:
            rep.unchecked(f"{claim.label}: {', '.join(unknown[:3])} unknown until apply, not judged")
            return
    for request, used in request_classes(spec).items():
        missing = sorted(str(c) for c in used if isinstance(c, str) and c not in classes)
        if missing:
            rep.unchecked(
                f"{claim.label}: request {request} uses DeviceClass {', '.join(missing)}, which this stack "
                "does not declare (its selectors are unknown), not judged"
            )
            return
    name = claim.object_name if isinstance(claim.object_name, str) else claim.name
    for topology, pools in topologies:
        verdict = _judge(spec, topology, classes, classes_key, name)
        if verdict.kind in VIOLATIONS:
            rep.violation(message(claim, verdict, topology, pools), claim.urn)


policy = StackValidationPolicy(
    name=PolicyName.CLAIMS_ALIGNED,
    description=(
        "ResourceClaims and ResourceClaimTemplates must be valid, allocatable and, when they ask for "
        "GPUs and DRANET rails, aligned: every GPU on a PCIe root with one of the claim's rails, on "
        "every GPU node pool shape of the stack."
    ),
    validate=validate,
    enforcement_level=settings.level(PolicyName.CLAIMS_ALIGNED),
    config_schema=settings.schema(PolicyName.CLAIMS_ALIGNED),
)
