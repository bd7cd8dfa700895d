"""Kueue's chart facts: its configuration as the chart reads it, its controller's placement
(oke_gpu_rdma/scheduling/kueue_chart.py)."""

from __future__ import annotations

import yaml

from oke_gpu_rdma.common import release_registry as registry
from oke_gpu_rdma.common.chart_workloads import release_workloads
from oke_gpu_rdma.common.charts import undocumented_value_paths
from oke_gpu_rdma.drivers import dranet, nvidia_gpu
from oke_gpu_rdma.scheduling import kueue_chart as kueue

MAPPINGS = kueue.device_class_mappings([nvidia_gpu.DEVICE_CLASS], [dranet.DEVICE_CLASS])


def test_gpus_and_rails_are_mapped_to_one_quota_resource_each() -> None:
    assert MAPPINGS == [
        {"name": "oke-gpu-rdma/gpus", "deviceClassNames": ["gpu.nvidia.com"]},
        {"name": "oke-gpu-rdma/rails", "deviceClassNames": ["dra.net"]},
    ]


def test_the_configuration_is_the_charts_default_plus_the_stacks_settings() -> None:
    values = kueue.values(MAPPINGS, ["work"])
    assert undocumented_value_paths(values, kueue.VALUE_PATHS) == []
    # The chart parses the string (templates/manager/manager-config.yaml l. 26): it must be YAML of a mapping.
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert config["kind"] == "Configuration"
    assert config["resources"] == {"deviceClassMappings": MAPPINGS}
    changed = {"resources", "integrations", "waitForPodsReady", "managedJobsNamespaceSelector"}
    assert {k: v for k, v in config.items() if k not in changed} == {
        k: v for k, v in kueue.DEFAULT_MANAGER_CONFIG.items() if k not in changed
    }
    assert kueue.read_manager_config(values) == config


def test_only_the_integrations_the_stack_installs_an_operator_for() -> None:
    """Issue 34 item 6 (and 7: no PyTorchJob, whose training operator the stack does not install). The chart gives
    the Pod, Deployment and StatefulSet webhooks failurePolicy Fail when their integration is listed
    (charts/kueue/templates/webhook/manifests.yaml l. 92-96, 315-319, 525-529): with Kueue's one replica down no
    pod could be created in any namespace but kube-system and kueue-system."""
    config = kueue.manager_config(MAPPINGS, ["work"])
    assert config["integrations"] == {"frameworks": ["batch/job", "kubeflow.org/mpijob"]}
    assert not {"pod", "deployment", "statefulset", "kubeflow.org/pytorchjob"} & set(
        config["integrations"]["frameworks"]
    )


def test_jobs_are_managed_and_their_webhooks_called_in_the_workload_namespaces_only() -> None:
    """Issue 34 item 6: the chart writes managedJobsNamespaceSelector as each job webhook's namespaceSelector
    (manifests.yaml l. 160-170 for Jobs, l. 254-264 for MPIJobs); without it, every namespace but kube-system and
    kueue-system."""
    config = kueue.manager_config(MAPPINGS, ["work", "train"])
    assert config["managedJobsNamespaceSelector"] == {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["work", "train"]}
        ]
    }


def test_an_admitted_workload_whose_pods_never_get_ready_is_evicted_and_requeued() -> None:
    """Issue 34 item 5: written by the stack, not left to a default Kueue keeps only while its
    DisableWaitForPodsReady gate lasts; blockAdmission false, so one stuck job does not hold the others."""
    config = kueue.manager_config(MAPPINGS, ["work"], pods_ready_timeout_minutes=20)
    assert config["waitForPodsReady"] == {
        "timeout": "20m",
        "blockAdmission": False,
        "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 60, "backoffMaxSeconds": 3600},
    }
    assert kueue.manager_config(MAPPINGS)["waitForPodsReady"]["timeout"] == "15m"


def test_the_controller_keeps_the_charts_placement() -> None:
    values = kueue.values(MAPPINGS)
    (controller,) = release_workloads(kueue.CHART, "kueue", values)
    assert controller.name == "Deployment kueue-controller-manager (chart kueue)"
    assert (dict(controller.node_selector), controller.tolerations, controller.priority_class) == (
        {},
        (),
        None,
    )
    placed = release_workloads(
        kueue.CHART,
        "kueue",
        {"controllerManager": {"nodeSelector": {"a": "b"}, "tolerations": [{"operator": "Exists"}]}},
    )[0]
    assert (dict(placed.node_selector), placed.tolerations) == ({"a": "b"}, ({"operator": "Exists"},))


def test_registered() -> None:
    assert registry.release_of_chart(kueue.CHART) is kueue.FACTS
    assert registry.release_of_chart("kueue") is kueue.FACTS
