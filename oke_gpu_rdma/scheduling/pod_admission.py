"""Whether the nodes of a pool admit a pod: node selection, taints and tolerations, device requests.

The Kubernetes rules followed here:

- Tolerations: `k8s.io/api/core/v1/toleration.go` `(*Toleration).ToleratesTaint`: a toleration with an
  effect matches only that effect, one with a key only that key (an empty key with `Exists` matches every
  taint); operator `Exists` matches any value, `Equal` (or empty) the same value.
- The scheduler's TaintToleration filter (`pkg/scheduler/framework/plugins/tainttoleration`) calls
  `k8s.io/component-helpers/scheduling/corev1/helpers.go` `FindMatchingUntoleratedTaint` with only the
  `NoSchedule` and `NoExecute` taints: a `PreferNoSchedule` taint never keeps a pod off a node. The
  DaemonSet controller (`pkg/controller/daemon/util/daemonset_util.go` and `predicates`) runs a pod on a
  node only where the same taints are tolerated, after the node matches its selector.
- Node selection: `oke_gpu_rdma/scheduling/node_selection.py` (`k8s.io/component-helpers/scheduling/corev1/
  nodeaffinity`).
- Priority: the API server's Priority admission plugin (`plugin/pkg/admission/priority/admission.go`) refuses a
  pod whose `priorityClassName` names no PriorityClass; every cluster has the two system classes
  (`pkg/apis/scheduling/types.go` `SystemClusterCritical`, `SystemNodeCritical`), which since Kubernetes 1.17 any
  namespace may use.
- Devices: an extended resource (the device plugin's GPUs, an SR-IOV VF resource) must be offered by a device
  plugin on the node (`pkg/scheduler/framework/plugins/noderesources/fit.go`); a DRA claim's device
  class by a DRA driver's kubelet plugin there (`pkg/scheduler/framework/plugins/dynamicresources`).
  cpu, memory, ephemeral-storage and hugepages are on every node and not compared here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from oke_gpu_rdma.nodes.labels import POOL_LABEL
from oke_gpu_rdma.scheduling.node_selection import SelectionError, affinity_matches, selector_matches

# The effects the scheduler and the DaemonSet controller filter on (PreferNoSchedule only scores).
FILTERED_EFFECTS = ("NoSchedule", "NoExecute")
# The PriorityClasses every cluster has: the API server creates them at start-up (kubernetes/kubernetes
# pkg/apis/scheduling/types.go SystemClusterCritical, SystemNodeCritical;
# pkg/registry/scheduling/rest/storage_scheduling.go AddSystemPriorityClasses).
SYSTEM_PRIORITY_CLASSES = frozenset({"system-node-critical", "system-cluster-critical"})
# Resource names every node has: not device requests.
_NODE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")


@dataclass(frozen=True)
class NodeTaint:
    """A taint the nodes of a pool register with."""

    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


def tolerates_taint(toleration: Mapping[str, Any], taint: NodeTaint) -> bool:
    """`(*Toleration).ToleratesTaint` of k8s.io/api/core/v1/toleration.go."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.effect:
        return False
    key = toleration.get("key") or ""
    if key and key != taint.key:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == taint.value
    return False


def untolerated_taint(
    taints: Iterable[NodeTaint], tolerations: Sequence[Mapping[str, Any]]
) -> NodeTaint | None:
    """The first NoSchedule/NoExecute taint no toleration matches (`FindMatchingUntoleratedTaint` with the
    scheduler's filter), or None."""
    for taint in taints:
        if taint.effect not in FILTERED_EFFECTS:
            continue
        if not any(tolerates_taint(t, taint) for t in tolerations):
            return taint
    return None


@dataclass(frozen=True)
class PoolNodes:
    """What the nodes of one pool look like to the scheduler."""

    name: str
    labels: Mapping[str, str]
    """Initial node labels plus the ones set at run time (instance type, GPU Operator, NFD)."""
    taints: tuple[NodeTaint, ...] = ()
    extended_resources: frozenset[str] = frozenset()
    """Extended resources a device plugin offers there (GPUs, VF resources)."""
    device_classes: frozenset[str] = frozenset()
    """DRA device classes whose driver's kubelet plugin runs there (filled in by :func:`check`)."""
    marks: tuple[NodeTaint, ...] = ()
    """Taints the stack's health agents put on some of its nodes at run time (a node whose rail is bad,
    where the cluster cannot taint the rail alone; oke_gpu_rdma/health/health_marks.py). New pods keep off those nodes;
    a DaemonSet's pod must tolerate them or it does not come back there."""


@dataclass(frozen=True)
class PodPlacement:
    """A pod template (or a chart workload's) as far as placement goes."""

    name: str
    """How messages name it: `DaemonSet kube-system/dranet (chart dranet)`."""
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: Mapping[str, Any] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    extended_resources: frozenset[str] = frozenset()
    device_classes: frozenset[str] = frozenset()
    """DRA device classes its claims request."""
    device_class_choices: tuple[frozenset[str], ...] = ()
    """Requests of its claims that any one of several classes serves (``firstAvailable`` subrequests with
    different classes: the allocator takes the first one that fits the node)."""
    daemonset: bool = False
    """A DaemonSet: a pod on every node it selects and tolerates."""
    provides_device_classes: frozenset[str] = frozenset()
    """A DRA kubelet plugin: nodes where it runs offer these classes."""
    provides_resources: frozenset[str] = frozenset()
    """A device plugin: nodes where it runs offer these extended resources (the GPUs' resource name)."""
    priority_class: str | None = None
    """Its `priorityClassName` (None: the cluster's global default), which must exist before the pod is admitted."""
    may_select_none: bool = False
    """A DaemonSet placed by labels an operator sets on some nodes only (the GPU Operator's deploy labels, the
    MPS label): selecting no pool of the stack is not a problem."""


def requested_resources(pod_spec: Mapping[str, Any]) -> frozenset[str]:
    """Extended resources the containers of a pod spec request or limit."""
    names: set[str] = set()
    for key in ("initContainers", "containers"):
        for container in pod_spec.get(key) or []:
            if not isinstance(container, Mapping):
                continue
            resources = container.get("resources") or {}
            for part in ("limits", "requests"):
                for name in (resources.get(part) or {}) if isinstance(resources, Mapping) else {}:
                    if name in _NODE_RESOURCES or name.startswith("hugepages-") or "/" not in name:
                        continue
                    names.add(str(name))
    return frozenset(names)


def from_pod_spec(
    name: str,
    pod_spec: Mapping[str, Any],
    device_classes: frozenset[str] = frozenset(),
    daemonset: bool = False,
    device_class_choices: tuple[frozenset[str], ...] = (),
) -> PodPlacement:
    """The placement of a declared pod spec (core/v1 PodSpec as plain data)."""
    return PodPlacement(
        name=name,
        node_selector=dict(pod_spec.get("nodeSelector") or {}),
        affinity=dict(pod_spec.get("affinity") or {}),
        tolerations=tuple(pod_spec.get("tolerations") or ()),
        extended_resources=requested_resources(pod_spec),
        device_classes=device_classes,
        device_class_choices=device_class_choices,
        daemonset=daemonset,
        priority_class=str(pod_spec["priorityClassName"]) if pod_spec.get("priorityClassName") else None,
    )


def rejections(pod: PodPlacement, pool: PoolNodes) -> list[str]:
    """Why the pool's nodes do not admit the pod (empty: they do). Selection first, as the scheduler
    filters: a pool the pod does not select is not asked about its taints."""
    if not selector_matches(pod.node_selector, pool.labels):
        wanted = ", ".join(f"{k}={v}" for k, v in pod.node_selector.items())
        return [f"nodeSelector {wanted} does not match its labels"]
    try:
        matched = affinity_matches(pod.affinity, pool.labels)
    except SelectionError as err:
        return [f"node affinity: {err}"]
    if matched is False:
        return ["its labels match no required node affinity term"]
    why: list[str] = []
    taint = untolerated_taint(pool.taints, pod.tolerations)
    if taint is not None:
        why.append(f"taint {taint} is not tolerated")
    missing = sorted(pod.extended_resources - pool.extended_resources)
    if missing:
        why.append(f"no device plugin offers {', '.join(missing)} there")
    classes = sorted(pod.device_classes - pool.device_classes)
    if classes:
        why.append(f"no DRA driver serves device class {', '.join(classes)} there")
    for choice in pod.device_class_choices:
        if not choice & pool.device_classes:
            why.append(f"no DRA driver serves any of device classes {', '.join(sorted(choice))} there")
    return why


def pinned_to_stack_pools(pod: PodPlacement) -> bool:
    """Whether the pod can only land on this stack's pools: it selects on their pool label."""
    if POOL_LABEL in pod.node_selector:
        return True
    node = pod.affinity.get("nodeAffinity") if isinstance(pod.affinity, Mapping) else None
    required = (
        node.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(node, Mapping) else None
    )
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    if not isinstance(terms, list) or not terms:
        return False
    return all(
        isinstance(t, Mapping)
        and any(
            isinstance(e, Mapping) and e.get("key") == POOL_LABEL and e.get("operator") == "In"
            for e in t.get("matchExpressions") or []
        )
        for t in terms
    )


@dataclass(frozen=True)
class Verdict:
    """What the check found: pods no pool admits (problems) and what it could not see (notes)."""

    problems: tuple[str, ...]
    notes: tuple[str, ...]
    placements: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Each pod with the pools that admit it, in the order given."""
    settings: tuple[str, ...] = ()
    """What a cluster part the stack does not manage must be configured with (the GPU Operator's settings)."""


def _reasons_text(reasons: Mapping[str, list[str]]) -> str:
    return "; ".join(f"{pool}: {', '.join(why)}" for pool, why in reasons.items())


def check(
    pods: Sequence[PodPlacement],
    pools: Sequence[PoolNodes],
    unseen: str | None = None,
    priority_classes: frozenset[str] = SYSTEM_PRIORITY_CLASSES,
    fix: str | None = None,
) -> Verdict:
    """Every pod template against every pool of the stack.

    A pod that no pool admits is a problem, one line naming it, each pool and why. With ``unseen`` (the
    pools of an existing cluster outside the stack) a pod that is not pinned to the stack's pools may run
    there: that is a note naming what the check could not see. A DaemonSet that selects a pool but does
    not tolerate its taints gets no pod there (the DaemonSet controller skips the node): a problem too, as is
    a pod naming a PriorityClass outside ``priority_classes`` (the API server refuses it). Pods that share
    the reason no pool admits them are one problem (or note): the reason, ``fix`` if given, then each pod.
    """
    served: dict[str, set[str]] = {p.name: set() for p in pools}
    for pod in pods:
        if pod.provides_device_classes:
            for pool in pools:
                if not rejections(pod, pool):
                    served[pool.name] |= pod.provides_device_classes
    pools = [
        PoolNodes(
            p.name,
            p.labels,
            p.taints,
            p.extended_resources,
            p.device_classes | frozenset(served[p.name]),
            p.marks,
        )
        for p in pools
    ]
    problems: list[str] = []
    placements: list[tuple[str, tuple[str, ...]]] = []
    # Pods no pool admits, by why: a reason many pods share is said once, with the pods it applies to.
    unplaced: dict[str, list[str]] = {}
    unseen_only: dict[str, list[str]] = {}
    for pod in pods:
        if pod.priority_class is not None and pod.priority_class not in priority_classes:
            problems.append(
                f"{pod.name}: the API server refuses its pods: priorityClassName {pod.priority_class} names no "
                f"PriorityClass of the cluster (known: {', '.join(sorted(priority_classes))})"
            )
        reasons = {pool.name: rejections(pod, pool) for pool in pools}
        admitting = [name for name, why in reasons.items() if not why]
        placements.append((pod.name, tuple(admitting)))
        if pod.daemonset:
            skipped = {
                name: why for name, why in reasons.items() if why and all(w.startswith("taint ") for w in why)
            }
            if skipped:
                problems.append(
                    f"{pod.name} selects pool(s) {', '.join(skipped)} but gets no pod there: {_reasons_text(skipped)}"
                )
            unmarked = {
                pool.name: str(mark)
                for pool in pools
                if pool.name in admitting
                for mark in [untolerated_taint(pool.marks, pod.tolerations)]
                if mark is not None
            }
            if unmarked:
                problems.append(
                    f"{pod.name} gets no new pod on a node the health agent marked in pool(s) "
                    f"{', '.join(unmarked)} (it does not tolerate "
                    f"{', '.join(sorted(set(unmarked.values())))}): tolerate that taint, NoSchedule only"
                )
            if admitting or skipped or pod.may_select_none:
                continue
        elif admitting:
            continue
        why = _reasons_text(reasons) if pools else ""
        if unseen is not None and not pinned_to_stack_pools(pod):
            unseen_only.setdefault(why, []).append(pod.name)
        else:
            unplaced.setdefault(why, []).append(pod.name)
    problems += [_unplaced_line(pods, why, fix=fix) for why, pods in unplaced.items()]
    notes = [_unplaced_line(pods, why, unseen) for why, pods in unseen_only.items()]
    return Verdict(tuple(problems), tuple(notes), tuple(placements))


def _unplaced_line(pods: Sequence[str], why: str, unseen: str | None = None, fix: str | None = None) -> str:
    """A pod no pool admits and why; several that share the reason get it once, then a line per pod."""
    one = len(pods) == 1
    who = pods[0] if one else f"{len(pods)} pods"
    if not why:
        line = f"{who}: the stack has no node pool"
    else:
        line = f"{who} {'fits' if one else 'fit'} no node pool of the stack: {why}"
    if unseen is not None:
        line += f"; {'it' if one else 'they'} may run on {unseen}, which the check cannot see"
    if fix is not None:
        line += f"; {fix}"
    return line if one else line + ":" + "".join(f"\n- {pod}" for pod in pods)
