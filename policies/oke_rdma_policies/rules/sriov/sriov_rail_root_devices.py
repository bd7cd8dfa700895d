"""sriov-rail-root-devices (resource): a node policy's PFs are rail PFs of the node shape, never the front-end NIC.

The node's front-end NIC is a Mellanox RDMA device too (vendor 15b3), so a nicSelector of the vendor
alone, or a PCI address that is not a rail, puts VFs on the NIC that carries the node's primary VNIC:
the operator reconfigures (and may drain) it, and pods get an "RDMA rail" that is not one. Seed 001
lists the 16 rail PFs by PCI address and leaves the front-end NICs out; the rail addresses come from
the shape catalog (:mod:`oke_gpu_rdma.nodes.topology`).
"""

from __future__ import annotations

from functools import partial

from pulumi_policy import ReportViolation, ResourceValidationArgs

from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.common.errors import TopologyError
from oke_gpu_rdma.common.pack_settings import RailRootDevicesSettings
from oke_gpu_rdma.nodes.labels import INSTANCE_TYPE_LABEL
from oke_gpu_rdma.nodes.shape_catalog import ShapeCatalog
from oke_gpu_rdma.nodes.topology import DEFAULT_SHAPE
from oke_gpu_rdma.sriov import operator_objects as sriov
from oke_rdma_policies import settings
from oke_rdma_policies.kube import PlainResource
from oke_rdma_policies.registry import resource_rule
from oke_rdma_policies.report import Reporter
from oke_rdma_policies.sriov_objects import pf_names, root_devices, shape_of, spec_of
from oke_rdma_policies.stack import validate_resources_of
from oke_rdma_policies.values import UNKNOWN


def check(res: PlainResource, reporter: Reporter, catalog: ShapeCatalog, problems: list[str]) -> None:
    for problem in problems:
        reporter.violation(problem, res.urn)
    spec = spec_of(res)
    if spec is UNKNOWN:
        reporter.unchecked(f"{res.label}: spec unknown until apply")
        return
    shape = shape_of(spec)
    devices = root_devices(spec)
    names = pf_names(spec)
    if UNKNOWN in (shape, devices, names):
        reporter.unchecked(f"{res.label}: spec.nodeSelector or spec.nicSelector unknown until apply")
        return
    where = (
        shape
        if isinstance(shape, str)
        else f"{DEFAULT_SHAPE} (no {INSTANCE_TYPE_LABEL} in spec.nodeSelector)"
    )
    try:
        topology = catalog.topology(shape if isinstance(shape, str) else DEFAULT_SHAPE)
    except TopologyError:
        reporter.unchecked(
            f"{res.label}: shape {shape} has no verified rail layout; its PFs were not checked"
        )
        return
    rails = {r.pci_address: r.name for r in topology.rails}
    rail_names = set(rails.values())
    if not devices and not names:
        reporter.violation(
            f"{res.label}: spec.nicSelector names no rootDevices or pfNames, so it selects every PF of vendor "
            f"{sriov.MELLANOX_VENDOR} on {where}, the front-end NIC included (it is a Mellanox RDMA device too): VFs "
            "there reconfigure the NIC of the node's primary VNIC and give pods no rail. Fix: list the rail PFs in "
            f"spec.nicSelector.rootDevices ({', '.join(rails)})",
            res.urn,
        )
        return
    for i, device in enumerate(devices):
        if device is UNKNOWN:
            reporter.unchecked(f"{res.label}: spec.nicSelector.rootDevices[{i}] unknown until apply")
        elif device not in rails:
            reporter.violation(
                f"{res.label}: spec.nicSelector.rootDevices[{i}] {device!r} is not a rail PF of {where} (the front-end "
                "NIC is the other Mellanox PF on these nodes): VFs there are not on a rail. Fix: use the rail PFs "
                f"only ({', '.join(f'{name} {addr}' for addr, name in rails.items())})",
                res.urn,
            )
    for i, name in enumerate(names):
        if isinstance(name, str) and name not in rail_names:
            reporter.violation(
                f"{res.label}: spec.nicSelector.pfNames[{i}] {name!r} is not a rail of {where} (rails are "
                f"{', '.join(sorted(rail_names, key=lambda n: int(n[4:])))}; eth0/eth1 are the front-end NIC). Fix: "
                "select the rail PFs by PCI address in rootDevices",
                res.urn,
            )


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type != resource_types.SRIOV_NODE_POLICY:
        return  # before reading the config: the pack calls this for every resource
    catalog, problems = settings.shape_catalog(RailRootDevicesSettings, args.get_config())
    checks = partial(check, catalog=catalog, problems=problems)
    validate_resources_of((resource_types.SRIOV_NODE_POLICY,), checks)(args, report_violation)


RULE = resource_rule(
    name=RailRootDevicesSettings.policy,
    level="mandatory",
    description=(
        "SriovNetworkNodePolicy nicSelector: only the node shape's rail PFs (rootDevices by PCI address), never "
        "the vendor alone or the front-end NIC."
    ),
    validate=validate,
    settings=RailRootDevicesSettings,
)
