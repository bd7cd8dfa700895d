"""sriov-pods-all-rails (stack, advisory): a pod that asks for per-rail VF resources asks for every rail, in rail order.

With one resource per rail, a pod gets exactly the rails it lists. GPUs come from the device plugin,
which knows nothing of rails: only a pod with a VF on every rail is sure to have the NICs next to its
GPUs (seed 001: two 4-GPU jobs with a VF on every rail got 96.28 and 96.35 GB/s; jobs that split the
rails got 17.95 and 8.99 GB/s, most channels without GPUDirect RDMA). The Multus annotation
`k8s.v1.cni.cncf.io/networks` should list the networks in rail order, so net1 is rail 0.
A resource is per rail when the stack's node policy for it names exactly one rail PF of its shape
(the shape catalog with the pack config's `shapeTopologies`). Every rail means every rail of the shape: in a
stack with SR-IOV pools of several shapes, a pod that asks for one shape's resources is judged against that
shape's rails (a node has one shape).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from pulumi_policy import ReportViolation, StackValidationArgs

from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.common.errors import TopologyError
from oke_gpu_rdma.common.pack_settings import PodsAllRailsSettings
from oke_gpu_rdma.nodes.shape_catalog import ShapeCatalog
from oke_gpu_rdma.nodes.topology import DEFAULT_SHAPE
from oke_gpu_rdma.sriov import operator_objects as sriov
from oke_rdma_policies import settings
from oke_rdma_policies.kube import PlainResource, container_name, containers, pod_specs
from oke_rdma_policies.registry import stack_rule
from oke_rdma_policies.report import Reporter
from oke_rdma_policies.sriov_objects import node_policies, root_devices, shape_of, spec_of
from oke_rdma_policies.stack import StackView
from oke_rdma_policies.values import UNKNOWN, as_map, dig


def _rail_resources(view: StackView, catalog: ShapeCatalog) -> dict[str, tuple[str, int]]:
    """Qualified per-rail resource -> the policy's shape and the rail's number on it."""
    found: dict[str, tuple[str, int]] = {}
    for res in node_policies(view):
        try:
            spec = spec_of(res)
            if spec is UNKNOWN:
                continue
            devices, shape, name = root_devices(spec), shape_of(spec), spec.get("resourceName")
            if not isinstance(name, str) or not isinstance(devices, list) or len(devices) != 1:
                continue
            on = shape if isinstance(shape, str) else DEFAULT_SHAPE
            rails = {r.pci_address: r.index for r in catalog.topology(on).rails}
        except (TopologyError, ValueError):
            continue
        if devices[0] in rails:
            found[sriov.qualified(name)] = (on, rails[devices[0]])
    return found


def _networks(view: StackView) -> dict[str, str]:
    """SriovNetwork name -> its qualified resource."""
    out = {}
    for res in view.of_type(resource_types.SRIOV_NETWORK):
        name, resource = res.object_name, dig(res.props, "spec.resourceName")
        if isinstance(name, str) and isinstance(resource, str):
            out[name] = sriov.qualified(resource)
    return out


def _asked(container: Mapping[str, Any], path: str, rails: Mapping[str, Any]) -> set[str]:
    resources = container.get("resources")
    if resources is UNKNOWN or resources is None:
        return set()
    asked: set[str] = set()
    for key in ("limits", "requests"):
        section = as_map(resources, f"{path}.resources").get(key)
        if isinstance(section, Mapping):
            asked |= {k for k in section if k in rails}
    return asked


def _check(
    workload: PlainResource,
    view: StackView,
    shaped: dict[str, tuple[str, int]],
    networks: dict[str, str],
    reporter: Reporter,
) -> None:
    rails = {name: index for name, (_, index) in shaped.items()}
    for pod in pod_specs(workload):
        where = f"{workload.label} {pod.where}"
        asked: set[str] = set()
        for path, container in containers(pod):
            mine = _asked(container, path, rails)
            asked |= mine
            shapes = {shaped[name][0] for name in mine}
            same_shape = {name for name, (shape, _) in shaped.items() if shape in shapes}
            missing = sorted(same_shape - mine, key=rails.__getitem__)
            if mine and missing:
                reporter.violation(
                    f"{where}: container {container_name(path, container)} asks for VFs of {len(mine)} of the "
                    f"{len(same_shape)} rails (missing {', '.join(missing)}): its GPUs come from the device plugin, which "
                    "does not know the rails, so NCCL may find no NIC next to them (seed 001: jobs that split the rails "
                    "got 17.95 and 8.99 GB/s; a VF on every rail gave 96.28 and 96.35). Fix: ask for 1 of every "
                    "per-rail resource and list every rail's network",
                    workload.urn,
                )
        if not asked:
            continue
        meta_path = pod.path[: -len("spec")] + "metadata"
        annotation = dig(workload.props, f"{meta_path}.annotations")
        value = annotation.get(sriov.NETWORKS_ANNOTATION) if isinstance(annotation, Mapping) else None
        if not isinstance(value, str):
            continue
        listed = [n.strip().split("/")[-1].split("@")[0] for n in value.split(",") if n.strip()]
        order = [rails[networks[n]] for n in listed if networks.get(n) in rails]
        if order != sorted(order):
            reporter.violation(
                f"{where}: annotation {sriov.NETWORKS_ANNOTATION} lists the rail networks out of rail order "
                f"({value}), so net1, net2, ... are not rail 0, 1, ...; tools and NCCL_IB_HCA lists that assume "
                "rail order pick the wrong devices. Fix: list the networks in rail order",
                workload.urn,
            )


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    reporter = Reporter(report_violation)
    catalog, problems = settings.shape_catalog(PodsAllRailsSettings, args.get_config())
    for problem in problems:
        reporter.violation(problem)
    view = StackView.of(args)
    rails = _rail_resources(view, catalog)
    if len(rails) > 1:
        networks = _networks(view)
        for workload in view.workloads:
            reporter.guard(
                workload.label, workload.urn, partial(_check, workload, view, rails, networks, reporter)
            )
    reporter.finish()


RULE = stack_rule(
    name=PodsAllRailsSettings.policy,
    level="advisory",
    description=(
        "Pods asking for per-rail SR-IOV resources ask for one VF of every rail and list the networks in rail order."
    ),
    validate=validate,
    settings=PodsAllRailsSettings,
)
