"""The existing cluster as OCI reports it (its Kubernetes version and type) against the stack's.

The node pools are created with `cluster.existing.kubernetesVersion`, and every DRA object is
resource.k8s.io/v1, which the API server serves from v1.34 on. The program reads the version the
cluster's control plane runs and the cluster's type from OCI (components/nodes/cluster.py) and refuses the
stack here before it declares anything when the versions differ, when the cluster runs something older
than v1.34, or when it is not an ENHANCED cluster.

Why ENHANCED: the stack is sized by the enhanced cluster's limits (stack_config/model.py: up to 1,000 nodes
a pool and 2,000 a cluster; "Kubernetes Engine Limits", "Considerations when Defining Enhanced Clusters
with Large Numbers of Managed Nodes"), and what it creates itself is an enhanced cluster
(components/nodes/cluster.py). Oracle, "Enhanced Clusters and Basic Clusters" (OKE concepts): enhanced clusters
support every feature, including more worker nodes per cluster and the financially backed SLA, where basic
clusters support the core features only; a basic cluster can be upgraded in place (UpdateClusterDetails
`type`), an enhanced one never downgraded ("Creating an Enhanced Cluster").
"""

from __future__ import annotations

from dataclasses import dataclass

from stack_config.nodes.network_settings import ExistingCluster
from stack_config.problems import ConfigProblem
from stack_config.settings_types import MIN_KUBERNETES_MINOR, kubernetes_minor

KEY = "cluster.existing.kubernetesVersion"
# OCI's ClusterType values (OCI API, Cluster.type): BASIC_CLUSTER, ENHANCED_CLUSTER.
ENHANCED_CLUSTER = "ENHANCED_CLUSTER"


@dataclass(frozen=True)
class RunningCluster:
    """What OCI reports for an existing cluster."""

    kubernetes_version: str
    type: str | None
    """BASIC_CLUSTER or ENHANCED_CLUSTER (None if OCI did not say)."""
    pods_cidr: str | None = None
    services_cidr: str | None = None
    """The cluster's pods and services CIDRs (options.kubernetesNetworkConfig), None if OCI did not say: the
    address plan and the pack's child-range policy judge the stack file's values, so they must be the
    cluster's (issue 36 item 5)."""


def problems(existing: ExistingCluster, running: str | RunningCluster) -> list[ConfigProblem]:
    """What is wrong with the stack for a cluster whose control plane runs ``running`` (a version, or what
    OCI reports: version and type)."""
    if isinstance(running, RunningCluster):
        return (
            _type_problems(existing, running.type)
            + _cidr_problems(existing, running)
            + problems(existing, running.kubernetes_version)
        )
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


def _type_problems(existing: ExistingCluster, cluster_type: str | None) -> list[ConfigProblem]:
    if cluster_type is None or cluster_type == ENHANCED_CLUSTER:
        return []
    return [
        ConfigProblem(
            "cluster.existing.id",
            existing.id,
            f"the cluster is a {cluster_type} (read from OCI); this stack needs an {ENHANCED_CLUSTER}, whose limits "
            "it is sized by (1,000 nodes a pool, 2,000 a cluster); upgrade the cluster in place (oci ce cluster "
            "update --cluster-id <id> --type ENHANCED_CLUSTER; it cannot be downgraded later), or use "
            "cluster.create",
        )
    ]


def _cidr_problems(existing: ExistingCluster, running: RunningCluster) -> list[ConfigProblem]:
    found = []
    for key, stated, actual in (
        ("podsCidr", existing.pods_cidr, running.pods_cidr),
        ("servicesCidr", existing.services_cidr, running.services_cidr),
    ):
        if actual is not None and str(stated) != actual:
            found.append(
                ConfigProblem(
                    f"cluster.existing.{key}",
                    str(stated),
                    f"the cluster {existing.id} uses {actual} (read from OCI); set cluster.existing.{key}: {actual}, "
                    "so that the DRANET child range and the VF pool are checked against the cluster's own ranges",
                )
            )
    return found
