"""Helm values helpers: setting a dot-joined values path, and finding the paths a chart does not document;
and the chart archives whose sha256 a public file publishes (:data:`CHART_DIGESTS`).

Each chart's reference, default version and documented values paths live in its facts module under
:mod:`oke_gpu_rdma.releases`; the components emit only documented keys (the dranet chart's values schema
forbids unknown ones, so a misspelt key fails `helm install`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final


@dataclass(frozen=True)
class ChartDigest:
    """The sha256 of a chart's archive (`<chart>-<version>.tgz`), as its repository's index.yaml publishes it
    (Helm's `digest` field of a chart version), and where."""

    chart: str
    version: str
    sha256: str
    source: str


# Charts by (name, version). Only the classic HTTP repositories publish an index with digests; of the charts
# the stack installs, the one whose index is a public, citable file is NVIDIA's device plugin (its repository
# is the gh-pages branch of NVIDIA/k8s-device-plugin). Not here, and why (issue 36, finding 9):
# - gpu-operator v26.3.3, network-operator 26.7.1: helm.ngc.nvidia.com publishes its index from no public
#   repository;
# - kube-prometheus-stack 88.5.3: prometheus-community/helm-charts gh-pages index.yaml is over the size the
#   snapshot holds, and no other public file quotes the digest;
# - the OCI charts (dranet v1.5.0, dra-driver-nvidia-gpu 0.5.1, kueue 0.19.2): kubernetes/k8s.io
#   promoter manifests and PRs publish digests of other versions only (dranet 1.4.0: PR #9736;
#   dra-driver-nvidia-gpu 0.4.1: registry.k8s.io/images/k8s-staging-dra-driver-nvidia/images.yaml).
CHART_DIGESTS: Final[dict[tuple[str, str], ChartDigest]] = {
    ("nvidia-device-plugin", "0.19.3"): ChartDigest(
        "nvidia-device-plugin",
        "0.19.3",
        "8f01067500e712508fe55fe060b6f895814dc7efc1cb96323db2ce4f777f6e96",
        "NVIDIA/k8s-device-plugin gh-pages bf584288ed8c31d6b63b1ec5bdc9c8ef8f0ded7c index.yaml l. 429 "
        "(entries.nvidia-device-plugin, version 0.19.3); the sha256 of stable/nvidia-device-plugin-0.19.3.tgz "
        "on that branch",
    ),
}


def set_value(values: dict[str, Any], path: str, value: object) -> None:
    """Set the dot-separated values ``path`` (e.g. drivers.dranet.CHILD_RANGE_VALUE), creating maps on the way.

    Keys are split on dots only: Helm value keys here never contain one.
    """
    *parents, last = path.split(".")
    node = values
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value


def undocumented_value_paths(values: object, documented: frozenset[str], prefix: str = "") -> list[str]:
    """The dot paths in `values` that `documented` does not admit (lists are leaves)."""
    if not isinstance(values, dict):
        return [] if _admitted(prefix, documented) else [prefix]
    if prefix and f"{prefix}.*" in documented:
        return []
    if not values and prefix:
        return [] if _admitted(prefix, documented) else [prefix]
    found: list[str] = []
    for key, value in values.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        found += undocumented_value_paths(value, documented, path)
    return found


def _admitted(path: str, documented: frozenset[str]) -> bool:
    if path in documented:
        return True
    parts = path.split(".")
    return any(".".join(parts[:i]) + ".*" in documented for i in range(1, len(parts)))
