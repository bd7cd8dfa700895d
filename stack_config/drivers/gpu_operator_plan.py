"""How the GPU Operator must be configured for a stack's pools, and who places the device plugin.

The operator validator's plugin-validation waits for `nvidia.com/gpu` capacity on every GPU node, and the
ClusterPolicy drops it only with the operator's device plugin off (oke_gpu_rdma/drivers/gpu_operator_operands.py cites the
operator's code). So:

- no pool gets its GPUs from the NVIDIA DRA driver: the operator's device plugin stays on (chart default);
- some pool does (`nvidia.com/gpu.deploy.device-plugin=false`, stack_config/scheduling/pool_nodes.py): the operator's
  device plugin is off (`devicePlugin.enabled: false`), and if other pools take GPUs from a device plugin
  (rdma: none, rdma: sriov) the stack installs NVIDIA's device plugin chart for them, placed by the same label
  the operator's plugin uses (`nvidia.com/gpu.deploy.device-plugin: "true"`, which the operator sets on every
  GPU node whose pool does not set it).

The same settings hold for a cluster whose operator the stack does not manage: :func:`required_settings` says
which, for the preview and the README.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from oke_gpu_rdma.common import charts
from oke_gpu_rdma.drivers import device_plugin, gpu_operator_chart
from oke_gpu_rdma.drivers import gpu_operator_operands as gpu_operator
from oke_gpu_rdma.drivers.attributes import NVIDIA_GPU_RESOURCE
from oke_gpu_rdma.monitoring import kube_prometheus_stack as kps
from oke_gpu_rdma.nodes.labels import DEVICE_PLUGIN_LABEL, DEVICE_PLUGIN_OFF
from oke_gpu_rdma.scheduling import pod_admission as scheduling
from stack_config.health.health_plan import mark_taints
from stack_config.model import StackConfig
from stack_config.nodes.pool_settings import NodePoolConfig, Taint, tolerations
from stack_config.scheduling.pool_nodes import gpu_pool_labels

# The operator's own placement label for its device plugin (assets/state-device-plugin/0500_daemonset.yaml:19-20);
# the device plugin chart's pods select it too.
DEVICE_PLUGIN_ON: Final = "true"
# nvidia-device-plugin values that make it behave as the operator's device plugin does with CDI on (the chart
# default, values.yaml cdi.enabled): controllers/object_controls.go v26.3.3 setRuntimeClassName (l. 2755-2761:
# the `nvidia` RuntimeClass, operator.runtimeClass), transformDevicePluginCtrForCDI (l. 1509-1518:
# DEVICE_LIST_STRATEGY cdi-annotations,cdi-cri, NVIDIA_CDI_HOOK_PATH <toolkit.installDir>/toolkit/nvidia-cdi-hook,
# toolkit.installDir /usr/local/nvidia), applyMIGConfiguration (l. 2795-2806: MIG_STRATEGY from mig.strategy,
# values.yaml `single`). With CDI on the toolkit does not make `nvidia` containerd's default runtime
# (transformToolkitCtrForCDI, l. 1256-1275), so the plugin needs the RuntimeClass to see the GPUs; the operator
# creates it (assets/pre-requisites/0200_runtime_class.yaml, named by transformRuntimeClass, l. 5115-5127).
OPERATOR_RUNTIME_CLASS: Final = "nvidia"
OPERATOR_DEVICE_LIST_STRATEGY: Final = "cdi-annotations,cdi-cri"
OPERATOR_CDI_HOOK_PATH: Final = "/usr/local/nvidia/toolkit/nvidia-cdi-hook"
OPERATOR_MIG_STRATEGY: Final = "single"


def dra_served_pools(config: StackConfig) -> list[NodePoolConfig]:
    """Pools whose GPUs the NVIDIA DRA driver serves: the device plugin is labelled off there."""
    return [
        p
        for p in config.node_pools
        if gpu_pool_labels(p, config.gpu_driver.enabled).get(DEVICE_PLUGIN_LABEL) == DEVICE_PLUGIN_OFF
    ]


def device_plugin_pools(config: StackConfig) -> list[NodePoolConfig]:
    """Pools whose pods ask for `nvidia.com/gpu`: a device plugin must run there."""
    served = {p.name for p in dra_served_pools(config)}
    return [p for p in config.node_pools if p.name not in served]


def operator_device_plugin(config: StackConfig) -> bool:
    """The ClusterPolicy's devicePlugin.enabled the stack needs: off as soon as one pool is DRA-served."""
    return not dra_served_pools(config)


def separate_device_plugin(config: StackConfig) -> bool:
    """Whether the stack installs NVIDIA's device plugin chart: the operator's is off and some pool needs one."""
    return not operator_device_plugin(config) and bool(device_plugin_pools(config))


def gpu_pool_taints(config: StackConfig) -> list[Taint]:
    """The taints of every GPU pool, once each, and the rail health agent's node mark: the operands run on
    all of them and must come back on a marked node."""
    return list(
        dict.fromkeys([*(t for pool in config.node_pools for t in pool.taints), *mark_taints(config)])
    )


def operator_values(taints: Sequence[Taint], device_plugin: bool = True) -> dict[str, Any]:
    """gpu-operator chart values: the image has the GPU driver (driver off), the operands and NFD's worker
    tolerate the pools' taints, and the operator's device plugin is off where ``device_plugin`` is False."""
    values: dict[str, Any] = {"driver": {"enabled": False}}
    if not device_plugin:
        charts.set_value(values, gpu_operator_chart.DEVICE_PLUGIN_VALUE, False)
    if taints:
        values["daemonsets"] = {"tolerations": tolerations(list(taints))}
    # NFD's worker labels the GPU nodes (pci-10de) that the operator labels for its operands; its chart default
    # tolerates only the control-plane taint and nvidia.com/gpu, so a pool with another taint never gets them.
    defaults = [dict(t) for t in gpu_operator_chart.NFD_WORKER_DEFAULT_TOLERATIONS]
    missing = _untolerated(taints, defaults)
    if missing:
        charts.set_value(
            values, gpu_operator_chart.NFD_WORKER_TOLERATIONS_VALUE, [*defaults, *tolerations(missing)]
        )
    return values


def service_monitor_values(labels: Mapping[str, str]) -> dict[str, Any]:
    """The ClusterPolicy's dcgmExporter.serviceMonitor (gpu-operator v26.3.3 values.yaml l. 307-318, passed
    whole by templates/clusterpolicy.yaml l. 574-575): the operator then creates the DCGM exporter's
    ServiceMonitor with ``labels`` (the ones the Prometheus selects by; controllers/object_controls.go
    ServiceMonitor l. 4980-5010), honouring the labels the exporter sets (its pod, namespace and container
    labels name the pod holding a GPU where it can map one) and naming the node as `instance`, as the node
    exporter's targets are. Without the ServiceMonitor CRD the operator reports the state not ready
    (l. 4994-4996): monitoring must bring it.

    The exporter maps no DRA-allocated GPU to its pod here: that needs KUBERNETES_ENABLE_DRA, off by default
    (dcgm-exporter 4.5.3-4.8.2 pkg/cmd/app.go l. 329-333), and then reads ResourceSlices from
    resource.k8s.io/v1beta1 (internal/pkg/transformation/dra.go l. 43), which a 1.36 control plane does not
    serve unless asked to (beta APIs are off by default, KEP-3136; OKE's managed API server takes no
    --runtime-config), and the operator grants its ServiceAccount no ResourceSlice access
    (assets/state-dcgm-exporter/0210_clusterrole.yaml). The dashboard therefore finds a job's GPUs by its
    pods' nodes (oke_gpu_rdma/monitoring/dashboard.py)."""
    return {
        "dcgmExporter": {
            "serviceMonitor": {
                "enabled": True,
                "honorLabels": True,
                "additionalLabels": dict(labels),
                "relabelings": kps.node_as_instance(),
            }
        }
    }


def _untolerated(taints: Sequence[Taint], tolerated: Sequence[Mapping[str, Any]]) -> list[Taint]:
    return [
        t
        for t in taints
        if scheduling.untolerated_taint([scheduling.NodeTaint(t.key, t.value, t.effect)], tolerated)
    ]


def stack_operator_values(config: StackConfig) -> dict[str, Any]:
    """The gpu-operator values for this stack's pools (what the stack installs, or what a cluster needs)."""
    return operator_values(gpu_pool_taints(config), operator_device_plugin(config))


def device_plugin_values(taints: Sequence[Taint]) -> dict[str, Any]:
    """nvidia-device-plugin chart values: on the nodes the operator labels for its device plugin, tolerating
    the pools' taints, configured as the operator configures its own."""
    values: dict[str, Any] = {
        "nodeSelector": {DEVICE_PLUGIN_LABEL: DEVICE_PLUGIN_ON},
        "runtimeClassName": OPERATOR_RUNTIME_CLASS,
        "deviceListStrategy": OPERATOR_DEVICE_LIST_STRATEGY,
        "migStrategy": OPERATOR_MIG_STRATEGY,
        "cdi": {"nvidiaHookPath": OPERATOR_CDI_HOOK_PATH},
    }
    defaults = [dict(t) for t in device_plugin.DEFAULT_TOLERATIONS]
    missing = _untolerated(taints, defaults)
    if missing:
        # A list value replaces the chart's default list: keep its tolerations and add the pools' others.
        values["tolerations"] = [*defaults, *tolerations(missing)]
    return values


def required_settings(config: StackConfig) -> list[str]:
    """For a cluster whose GPU Operator the stack does not manage: the operator settings its pools need, and
    why; empty when the stack installs the operator."""
    if config.deploys_gpu_operator:
        return []
    served = [p.name for p in dra_served_pools(config)]
    found: list[str] = []
    if served:
        found.append(
            "the cluster's GPU Operator (not managed by this stack, gpuOperator.enabled: false) needs its device "
            "plugin off: Helm value devicePlugin.enabled=false (ClusterPolicy spec.devicePlugin.enabled: false). "
            f"Pool(s) {', '.join(served)} take GPUs from the NVIDIA DRA driver and offer no {NVIDIA_GPU_RESOURCE}, and "
            "the operator validator's plugin-validation init container waits for that capacity and crash-loops "
            "(gpu-operator cmd/nvidia-validator/main.go); the operator removes that container only with the "
            "device plugin off (controllers/object_controls.go TransformValidatorComponent)"
        )
        if separate_device_plugin(config):
            names = ", ".join(p.name for p in device_plugin_pools(config))
            found.append(
                f"pool(s) {names} then take {NVIDIA_GPU_RESOURCE} from the {device_plugin.CHART_NAME} chart this "
                f"stack installs on the nodes labelled {DEVICE_PLUGIN_LABEL}={DEVICE_PLUGIN_ON}"
            )
    elif config.node_pools:
        found.append(
            "the cluster's GPU Operator (not managed by this stack, gpuOperator.enabled: false) needs its device "
            "plugin on (Helm value devicePlugin.enabled=true, the chart default): pool(s) "
            f"{', '.join(p.name for p in config.node_pools)} take GPUs as {NVIDIA_GPU_RESOURCE} from it"
        )
    default = [dict(t) for t in gpu_operator.operand_tolerations({})]
    if _untolerated(gpu_pool_taints(config), default):
        wanted = stack_operator_values(config)["daemonsets"]["tolerations"]
        found.append(
            f"its operands need daemonsets.tolerations {wanted}: the pools' taints (the chart default "
            f"tolerates only {default})"
        )
    return found
