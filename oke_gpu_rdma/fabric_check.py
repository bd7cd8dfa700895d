"""What the scheduled fabric check (components/fabric_checks.py, components/scripts/fabric-check.sh) needs to
know that is not Pulumi: how it marks what it finds, and which API it marks rails with at a Kubernetes version.

Rails: `DeviceTaintRule` is served from resource.k8s.io/v1 from Kubernetes 1.37 (GA; in 1.36 only
v1beta2, off by default with the DRADeviceTaintRules gate, kubernetes PR #137170, which OKE's managed control
plane cannot turn on). Below 1.37 the check taints the node instead: whole-node, honestly.
"""

from __future__ import annotations

from typing import Final, Literal

from oke_gpu_rdma.monitoring.rules import FABRIC_CHECK_CONDITION, FABRIC_CHECK_TAINT_VALUE

DEVICE_TAINT_RULE_V1_MINOR: Final = 37
TaintMode = Literal["node", "device"]
# The node annotation listing the rails the last check measured below the threshold (node mode).
RAILS_ANNOTATION: Final = "oke-gpu-rdma/fabric-check-rails"
# Labels the check's MPIJobs (and DeviceTaintRules, by node) carry.
RUN_LABEL: Final = "oke-gpu-rdma/fabric-check-run"
RULE_NODE_LABEL: Final = "oke-gpu-rdma/fabric-check-node"
CONDITION: Final = FABRIC_CHECK_CONDITION
TAINT_VALUE: Final = FABRIC_CHECK_TAINT_VALUE


def taint_mode(kubernetes_minor: int) -> TaintMode:
    """How the check marks a rail on a cluster of this minor: a DeviceTaintRule where v1 serves it."""
    return "device" if kubernetes_minor >= DEVICE_TAINT_RULE_V1_MINOR else "node"
