"""DRANET and the NVIDIA GPU DRA driver as Helm releases (components/drivers/dra_drivers.py)."""

from __future__ import annotations

from collections.abc import Callable
from ipaddress import IPv4Network

import pytest

from components.drivers.dra_drivers import (
    OCA_CONFIG_DIR,
    ChartValuesError,
    _documented,
    device_plugin_values,
    dranet_values,
    gpu_driver_values,
    gpu_operator_values,
)
from oke_gpu_rdma.common import pod_security
from oke_gpu_rdma.common.charts import undocumented_value_paths
from oke_gpu_rdma.drivers import dranet as dranet_chart
from oke_gpu_rdma.drivers import gpu_operator_chart, nvidia_gpu
from stack_config.drivers.driver_settings import DranetConfig
from stack_config.nodes.pool_settings import GPU_TAINT, Taint
from tests.support import Run, raw_config

RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"
DEVICE_CLASS = "kubernetes:resource.k8s.io/v1:DeviceClass"
NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"
POOLS = ["gpu-b4"]
ON_POOLS = {
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "oke-gpu-rdma/node-pool", "operator": "In", "values": POOLS}
                        ]
                    }
                ]
            }
        }
    }
}


def dranet(**changes: object) -> DranetConfig:
    return DranetConfig.model_validate(changes)


def test_seed_values_by_default() -> None:
    # seed 000 dranet-values.yaml: image tag, the OKE hint; placement on the GPU pools' nodes by the pool
    # label they carry from creation (seed 000 used the shape; a pool label keeps other pools out).
    assert dranet_values(dranet(), POOLS) == {
        "image": {"tag": "v1.5.0"},
        **ON_POOLS,
        "args": {"cloudProviderHint": "OKE"},
    }


def test_child_range_option_only_when_not_the_default() -> None:
    values = dranet_values(dranet(childRange="10.192.0.0/14"), POOLS)
    assert values["args"]["cloudProviderOptions"] == {"oke": {"rdma-child-ipv4-cidr": "10.192.0.0/14"}}
    assert "cloudProviderOptions" not in dranet_values(dranet(childRange="10.208.0.0/12"), POOLS)["args"]


def test_native_infiniband_and_oca_mount() -> None:
    values = dranet_values(dranet(nativeInfiniband=True, mountOcaConfig=True, imageTag="v1.5.1"), POOLS)
    assert values["args"]["moveIBInterfaces"] is False
    assert values["image"] == {"tag": "v1.5.1"}
    assert values["extraVolumes"] == [
        {"name": "oca-hpc-config", "hostPath": {"path": OCA_CONFIG_DIR, "type": "DirectoryOrCreate"}}
    ]
    assert values["extraVolumeMounts"] == [
        {"name": "oca-hpc-config", "mountPath": OCA_CONFIG_DIR, "readOnly": True}
    ]
    assert undocumented_value_paths(values, dranet_chart.VALUE_PATHS) == []


def test_several_pools_are_one_affinity_term() -> None:
    values = dranet_values(dranet(), ["gpu-b4", "gpu-a100"])
    assert "nodeSelector" not in values
    term = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ][0]
    assert term == {
        "matchExpressions": [
            {
                "key": "oke-gpu-rdma/node-pool",
                "operator": "In",
                "values": ["gpu-b4", "gpu-a100"],
            }
        ]
    }


def test_gpu_driver_seed_values_and_tolerations() -> None:
    taints = [Taint(key="nvidia.com/gpu", value="present"), Taint(key="nvidia.com/gpu", value="other")]
    assert gpu_driver_values(POOLS, taints) == {
        "nvidiaDriverRoot": "/",
        "gpuResourcesEnabledOverride": True,
        # hostManaged: this release never renders the IMEX daemons' RBAC (components/drivers/dra_drivers.py).
        "resources": {
            "gpus": {"enabled": True},
            "computeDomains": {"enabled": False, "imex": {"mode": "hostManaged"}},
        },
        "kubeletPlugin": {
            **ON_POOLS,
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }
    assert undocumented_value_paths(gpu_driver_values(POOLS, taints), nvidia_gpu.VALUE_PATHS) == []


def test_misspelt_value_is_refused() -> None:
    with pytest.raises(
        ChartValuesError, match=r"dranet chart values have undocumented keys: args\.moveIbInterfaces"
    ):
        _documented({"args": {"moveIbInterfaces": False}}, dranet_chart.VALUE_PATHS, "dranet")


def test_releases_as_declared(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev")
    releases = {r.inputs["chart"]: r.inputs for r in run.of_type(RELEASE)}
    # The dev stack's cluster exists and runs its own GPU Operator (seed 000): only the DRA drivers.
    assert set(releases) == {dranet_chart.CHART, nvidia_gpu.CHART}
    dranet_release = releases[dranet_chart.CHART]
    assert (dranet_release["name"], dranet_release["namespace"], dranet_release["version"]) == (
        "dranet",
        "kube-system",
        "v1.5.0",
    )
    assert dranet_release["values"] == dranet_values(dranet(), POOLS)
    gpu = releases[nvidia_gpu.CHART]
    assert (gpu["namespace"], gpu["version"], "createNamespace" in gpu) == (
        "dra-driver-nvidia-gpu",
        "0.5.1",
        False,
    )
    # The component creates the namespace, labelled privileged (its kubelet plugin is a privileged
    # DaemonSet with hostPath volumes), and the release waits for it: Helm cannot label one it creates.
    namespace = run.one(NAMESPACE, "gpu-dra-driver-namespace")
    assert namespace.inputs["metadata"] == {
        "name": "dra-driver-nvidia-gpu",
        "labels": pod_security.namespace_labels("privileged"),
    }
    assert namespace.urn in run.one(RELEASE, "gpu-dra-driver-release").dependencies
    for inputs in releases.values():
        documented = dranet_chart.VALUE_PATHS if inputs is dranet_release else nvidia_gpu.VALUE_PATHS
        assert undocumented_value_paths(inputs["values"], documented) == []


def test_releases_wait_for_the_node_pools(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    system = run.one(NODE_POOL, "system-nodes").urn
    pools = {r.urn for r in run.of_type(NODE_POOL)} - {system}
    for release in run.of_type(RELEASE):
        assert pools <= set(release.dependencies)
        # The GPU Operator's operator and NFD master/gc, Kueue's controller and kube-prometheus-stack's controllers
        # run on the system pool; the DRA drivers are DaemonSets.
        on_system = {"gpu-operator-release", "kueue-release", "monitoring-release"}
        assert (system in release.dependencies) == (release.name in on_system)
        # Helm waits for the GPU nodes' bring-up, not its 300 s default (oke_gpu_rdma/nodes/provisioning.py).
        assert release.inputs["timeout"] == 2700
        assert release.provider.startswith("urn:pulumi:full::oke-gpu-rdma::")
        assert "pulumi:providers:kubernetes::oke-k8s" in release.provider


def test_dranet_device_class(run_stack: Callable[..., Run]) -> None:
    device_class = run_stack("dev").one(DEVICE_CLASS)
    assert device_class.inputs["metadata"] == {"name": "dra.net"}
    assert device_class.inputs["spec"] == {
        "selectors": [{"cel": {"expression": 'device.driver == "dra.net"'}}]
    }


def test_custom_child_range_reaches_the_release(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("dev")
    raw["dranet"] = {"childRange": "10.192.0.0/14"}
    run = run_stack("dev", raw)
    (release,) = [r for r in run.of_type(RELEASE) if r.inputs["chart"] == dranet_chart.CHART]
    assert IPv4Network(
        release.inputs["values"]["args"]["cloudProviderOptions"]["oke"]["rdma-child-ipv4-cidr"]
    ) == (IPv4Network("10.192.0.0/14"))


def test_drivers_can_be_turned_off(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("dev")
    raw["dranet"] = {"enabled": False}
    raw["gpuDriver"] = {"enabled": False}
    run = run_stack("dev", raw)
    assert run.of_type(RELEASE) == [] and run.of_type(DEVICE_CLASS) == []
    assert run.run.outputs["deviceClasses"] == []


def test_dranet_tolerates_pool_taints_the_chart_default_misses() -> None:
    assert "tolerations" not in dranet_values(dranet(), POOLS, [Taint(key="nvidia.com/gpu", value="present")])
    values = dranet_values(dranet(), POOLS, [Taint(key="dedicated", value="rdma", effect="NoExecute")])
    assert values["tolerations"] == [
        {"operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
    ]
    assert undocumented_value_paths(values, dranet_chart.VALUE_PATHS) == []


def test_nfd_worker_tolerates_a_pool_taint_its_chart_default_does_not() -> None:
    """NFD's worker labels the GPU nodes the operands select; its default tolerates only the GPU taint."""
    assert "node-feature-discovery" not in gpu_operator_values([GPU_TAINT])
    extra = Taint(key="dedicated", value="training", effect="NoSchedule")
    values = gpu_operator_values([GPU_TAINT, extra])
    # The chart default (gpu-operator v26.3.3 values.yaml l. 560-567): control-plane and nvidia.com/gpu only.
    assert values["node-feature-discovery"]["worker"]["tolerations"] == [
        {
            "key": "node-role.kubernetes.io/control-plane",
            "operator": "Equal",
            "value": "",
            "effect": "NoSchedule",
        },
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"},
    ]


def test_gpu_operator_device_plugin_off_is_a_value_the_chart_reads() -> None:
    assert "devicePlugin" not in gpu_operator_values([GPU_TAINT])
    values = gpu_operator_values([GPU_TAINT], device_plugin=False)
    assert values["devicePlugin"] == {"enabled": False}
    assert undocumented_value_paths(values, gpu_operator_chart.VALUE_PATHS) == []


def test_the_device_plugin_chart_release_in_a_mixed_fleet(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("full")
    b4 = raw["nodePools"][0]
    raw["nodePools"].append({**b4, "name": "infer-a10", "shape": "VM.GPU.A10.1", "count": 3, "rdma": "none"})
    run = run_stack("fleet", raw)
    release = run.one(RELEASE, "device-plugin-release")
    assert (release.inputs["name"], release.inputs["namespace"], release.inputs["version"]) == (
        "nvidia-device-plugin",
        "nvidia-device-plugin",
        "0.19.3",
    )
    assert "createNamespace" not in release.inputs and release.inputs["timeout"] == 2700
    namespace = run.one(NAMESPACE, "device-plugin-namespace")
    assert namespace.inputs["metadata"]["labels"] == pod_security.namespace_labels("privileged")
    assert namespace.urn in release.dependencies
    assert release.inputs["values"] == device_plugin_values([GPU_TAINT])
    # It waits for the pool it serves, not the DRA pools.
    infer = run.one(NODE_POOL, "infer-a10-nodes").urn
    others = {r.urn for r in run.of_type(NODE_POOL)} - {infer}
    assert infer in release.dependencies and not others & set(release.dependencies)
    operator = run.one(RELEASE, "gpu-operator-release")
    assert operator.inputs["values"]["devicePlugin"] == {"enabled": False}
    # After the operator: its pre-requisites create the `nvidia` RuntimeClass the plugin's pods name.
    assert operator.urn in release.dependencies


def test_gpu_health_checks_turn_on_the_drivers_nvml_gate(run_stack: Callable[..., Run]) -> None:
    values = gpu_driver_values(POOLS, [GPU_TAINT], health_checks=True)
    assert values["featureGates"] == {"NVMLDeviceHealthCheck": True}
    assert undocumented_value_paths(values, nvidia_gpu.VALUE_PATHS) == []
    assert "featureGates" not in gpu_driver_values(POOLS, [GPU_TAINT])
    release = run_stack("full").one(RELEASE, "gpu-dra-driver-release")
    assert release.inputs["values"]["featureGates"] == {"NVMLDeviceHealthCheck": True}


def test_the_component_refuses_health_checks_on_a_driver_without_them(declare) -> None:
    from components.component_inputs import ComponentInputError
    from components.drivers.dra_drivers import NvidiaGpuDraDriver, NvidiaGpuDraDriverArgs

    args = NvidiaGpuDraDriverArgs(pools=POOLS, chart_version="25.12.0", health_checks=True)
    with pytest.raises(ComponentInputError) as refused:
        declare(lambda: NvidiaGpuDraDriver("gpu", args))
    assert str(refused.value) == (
        "NvidiaGpuDraDriver 'gpu': invalid inputs:\n  input healthChecks = true: chart version 25.12.0 has no NVML "
        "health checks (from v0.4.0); set chartVersion 0.5.1 or healthChecks false"
    )
