"""sriov-rdma-qos (resource): the RDMA CNI in a network must carry `rdmaQoS` at the top level of its plugin.

Before the RDMA CNI moves a VF's RDMA device into the pod (exclusive RDMA mode), it writes the traffic
class of its `rdmaQoS` into the device's `tc/1/traffic_class`; without one it writes 0, and writes the
value it first read back when the pod goes away, so 0 stays on the node. The VF then sends RoCE with
DSCP 0, which this fabric maps to another priority and drops in part: seed 001 measured 43.20 to 59.45
Gb/s per rail instead of 96.78 to 96.88. The CNI reads `rdmaQoS` only at the top level of the plugin
config: the README's `args.cni.rdmaQoS` is ignored (k8snetworkplumbingwg/rdma-cni `pkg/types/types.go`:
`args.cni` is `RdmaCNIArgs`, which holds only `debug`), and the seed's pods still got traffic class 0.
"""

from __future__ import annotations

from oke_gpu_rdma.sriov import operator_objects as sriov
from oke_rdma_policies.kube import PlainResource
from oke_rdma_policies.registry import resource_rule
from oke_rdma_policies.report import Reporter
from oke_rdma_policies.sriov_objects import NETWORK_TYPES, ChainError, network_chain
from oke_rdma_policies.stack import validate_resources_of
from oke_rdma_policies.values import UNKNOWN

FIX = (
    f'Fix: put "{sriov.RDMA_QOS_KEY}": {{"{sriov.RDMA_QOS_TC_KEY}": {sriov.JOB_TRAFFIC_CLASS}}} (the traffic class '
    "of the jobs' NCCL_IB_TC) at the top level of the rdma plugin"
)
WHY = (
    "without a top-level rdmaQoS the RDMA CNI writes traffic class 0 into the VF before moving it into the "
    "pod, and 0 stays on the node after the pod is gone (seed 001, exclusive mode: 43.20 to 59.45 Gb/s per "
    "rail instead of 96.78 to 96.88); the CNI reads rdmaQoS only at the top level of its plugin config, "
    "args.cni holds only debug (k8snetworkplumbingwg/rdma-cni pkg/types/types.go)"
)


def check(res: PlainResource, reporter: Reporter) -> None:
    try:
        chain = network_chain(res)
    except ChainError as err:
        reporter.violation(
            f"{res.label}: {err}. Fix: write it as JSON plugin objects separated by commas", res.urn
        )
        return
    if chain is None:
        return
    if chain is UNKNOWN:
        reporter.unchecked(f"{res.label}: CNI plugins unknown until apply")
        return
    for finding in sriov.rdma_qos_findings(chain.plugins):
        reporter.violation(
            f"{res.label}: the RDMA CNI at {chain.where(finding.index)} {finding.problem}: {WHY}. {FIX}",
            res.urn,
        )


RULE = resource_rule(
    name="sriov-rdma-qos",
    level="mandatory",
    description=(
        "A SriovNetwork or NetworkAttachmentDefinition that chains the RDMA CNI must give it rdmaQoS (tc) at the "
        "top level of the rdma plugin, not under args.cni."
    ),
    validate=validate_resources_of(NETWORK_TYPES, check),
)
