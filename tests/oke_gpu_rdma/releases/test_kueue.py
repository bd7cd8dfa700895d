"""Kueue's chart facts: its configuration as the chart reads it, its controller's placement
(oke_gpu_rdma/releases/kueue.py)."""

from __future__ import annotations

import yaml

from oke_gpu_rdma.chart_workloads import release_workloads
from oke_gpu_rdma.charts import undocumented_value_paths
from oke_gpu_rdma.releases import dranet, kueue, nvidia_gpu, registry

MAPPINGS = kueue.device_class_mappings([nvidia_gpu.DEVICE_CLASS], [dranet.DEVICE_CLASS])


def test_gpus_and_rails_are_mapped_to_one_quota_resource_each() -> None:
    assert MAPPINGS == [
        {"name": "oke-gpu-rdma/gpus", "deviceClassNames": ["gpu.nvidia.com"]},
        {"name": "oke-gpu-rdma/rails", "deviceClassNames": ["dra.net"]},
    ]


def test_the_configuration_is_the_charts_default_plus_the_mappings() -> None:
    values = kueue.values(MAPPINGS)
    assert undocumented_value_paths(values, kueue.VALUE_PATHS) == []
    # The chart parses the string (templates/manager/manager-config.yaml l. 26): it must be YAML of a mapping.
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert config["kind"] == "Configuration"
    assert config["resources"] == {"deviceClassMappings": MAPPINGS}
    # Everything else as the chart's default, plus the PyTorchJob integration the README's example uses.
    rest = {k: v for k, v in config.items() if k != "resources"}
    frameworks = rest["integrations"]["frameworks"]
    assert {"kubeflow.org/mpijob", "jobset.x-k8s.io/jobset", "kubeflow.org/pytorchjob"} <= set(frameworks)
    assert rest == dict(kueue.DEFAULT_MANAGER_CONFIG)
    assert kueue.read_manager_config(values) == config


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
