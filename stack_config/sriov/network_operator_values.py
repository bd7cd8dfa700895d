"""The network-operator release's values, from the stack config (no Pulumi: the program's early
schedulability check reads them as the release gets them; components/sriov/network_operator.py installs them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from oke_gpu_rdma.scheduling.pod_admission import NodeTaint, tolerates_taint
from oke_gpu_rdma.sriov import network_operator_chart as network_operator
from oke_gpu_rdma.sriov.network_operator_chart import CHART_DEFAULTS, NFD_SUBCHART
from stack_config.nodes.pool_settings import Taint, tolerations
from stack_config.sriov.sriov_settings import NetworkOperatorConfig

# The chart's own NFD worker tolerations (deployment/network-operator/values.yaml:85-94): a list, which
# Helm replaces rather than merges, so a value that adds to it repeats them.
NFD_WORKER_TOLERATIONS: Final[list[dict[str, Any]]] = CHART_DEFAULTS[NFD_SUBCHART]["worker"]["tolerations"]

# seed 001 values.yaml: the operator's own requests and limits.
OPERATOR_RESOURCES: Final[dict[str, Any]] = {
    "requests": {"cpu": "5m", "memory": "256Mi"},
    "limits": {"cpu": "500m", "memory": "512Mi"},
}


def release_values(config: NetworkOperatorConfig, taints: Sequence[Taint] = ()) -> dict[str, Any]:
    """seed 001 values.yaml: NFD off (the cluster runs one), the SR-IOV operator on in daemon mode with
    drains, and its `mellanox` plugin disabled so it never rewrites NIC firmware or reboots nodes (the OCI
    image already allows 127 VFs per PF).

    With the chart's NFD on, its worker must run on the SR-IOV nodes (`taints`: theirs) to label their
    Mellanox NICs, which the SR-IOV config daemon's node selector depends on."""
    values: dict[str, Any] = {
        "nfd": {"enabled": config.deploy_nfd},
        "sriovNetworkOperator": {"enabled": True},
        network_operator.SRIOV_SUBCHART: {
            "sriovOperatorConfig": {
                "deploy": True,
                "disableDrain": False,
                "configurationMode": "daemon",
                "disablePlugins": [network_operator.SRIOV_FIRMWARE_PLUGIN],
            }
        },
        "operator": {"resources": OPERATOR_RESOURCES},
    }
    untolerated = [
        t
        for t in taints
        if not any(tolerates_taint(d, NodeTaint(t.key, t.value, t.effect)) for d in NFD_WORKER_TOLERATIONS)
    ]
    if config.deploy_nfd and untolerated:
        values[NFD_SUBCHART] = {
            "worker": {"tolerations": [*NFD_WORKER_TOLERATIONS, *tolerations(untolerated)]}
        }
    return values
