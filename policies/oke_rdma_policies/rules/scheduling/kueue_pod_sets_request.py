"""kueue-pod-sets-request (stack): every pod set of a job queued on a topology-aware flavor requests something.

Kueue v0.19.2 checks a topology-aware pod set against each node by how many of its pods fit the node's
remaining capacity, counted from the pod template's container requests, and a pod that requests nothing fits
zero times (`pkg/resources/slice_requests.go` CountInWithLimitingResource l. 351-353, VectorizedResourceRequests
on by default since 0.19; `pkg/cache/scheduler/clusterqueue_snapshot.go` Fits l. 144-151). The workload is
nominated, fails "after nomination" in every scheduling cycle and is never admitted
(`pkg/scheduler/scheduler.go` updateAssignmentIfNeeded l. 705-753), and with it waits every job queued behind
it. The typical case is an MPIJob's launcher with no `resources`, or a worker whose devices come only from
claims: TAS counts container requests, never claims (`tas_flavorassigner.go` l. 111-112). Kueue counts a limit as the missing request
(`pkg/workload/resources.go` UseLimitsAsMissingRequestsInPod l. 124-142), adds the pod overhead of its
RuntimeClass and the defaults of its namespace's LimitRanges (handlePodOverhead, handlePodLimitRange l. 57-115):
a container with a request or a limit, a pod with `overhead`, or a LimitRange the stack declares in the job's
namespace passes. Judged for jobs whose queue's ClusterQueue the stack declares with a flavor that has a
`topologyName`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from pulumi_policy import StackValidationArgs

from oke_rdma_policies.kube import PlainResource, PodSpec, container_name, containers, pod_specs
from oke_rdma_policies.kueue_view import KueueObjects
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter, guarded, stack_where
from oke_rdma_policies.stack import StackView
from oke_rdma_policies.values import UNKNOWN, dig


def _tas_flavors(kueue: KueueObjects, workload: PlainResource, reporter: Reporter) -> list[str]:
    """The flavors of the workload's ClusterQueue that schedule over a Topology ([] when none, or unknown)."""
    flavors, why = kueue.flavors_of(workload)
    if not flavors:
        if why:
            reporter.unchecked(f"{why}, so whether its pod sets go through topology-aware scheduling")
        return []
    return [
        name
        for name in flavors
        if (res := kueue.flavors.get(name)) is not None
        and isinstance(dig(res.props, "spec.topologyName"), str)
    ]


def _asks(resources: Any) -> bool | None:
    """Whether a container's resources request or limit anything (None: unknown until apply)."""
    if resources is UNKNOWN:
        return None
    if not isinstance(resources, Mapping):
        return False
    found = False
    for key in ("requests", "limits"):
        values = resources.get(key)
        if values is UNKNOWN:
            return None
        if isinstance(values, Mapping) and any(
            v is UNKNOWN or str(v) not in ("0", "") for v in values.values()
        ):
            found = True
    return found


def _requests_nothing(pod: PodSpec) -> tuple[bool | None, list[str]]:
    """(True when no container asks for anything, None when unknown until apply; the containers' names)."""
    if pod.spec.get("overhead") not in (None, {}):
        return False, []
    names = []
    for path, container in containers(pod):
        asks = _asks(container.get("resources"))
        if asks is None:
            return None, []
        if asks:
            return False, []
        names.append(container_name(path, container))
    return (bool(names), names)


def _limit_range_in(view: StackView, namespace: Any) -> bool:
    """Whether the stack declares a LimitRange in ``namespace``, whose defaults Kueue adds to the pods."""
    return any(r.kind == "LimitRange" and r.namespace == namespace for r in view.resources)


def _check(view: StackView, kueue: KueueObjects, workload: PlainResource, reporter: Reporter) -> None:
    queue = kueue.queue_of(workload)
    if queue is None or queue is UNKNOWN:
        return
    flavors = _tas_flavors(kueue, workload, reporter)
    if not flavors or _limit_range_in(view, workload.namespace):
        return
    for pod in pod_specs(workload):
        nothing, names = _requests_nothing(pod)
        if nothing is None:
            reporter.unchecked(f"{workload.label}: the {pod.where} containers' resources unknown until apply")
            continue
        if not nothing:
            continue
        reporter.violation(
            f"{workload.label}: {pod.where} requests no CPU, memory or other resource (containers "
            f"{', '.join(names)}; claims do not count), on a queue whose flavors schedule by topology ({', '.join(flavors)}). Kueue "
            "counts a topology-aware pod by its requests, and one that requests nothing fits no node: the job is "
            "never admitted and holds up the jobs queued behind it. Fix: give a container of it a request, e.g. "
            "resources.requests {cpu: 250m, memory: 256Mi}",
            workload.urn,
        )


def check(args: StackValidationArgs, reporter: Reporter) -> None:
    view = StackView.of(args)
    kueue = KueueObjects.of(view)
    if not kueue.topologies:
        return
    for workload in view.workloads:
        reporter.guard(workload.label, workload.urn, partial(_check, view, kueue, workload, reporter))


RULE = stack_rule(
    name="kueue-pod-sets-request",
    level="mandatory",
    description=(
        "Every pod set of a job queued on a topology-aware flavor requests CPU, memory or another resource: "
        "Kueue never admits a topology-aware pod that requests nothing."
    ),
    validate=guarded(check, stack_where),
)
