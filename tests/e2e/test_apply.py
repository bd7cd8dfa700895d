"""Every object each stack writes, applied to the real control plane: the API server accepts each one (server-
side apply, field validation Strict: an unknown, duplicate or pruned field is an error, as are schema and
CEL rule violations of the CRDs at their pinned releases), and every pod the stack starts, or its operators
start for it, gets a node from the real scheduler.

A refusal names the object and the API server's message. Objects of the NVIDIA Network Operator's kinds are
the one thing not applied (their CRDs ship only in its chart, which no registry here serves); the test
names them so none is skipped unseen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.cluster_stack import CHART_ONLY_GROUPS, StackCluster, wait_for
from tests.e2e.kube import describe
from tests.e2e.stacks import STACKS


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_the_api_server_accepts_every_object_the_stack_writes(
    cluster_of: Callable[..., StackCluster], stack: str
) -> None:
    cluster = cluster_of(stack)
    assert [str(r) for r in cluster.refused] == []
    written = {describe(o) for o in cluster.stack.manifests.values()}
    not_applied = written - set(cluster.applied)
    groups = {
        o["apiVersion"].split("/")[0]
        for o in cluster.stack.manifests.values()
        if describe(o) in not_applied and o["kind"] not in ("CustomResourceDefinition",)
    }
    assert groups <= CHART_ONLY_GROUPS, f"not applied: {sorted(not_applied)}"
    assert set(cluster.skipped) == not_applied
    # Each applied object is on the server as written (a pruned field would be gone).
    for obj in cluster.stack.manifests.values():
        if describe(obj) in cluster.applied:
            assert cluster.kube.get(cluster.kube.path_of(obj)) is not None, describe(obj)


# Kinds whose controllers start pods at once (a CronJob's first Job waits for its schedule).
POD_STARTERS = frozenset({"DaemonSet", "Deployment", "StatefulSet", "Job", "MPIJob", "Pod"})


def _pods(cluster: StackCluster) -> list[dict[str, Any]]:
    return [
        p
        for p in cluster.kube.list("v1", "Pod")
        if p["metadata"]["namespace"] not in ("kube-system",) and p["status"].get("phase") == "Pending"
    ]


def _expected_daemon_pods(cluster: StackCluster) -> dict[str, int]:
    """DaemonSet -> how many pods its controller must place: one per node its selector and tolerations admit
    (kube's DaemonSet controller, pkg/controller/daemon/util NodeShouldRunDaemonPod)."""
    out = {}
    for obj in cluster.stack.manifests.values():
        if obj["kind"] != "DaemonSet":
            continue
        found = cluster.kube.get(cluster.kube.path_of(obj))
        out[describe(obj)] = found["status"].get("desiredNumberScheduled", 0) if found else 0
    return out


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_every_pod_the_stack_starts_is_bound_to_a_node(
    cluster_of: Callable[..., StackCluster], stack: str
) -> None:
    cluster = cluster_of(stack)

    def unbound() -> list[str]:
        pods = _pods(cluster)
        return [
            f"{p['metadata']['namespace']}/{p['metadata']['name']}"
            for p in pods
            if not p["spec"].get("nodeName")
        ]

    starters = [o for o in cluster.stack.manifests.values() if o["kind"] in POD_STARTERS]
    if not starters and not cluster.plane.processes.get("mpi-operator"):
        assert _pods(cluster) == []
        return
    # Controllers create pods asynchronously: wait until none is left without a node.
    wait_for(lambda: _pods(cluster) and not unbound(), f"{stack}: pods without a node", 60)
    daemons = _expected_daemon_pods(cluster)
    for name, desired in daemons.items():
        assert desired > 0, f"{name} selects no node of the stack"
    pods = _pods(cluster)
    assert unbound() == []
    reasons = {
        f"{p['metadata']['namespace']}/{p['metadata']['name']}": c.get("message")
        for p in pods
        for c in p["status"].get("conditions") or ()
        if c["type"] == "PodScheduled" and c["status"] != "True"
    }
    assert reasons == {}
