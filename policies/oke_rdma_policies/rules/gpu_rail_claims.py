"""gpu-rail-claims-aligned (stack): every claim judged by the DRA core on the shapes it can land on.

A stack policy, so that it knows the shapes of the stack's GPU node pools (a claim must be aligned
on each of them: the scheduler may place the pod on any). Without GPU node pools in the stack (an
existing cluster) claims are judged on the pack config's `shape`. Every ResourceClaim and
ResourceClaimTemplate of resource.k8s.io v1, v1beta2 and v1beta1 is judged; none is skipped
silently: a claim that cannot be judged (a value unknown during preview, a DeviceClass the stack
does not declare, a shape without verified topology) is named in the policy's advisory line or, for
the shape, in a violation.

In a mixed fleet (an inference pool of GPUs without rails next to the RDMA pools) a claim is judged on
the shapes where its devices exist (:mod:`oke_gpu_rdma.claims.landing`): the scheduler never places a claim
for rails on a node without rails, so that shape cannot block it. A claim whose devices exist on no
shape is judged on every shape. Claims go to the judge as written, in their API version
(`resource.k8s.io/v1beta1` has no `exactly`), and a verdict the model cannot reach (a CEL function it
does not evaluate) is reported as not checked, never as a rejection.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from pulumi_policy import StackValidationArgs

from oke_gpu_rdma import resource_types, stack_keys
from oke_gpu_rdma.attributes import DEVICE_CLASS_SELECTORS
from oke_gpu_rdma.claims import (
    UnsatisfiableCause,
    Verdict,
    VerdictKind,
    claim_spec_to_v1,
    devices_exist,
    judge_claim,
)
from oke_gpu_rdma.errors import TopologyError
from oke_gpu_rdma.pack_settings import ClaimsSettings
from oke_gpu_rdma.topology import Topology

from .. import settings
from ..kube import PlainResource, request_classes, resource_claim_spec
from ..registry import stack_rule
from ..report import Reporter, guarded, stack_where
from ..stack import StackView
from ..values import UNKNOWN, contains_unknown

_CACHE_LIMIT: Final = 8192
_verdicts: dict[tuple[str, str, str, Topology, str], Verdict] = {}


@dataclass(frozen=True)
class _Judging:
    """What every claim of one run is judged with."""

    classes: Mapping[str, tuple[str, ...]]
    classes_key: str
    topologies: list[tuple[Topology, list[str]]]


def _judge(
    spec: Mapping[str, Any], api_version: str, topology: Topology, how: _Judging, name: str
) -> Verdict:
    """The verdict, cached by the claim's JSON: a stack repeats the same claim many times."""
    key = (json.dumps(spec, sort_keys=True, default=str), api_version, how.classes_key, topology, name)
    verdict = _verdicts.get(key)
    if verdict is None:
        if len(_verdicts) > _CACHE_LIMIT:
            _verdicts.clear()
        verdict = judge_claim(spec, topology, name=name, device_classes=how.classes, api_version=api_version)
        _verdicts[key] = verdict
    return verdict


def message(claim: PlainResource, verdict: Verdict, topology: Topology, pools: list[str]) -> str:
    where = f"{claim.label} on {topology.shape}" + (f" (node pools {', '.join(pools)})" if pools else "")
    text = f"{where}: {verdict.message}"
    if verdict.cause is UnsatisfiableCause.ROOT_CAPACITY and verdict.fix:
        text += f". Fix: {verdict.fix}"
    return text


def _topologies(
    view: StackView, conf: ClaimsSettings, reporter: Reporter
) -> list[tuple[Topology, list[str]]]:
    """The shapes claims are judged on: the GPU node pools' shapes, else the pack config's shape."""
    shapes: dict[str, list[PlainResource]] = {}
    for pool in view.of_type(resource_types.NODE_POOL):
        if pool.props.get("nodeShape") is UNKNOWN:
            reporter.unchecked(f"node pool {pool.name}: nodeShape unknown until apply")
    for pool in view.gpu_node_pools():
        shapes.setdefault(pool.props["nodeShape"], []).append(pool)
    if not shapes:
        shapes[conf.shape] = []
    found: list[tuple[Topology, list[str]]] = []
    catalog = conf.catalog()
    for shape, pools in shapes.items():
        try:
            found.append((catalog.topology(shape), [p.name for p in pools]))
        except TopologyError as err:
            text = (
                f"claims cannot be judged on {shape}: {err}. Supply its topology as pack config "
                f"{ClaimsSettings.policy}.shapeTopologies.{shape} (and as "
                f"{stack_keys.stack_setting(stack_keys.SHAPE_TOPOLOGIES)}), or set this policy advisory for it"
            )
            targets: list[PlainResource | None] = list(pools) or [None]
            for target in targets:
                reporter.violation(
                    f"node pool {target.name}: {text}" if target else f"pack config shape: {text}",
                    target.urn if target else None,
                )
    return found


def check(args: StackValidationArgs, reporter: Reporter) -> None:
    conf, problems = settings.read_section(ClaimsSettings, args.get_config())
    for problem in problems:
        reporter.violation(problem)
    view = StackView.of(args)
    for res, problem in view.classes.problems:
        reporter.violation(
            f"{res.label}: {problem}; the API server rejects such a DeviceClass, and claims that use it "
            "are judged as if it did not exist. Fix: give each selector a cel.expression string",
            res.urn,
        )
    if not view.claims:
        return
    topologies = _topologies(view, conf, reporter)
    classes = {**DEVICE_CLASS_SELECTORS, **view.classes.selectors}
    how = _Judging(classes, json.dumps(classes, sort_keys=True), topologies)
    for claim in view.claims:
        reporter.guard(claim.label, claim.urn, partial(_check, claim, how, reporter))


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
    for request, used in request_classes(claim_spec_to_v1(spec, api_version)).items():
        missing = sorted(str(c) for c in used if isinstance(c, str) and c not in how.classes)
        if missing:
            reporter.unchecked(
                f"{claim.label}: request {request} uses DeviceClass {', '.join(missing)}, which this stack "
                "does not declare (its selectors are unknown), not judged"
            )
            return
    name = claim.object_name if isinstance(claim.object_name, str) else claim.name
    judged = [(t, pools, _judge(spec, api_version, t, how, name)) for t, pools in how.topologies]
    if len(judged) > 1:
        # A mixed fleet: only the shapes where the claim's devices exist can run it (module docstring).
        placed = [
            (t, pools, v)
            for t, pools, v in judged
            if v.kind is not VerdictKind.UNSATISFIABLE or devices_exist(spec, t, how.classes, api_version)
        ]
        judged = placed or judged
    for topology, pools, verdict in judged:
        if verdict.kind is VerdictKind.NOT_CHECKED:
            reporter.unchecked(f"{claim.label} on {topology.shape}: {verdict.message}")
        elif verdict.kind.blocks_deploy:
            reporter.violation(message(claim, verdict, topology, pools), claim.urn)


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
