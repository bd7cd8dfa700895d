"""kueue-topology-levels (stack): a pod template's topology request names a level of the stack's Topology.

`kueue.x-k8s.io/podset-required-topology`, `podset-preferred-topology` and
`podset-slice-required-topology` name a level by its node label. Kueue admits the pod set only on a
flavor whose Topology lists that label; on every other flavor the workload stays unadmitted with "no
requested topology level: <label>" (:mod:`oke_gpu_rdma.scheduling.kueue_jobs`), a job that never starts and says so
only in its Workload's status. The levels are judged against the Topologies of the flavors of the job's
ClusterQueue when the stack declares that chain, else against every Topology of the stack. Applies to
stacks that declare a Topology.
"""

from __future__ import annotations

from functools import partial

from pulumi_policy import StackValidationArgs

from oke_gpu_rdma.scheduling import kueue_jobs
from oke_rdma_policies.kube import PlainResource, pod_specs
from oke_rdma_policies.kueue_view import KueueObjects, template_annotations
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter, guarded, stack_where
from oke_rdma_policies.stack import StackView
from oke_rdma_policies.values import UNKNOWN, dig


def _topologies_for(kueue: KueueObjects, workload: PlainResource) -> list[str]:
    """The Topologies the workload's flavors name, or every Topology of the stack."""
    flavors, _ = kueue.flavors_of(workload)
    named = []
    for flavor in flavors:
        res = kueue.flavors.get(flavor)
        name = dig(res.props, "spec.topologyName") if res is not None else None
        if isinstance(name, str) and name in kueue.topologies and name not in named:
            named.append(name)
    return named or sorted(kueue.topologies)


def _check(kueue: KueueObjects, workload: PlainResource, reporter: Reporter) -> None:
    topologies = None
    for pod in pod_specs(workload):
        annotations = template_annotations(workload, pod)
        if annotations is UNKNOWN:
            reporter.unchecked(
                f"{workload.label}: the {pod.where} pod template's annotations unknown until apply"
            )
            continue
        for annotation, level in kueue_jobs.requested_levels(annotations):
            if level is UNKNOWN:
                reporter.unchecked(f"{workload.label}: {annotation} of {pod.where} unknown until apply")
                continue
            topologies = topologies or _topologies_for(kueue, workload)
            if any(level in kueue.topologies[t][1] for t in topologies):
                continue
            if kueue.unknown_topologies & set(topologies):
                continue  # their levels are unknown until apply (reported as not checked)
            defined = "; ".join(
                f"Topology {t}: {', '.join(kueue.topologies[t][1]) or 'none'}" for t in topologies
            )
            reporter.violation(
                f"{workload.label}: {pod.where} asks {annotation}: {level}, a level no Topology of its flavors "
                f'defines ({defined}). Kueue never admits it ("no requested topology level: {level}"), so the '
                "job never starts. Fix: name one of those levels' node labels",
                workload.urn,
            )


def check(args: StackValidationArgs, reporter: Reporter) -> None:
    view = StackView.of(args)
    kueue = KueueObjects.of(view)
    if not kueue.topologies:
        return
    for item in kueue.unknown:
        reporter.unchecked(item)
    for workload in view.workloads:
        reporter.guard(workload.label, workload.urn, partial(_check, kueue, workload, reporter))


RULE = stack_rule(
    name="kueue-topology-levels",
    level="mandatory",
    description=(
        "A pod template's kueue.x-k8s.io/podset-required-topology, podset-preferred-topology or "
        "podset-slice-required-topology names a level of the Topology its flavors use."
    ),
    validate=guarded(check, stack_where),
)
