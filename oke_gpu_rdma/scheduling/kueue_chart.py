"""Kueue (kubernetes-sigs/kueue): its chart, the values it reads, where its controller goes, its configuration
as the chart reads it, and the names of its API that jobs and the stack's objects use.

Pinned: tag v0.19.2 (commit 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb), the newest release of the snapshot. At
that tag both features this stack combines are on by default (pkg/features/kube_features.go l. 683-686
TopologyAwareScheduling beta and default on since 0.14; l. 745-747 KueueDRAIntegration beta and default on
since 0.18), so the chart sets no feature gate. Sources at the tag: charts/kueue/values.yaml,
charts/kueue/templates/manager/manager.yaml and manager-config.yaml, apis/config/v1beta2/configuration_types.go,
apis/kueue/v1beta2 (the storage version of every kind the stack declares: `+kubebuilder:storageversion` in
topology_types.go l. 140, resourceflavor_types.go l. 27, clusterqueue_types.go l. 599, localqueue_types.go
l. 184), pkg/controller/constants/constants.go.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import yaml

from oke_gpu_rdma.common import chart_placement as values_of
from oke_gpu_rdma.common.release_facts import ReleaseFacts
from oke_gpu_rdma.scheduling import kueue_jobs
from oke_gpu_rdma.scheduling.pod_admission import PodPlacement

CHART_NAME: Final = "kueue"
# charts/kueue/README.md l. 28-31: the charts pushed to oci://registry.k8s.io/kueue/charts/kueue. The packaged
# chart sets the controller image to registry.k8s.io/kueue/kueue:<tag> (hack/helm-chart-package.sh l. 74-75),
# not the git values' staging image, so the stack leaves the image alone.
CHART: Final = f"oci://registry.k8s.io/kueue/charts/{CHART_NAME}"
DEFAULT_VERSION: Final = "0.19.2"
RELEASE: Final = CHART_NAME
NAMESPACE: Final = "kueue-system"

# The API group and the version the stack writes (the storage version of each kind at the tag).
API_GROUP: Final = kueue_jobs.GROUP
API_VERSION: Final = f"{API_GROUP}/v1beta2"
TOPOLOGY_KIND: Final = "Topology"
RESOURCE_FLAVOR_KIND: Final = "ResourceFlavor"
CLUSTER_QUEUE_KIND: Final = "ClusterQueue"
LOCAL_QUEUE_KIND: Final = "LocalQueue"
KINDS: Final = (TOPOLOGY_KIND, RESOURCE_FLAVOR_KIND, CLUSTER_QUEUE_KIND, LOCAL_QUEUE_KIND)

# What a job says to Kueue: the label on the job object (an MPIJob's metadata), the annotations on a pod set's
# template. Kept once, with their sources, in oke_gpu_rdma/scheduling/kueue_jobs.py, which the policies read jobs with.
QUEUE_LABEL: Final = kueue_jobs.QUEUE_LABEL
REQUIRED_TOPOLOGY_ANNOTATION: Final = kueue_jobs.REQUIRED_TOPOLOGY
PREFERRED_TOPOLOGY_ANNOTATION: Final = kueue_jobs.PREFERRED_TOPOLOGY

# The quota resources the configuration's deviceClassMappings name (apis/config/v1beta2/configuration_types.go
# l. 636-663; pkg/config/validation.go l. 495 requires a label key). pkg/dra/claims.go countDevicesPerClass
# (l. 58-125) counts an ExactCount request's `count` per DeviceClass and GetResourceRequestsForResourceClaimTemplates
# (l. 155-237) adds those counts, per pod, under the mapping's name: a GPU is 1 of GPU_RESOURCE, a rail 1 of
# RAIL_RESOURCE. A class no mapping names makes the workload inadmissible (l. 213-219), as does a request with
# allocationMode All, adminAccess or firstAvailable (l. 73-98).
GPU_RESOURCE: Final = "oke-gpu-rdma/gpus"
RAIL_RESOURCE: Final = "oke-gpu-rdma/rails"
# A ComputeDomain's channel (oke_gpu_rdma/drivers/compute_domains.py CHANNEL_DEVICE_CLASS): one per node, so the quota of
# a multi-node NVLink flavor is its node count.
CHANNEL_RESOURCE: Final = "oke-gpu-rdma/imex-channels"

# charts/kueue/values.yaml l. 119-184, managerConfig.controllerManagerConfigYaml: the chart's default
# configuration, which the values replace whole (templates/manager/manager-config.yaml l. 26-37 parses the string
# and only adds internalCertManagement), so the stack starts from it (manager_config says what it changes).
DEFAULT_MANAGER_CONFIG: Final[Mapping[str, Any]] = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "controller": {
        "groupKindConcurrency": {
            "Job.batch": 5,
            "Pod": 5,
            "Workload.kueue.x-k8s.io": 10,
            "LocalQueue.kueue.x-k8s.io": 5,
            "ClusterQueue.kueue.x-k8s.io": 5,
            "ResourceFlavor.kueue.x-k8s.io": 1,
        }
    },
    "clientConnection": {"qps": 300, "burst": 500},
    "integrations": {
        "frameworks": [
            "batch/job",
            "kubeflow.org/mpijob",
            "ray.io/rayjob",
            "ray.io/rayservice",
            "ray.io/raycluster",
            "jobset.x-k8s.io/jobset",
            "workload.codeflare.dev/appwrapper",
            "trainer.kubeflow.org/trainjob",
            "pod",
            "deployment",
            "statefulset",
            "leaderworkerset.x-k8s.io/leaderworkerset",
        ]
    },
}
# The integrations the stack's jobs use: MPIJob (the acceptance gates, multi-node training; the stack installs the
# MPI operator) and batch/v1 Job (single-node jobs). No other operator is installed, so no other kind is queued.
# The chart's default also has pod, deployment and statefulset: with them its Pod, Deployment and StatefulSet
# mutating webhooks get failurePolicy Fail (charts/kueue/templates/webhook/manifests.yaml l. 92-96, 315-319,
# 525-529; Ignore when not listed), so with the one Kueue replica down no pod at all could be created outside
# kube-system and kueue-system: no operator, no DaemonSet pod.
FRAMEWORKS: Final = ("batch/job", "kubeflow.org/mpijob")
# How long an admitted workload may take until all its pods are Ready (image pulls included) before Kueue evicts
# it, frees its quota and requeues it (apis/config/v1beta2/configuration_types.go l. 302-329, WaitForPodsReady).
# Kueue defaults it on at v0.19.2 with 30 minutes (apis/config/v1beta2/defaults.go l. 48, l. 99-116), but only for
# the deprecation period of its DisableWaitForPodsReady gate (pkg/features/kube_features.go l. 49-52, to go in 0.21); the stack
# writes it, so a workload whose claims cannot be allocated where TAS put it gives its nodes back in a known time.
DEFAULT_PODS_READY_TIMEOUT_MINUTES: Final = 15
# Requeue after an eviction for readiness: backoff from the eviction, 60 s doubling up to an hour, without limit
# (configuration_types.go l. 402-440, the chart's commented example, values.yaml l. 144-152). blockAdmission stays false
# (l. 310-314): true would hold every other job of the ClusterQueue until this one's pods are Ready.
REQUEUING_STRATEGY: Final[Mapping[str, Any]] = {
    "timestamp": "Eviction",
    "backoffBaseSeconds": 60,
    "backoffMaxSeconds": 3600,
}
MANAGER_CONFIG_VALUE: Final = "managerConfig.controllerManagerConfigYaml"
# A namespace's name as a label every namespace carries (the NamespaceDefaultLabelName feature, GA in 1.22).
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"

# The values the templates read that the stack sets or the placement reads (values.yaml l. 30-114;
# templates/manager/manager.yaml l. 44-46 priorityClassName, l. 117-124 nodeSelector and tolerations).
VALUE_PATHS: Final = frozenset(
    {
        MANAGER_CONFIG_VALUE,
        "controllerManager.featureGates",
        "controllerManager.replicas",
        "controllerManager.nodeSelector.*",
        "controllerManager.tolerations",
        "controllerManager.topologySpreadConstraints",
        "controllerManager.manager.priorityClassName",
        "controllerManager.manager.resources.*",
        "controllerManager.manager.image.repository",
        "controllerManager.manager.image.tag",
        "enableCertManager",
        "enablePrometheus",
        "enableKueueViz",
    }
)


def device_class_mappings(
    gpu_classes: Sequence[str], rail_classes: Sequence[str], channel_classes: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The configuration's `resources.deviceClassMappings`: GPUs, rails and ComputeDomain channels under one quota
    resource each."""
    mappings = []
    for name, classes in (
        (GPU_RESOURCE, gpu_classes),
        (RAIL_RESOURCE, rail_classes),
        (CHANNEL_RESOURCE, channel_classes),
    ):
        if classes:
            mappings.append({"name": name, "deviceClassNames": sorted(classes)})
    return mappings


def manager_config(
    mappings: Sequence[Mapping[str, Any]],
    namespaces: Sequence[str] = (),
    pods_ready_timeout_minutes: int = DEFAULT_PODS_READY_TIMEOUT_MINUTES,
) -> dict[str, Any]:
    """The chart's default configuration with ``mappings`` as its DRA device class mappings, the stack's
    integrations only (FRAMEWORKS), waitForPodsReady with requeueing, and, given the workload ``namespaces``,
    Kueue's job management and the chart's job webhooks limited to them: the chart writes
    managedJobsNamespaceSelector as every job webhook's namespaceSelector (templates/webhook/manifests.yaml,
    l. 160-170 for batch Jobs, l. 254-264 for MPIJobs), so a Job created elsewhere never waits on Kueue."""
    config = yaml.safe_load(yaml.safe_dump(dict(DEFAULT_MANAGER_CONFIG)))
    if namespaces:
        config["managedJobsNamespaceSelector"] = namespace_selector(namespaces)
    config["waitForPodsReady"] = {
        "timeout": f"{pods_ready_timeout_minutes}m",
        "blockAdmission": False,
        "requeuingStrategy": dict(REQUEUING_STRATEGY),
    }
    config["integrations"] = {"frameworks": list(FRAMEWORKS)}
    config["resources"] = {"deviceClassMappings": [dict(m) for m in mappings]}
    return dict(config)


def namespace_selector(namespaces: Sequence[str]) -> dict[str, Any]:
    """A label selector of exactly ``namespaces``, by the name label every namespace carries."""
    return {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": list(namespaces)}]}


def values(
    mappings: Sequence[Mapping[str, Any]],
    namespaces: Sequence[str] = (),
    pods_ready_timeout_minutes: int = DEFAULT_PODS_READY_TIMEOUT_MINUTES,
) -> dict[str, Any]:
    """The chart values: the configuration as the string the chart parses. The controller keeps the chart's
    placement (no nodeSelector, no toleration): it runs on an untainted node, the system pool's."""
    config = manager_config(mappings, namespaces, pods_ready_timeout_minutes)
    return {"managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(config, sort_keys=False)}}


def read_manager_config(release_values: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration a release's values give the controller (the chart's default when unset)."""
    text = values_of.get(release_values, MANAGER_CONFIG_VALUE)
    if not isinstance(text, str):
        return dict(DEFAULT_MANAGER_CONFIG)
    parsed = yaml.safe_load(text)
    return dict(parsed) if isinstance(parsed, Mapping) else {}


def workloads(release: str, release_values: Mapping[str, Any]) -> list[PodPlacement]:
    """The controller-manager Deployment (templates/manager/manager.yaml): nodeSelector and tolerations from
    controllerManager.* (l. 117-124; values.yaml l. 104-107 default both empty), no affinity in the template,
    priorityClassName from controllerManager.manager.priorityClassName (l. 44-46; default unset). The KueueViz
    Deployments only with enableKueueViz (default false, values.yaml l. 27), which the stack leaves off."""
    return [
        PodPlacement(
            f"Deployment {release}-controller-manager (chart {CHART_NAME})",
            node_selector=values_of.mapping(release_values, "controllerManager.nodeSelector"),
            tolerations=values_of.tolerations(release_values, "controllerManager.tolerations", ()),
            priority_class=values_of.string(
                release_values, "controllerManager.manager.priorityClassName", None
            ),
        )
    ]


FACTS: Final = ReleaseFacts(
    title="Kueue",
    chart_name=CHART_NAME,
    chart=CHART,
    repository=None,
    default_version=DEFAULT_VERSION,
    release=RELEASE,
    namespace=NAMESPACE,
    value_paths=VALUE_PATHS,
    workloads=workloads,
)
