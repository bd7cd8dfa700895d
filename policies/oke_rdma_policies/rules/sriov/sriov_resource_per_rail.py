"""sriov-resource-per-rail (stack): with 2 VFs per PF, every resource holds the VFs of one rail only.

The kubelet hands out VFs of one resource without knowing which rail a VF is on. With 1 VF per PF a
pod asking for all 16 gets every rail; with 2 VFs per PF one resource holds 32 VFs, and a pod asking
for 16 got both VFs of 4 or 5 rails and none of 4 or 5 others (seed 001). Splitting the rails between
two jobs instead cost GPUDirect RDMA: 17.95 and 8.99 GB/s. One resource per rail (16 policies, 16
networks) gave every pod a VF on every rail: 96.28 and 96.35 GB/s for two 4-GPU jobs at once.
A resource is judged across every node policy that names it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from pulumi_policy import ReportViolation, StackValidationArgs

from oke_gpu_rdma.sriov import operator_objects as sriov
from oke_rdma_policies.kube import PlainResource
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter
from oke_rdma_policies.sriov_objects import node_policies, num_vfs, root_devices, spec_of
from oke_rdma_policies.stack import StackView
from oke_rdma_policies.values import UNKNOWN


@dataclass
class Resource:
    """What every node policy naming one resource puts into it."""

    policies: list[PlainResource] = field(default_factory=list)
    pfs: set[str] = field(default_factory=set)
    every_pf: bool = False
    vfs: int = 0


def _read(res: PlainResource, resources: dict[str, Resource], reporter: Reporter) -> None:
    spec = spec_of(res)
    if spec is UNKNOWN:
        reporter.unchecked(f"{res.label}: spec unknown until apply")
        return
    name, vfs, devices = spec.get("resourceName"), num_vfs(spec), root_devices(spec)
    if UNKNOWN in (name, vfs, devices) or (isinstance(devices, list) and UNKNOWN in devices):
        reporter.unchecked(f"{res.label}: resourceName, numVfs or rootDevices unknown until apply")
        return
    if not isinstance(name, str):
        return
    entry = resources.setdefault(name, Resource())
    entry.policies.append(res)
    entry.vfs = max(entry.vfs, vfs or 0)
    if devices:
        entry.pfs |= {str(d) for d in devices}
    else:
        entry.every_pf = True


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    reporter = Reporter(report_violation)
    view = StackView.of(args)
    resources: dict[str, Resource] = {}
    for res in node_policies(view):
        reporter.guard(res.label, res.urn, partial(_read, res, resources, reporter))
    for name, entry in resources.items():
        if entry.vfs < 2 or (len(entry.pfs) <= 1 and not entry.every_pf):
            continue
        spread = "every Mellanox PF (no rootDevices)" if entry.every_pf else f"{len(entry.pfs)} PFs"
        total = f" ({entry.vfs * len(entry.pfs)} VFs)" if not entry.every_pf else ""
        named = ", ".join(p.label for p in entry.policies)
        for res in entry.policies:
            reporter.violation(
                f"{res.label}: resource {name} spans {spread} with numVfs {entry.vfs}{total} (policies: {named}). "
                "The kubelet does not know which rail a VF is on, so a pod asking for one VF per rail gets both VFs "
                "of some rails and none of others (seed 001: 2 VFs on 4 or 5 rails, none on 4 or 5 others), and "
                "jobs that split the rails lose GPUDirect RDMA (17.95 and 8.99 GB/s instead of 96.3). Fix: one "
                f"node policy per rail PF, each with its own resourceName ({sriov.resource_name(0)} ... "
                f"{sriov.resource_name(15)}), one SriovNetwork per resource, and pods that ask for one VF of each",
                res.urn,
            )
    reporter.finish()


RULE = stack_rule(
    name="sriov-resource-per-rail",
    level="mandatory",
    description="With numVfs 2, an SR-IOV resource must hold the VFs of one rail PF only (a resource per rail).",
    validate=validate,
)
