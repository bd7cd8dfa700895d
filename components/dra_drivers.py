"""The two DRA drivers: DRANET for the rails and the NVIDIA DRA driver for the GPUs, as Helm releases.

Values are built by plain functions (`dranet_values`, `gpu_driver_values`) and checked against the
keys each chart documents before a release is declared: the dranet chart rejects unknown values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from oke_gpu_rdma import attributes, charts, resource_types
from oke_gpu_rdma import cidr_rules as cidr
from oke_gpu_rdma.labels import (
    DEVICE_PLUGIN_LABEL,
    DEVICE_PLUGIN_OFF,
    INSTANCE_TYPE_LABEL,
    RDMA_PATH_LABEL,
    RDMA_PATH_SRIOV,
)
from stack_config.model import DranetConfig, GpuDriverConfig, Taint, tolerations

from .typed_inputs import to_input_type

# Where Oracle Cloud Agent keeps its RDMA network config (seed 003).
OCA_CONFIG_DIR = "/etc/oracle-cloud-agent/plugins/oci-hpc/oci-hpc-configure"
RELEASE_TIMEOUT_SECONDS = 300


class ChartValuesError(ValueError):
    """Values with keys the chart does not document."""


def node_placement(
    shapes: Sequence[str], require: dict[str, str] | None = None, avoid_sriov: bool = False
) -> dict[str, Any]:
    """Chart values that put pods on the GPU pools' shapes: nodeSelector for one, affinity for several.

    ``require`` adds labels every selected node must carry; ``avoid_sriov`` keeps the pods off nodes
    labelled as SR-IOV pools (a NotIn term, so nodes without the label, as every DRANET pool's, stay
    selected).
    """
    required = dict(require or {})
    if len(shapes) == 1 and not avoid_sriov:
        return {"nodeSelector": {INSTANCE_TYPE_LABEL: shapes[0], **required}}
    expressions = [{"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": list(shapes)}]
    expressions += [{"key": k, "operator": "In", "values": [v]} for k, v in required.items()]
    if avoid_sriov:
        expressions.append({"key": RDMA_PATH_LABEL, "operator": "NotIn", "values": [RDMA_PATH_SRIOV]})
    term = {"matchExpressions": expressions}
    return {
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
    }


# The dranet chart's default tolerations: any NoSchedule taint (which covers nvidia.com/gpu).
DRANET_DEFAULT_TOLERATIONS: list[dict[str, str]] = [{"operator": "Exists", "effect": "NoSchedule"}]


def dranet_values(
    config: DranetConfig, shapes: Sequence[str], taints: Sequence[Taint] = (), avoid_sriov: bool = False
) -> dict[str, Any]:
    """The dranet chart values of seed 000, plus only what the stack changes.

    The chart's default tolerations cover NoSchedule taints; pools with other effects (NoExecute,
    PreferNoSchedule) add theirs, or DRANET would not run on those nodes. In a stack with SR-IOV
    pools (``avoid_sriov``) DRANET stays off their nodes.
    """
    values: dict[str, Any] = {
        "image": {"tag": config.image_tag or config.chart_version},
        **node_placement(shapes, avoid_sriov=avoid_sriov),
    }
    charts.set_value(values, charts.DRANET_PROVIDER_HINT_VALUE, charts.DRANET_OKE_HINT)
    if config.child_range != cidr.DEFAULT_CHILD_RANGE:
        charts.set_value(values, charts.DRANET_CHILD_RANGE_VALUE, str(config.child_range))
    if config.native_infiniband:
        charts.set_value(values, "args.moveIBInterfaces", False)
    others = [t for t in taints if t.effect != "NoSchedule"]
    if others:
        values["tolerations"] = DRANET_DEFAULT_TOLERATIONS + tolerations(others)
    if config.mount_oca_config:
        values["extraVolumes"] = [
            {"name": "oca-hpc-config", "hostPath": {"path": OCA_CONFIG_DIR, "type": "DirectoryOrCreate"}}
        ]
        values["extraVolumeMounts"] = [
            {"name": "oca-hpc-config", "mountPath": OCA_CONFIG_DIR, "readOnly": True}
        ]
    return _documented(values, charts.DRANET_VALUE_PATHS, charts.DRANET_CHART_NAME)


def gpu_driver_values(
    shapes: Sequence[str], taints: Sequence[Taint], avoid_sriov: bool = False
) -> dict[str, Any]:
    """The NVIDIA GPU DRA driver values of seed 000: GPUs on, compute domains off, on the GPU pools.

    In a stack with SR-IOV pools (``avoid_sriov``) the kubelet plugin also requires the label that turns
    the device plugin off, which only DRANET pools carry: SR-IOV nodes keep the device plugin, and the
    two must never serve the same GPUs. (A nodeSelector, not an affinity, keeps the chart's default
    affinity on the GPU Operator's labels.)
    """
    require = {DEVICE_PLUGIN_LABEL: DEVICE_PLUGIN_OFF} if avoid_sriov else None
    kubelet_plugin: dict[str, Any] = {**node_placement(shapes, require)}
    if taints:
        kubelet_plugin["tolerations"] = tolerations(list(taints))
    values = {
        "nvidiaDriverRoot": "/",
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        "kubeletPlugin": kubelet_plugin,
    }
    return _documented(values, charts.NVIDIA_GPU_VALUE_PATHS, charts.NVIDIA_GPU_RELEASE)


def _documented(values: dict[str, Any], documented: frozenset[str], chart: str) -> dict[str, Any]:
    unknown = charts.undocumented_value_paths(values, documented)
    if unknown:
        raise ChartValuesError(f"{chart} chart values have undocumented keys: {', '.join(unknown)}")
    return values


@dataclass
class DranetArgs:
    config: DranetConfig
    """Validated DRANET config."""
    shapes: Sequence[str]
    """Shapes of the GPU pools DRANET runs on."""
    taints: Sequence[Taint]
    """Taints of those pools."""
    provider: k8s.Provider
    """Provider of the target cluster."""
    node_pools: Sequence[pulumi.Resource] = field(default_factory=list)
    """The pools to wait for: the DaemonSet is only useful once the nodes exist."""
    avoid_sriov: bool = False
    """The stack has SR-IOV pools: keep off their nodes."""


class Dranet(pulumi.ComponentResource):
    """DeviceClass `dra.net` and the dranet Helm release in kube-system."""

    device_class: pulumi.Output[str]
    release_name: pulumi.Output[str | None]

    def __init__(self, name: str, args: DranetArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(resource_types.DRANET_COMPONENT, name, None, opts)
        values = dranet_values(args.config, args.shapes, args.taints, args.avoid_sriov)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        # The chart creates no DeviceClass; claims name this one (seed 000 deviceclass.yaml).
        device_class = k8s.resource.v1.DeviceClass(
            f"{name}-device-class",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=attributes.DRANET_DEVICE_CLASS),
            spec=to_input_type(
                k8s.resource.v1.DeviceClassSpecArgs,
                {"selectors": [{"cel": {"expression": attributes.DRANET_CLASS_SELECTOR}}]},
            ),
            opts=child,
        )
        release = k8s.helm.v3.Release(
            f"{name}-release",
            k8s.helm.v3.ReleaseArgs(
                name=charts.DRANET_RELEASE,
                chart=charts.DRANET_CHART,
                version=args.config.chart_version,
                namespace=charts.DRANET_NAMESPACE,
                values=values,
                timeout=RELEASE_TIMEOUT_SECONDS,
            ),
            opts=pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(depends_on=list(args.node_pools))
            ),
        )
        self.device_class = device_class.metadata.apply(lambda m: m.name or attributes.DRANET_DEVICE_CLASS)
        self.release_name = release.name
        self.register_outputs({"deviceClass": self.device_class, "releaseName": self.release_name})


@dataclass
class NvidiaGpuDraDriverArgs:
    config: GpuDriverConfig
    """Validated driver config."""
    shapes: Sequence[str]
    """Shapes of the GPU pools the kubelet plugin runs on."""
    taints: Sequence[Taint]
    """Taints of those pools, which the kubelet plugin tolerates."""
    provider: k8s.Provider
    """Provider of the target cluster."""
    node_pools: Sequence[pulumi.Resource] = field(default_factory=list)
    """The pools to wait for."""
    avoid_sriov: bool = False
    """The stack has SR-IOV pools: keep off their nodes."""


class NvidiaGpuDraDriver(pulumi.ComponentResource):
    """The dra-driver-nvidia-gpu release; the chart creates the `gpu.nvidia.com` DeviceClass."""

    device_class: str
    release_name: pulumi.Output[str | None]

    def __init__(
        self, name: str, args: NvidiaGpuDraDriverArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.GPU_DRIVER_COMPONENT, name, None, opts)
        release = k8s.helm.v3.Release(
            f"{name}-release",
            k8s.helm.v3.ReleaseArgs(
                name=charts.NVIDIA_GPU_RELEASE,
                chart=charts.NVIDIA_GPU_CHART,
                version=args.config.chart_version,
                namespace=args.config.namespace,
                create_namespace=True,
                values=gpu_driver_values(args.shapes, args.taints, args.avoid_sriov),
                timeout=RELEASE_TIMEOUT_SECONDS,
            ),
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.provider, depends_on=list(args.node_pools)
            ),
        )
        self.device_class = attributes.NVIDIA_GPU_DEVICE_CLASS
        self.release_name = release.name
        self.register_outputs({"deviceClass": self.device_class, "releaseName": self.release_name})
