"""The network-operator release's values, from the stack config (no Pulumi: the program's early
schedulability check reads them as the release gets them; components/network_operator.py installs them)."""

from __future__ import annotations

from typing import Any, Final

from oke_gpu_rdma import charts

from .model import NetworkOperatorConfig

# seed 001 values.yaml: the operator's own requests and limits.
OPERATOR_RESOURCES: Final[dict[str, Any]] = {
    "requests": {"cpu": "5m", "memory": "256Mi"},
    "limits": {"cpu": "500m", "memory": "512Mi"},
}


def release_values(config: NetworkOperatorConfig) -> dict[str, Any]:
    """seed 001 values.yaml: NFD off (the cluster runs one), the SR-IOV operator on in daemon mode with
    drains, and its `mellanox` plugin disabled so it never rewrites NIC firmware or reboots nodes (the OCI
    image already allows 127 VFs per PF)."""
    return {
        "nfd": {"enabled": config.deploy_nfd},
        "sriovNetworkOperator": {"enabled": True},
        charts.SRIOV_SUBCHART: {
            "sriovOperatorConfig": {
                "deploy": True,
                "disableDrain": False,
                "configurationMode": "daemon",
                "disablePlugins": [charts.SRIOV_FIRMWARE_PLUGIN],
            }
        },
        "operator": {"resources": OPERATOR_RESOURCES},
    }
