"""kueue-flavor-pools (stack): each ResourceFlavor selects the node pools of exactly one shape.

A flavor's nodes are the nodes carrying all its `spec.nodeLabels` (:mod:`oke_gpu_rdma.kueue_jobs`). One
that matches no pool of the stack lets Kueue admit workloads against quota for nodes that do not exist;
one that matches pools of two shapes counts hosts with different GPUs and rails as one resource and one
topology, so a job admitted on it may land on a shape its claims do not fit. Pools are matched on the
labels their nodes have from boot (the initial node labels, `node.kubernetes.io/instance-type`, the GPU
labels set on GPU shapes); the fabric level labels' values are known only on the nodes, so a flavor is
matched on its other keys. Judged when the stack declares node pools.
"""

from __future__ import annotations

from functools import partial

from pulumi_policy import StackValidationArgs

from oke_gpu_rdma import kueue_jobs

from ..kueue_objects import KueueObjects, boot_time_keys, flavor_labels, label, pool_labels
from ..registry import stack_rule
from ..report import Reporter, guarded, stack_where
from ..stack import StackView
from ..values import UNKNOWN


def check(args: StackValidationArgs, reporter: Reporter) -> None:
    view = StackView.of(args)
    kueue = KueueObjects.of(view)
    if not kueue.flavors:
        return
    pools = pool_labels(view)
    if not pools.pools and not pools.unknown:
        reporter.unchecked("the stack declares no node pool: the ResourceFlavors' nodeLabels not checked")
        return
    for name, flavor in sorted(kueue.flavors.items()):
        labels = reporter.guard(label(flavor), flavor.urn, partial(flavor_labels, flavor))
        if labels is None:
            continue
        if labels is UNKNOWN:
            reporter.unchecked(f"{label(flavor)}: spec.nodeLabels unknown until apply")
            continue
        at_boot = boot_time_keys(labels)
        if at_boot:
            reporter.unchecked(
                f"{label(flavor)}: nodeLabels {', '.join(at_boot)} are set at boot, matched on the others"
            )
        matched = {k: v for k, v in labels.items() if k not in at_boot}
        chosen = kueue_jobs.pools_of_flavor(matched, pools.pools)
        problem = chosen.problem(name, labels, pools.shapes)
        if problem is None:
            continue
        if pools.unknown and not chosen.pools:
            reporter.unchecked(
                f"{label(flavor)}: pools {', '.join(pools.unknown)} have labels unknown until apply"
            )
            continue
        reporter.violation(problem, flavor.urn)


RULE = stack_rule(
    name="kueue-flavor-pools",
    level="mandatory",
    description=(
        "Each Kueue ResourceFlavor's spec.nodeLabels select node pools of the stack, all of one shape."
    ),
    validate=guarded(check, stack_where),
)
