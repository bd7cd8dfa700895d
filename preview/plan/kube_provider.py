"""The Kubernetes provider's identity as pulumi-kubernetes' `DiffConfig` compares it.

provider/pkg/provider/provider.go `DiffConfig` (pulumi/pulumi-kubernetes 9497796): a provider is
replaced, and with it every object it manages, when

- `kubeconfig`, `context` or `cluster` is unknown before apply ("we can't tell for sure if a computed
  value has changed");
- `clusterIdentifier` changes (and nothing else replaces while it is set and unchanged);
- `renderYamlToDirectory` changes;
- the kubeconfig's *active cluster* changes: util.go `getActiveClusterFromConfig`, the cluster entry of
  the current context (or of the `context`/`cluster` overrides), compared whole (server, CA, TLS
  settings). Any other kubeconfig change (a user, a token command) updates the provider in place.

The kubeconfig is a secret, so `rendered/` shows it as `[secret]` and records the active cluster next
to it (`activeCluster`: the server and TLS settings in the clear, the CA as a SHA-256 fingerprint).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import yaml

ACTIVE_CLUSTER = "activeCluster"


def _named(entries: Any, key: str) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, Mapping) and isinstance(entry.get(key), Mapping):
            out[str(entry.get("name"))] = entry[key]
    return out


def active_cluster(
    kubeconfig: str, context: str | None = None, cluster: str | None = None
) -> dict[str, Any] | None:
    """The active cluster of a kubeconfig, comparable and free of secrets; None when there is none."""
    try:
        config = yaml.safe_load(kubeconfig)
    except yaml.YAMLError:
        return None
    if not isinstance(config, Mapping):
        return None
    clusters = _named(config.get("clusters"), "cluster")
    contexts = _named(config.get("contexts"), "context")
    active_context = contexts.get(context or str(config.get("current-context")))
    if active_context is None:
        return None
    found = clusters.get(cluster or str(active_context.get("cluster")))
    if found is None:
        return None
    shown: dict[str, Any] = {}
    for key, value in sorted(found.items()):
        if key == "certificate-authority-data" and isinstance(value, str):
            shown[key] = "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:16]
        else:
            shown[key] = value
    return shown
