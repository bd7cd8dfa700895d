"""sriov-node-policy-limits (resource): numVfs, priority and resourceName within what OCI and the operator accept.

- `numVfs` at most 2: Oracle Cloud allows at most 2 VFs on each RDMA PF (seed 001).
- `priority` 0 to 99 and `resourceName` matching ``^[a-zA-Z0-9]([a-zA-Z0-9_-]*[a-zA-Z0-9])?$``
  (k8snetworkplumbingwg/sriov-network-operator `api/v1/sriovnetworknodepolicy_types.go` validation
  markers and `pkg/webhook/validate.go` resourceNameRegexp): the API server or the operator's webhook
  refuses the policy, so no VF is created.
"""

from __future__ import annotations

from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.sriov import operator_objects as sriov
from oke_rdma_policies.kube import PlainResource
from oke_rdma_policies.registry import resource_rule
from oke_rdma_policies.report import Reporter
from oke_rdma_policies.sriov_objects import num_vfs, spec_of
from oke_rdma_policies.stack import validate_resources_of
from oke_rdma_policies.values import UNKNOWN


def check(res: PlainResource, reporter: Reporter) -> None:
    spec = spec_of(res)
    if spec is UNKNOWN:
        reporter.unchecked(f"{res.label}: spec unknown until apply")
        return
    vfs = num_vfs(spec)
    if vfs is UNKNOWN:
        reporter.unchecked(f"{res.label}: spec.numVfs unknown until apply")
    elif isinstance(vfs, int) and vfs > sriov.MAX_VFS_PER_PF:
        reporter.violation(
            f"{res.label}: spec.numVfs is {vfs}, but Oracle Cloud allows at most {sriov.MAX_VFS_PER_PF} VFs on "
            f"each RDMA PF, so the VFs are never created and pods wait for a resource no node offers. Fix: set "
            f"spec.numVfs to 1 (one RDMA pod per node) or 2 (two pods, with one resource per rail)",
            res.urn,
        )
    priority = spec.get("priority")
    in_range = sriov.PRIORITY_MIN <= priority <= sriov.PRIORITY_MAX if isinstance(priority, int) else True
    if isinstance(priority, int) and not isinstance(priority, bool) and not in_range:
        reporter.violation(
            f"{res.label}: spec.priority is {priority}; the SriovNetworkNodePolicy CRD accepts "
            f"{sriov.PRIORITY_MIN} to {sriov.PRIORITY_MAX} (sriov-network-operator validation markers), so "
            f"the API server refuses the policy. Fix: set spec.priority to {sriov.NODE_POLICY_PRIORITY} (seed 001)",
            res.urn,
        )
    name = spec.get("resourceName")
    if isinstance(name, str) and not sriov.RESOURCE_NAME.match(name):
        reporter.violation(
            f"{res.label}: spec.resourceName {name!r} does not match {sriov.RESOURCE_NAME.pattern} (letters, digits, "
            "'-' and '_', starting and ending with a letter or digit; sriov-network-operator "
            "pkg/webhook/validate.go), so the operator rejects the policy. Fix: use a name like "
            f"{sriov.resource_name(0)}",
            res.urn,
        )


RULE = resource_rule(
    name="sriov-node-policy-limits",
    level="mandatory",
    description=(
        f"SriovNetworkNodePolicy: numVfs at most {sriov.MAX_VFS_PER_PF} (Oracle Cloud), priority "
        f"{sriov.PRIORITY_MIN} to {sriov.PRIORITY_MAX}, a valid resourceName."
    ),
    validate=validate_resources_of((resource_types.SRIOV_NODE_POLICY,), check),
)
