"""Where the pods of the charts this project installs go, looked up by chart: placement as data.

Each chart's facts module under :mod:`oke_gpu_rdma.releases` places the workloads it renders that matter for
scheduling, with the values paths that place them and the chart's defaults where the values set nothing, and
cites the chart's values.yaml and templates. The schedulability check (:mod:`oke_gpu_rdma.scheduling.pod_admission`) and the
policy pack read a release's values through :func:`release_workloads`, which finds the chart in the registry
(:mod:`oke_gpu_rdma.common.release_registry`), so a value the project sets and a default it relies on are judged the
same way. Also here: CoreDNS, an OKE cluster add-on every cluster runs. The MPI operator's manifest is placed as
its release's facts say (oke_gpu_rdma/scheduling/mpi_operator.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from oke_gpu_rdma.common import release_registry as registry
from oke_gpu_rdma.scheduling.pod_admission import PodPlacement
from oke_gpu_rdma.sriov import network_operator_chart as network_operator


def release_workloads(chart: str, release: str, values: Mapping[str, Any]) -> list[PodPlacement]:
    """The placements of a release's workloads (none for a chart the registry does not know)."""
    facts = registry.release_of_chart(chart)
    return facts.workloads(release, values) if facts is not None else []


# kubernetes/kubernetes cluster/addons/dns/coredns/coredns.yaml.base: the Deployment tolerates only
# CriticalAddonsOnly, selects kubernetes.io/os linux and runs at system-cluster-critical.
COREDNS_TOLERATIONS: Final = ({"key": "CriticalAddonsOnly", "operator": "Exists"},)
COREDNS: Final = PodPlacement(
    "Deployment kube-system/coredns (OKE cluster add-on)",
    node_selector={network_operator.OS_LABEL: network_operator.LINUX},
    tolerations=COREDNS_TOLERATIONS,
    priority_class="system-cluster-critical",
)
