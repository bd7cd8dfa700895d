"""The Kubernetes provider's active cluster, as pulumi-kubernetes' DiffConfig compares it
(preview/plan/kube_provider.py, util.go getActiveClusterFromConfig)."""

from __future__ import annotations

import textwrap

from preview.plan.kube_provider import active_cluster

KUBECONFIG = textwrap.dedent(
    """
    apiVersion: v1
    kind: Config
    clusters:
    - name: a
      cluster: {server: "https://10.0.0.2:6443", certificate-authority-data: Q0EtQQ==}
    - name: b
      cluster: {server: "https://10.0.0.3:6443", insecure-skip-tls-verify: true}
    contexts:
    - name: ctx-a
      context: {cluster: a, user: u}
    - name: ctx-b
      context: {cluster: b, user: u}
    current-context: ctx-a
    users:
    - name: u
      user: {token: not-recorded}
    """
)


def test_the_current_contexts_cluster_without_secrets() -> None:
    found = active_cluster(KUBECONFIG)
    assert found is not None
    assert found["server"] == "https://10.0.0.2:6443"
    assert found["certificate-authority-data"].startswith("sha256:")
    assert "not-recorded" not in str(found)


def test_context_and_cluster_overrides_as_the_provider_applies_them() -> None:
    assert active_cluster(KUBECONFIG, context="ctx-b") == {
        "insecure-skip-tls-verify": True,
        "server": "https://10.0.0.3:6443",
    }
    found = active_cluster(KUBECONFIG, cluster="b")
    assert found is not None and found["server"] == "https://10.0.0.3:6443"


def test_no_active_cluster() -> None:
    assert active_cluster("not: [a kubeconfig") is None
    assert active_cluster(KUBECONFIG, context="missing") is None
    assert active_cluster("clusters: []\ncurrent-context: x\n") is None
