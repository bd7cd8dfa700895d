"""The GPU Operator's node labels, operand DaemonSets and what keeps an operand pod from Ready
(oke_gpu_rdma/drivers/gpu_operator_operands.py, from NVIDIA/gpu-operator v26.3.3)."""

from __future__ import annotations

from oke_gpu_rdma.drivers import device_plugin
from oke_gpu_rdma.drivers import gpu_operator_operands as gpu_operator
from oke_gpu_rdma.drivers.gpu_operator_operands import (
    device_plugin_gaps,
    operand_placements,
    operand_problems,
    operator_node_labels,
)
from oke_gpu_rdma.nodes.labels import DEVICE_PLUGIN_LABEL, GPU_PRESENT_LABEL, NFD_NVIDIA_PCI_LABEL
from oke_gpu_rdma.scheduling.pod_admission import NodeTaint, PoolNodes

A100 = "NVIDIA A100-SXM4-40GB"
GPU_TAINT = NodeTaint("nvidia.com/gpu", "present", "NoSchedule")
WHERE = "(chart gpu-operator, release gpu-operator)"


def gpu_pool(
    name: str, device_plugin: str | None = None, taints: tuple[NodeTaint, ...] = (GPU_TAINT,)
) -> PoolNodes:
    initial = {NFD_NVIDIA_PCI_LABEL: "true"}
    if device_plugin is not None:
        initial[DEVICE_PLUGIN_LABEL] = device_plugin
    resources = frozenset() if device_plugin == "false" else frozenset({"nvidia.com/gpu"})
    return PoolNodes(name, operator_node_labels(initial, A100), taints, resources)


def test_the_operator_labels_a_gpu_node_for_every_container_operand_and_keeps_a_preset_value() -> None:
    found = operator_node_labels(
        {"feature.node.kubernetes.io/pci-0302_10de.present": "true", DEVICE_PLUGIN_LABEL: "false"}, A100
    )
    assert found[GPU_PRESENT_LABEL] == "true"
    assert found[DEVICE_PLUGIN_LABEL] == "false"  # addGPUStateLabels honours the node's own value
    for component in (
        "container-toolkit",
        "operator-validator",
        "gpu-feature-discovery",
        "dcgm-exporter",
        "dcgm",
    ):
        assert found[f"nvidia.com/gpu.deploy.{component}"] == "true"
    assert found[gpu_operator.MIG_MANAGER_LABEL] == "true"  # an A100: MIG capable by its product name
    assert gpu_operator.MIG_MANAGER_LABEL not in operator_node_labels(
        {NFD_NVIDIA_PCI_LABEL: "true"}, "NVIDIA A10"
    )


def test_a_node_without_nvidia_pci_labels_and_operands_off_get_no_deploy_labels() -> None:
    assert operator_node_labels({"kubernetes.io/os": "linux"}) == {"kubernetes.io/os": "linux"}
    off = operator_node_labels({NFD_NVIDIA_PCI_LABEL: "true", gpu_operator.OPERANDS_LABEL: "false"}, A100)
    assert not [
        k for k in off if k.startswith(gpu_operator.DEPLOY_LABEL_PREFIX) and k != gpu_operator.OPERANDS_LABEL
    ]


def test_operands_follow_the_chart_switches() -> None:
    names = [o.daemonset for o, _ in operand_placements({}, WHERE)]
    assert names == [
        "nvidia-driver-daemonset",
        "nvidia-container-toolkit-daemonset",
        "nvidia-operator-validator",
        "nvidia-cuda-validator",
        "nvidia-device-plugin-daemonset",
        "nvidia-device-plugin-mps-control-daemon",
        "nvidia-dcgm-exporter",
        "gpu-feature-discovery",
        "nvidia-mig-manager",
    ]
    off = [
        o.daemonset
        for o, _ in operand_placements(
            {"driver": {"enabled": False}, "devicePlugin": {"enabled": False}}, WHERE
        )
    ]
    assert (
        "nvidia-device-plugin-daemonset" not in off and "nvidia-device-plugin-mps-control-daemon" not in off
    )
    assert "nvidia-driver-daemonset" not in off and "nvidia-operator-validator" in off
    validator = dict((o.daemonset, p) for o, p in operand_placements({}, WHERE))["nvidia-operator-validator"]
    assert validator.node_selector == {"nvidia.com/gpu.deploy.operator-validator": "true"}
    assert validator.tolerations == ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},)
    assert validator.priority_class == "system-node-critical"
    cuda = dict((o.daemonset, p) for o, p in operand_placements({}, WHERE))["nvidia-cuda-validator"]
    assert cuda.name == f"Pod nvidia-cuda-validator {WHERE}"
    assert (cuda.node_selector, cuda.tolerations) == (validator.node_selector, validator.tolerations)


def test_daemonsets_tolerations_replace_the_operand_default() -> None:
    values = {
        "daemonsets": {"tolerations": [{"key": "dedicated", "operator": "Exists"}], "priorityClassName": "x"}
    }
    (_, toolkit) = operand_placements(values, WHERE)[1]
    assert toolkit.tolerations == ({"key": "dedicated", "operator": "Exists"},)
    assert toolkit.priority_class == "x"


def test_the_validator_crash_loops_on_a_dra_pool_while_the_operator_device_plugin_is_on() -> None:
    """Issue 22 item 1: DRA pools labelled device-plugin=false with the ClusterPolicy's device plugin on."""
    problems = operand_problems({"driver": {"enabled": False}}, [gpu_pool("gpu-b4-a", "false")], where=WHERE)
    assert problems == [
        f"DaemonSet nvidia-operator-validator {WHERE} on pool gpu-b4-a crash-loops: its plugin-validation init "
        "container waits 30 x 5 s for nvidia.com/gpu capacity, which no device plugin offers there "
        "(cmd/nvidia-validator/main.go validateGPUResource); the ClusterPolicy removes that container only with "
        "devicePlugin.enabled=false (controllers/object_controls.go TransformValidatorComponent)"
    ]


def test_every_operand_is_ready_with_the_operator_device_plugin_off_on_dra_and_mixed_pools() -> None:
    values = {"driver": {"enabled": False}, "devicePlugin": {"enabled": False}}
    pools = [gpu_pool("gpu-b4-a", "false"), gpu_pool("infer")]
    assert operand_problems(values, pools, where=WHERE) == []
    # ... but the rdma: none pool then has no device plugin, unless one is placed apart from the operator.
    assert device_plugin_gaps(pools, []) == [
        "pool infer: its pods ask for nvidia.com/gpu, but no device plugin runs there"
    ]
    plugin = device_plugin.workloads("nvidia-device-plugin", {"nodeSelector": {DEVICE_PLUGIN_LABEL: "true"}})
    assert device_plugin_gaps(pools, plugin) == []


def test_device_plugin_pools_alone_keep_the_operator_device_plugin() -> None:
    pools = [gpu_pool("gpu-b4-vf")]
    placed = [p for _, p in operand_placements({"driver": {"enabled": False}}, WHERE)]
    assert operand_problems({"driver": {"enabled": False}}, pools, where=WHERE) == []
    assert device_plugin_gaps(pools, placed) == []


def test_operands_wait_for_toolkit_ready_where_the_validator_cannot_run() -> None:
    """The validator labelled off on a node (what issue 22 forbids): the operands that wait for its
    toolkit-ready file stay in their toolkit-validation init container."""
    validator_off = {NFD_NVIDIA_PCI_LABEL: "true", "nvidia.com/gpu.deploy.operator-validator": "false"}
    pool = PoolNodes(
        "gpu", operator_node_labels(validator_off, A100), (GPU_TAINT,), frozenset({"nvidia.com/gpu"})
    )
    problems = operand_problems({"driver": {"enabled": False}}, [pool], where=WHERE)
    stuck = sorted(line.split(" ", 2)[1] for line in problems)
    assert stuck == sorted(
        [
            "gpu-feature-discovery",
            "nvidia-dcgm-exporter",
            "nvidia-device-plugin-daemonset",
            "nvidia-mig-manager",
        ]
    )
    assert all("/run/nvidia/validations/toolkit-ready" in line for line in problems)


def test_the_validator_stalls_where_the_container_toolkit_does_not_run() -> None:
    labels = {NFD_NVIDIA_PCI_LABEL: "true", "nvidia.com/gpu.deploy.container-toolkit": "false"}
    pool = PoolNodes("gpu", operator_node_labels(labels, A100), (GPU_TAINT,), frozenset({"nvidia.com/gpu"}))
    problems = operand_problems(
        {"driver": {"enabled": False}, "devicePlugin": {"enabled": False}}, [pool], where=WHERE
    )
    assert problems[0] == (
        f"DaemonSet nvidia-operator-validator {WHERE} on pool gpu: its toolkit-validation init container never "
        "passes: the container toolkit does not run there (assets/state-container-toolkit/0500_daemonset.yaml:19)"
    )
    assert len(problems) == 4  # the dcgm exporter, GFD and the MIG manager wait for toolkit-ready
