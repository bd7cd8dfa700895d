"""The NVIDIA GPU Operator's chart (NVIDIA/gpu-operator `deployments/gpu-operator`, seed 000's cluster ran
26.3.3 with the image's GPU driver): its reference, the values this project sets, and where its pods go. What
the operator itself creates on a node (its operand DaemonSets and what they wait for) is
:mod:`oke_gpu_rdma.drivers.gpu_operator_operands`.

Placement sources, at v26.3.3: the operator Deployment (templates/operator.yaml l. 33-35 priorityClassName,
l. 81-92 nodeSelector, affinity, tolerations; values.yaml l. 75 `operator.priorityClassName`
system-node-critical, l. 83-87 `operator.tolerations` (the control-plane taint only), l. 90-98 a preferred
control-plane affinity). Its node-feature-discovery subchart (0.18.3, condition `nfd.enabled`, Chart.yaml
l. 20-24): master Deployment (charts/node-feature-discovery/values.yaml l. 122-126 control-plane toleration,
l. 135-143 preferred affinity; templates/master.yaml l. 153-163), worker DaemonSet (gpu-operator values.yaml
l. 560-567 control-plane and `nvidia.com/gpu` tolerations; templates/worker.yaml l. 180-190), gc Deployment
(values.yaml l. 588 `gc.tolerations: []`, l. 548 `gc.enable`; templates/nfd-gc.yaml l. 108-118); all three take
`node-feature-discovery.priorityClassName` (gpu-operator values.yaml l. 548: system-node-critical). Hook Jobs:
gpu-operator-upgrade-crd (pre-upgrade), gpu-operator-cleanup-crd (pre-delete, off by default), NFD's prune
(post-delete).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from oke_gpu_rdma.common import chart_placement as values_of
from oke_gpu_rdma.common.release_facts import ReleaseFacts
from oke_gpu_rdma.drivers import gpu_operator_operands as operands
from oke_gpu_rdma.scheduling.pod_admission import PodPlacement

CHART_NAME: Final = "gpu-operator"
REPO: Final = "https://helm.ngc.nvidia.com/nvidia"
DEFAULT_VERSION: Final = "v26.3.3"
NAMESPACE: Final = "gpu-operator"

# Values of the chart this project sets, each one its templates read (v26.3.3
# deployments/gpu-operator/templates/clusterpolicy.yaml: driver.enabled l. 162, devicePlugin.enabled l. 479,
# daemonsets.tolerations l. 52-53; the node-feature-discovery subchart's templates/worker.yaml l. 188-190:
# worker.tolerations).
NFD_WORKER_TOLERATIONS_VALUE: Final = "node-feature-discovery.worker.tolerations"
DEVICE_PLUGIN_VALUE: Final = "devicePlugin.enabled"
VALUE_PATHS: Final = frozenset(
    {
        # values.yaml l. 307-318 dcgmExporter.serviceMonitor, rendered whole into the ClusterPolicy
        # (templates/clusterpolicy.yaml l. 574-575).
        "dcgmExporter.serviceMonitor.enabled",
        "dcgmExporter.serviceMonitor.honorLabels",
        "dcgmExporter.serviceMonitor.additionalLabels.*",
        "dcgmExporter.serviceMonitor.relabelings",
        "driver.enabled",
        DEVICE_PLUGIN_VALUE,
        "daemonsets.tolerations",
        NFD_WORKER_TOLERATIONS_VALUE,
    }
)

NFD_WORKER_DEFAULT_TOLERATIONS: Final = (
    values_of.CONTROL_PLANE_TOLERATIONS[1],
    values_of.GPU_TAINT_TOLERATION,
)


def workloads(release: str, values: Mapping[str, Any]) -> list[PodPlacement]:
    """The operator Deployment, NFD's master, worker and gc, and the operand DaemonSets the operator creates."""
    where = f"(chart {CHART_NAME}, release {release})"
    nfd = "node-feature-discovery"
    nfd_priority = values_of.string(values, f"{nfd}.priorityClassName", values_of.SYSTEM_NODE_CRITICAL)
    found = [
        PodPlacement(
            f"Deployment gpu-operator {where}",
            node_selector=values_of.mapping(values, "operator.nodeSelector"),
            affinity=values_of.mapping(
                values, "operator.affinity", values_of.CONTROL_PLANE_PREFERRED_AFFINITY
            ),
            tolerations=values_of.tolerations(
                values, "operator.tolerations", values_of.CONTROL_PLANE_ONLY_TOLERATIONS
            ),
            priority_class=values_of.string(
                values, "operator.priorityClassName", values_of.SYSTEM_NODE_CRITICAL
            ),
        )
    ]
    if values_of.switch(values, "nfd.enabled", True):
        # Where the master goes; the post-delete prune Job below is placed the same way.
        master = PodPlacement(
            f"Deployment nfd-master {where}",
            node_selector=values_of.mapping(values, f"{nfd}.master.nodeSelector"),
            affinity=values_of.mapping(
                values, f"{nfd}.master.affinity", values_of.CONTROL_PLANE_PREFERRED_AFFINITY
            ),
            tolerations=values_of.tolerations(
                values, f"{nfd}.master.tolerations", values_of.CONTROL_PLANE_ONLY_TOLERATIONS
            ),
            priority_class=nfd_priority,
        )
        if values_of.switch(values, f"{nfd}.master.enable", True):
            found.append(master)
        if values_of.switch(values, f"{nfd}.gc.enable", True):
            found.append(
                PodPlacement(
                    f"Deployment nfd-gc {where}",
                    node_selector=values_of.mapping(values, f"{nfd}.gc.nodeSelector"),
                    affinity=values_of.mapping(values, f"{nfd}.gc.affinity"),
                    tolerations=values_of.tolerations(values, f"{nfd}.gc.tolerations", ()),
                    priority_class=nfd_priority,
                )
            )
        if values_of.switch(values, f"{nfd}.worker.enable", True):
            found.append(
                PodPlacement(
                    f"DaemonSet nfd-worker {where}",
                    node_selector=values_of.mapping(values, f"{nfd}.worker.nodeSelector"),
                    affinity=values_of.mapping(values, f"{nfd}.worker.affinity"),
                    tolerations=values_of.tolerations(
                        values, NFD_WORKER_TOLERATIONS_VALUE, NFD_WORKER_DEFAULT_TOLERATIONS
                    ),
                    daemonset=True,
                    priority_class=nfd_priority,
                )
            )
        # The subchart's post-delete hook Job, placed as the master (templates/post-delete-job.yaml l. 1,
        # l. 85-96; postDeleteCleanup defaults to true, charts/node-feature-discovery/values.yaml l. 18).
        if values_of.switch(values, f"{nfd}.postDeleteCleanup", True):
            # The Job sets no priorityClassName.
            found.append(
                replace(master, name=f"Job nfd-prune (post-delete hook) {where}", priority_class=None)
            )
    # The CRD hook Jobs tolerate what the operator tolerates and set no selector (templates/upgrade_crd.yaml
    # l. 1, l. 52-81, operator.upgradeCRD default true, values.yaml l. 82; templates/cleanup_crd.yaml l. 1-31,
    # operator.cleanupCRD default false, l. 79): a pre-upgrade hook that finds no node stalls `helm upgrade`.
    hooks = (
        ("upgradeCRD", True, "upgrade-crd (pre-upgrade hook)"),
        ("cleanupCRD", False, "cleanup-crd (pre-delete hook)"),
    )
    for switch, default, job in hooks:
        if values_of.switch(values, f"operator.{switch}", default):
            found.append(
                PodPlacement(
                    f"Job gpu-operator-{job} {where}",
                    tolerations=values_of.tolerations(
                        values, "operator.tolerations", values_of.CONTROL_PLANE_ONLY_TOLERATIONS
                    ),
                )
            )
    found += [pod for _, pod in operands.operand_placements(values, where)]
    return found


FACTS: Final = ReleaseFacts(
    title="the NVIDIA GPU Operator",
    chart_name=CHART_NAME,
    chart=CHART_NAME,
    repository=REPO,
    default_version=DEFAULT_VERSION,
    release=CHART_NAME,
    namespace=NAMESPACE,
    value_paths=VALUE_PATHS,
    workloads=workloads,
)
