"""The existing cluster's Kubernetes version, as OCI reports it, against the stack's.

The node pools are created with `cluster.existing.kubernetesVersion`, and every DRA object is
resource.k8s.io/v1, which the API server serves from v1.34 on. The program reads the version the
cluster's control plane runs from OCI (components/cluster.py) and refuses the stack here before it
declares anything when the two differ, or when the cluster runs something older than v1.34.
"""

from __future__ import annotations

from .model import MIN_KUBERNETES_MINOR, ExistingCluster, kubernetes_minor
from .problems import ConfigProblem

KEY = "cluster.existing.kubernetesVersion"


def problems(existing: ExistingCluster, running: str) -> list[ConfigProblem]:
    """What is wrong with the stack's version for a cluster whose control plane runs ``running``."""
    minor = kubernetes_minor(running)
    if minor is not None and minor < MIN_KUBERNETES_MINOR:
        return [
            ConfigProblem(
                KEY,
                existing.kubernetes_version,
                f"the cluster {existing.id} runs {running} (read from OCI), older than v1.{MIN_KUBERNETES_MINOR}: "
                f"the claim templates and DeviceClasses are resource.k8s.io/v1; upgrade the cluster to "
                f"v1.{MIN_KUBERNETES_MINOR} or later first (oci ce cluster update), then set this to its version",
            )
        ]
    if running != existing.kubernetes_version:
        return [
            ConfigProblem(
                KEY,
                existing.kubernetes_version,
                f"the cluster {existing.id} runs {running} (read from OCI); set {KEY}: {running}, the version the "
                "node pools are created with",
            )
        ]
    return []
