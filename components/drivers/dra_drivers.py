"""The two DRA drivers: DRANET for the rails and the NVIDIA DRA driver for the GPUs, as Helm releases.

Values are built by plain functions (`dranet_values`, `gpu_driver_values`) and checked against the
keys each chart documents before a release is declared: the dranet chart rejects unknown values.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict, TypeVar

import pulumi
import pulumi_kubernetes as k8s

from components.common.namespaces import labelled_namespace
from components.component_inputs import (
    ComponentInputError,
    PoolTaint,
    schema_name,
    taint_inputs,
    taints,
    validated,
)
from components.typed_inputs import to_input_type
from oke_gpu_rdma.common import charts, images, pod_security, resource_types
from oke_gpu_rdma.drivers import compute_domains, device_plugin, dranet, gpu_operator_chart, nvidia_gpu
from oke_gpu_rdma.health import health_marks as health
from oke_gpu_rdma.nodes import cidr_rules as cidr
from oke_gpu_rdma.nodes import provisioning
from oke_gpu_rdma.nodes.labels import POOL_LABEL
from stack_config.drivers import gpu_operator_plan
from stack_config.drivers.driver_settings import DranetConfig, GpuDriverConfig, GpuOperatorConfig
from stack_config.nodes.pool_settings import Taint, tolerations
from stack_config.problems import ConfigProblem

M = TypeVar("M", DranetConfig, GpuDriverConfig)

# Where Oracle Cloud Agent keeps its RDMA network config (seed 003).
OCA_CONFIG_DIR = "/etc/oracle-cloud-agent/plugins/oci-hpc/oci-hpc-configure"
# Their DaemonSets run on the GPU nodes: Helm waits for them as long as one bare-metal node takes to come up
# (oke_gpu_rdma/nodes/provisioning.py), not its 300 s default.
RELEASE_TIMEOUT_SECONDS = provisioning.GPU_RELEASE_WAIT_SECONDS


class ChartValuesError(ValueError):
    """Values with keys the chart does not document."""


def node_placement(pools: Sequence[str]) -> dict[str, Any]:
    """Chart values (an `affinity`) that put a driver's pods on the nodes of these GPU pools.

    The pools' nodes carry POOL_LABEL from their creation (an initial node label), so the selection holds
    from the first boot and never reaches pools of another kind. For the NVIDIA driver this also replaces
    the chart's default kubelet-plugin affinity, which waits for the GPU Operator's
    `nvidia.com/gpu.present` label.
    """
    term = {"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": list(pools)}]}
    return {
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
    }


# The dranet chart's default tolerations: any NoSchedule taint (which covers nvidia.com/gpu).
DRANET_DEFAULT_TOLERATIONS: list[dict[str, str]] = [{"operator": "Exists", "effect": "NoSchedule"}]


def dranet_values(config: DranetConfig, pools: Sequence[str], taints: Sequence[Taint] = ()) -> dict[str, Any]:
    """The dranet chart values of seed 000, plus only what the stack changes.

    The chart's default tolerations cover NoSchedule taints; pools with other effects (NoExecute,
    PreferNoSchedule) add theirs, or DRANET would not run on those nodes. Only the DRANET pools are
    selected, so SR-IOV pools never run it.
    """
    values: dict[str, Any] = {
        "image": {"tag": config.image_tag or config.chart_version},
        **node_placement(pools),
    }
    charts.set_value(values, dranet.PROVIDER_HINT_VALUE, dranet.OKE_HINT)
    if config.child_range != cidr.DEFAULT_CHILD_RANGE:
        charts.set_value(values, dranet.CHILD_RANGE_VALUE, str(config.child_range))
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
    return _documented(values, dranet.VALUE_PATHS, dranet.CHART_NAME)


def gpu_driver_values(
    pools: Sequence[str], taints: Sequence[Taint], health_checks: bool = False
) -> dict[str, Any]:
    """The NVIDIA GPU DRA driver values of seed 000: GPUs on, compute domains off, on the GPU pools; with
    ``health_checks`` the NVML health monitor that taints a bad GPU in the driver's ResourceSlice
    (oke_gpu_rdma/drivers/nvidia_gpu.py HEALTH_*). IMEX mode hostManaged, whether or not the ComputeDomain release
    runs: this release then never renders the IMEX daemons' fixed-name RBAC, which that release owns, so it can be
    added or removed in either order (drivers/nvidia_gpu.py COMPUTE_DOMAIN_RELEASE)."""
    kubelet_plugin: dict[str, Any] = {**node_placement(pools)}
    if taints:
        kubelet_plugin["tolerations"] = tolerations(list(taints))
    values: dict[str, Any] = {
        "nvidiaDriverRoot": "/",
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        "kubeletPlugin": kubelet_plugin,
    }
    charts.set_value(values, nvidia_gpu.IMEX_MODE_VALUE, nvidia_gpu.IMEX_MODE_WITHOUT_DAEMONS)
    if health_checks:
        charts.set_value(values, nvidia_gpu.HEALTH_FEATURE_GATE_VALUE, True)
    return _documented(values, nvidia_gpu.VALUE_PATHS, nvidia_gpu.RELEASE)


def compute_domain_values(
    pools: Sequence[str], taints: Sequence[Taint], system_pool: str | None
) -> dict[str, Any]:
    """The ComputeDomain release's values: compute domains only (GPUs come from the GPU release), its kubelet
    plugin on the multi-node NVLink ``pools`` only and its controller on the system pool (untainted; without one,
    the chart's placement). Its `gpuCliqueLabelEnabled` stays off (the chart's default): the GPU Operator's GPU
    feature discovery already writes nvidia.com/gpu.clique on these nodes, and the kubelet plugin would remove the
    label whenever it stops (cmd/compute-domain-kubelet-plugin/computedomain.go l. 181-186)."""
    kubelet_plugin: dict[str, Any] = {**node_placement(pools)}
    if taints:
        kubelet_plugin["tolerations"] = tolerations(list(taints))
    values: dict[str, Any] = {
        "nameOverride": nvidia_gpu.COMPUTE_DOMAIN_RELEASE,
        "nvidiaDriverRoot": "/",
        "resources": {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}},
        "kubeletPlugin": kubelet_plugin,
    }
    if system_pool is not None:
        values["controller"] = {"nodeSelector": {POOL_LABEL: system_pool}}
    return _documented(values, nvidia_gpu.VALUE_PATHS, nvidia_gpu.COMPUTE_DOMAIN_RELEASE)


def _documented(values: dict[str, Any], documented: frozenset[str], chart: str) -> dict[str, Any]:
    unknown = charts.undocumented_value_paths(values, documented)
    if unknown:
        raise ChartValuesError(f"{chart} chart values have undocumented keys: {', '.join(unknown)}")
    return values


class DranetArgs(TypedDict):
    """The inputs of DRANET. The Kubernetes provider of the cluster comes from the resource options
    (``providers``); the releases wait for the component's ``depends_on`` (the GPU node pools)."""

    pools: list[str]
    """Names of the GPU node pools (their oke-gpu-rdma/node-pool label) DRANET runs on."""
    taints: NotRequired[list[PoolTaint]]
    """Taints of those pools, which DRANET's pods tolerate."""
    chart_version: NotRequired[str]
    """Version of the dranet Helm chart."""
    image_tag: NotRequired[str]
    """DRANET image tag (default: the chart version)."""
    child_range: NotRequired[str]
    """The IPvlan child range of the rails (unset: DRANET's default); it must overlap no VCN, pod or service range."""
    native_infiniband: NotRequired[bool]
    """Rails are native InfiniBand: moveIBInterfaces false."""
    mount_oca_config: NotRequired[bool]
    """Mount the Oracle Cloud Agent RDMA config read-only (images that use another RDMA network)."""


class NvidiaGpuDraDriverArgs(TypedDict):
    """The inputs of the NVIDIA GPU DRA driver. The Kubernetes provider of the cluster comes from the
    resource options (``providers``); the release waits for the component's ``depends_on``."""

    pools: list[str]
    """Names of the GPU node pools (their oke-gpu-rdma/node-pool label) the kubelet plugin runs on."""
    taints: NotRequired[list[PoolTaint]]
    """Taints of those pools, which the kubelet plugin tolerates."""
    chart_version: NotRequired[str]
    """Version of dra-driver-nvidia-gpu."""
    namespace: NotRequired[str]
    """Namespace of the driver (created)."""
    health_checks: NotRequired[bool]
    """The driver's NVML health checks (feature gate NVMLDeviceHealthCheck; driver v0.4.0 and later): a GPU with a
    fatal XID or lost is tainted NoSchedule in its ResourceSlice."""


class NvidiaComputeDomainDriverArgs(TypedDict):
    """The inputs of the ComputeDomain release of the NVIDIA DRA driver. The release waits for the component's
    ``depends_on``: the pools and the GPU release, which gives up the IMEX daemons' RBAC first."""

    pools: list[str]
    """Names of the multi-node NVLink pools (their oke-gpu-rdma/node-pool label) the kubelet plugin runs on."""
    taints: NotRequired[list[PoolTaint]]
    """Taints of those pools, which the kubelet plugin tolerates (the IMEX daemons tolerate every taint)."""
    system_pool: NotRequired[str]
    """The system pool the controller runs on (unset: the chart's placement)."""
    chart_version: NotRequired[str]
    """Version of the chart: the GPU release's."""
    namespace: NotRequired[str]
    """Namespace of the driver (the GPU release's, which creates it)."""


def dranet_args(config: DranetConfig, pools: Sequence[str], taints: Sequence[Taint]) -> DranetArgs:
    """The Args of the stack's validated DRANET config on ``pools`` (what __main__.py declares)."""
    args = DranetArgs(
        pools=list(pools),
        taints=taint_inputs(taints),
        chart_version=config.chart_version,
        child_range=str(config.child_range),
        native_infiniband=config.native_infiniband,
        mount_oca_config=config.mount_oca_config,
    )
    if config.image_tag is not None:
        args["image_tag"] = config.image_tag
    return args


def gpu_driver_args(
    config: GpuDriverConfig,
    pools: Sequence[str],
    taints: Sequence[Taint],
    health_checks: bool = False,
) -> NvidiaGpuDraDriverArgs:
    """The Args of the stack's validated GPU DRA driver config on ``pools`` (``taints``: the pools' and the
    rail health agent's node mark, which the kubelet plugin tolerates)."""
    args = NvidiaGpuDraDriverArgs(
        pools=list(pools),
        taints=taint_inputs(taints),
        chart_version=config.chart_version,
        namespace=config.namespace,
    )
    if health_checks:
        args["health_checks"] = True
    return args


def _driver_settings(
    model: type[M], args: Mapping[str, Any], keys: Sequence[str], component: str, name: str
) -> tuple[M, list[Taint]]:
    """The driver's settings checked by its stack-config model, and its pools' taints."""
    data = {schema_name(key): args.get(key) for key in keys}
    config = validated(model, data, component, name)
    if not args.get("pools"):
        raise ComponentInputError(
            component,
            name,
            [ConfigProblem("pools", None, "is empty; name the GPU node pools the driver runs on")],
        )
    return config, taints(args.get("taints", []), component, name)


def _release(
    name: str,
    parent: pulumi.Resource,
    opts: pulumi.ResourceOptions | None,
    release: str,
    chart: str,
    version: str,
    namespace: str,
    values: dict[str, Any],
    create_namespace: bool | None = None,
    repository: str | None = None,
    namespace_level: pod_security.Level = pod_security.NODE_AGENTS_LEVEL,
) -> k8s.helm.v3.Release:
    """A component's Helm release (``repository``: a chart repository URL, for a chart not named by an
    OCI reference), declared once what the component depends on (its node pools) exists: a child does not
    wait for its parent's dependencies by itself. ``opts`` may also name the provider when the component
    is not given one through its own options.

    With ``create_namespace`` the component declares the namespace, labelled with the Pod Security level
    ``namespace_level`` (by default the node agents', privileged; components/common/namespaces.py), instead of Helm's
    `createNamespace`."""
    after = list(opts.depends_on) if opts and isinstance(opts.depends_on, Sequence) else []
    if create_namespace:
        after.append(
            labelled_namespace(
                f"{name}-namespace",
                namespace,
                namespace_level,
                pulumi.ResourceOptions(parent=parent, provider=opts.provider if opts else None),
            )
        )
    return k8s.helm.v3.Release(
        f"{name}-release",
        k8s.helm.v3.ReleaseArgs(
            name=release,
            chart=chart,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=repository) if repository else None,
            version=version,
            namespace=namespace,
            values=values,
            timeout=RELEASE_TIMEOUT_SECONDS,
        ),
        opts=pulumi.ResourceOptions(
            parent=parent, provider=opts.provider if opts else None, depends_on=after or None
        ),
    )


class Dranet(pulumi.ComponentResource):
    """DRANET, the DRA driver for the RDMA rails: DeviceClass `dra.net` and the dranet Helm release in
    kube-system, on the named GPU pools."""

    device_class: pulumi.Output[str]
    """The DeviceClass claims name for rails (dra.net)."""
    release_name: pulumi.Output[str | None]
    """Name of the Helm release."""

    def __init__(self, name: str, args: DranetArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(resource_types.DRANET_COMPONENT, name, None, opts)
        keys = ("chart_version", "image_tag", "child_range", "native_infiniband", "mount_oca_config")
        config, pool_taints = _driver_settings(DranetConfig, args, keys, "Dranet", name)
        values = dranet_values(config, args["pools"], pool_taints)
        # The chart creates no DeviceClass; claims name this one (seed 000 deviceclass.yaml).
        device_class = k8s.resource.v1.DeviceClass(
            f"{name}-device-class",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=dranet.DEVICE_CLASS),
            spec=to_input_type(
                k8s.resource.v1.DeviceClassSpecArgs,
                {"selectors": [{"cel": {"expression": dranet.CLASS_SELECTOR}}]},
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        release = _release(
            name,
            self,
            opts,
            dranet.RELEASE,
            dranet.CHART,
            config.chart_version,
            dranet.NAMESPACE,
            values,
        )
        self.device_class = device_class.metadata.apply(lambda m: m.name or dranet.DEVICE_CLASS)
        self.release_name = release.name
        self.register_outputs({"deviceClass": self.device_class, "releaseName": self.release_name})


class NvidiaGpuDraDriver(pulumi.ComponentResource):
    """The NVIDIA DRA driver for GPUs (dra-driver-nvidia-gpu release) on the named GPU pools; the chart
    creates the `gpu.nvidia.com` DeviceClass."""

    device_class: pulumi.Output[str]
    """The DeviceClass claims name for GPUs (gpu.nvidia.com)."""
    release_name: pulumi.Output[str | None]
    """Name of the Helm release."""

    def __init__(
        self, name: str, args: NvidiaGpuDraDriverArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.GPU_DRIVER_COMPONENT, name, None, opts)
        config, pool_taints = _driver_settings(
            GpuDriverConfig, args, ("chart_version", "namespace"), "NvidiaGpuDraDriver", name
        )
        health_checks = bool(args.get("health_checks", False))
        if health_checks and not health.driver_has_health_checks(config.chart_version):
            problem = ConfigProblem(
                "healthChecks",
                True,
                f"chart version {config.chart_version} has no NVML health checks (from "
                f"v{nvidia_gpu.HEALTH_SINCE_VERSION}); set chartVersion {nvidia_gpu.DEFAULT_VERSION} or healthChecks false",
            )
            raise ComponentInputError("NvidiaGpuDraDriver", name, [problem])
        values = gpu_driver_values(args["pools"], pool_taints, health_checks)
        release = _release(
            name,
            self,
            opts,
            nvidia_gpu.RELEASE,
            nvidia_gpu.CHART,
            config.chart_version,
            config.namespace,
            values,
            True,
        )
        self.device_class = pulumi.Output.from_input(nvidia_gpu.DEVICE_CLASS)
        self.release_name = release.name
        self.register_outputs({"deviceClass": self.device_class, "releaseName": self.release_name})


class NvidiaComputeDomainDriver(pulumi.ComponentResource):
    """ComputeDomains (multi-node NVLink): a second release of dra-driver-nvidia-gpu with only its compute-domain
    controller and kubelet plugin; the chart creates the `compute-domain-default-channel.nvidia.com` and
    `compute-domain-daemon.nvidia.com` DeviceClasses (the ComputeDomain CRD is in the chart's crds/, which Helm installs
    with whichever release comes first)."""

    channel_device_class: pulumi.Output[str]
    """The DeviceClass of a ComputeDomain's channels (its controller's claim templates name it)."""
    release_name: pulumi.Output[str | None]
    """Name of the Helm release."""

    def __init__(
        self, name: str, args: NvidiaComputeDomainDriverArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.COMPUTE_DOMAIN_DRIVER_COMPONENT, name, None, opts)
        config, pool_taints = _driver_settings(
            GpuDriverConfig, args, ("chart_version", "namespace"), "NvidiaComputeDomainDriver", name
        )
        values = compute_domain_values(args["pools"], pool_taints, args.get("system_pool"))
        release = _release(
            name,
            self,
            opts,
            nvidia_gpu.COMPUTE_DOMAIN_RELEASE,
            nvidia_gpu.CHART,
            config.chart_version,
            config.namespace,
            values,
        )
        self.channel_device_class = pulumi.Output.from_input(compute_domains.CHANNEL_DEVICE_CLASS)
        self.release_name = release.name
        self.register_outputs(
            {"channelDeviceClass": self.channel_device_class, "releaseName": self.release_name}
        )


def compute_domain_driver_args(
    config: GpuDriverConfig, pools: Sequence[str], taints: Sequence[Taint], system_pool: str | None
) -> NvidiaComputeDomainDriverArgs:
    """The Args of the ComputeDomain release on the multi-node NVLink ``pools``."""
    args = NvidiaComputeDomainDriverArgs(
        pools=list(pools),
        taints=taint_inputs(taints),
        chart_version=config.chart_version,
        namespace=config.namespace,
    )
    if system_pool is not None:
        args["system_pool"] = system_pool
    return args


def gpu_operator_values(
    taints: Sequence[Taint],
    device_plugin: bool = True,
    service_monitor_labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """GPU Operator values: the image has the GPU driver (driver off); its DaemonSets tolerate the pools' taints;
    its device plugin is off when ``device_plugin`` is False (stack_config/drivers/gpu_operator_plan.py says when and
    why: the validator's plugin-validation); with ``service_monitor_labels`` it creates the DCGM exporter's
    ServiceMonitor with them (monitoring.enabled)."""
    values = gpu_operator_plan.operator_values(taints, device_plugin)
    if service_monitor_labels is not None:
        values |= gpu_operator_plan.service_monitor_values(service_monitor_labels)
    return _documented(values, gpu_operator_chart.VALUE_PATHS, gpu_operator_chart.CHART_NAME)


def device_plugin_values(
    taints: Sequence[Taint], chart_version: str = device_plugin.DEFAULT_VERSION
) -> dict[str, Any]:
    """NVIDIA device plugin chart values for the pools that take GPUs from a device plugin; at the default
    chart version its image by the digest NVIDIA publishes (oke_gpu_rdma/common/images.py), the tag kept."""
    values = gpu_operator_plan.device_plugin_values(taints)
    if chart_version == device_plugin.DEFAULT_VERSION and images.digest_of(device_plugin.IMAGE):
        charts.set_value(values, device_plugin.IMAGE_TAG_VALUE, images.pinned_tag(device_plugin.IMAGE))
    return _documented(values, device_plugin.VALUE_PATHS, device_plugin.CHART_NAME)


@dataclass
class GpuOperatorArgs:
    config: GpuOperatorConfig
    """Validated GPU Operator config."""
    taints: Sequence[Taint]
    """Taints of the GPU pools, which its DaemonSets tolerate."""
    provider: k8s.Provider
    """Provider of the target cluster."""
    node_pools: Sequence[pulumi.Resource] = field(default_factory=list)
    """The pools to wait for."""
    device_plugin: bool = True
    """The operator's own device plugin: off as soon as a pool takes GPUs from the NVIDIA DRA driver."""
    service_monitor_labels: Mapping[str, str] | None = None
    """With monitoring: the labels of the DCGM exporter's ServiceMonitor (the ones the Prometheus selects)."""
    after: Sequence[pulumi.Resource] = field(default_factory=list)
    """What else the release waits for (the monitoring release, whose CRDs the ServiceMonitor needs)."""


class GpuOperator(pulumi.ComponentResource):
    """The NVIDIA GPU Operator release (official chart), with the image's GPU driver."""

    release_name: pulumi.Output[str | None]

    def __init__(self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(resource_types.GPU_OPERATOR_COMPONENT, name, None, opts)
        release = _release(
            name,
            self,
            pulumi.ResourceOptions(provider=args.provider, depends_on=[*args.node_pools, *args.after]),
            gpu_operator_chart.CHART_NAME,
            gpu_operator_chart.CHART_NAME,
            args.config.chart_version,
            args.config.namespace,
            gpu_operator_values(args.taints, args.device_plugin, args.service_monitor_labels),
            create_namespace=True,
            repository=gpu_operator_chart.REPO,
        )
        self.release_name = release.name
        self.register_outputs({"releaseName": self.release_name})


@dataclass
class DevicePluginArgs:
    taints: Sequence[Taint]
    """Taints of the pools it serves, which it tolerates."""
    provider: k8s.Provider
    """Provider of the target cluster."""
    node_pools: Sequence[pulumi.Resource] = field(default_factory=list)
    """The pools to wait for."""
    chart_version: str = device_plugin.DEFAULT_VERSION
    operator: pulumi.Resource | None = None
    """The GPU Operator the stack installs: its toolkit and `nvidia` RuntimeClass, which the plugin's pods use."""


class NvidiaDevicePlugin(pulumi.ComponentResource):
    """NVIDIA's device plugin chart, for the pools that take nvidia.com/gpu when the operator's plugin is off."""

    release_name: pulumi.Output[str | None]

    def __init__(self, name: str, args: DevicePluginArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(resource_types.DEVICE_PLUGIN_COMPONENT, name, None, opts)
        after = [*args.node_pools, *([args.operator] if args.operator is not None else [])]
        release = _release(
            name,
            self,
            pulumi.ResourceOptions(provider=args.provider, depends_on=after),
            device_plugin.RELEASE,
            device_plugin.CHART_NAME,
            args.chart_version,
            device_plugin.NAMESPACE,
            device_plugin_values(args.taints, args.chart_version),
            create_namespace=True,
            repository=device_plugin.REPO,
        )
        self.release_name = release.name
        self.register_outputs({"releaseName": self.release_name})
