"""The rail health agent's script (components/health/scripts/rail-health.sh) as it runs in its pod: the real kubectl
(k8s.io/kubernetes/cmd/kubectl, built with the control plane) with a token the API server mints for one of the
agent DaemonSet's pods, the DaemonSet's own environment, and the recorded /sys trees of a failing and a healthy
BM.GPU.B4.8 (tests/fixtures/sysfs/). What the unit tests check against a fake kubectl (test_rail_health_script.py)
is checked here against the real client, the real API server and the stack's real admission policy: the mark
lands on the pod's own node, is lifted after recovery, and a write to another node is refused with the policy's
message, which the script logs and survives.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from components.claims.rdma_workloads import SCRIPTS
from tests.components.health.test_rail_health import MARK as AGENT_MARK
from tests.e2e.cluster_stack import StackCluster
from tests.e2e.control_plane import BIN
from tests.e2e.test_admission import (
    AGENT_NODE,
    AGENT_OWN_NODE_ONLY,
    AGENT_POLICY,
    KEY,
    OTHER_NODE,
    Writer,
    node_of,
    policy_message,
    rail_agent_daemonset,
    rail_agent_on,
    restore_node,
    wait_policies_in_force,
)

__all__ = ["KEY"]  # the cluster these tests run on (tests/e2e/conftest.py), shared with test_admission.py

TREES = Path(__file__).resolve().parents[1] / "fixtures" / "sysfs"
AGENT_USER = "system:serviceaccount:rail-health:rail-health-agent"


@pytest.fixture(scope="module")
def cluster(cluster_of: Callable[..., StackCluster]) -> StackCluster:
    cluster = cluster_of("full", key=KEY)
    wait_policies_in_force(cluster, [AGENT_USER])
    return cluster


@pytest.fixture
def agent(cluster: StackCluster) -> Iterator[Writer]:
    writer = rail_agent_on(cluster, AGENT_NODE)
    before = {n: node_of(cluster, n) for n in (AGENT_NODE, OTHER_NODE)}
    yield writer
    for node in before.values():
        restore_node(cluster.kube, node)


def kubeconfig(path: Path, server: str, token: str) -> Path:
    """A kubeconfig holding the pod's token, as the in-cluster config a pod's kubectl reads (loopback, the run's
    self-signed serving certificate)."""
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: e2e, cluster: {{server: '{server}', insecure-skip-tls-verify: true}}}}]\n"
        f"users: [{{name: agent, user: {{token: '{token}'}}}}]\n"
        "contexts: [{name: e2e, context: {cluster: e2e, user: agent}}]\ncurrent-context: e2e\n"
    )
    return path


class Agent:
    """rail-health.sh with the DaemonSet's environment, one round at a time, as the pod on ``node`` would run it
    (NODE_NAME is the downward API's spec.nodeName)."""

    def __init__(self, cluster: StackCluster, writer: Writer, tmp: Path, node: str) -> None:
        container = rail_agent_daemonset(cluster)["spec"]["template"]["spec"]["containers"][0]
        env: dict[str, str] = {e["name"]: e["value"] for e in container["env"] if "value" in e}
        home = tmp / "home"
        home.mkdir(exist_ok=True)
        env.update(
            PATH=os.environ["PATH"],
            HOME=str(home),
            STATE_DIR=str(tmp / "state"),
            KUBECTL=str(BIN / "kubectl"),
            KUBECONFIG=str(kubeconfig(tmp / "kubeconfig", writer.kube.server, writer.kube.token)),
            NODE_NAME=node,
            ONCE="1",
        )
        self.env = env
        self.recovery = (int(env["RECOVERY_CHECKS"]), int(env["RECOVERY_SECONDS"]))

    def round(self, tree: str, now: int) -> str:
        done = subprocess.run(
            ["bash", str(SCRIPTS / "rail-health.sh")],
            env={**self.env, "SYSFS": str(TREES / tree), "NOW": str(now)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stderr == "", done.stderr
        return done.stdout


def taints(cluster: StackCluster, node: str) -> list[Mapping[str, Any]]:
    found: list[Mapping[str, Any]] = node_of(cluster, node)["spec"].get("taints", [])
    return found


def test_the_script_marks_its_own_node_through_the_real_kubectl_and_lifts_the_mark_after_recovery(
    cluster: StackCluster, agent: Writer, tmp_path: Path
) -> None:
    run = Agent(cluster, agent, tmp_path, AGENT_NODE)
    before = taints(cluster, AGENT_NODE)
    assert AGENT_MARK not in before

    out = run.round("b48-failing", 0)
    assert f"rail-health {AGENT_NODE}: node marked (" in out, out
    assert taints(cluster, AGENT_NODE) == [AGENT_MARK, *before]

    # A second bad round reads the mark back through jsonpath and writes nothing.
    out = run.round("b48-failing", 30)
    assert "node marked" not in out and "could not" not in out, out

    checks, seconds = run.recovery
    outs = [run.round("b48-healthy", seconds + 30 * step) for step in range(checks)]
    assert all("could not" not in o for o in outs), outs
    assert "node mark lifted" in outs[-1], outs
    assert taints(cluster, AGENT_NODE) == before


def test_the_script_on_another_node_is_refused_by_the_policy_and_says_so(
    cluster: StackCluster, agent: Writer, tmp_path: Path
) -> None:
    """The token names AGENT_NODE; a script told it runs on OTHER_NODE (a forged NODE_NAME) reads that node,
    tries to mark it, and the API server's admission policy refuses; kubectl's stderr becomes the log line."""
    before = taints(cluster, OTHER_NODE)
    out = Agent(cluster, agent, tmp_path, OTHER_NODE).round("b48-failing", 0)
    assert "could not mark the node: " in out, out
    assert policy_message(cluster, AGENT_POLICY, AGENT_OWN_NODE_ONLY) in out, out
    assert taints(cluster, OTHER_NODE) == before
