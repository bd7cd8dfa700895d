"""The stack config's DRA driver keys: `dranet`, `gpuDriver` (with ComputeDomains) and `gpuOperator`."""

from __future__ import annotations

from pydantic import (
    Field,
    StrictBool,
)

from oke_gpu_rdma.drivers import dranet, gpu_operator_chart, nvidia_gpu
from oke_gpu_rdma.drivers.attributes import NVIDIA_GPU_RESOURCE
from oke_gpu_rdma.nodes import cidr_rules as cidr
from stack_config.settings_types import ChildRange, ConfigModel, DnsLabel


class DranetConfig(ConfigModel):
    """DRANET, the DRA driver for the rails (Helm chart in kube-system)."""

    enabled: StrictBool = Field(True, description="Deploy DRANET and its DeviceClass.")
    chart_version: str = Field(
        dranet.DEFAULT_VERSION, alias="chartVersion", description="Version of the dranet Helm chart."
    )
    image_tag: str | None = Field(
        None, alias="imageTag", description="DRANET image tag; defaults to chartVersion."
    )
    child_range: ChildRange = Field(
        cidr.DEFAULT_CHILD_RANGE,
        alias="childRange",
        description=f"{dranet.CHILD_RANGE_OPTION}: the IPvlan child range of the rails (DRANET default "
        f"{cidr.DEFAULT_CHILD_RANGE}); passed to the chart only when not the default.",
    )
    native_infiniband: StrictBool = Field(
        False, alias="nativeInfiniband", description="Rails are native InfiniBand: moveIBInterfaces false."
    )
    mount_oca_config: StrictBool = Field(
        False,
        alias="mountOcaConfig",
        description="Mount the Oracle Cloud Agent RDMA config read-only (images that use another RDMA network).",
    )


class ComputeDomainsConfig(ConfigModel):
    """The driver's ComputeDomains (multi-node NVLink through IMEX channels) on the pools of shapes whose shape
    file states multi-node NVLink (docs/compute-domains.md)."""

    enabled: StrictBool | None = Field(
        None,
        description="A second release of the driver with only its ComputeDomain controller (on the system pool) "
        "and kubelet plugin (on those pools); default: on when the stack has such a pool.",
    )


class GpuDriverConfig(ConfigModel):
    """The NVIDIA DRA driver for GPUs; the GPU pools then carry the label that turns the device plugin off."""

    enabled: StrictBool = Field(
        True, description=f"Deploy the driver; GPUs then come from DRA claims, not {NVIDIA_GPU_RESOURCE}."
    )
    chart_version: str = Field(
        nvidia_gpu.DEFAULT_VERSION,
        alias="chartVersion",
        description="Version of dra-driver-nvidia-gpu.",
    )
    namespace: DnsLabel = Field(nvidia_gpu.NAMESPACE, description="Namespace of the driver.")
    compute_domains: ComputeDomainsConfig = Field(
        default_factory=ComputeDomainsConfig,
        alias="computeDomains",
        description="ComputeDomains for multi-node NVLink.",
    )


class GpuOperatorConfig(ConfigModel):
    """The NVIDIA GPU Operator: GPU feature discovery (`nvidia.com/gpu.present`), the container toolkit, and
    the device plugin, which stays off on the DRA pools through their initial node label."""

    enabled: StrictBool | None = Field(
        None,
        description="Deploy the GPU Operator; default: on when the stack creates the cluster, off for an "
        "existing cluster (which usually runs one already, as the seed cluster did).",
    )
    chart_version: str = Field(
        gpu_operator_chart.DEFAULT_VERSION,
        alias="chartVersion",
        description="Version of the gpu-operator chart.",
    )
    namespace: DnsLabel = Field(
        gpu_operator_chart.NAMESPACE, description="Namespace of the operator (created)."
    )
