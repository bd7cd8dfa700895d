"""kueue-jobs-queued (stack, advisory): a multi-node GPU job in a stack with topology-aware scheduling goes
through a Kueue queue.

With a Kueue Topology in the stack the fabric placement of multi-node jobs is Kueue's: it admits a job
onto one topology domain and injects the domain's node selectors. A job without the
`kueue.x-k8s.io/queue-name` label (and no LocalQueue `default` in its namespace, which Kueue would
default it to) is not Kueue's (:mod:`oke_gpu_rdma.scheduling.kueue_jobs`): kube-scheduler places each worker on its
own, anywhere on the fabric, outside the ClusterQueue's quota, and it competes with the admitted jobs for
the same GPUs. Multi-node: more than one pod at once (the product of `replicas` and `parallelism` above
the pod template: MPIJob and PyTorchJob workers, JobSet jobs, indexed Jobs, Deployments and the like)
claiming GPUs or rails (DRA claims or `nvidia.com/gpu`).
"""

from __future__ import annotations

from functools import partial

from pulumi_policy import StackValidationArgs

from oke_gpu_rdma.scheduling import kueue_jobs
from oke_rdma_policies.kube import PlainResource
from oke_rdma_policies.kueue_view import KueueObjects, pod_sets
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter, guarded, stack_where
from oke_rdma_policies.stack import StackView
from oke_rdma_policies.values import UNKNOWN


def _check(
    view: StackView, kueue: KueueObjects, topology: str, workload: PlainResource, reporter: Reporter
) -> None:
    try:
        every = pod_sets(view, workload)
    except kueue_jobs.Unknown as err:
        reporter.unchecked(f"{workload.label}: {err} unknown until apply, its pod count not known")
        return
    queue = kueue.queue_of(workload)
    if queue is UNKNOWN:
        reporter.unchecked(f"{workload.label}: its {kueue_jobs.QUEUE_LABEL} label is unknown until apply")
        return
    if queue is not None:
        return
    sets = [s for s in every if s.uses_devices]
    pods = sum(s.pods for s in sets)
    if pods <= 1:
        maybe = [s for s in every if s.unresolved and not s.uses_devices]
        if pods + sum(s.pods for s in maybe) > 1:
            reporter.unchecked(
                f"{workload.label}: {maybe[0].unresolved[0]}, so whether it is a multi-node GPU job"
            )
        return
    namespace = workload.namespace
    queues = sorted(name for ns, name in kueue.local_queues if ns == namespace)
    where = ", ".join(f"{s.pod.where}: {s.pods} pod{'s' if s.pods != 1 else ''}" for s in sets)
    fix = (
        f"label the job {kueue_jobs.QUEUE_LABEL}: {queues[0]}"
        + (f" (LocalQueues of namespace {namespace}: {', '.join(queues)})" if len(queues) > 1 else "")
        if queues
        else f"add a LocalQueue in namespace {namespace} and label the job {kueue_jobs.QUEUE_LABEL} with its name"
    )
    reporter.violation(
        f"{workload.label}: a multi-node GPU job ({where} at once, claiming GPUs or rails) without the "
        f"{kueue_jobs.QUEUE_LABEL} label, in a stack with topology-aware scheduling (Topology {topology}): Kueue "
        "does not manage it, so kube-scheduler places each pod on its own, anywhere on the RDMA fabric, outside "
        f"the ClusterQueue's quota. Fix: {fix}",
        workload.urn,
    )


def check(args: StackValidationArgs, reporter: Reporter) -> None:
    view = StackView.of(args)
    kueue = KueueObjects.of(view)
    if not kueue.topologies:
        return
    topology = ", ".join(sorted(kueue.topologies))
    for workload in view.workloads:
        reporter.guard(
            workload.label, workload.urn, partial(_check, view, kueue, topology, workload, reporter)
        )


RULE = stack_rule(
    name="kueue-jobs-queued",
    level="advisory",
    description=(
        "In a stack with a Kueue Topology, a job that runs more than one pod at once claiming GPUs or rails "
        "carries the kueue.x-k8s.io/queue-name label, so Kueue places it on the fabric."
    ),
    validate=guarded(check, stack_where),
)
