"""kueue-flavor-pools (stack): each ResourceFlavor selects the node pools of exactly one shape.

A flavor's nodes are the nodes carrying all its `spec.nodeLabels` (:mod:`oke_gpu_rdma.scheduling.kueue_jobs`). One
that matches no pool of the stack lets Kueue admit workloads against quota for nodes that do not exist;
one that matches pools of two shapes counts hosts with different GPUs and rails as one resource and one
topology, so a job admitted on it may land on a shape its claims do not fit. Pools are matched on the
labels their nodes have from boot (the initial node labels, `node.kubernetes.io/instance-type`, the GPU
labels set on GPU shapes); the fabric level labels' values are known only on the nodes, so a flavor is
matched on its other keys and on the pools whose cloud-init registers those keys. A flavor with a
`topologyName` must select nodes that carry every level of that Topology: Kueue leaves a node without one
out of a topology-aware flavor (`pkg/util/tas/node.go` NodeMatchesFlavor). Judged when the stack declares
node pools.
"""

from __future__ import annotations

from functools import partial

from pulumi_policy import StackValidationArgs

from oke_rdma_policies.kube import PlainResource
from oke_rdma_policies.kueue_view import (
    KueueObjects,
    PoolLabels,
    boot_time_keys,
    flavor_labels,
    flavor_pools,
    label,
    pool_labels,
)
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter, guarded, stack_where
from oke_rdma_policies.stack import StackView
from oke_rdma_policies.values import UNKNOWN, dig


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
                f"{label(flavor)}: nodeLabels {', '.join(at_boot)} have values known only on the nodes, matched on "
                "the other keys and on the pools whose nodes register them"
            )
        chosen = flavor_pools(labels, pools)
        problem = chosen.problem(name, labels, pools.shapes)
        if problem is not None and pools.unknown and not chosen.pools:
            reporter.unchecked(
                f"{label(flavor)}: pools {', '.join(pools.unknown)} have labels unknown until apply"
            )
        elif problem is not None:
            reporter.violation(problem, flavor.urn)
        else:
            _levels_on_pools(kueue, name, flavor, chosen.pools, pools, reporter)


def _levels_on_pools(
    kueue: KueueObjects,
    name: str,
    flavor: PlainResource,
    chosen: tuple[str, ...],
    pools: PoolLabels,
    reporter: Reporter,
) -> None:
    """A topology-aware flavor's nodes must carry every level of its Topology: Kueue leaves a node without one
    out of the flavor (NodeMatchesFlavor)."""
    topology = dig(flavor.props, "spec.topologyName")
    if topology is UNKNOWN:
        reporter.unchecked(f"{label(flavor)}: spec.topologyName unknown until apply")
        return
    if not isinstance(topology, str) or topology not in kueue.topologies:
        return
    levels = kueue.topologies[topology][1]
    for pool in chosen:
        missing = [level for level in levels if level not in pools.keys(pool)]
        if missing:
            reporter.violation(
                f"ResourceFlavor {name}: its Topology {topology} has levels {', '.join(missing)}, which the nodes "
                f"of pool {pool} do not carry: Kueue's topology-aware scheduling leaves a node without every "
                "level's label out of the flavor, so those nodes never run its workloads. Fix: select pools whose "
                "nodes register every level (the RDMA pools' cloud-init writes the fabric levels), or drop the "
                "levels from the Topology",
                flavor.urn,
            )


RULE = stack_rule(
    name="kueue-flavor-pools",
    level="mandatory",
    description=(
        "Each Kueue ResourceFlavor's spec.nodeLabels select node pools of the stack, all of one shape."
    ),
    validate=guarded(check, stack_where),
)
