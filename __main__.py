"""RDMA GPU nodes on OKE, with rails from DRA (DRANET) or SR-IOV VFs: read the stack config, build the parts,
export outputs."""

import pulumi

from components.claims.rdma_workloads import (
    GpuRailClaimTemplates,
    RdmaWorkloadNamespace,
    RdmaWorkloadNamespaceArgs,
    claim_template_args,
)
from components.drivers.dra_drivers import (
    DevicePluginArgs,
    Dranet,
    GpuOperator,
    GpuOperatorArgs,
    NvidiaComputeDomainDriver,
    NvidiaDevicePlugin,
    NvidiaGpuDraDriver,
    compute_domain_driver_args,
    dranet_args,
    gpu_driver_args,
)
from components.health import fabric_checks
from components.health.acceptance_jobs import (
    NVLINK_GATE_DOMAIN,
    AcceptanceJobs,
    AcceptanceJobsArgs,
    GateReport,
    NvlinkGate,
)
from components.health.mpijob_specs import JobQueue
from components.health.node_remediation import NodeRemediation, NodeRemediationArgs
from components.health.rail_health import RailHealthAgent, RailHealthAgentArgs
from components.monitoring.monitoring_stack import Monitoring, MonitoringArgs, selector_labels
from components.monitoring.monitoring_stack import objects_namespace as monitoring_objects_namespace
from components.nodes.cluster import OkeCluster, cluster_args, read_existing_cluster
from components.nodes.gpu_node_pool import (
    ComputeClusterLaunchPolicy,
    ComputeClusterLaunchPolicyArgs,
    RdmaGpuNodePool,
    oci_provider_settings,
    pool_args,
)
from components.nodes.network import Network, network_args
from components.nodes.node_pool_inputs import NodePoolTarget
from components.nodes.system_pool import SystemNodePool, system_pool_args
from components.scheduling.kueue import Kueue, flavor_taint_inputs, kueue_args
from components.sriov.network_operator import (
    NetworkOperator,
    NetworkOperatorArgs,
    SriovRailNetworks,
    SriovRailNetworksArgs,
)
from components.sriov.sriov_acceptance import SriovAcceptanceJobs, SriovAcceptanceJobsArgs
from oke_gpu_rdma.drivers import dranet, nvidia_gpu
from oke_gpu_rdma.drivers.compute_domains import CHANNEL_DEVICE_CLASS
from oke_gpu_rdma.drivers.nccl import NCCL_SETTINGS
from oke_gpu_rdma.health import fabric_check
from oke_gpu_rdma.health import health_marks as health
from oke_gpu_rdma.health.acceptance import nvlink_threshold, rail_ceiling_gbs
from oke_gpu_rdma.nodes.labels import GPU_MEMORY_FABRIC_LABEL
from oke_gpu_rdma.nodes.shape_catalog import CATALOG, multi_node_nvlink
from stack_config.claims import template_requests
from stack_config.drivers import compute_domain_plan, gpu_operator_plan
from stack_config.health import health_plan, remediation_plan
from stack_config.loading import load_program_stack, stack_source
from stack_config.monitoring.monitoring_plan import rule_settings
from stack_config.nodes import cluster_version
from stack_config.problems import ConfigError, ConfigProblem
from stack_config.settings_types import MIN_KUBERNETES_MINOR, kubernetes_minor

stack = pulumi.get_stack()
try:
    valid_stack = load_program_stack(pulumi.runtime.get_config_env(), stack)
except ConfigError as err:
    # RunError ends the program with just this message: no traceback, nothing declared.
    raise pulumi.RunError(str(err)) from None

config = valid_stack.config
try:
    # Read before anything is declared: a bad value stops the program with nothing created.
    provider_settings = oci_provider_settings()
except pulumi.ConfigTypeError as err:  # e.g. oci:retryDurationSeconds: soon
    raise pulumi.RunError(str(err)) from None
existing_cluster = config.cluster.existing
if existing_cluster is not None:
    # The version and type OCI reports for the cluster, checked before anything is declared.
    try:
        running = read_existing_cluster(existing_cluster.id)
    except Exception as err:  # an invoke failure: OCI's own message, on one line
        problem = ConfigProblem(
            "cluster.existing.id",
            existing_cluster.id,
            f"OCI could not read this cluster ({' '.join(str(err).split())}); check the OCID, oci:region and "
            "the credentials",
        )
        raise pulumi.RunError(str(ConfigError(stack_source(stack), [problem]))) from None
    found = cluster_version.problems(existing_cluster, running)
    if found:
        raise pulumi.RunError(str(ConfigError(stack_source(stack), found)))
cluster_spec = config.cluster.spec
# The stack config validated the version's form, so the minor is known (the floor only satisfies the type).
cluster_minor = kubernetes_minor(cluster_spec.kubernetes_version) or MIN_KUBERNETES_MINOR
# The DRA drivers run on the rdma: dranet pools only; rdma: sriov pools get the NVIDIA Network Operator.
dra_pool_names = [pool.name for pool in config.dra_pools]
taints = list({t: None for pool in config.dra_pools for t in pool.taints})
sriov_taints = list({t: None for pool in config.sriov_pools for t in pool.taints})
# rdma: none pools take their GPUs from the GPU Operator's device plugin, which must tolerate their taints too.
railless_taints = list({t: None for pool in config.railless_pools for t in pool.taints})
# The node mark of the rail health agent (where it marks whole nodes): the DaemonSets on the DRANET pools tolerate
# it so their pods come back on a marked node; training pods and acceptance jobs do not.
rail_marks = health_plan.mark_taints(config)
# Where rails are marked per device: the pools whose nodes start rails-unmarked=true, which the agent keeps.
rails_unmarked = health_plan.rails_unmarked_pools(config)

# --- OCI: network, cluster, GPU node pools -------------------------------------------------------


def renamed(name: str) -> pulumi.ResourceOptions:
    """Options for a component whose logical name once carried the stack name, which URNs already hold.

    The alias keeps stacks created before the rename stable: no replacement; children follow, since
    their names start with the component's (the engine's inherited child aliases).
    """
    return pulumi.ResourceOptions(aliases=[pulumi.Alias(name=f"{stack}-{name}")])


network = Network(
    "network",
    network_args(
        config.compartment_id,
        config.network,
        vcn_native_pods=cluster_spec.cni_type == "OCI_VCN_IP_NATIVE",
        display_prefix=f"{stack}-network",
        protect=config.protect.network,
    ),
    opts=renamed("network"),
)
cluster = OkeCluster(
    "oke",
    cluster_args(
        config.compartment_id,
        config.cluster,
        vcn_id=network.vcn_id,
        api_endpoint_subnet_id=network.api_endpoint_subnet_id,
        load_balancer_subnet_id=network.load_balancer_subnet_id,
        api_endpoint_public=bool(config.network.create and config.network.create.api_endpoint_public),
        protect=config.protect.cluster,
        api_endpoint_nsg_id=network.api_endpoint_nsg_id,
        kms_key_id=config.encryption.kms_key_id if config.cluster.create is not None else None,
    ),
    opts=renamed("oke"),
)

pool_dependencies: list[pulumi.Resource] = []
if config.create_compute_cluster_policy:
    assert config.home_region is not None  # the stack config requires it with the policy
    pool_dependencies.append(
        ComputeClusterLaunchPolicy(
            "compute-cluster-launch",
            ComputeClusterLaunchPolicyArgs(
                compartment_id=config.compartment_id,
                home_region=config.home_region,
                policy_name=f"{stack}-compute-cluster-launch",
                provider_settings=provider_settings,
            ),
            opts=renamed("compute-cluster-launch"),
        )
    )

# The cluster every node pool joins, and the network its nodes and pods take.
pool_target = NodePoolTarget(
    compartment_id=config.compartment_id,
    cluster_id=cluster.cluster_id,
    kubernetes_version=cluster_spec.kubernetes_version,
    worker_subnet_id=network.worker_subnet_id,
    cni_type=cluster_spec.cni_type,
    pod_subnet_id=network.pod_subnet_id,
    worker_nsg_ids=tuple(i for i in [network.worker_nsg_id] if i is not None),
    pod_nsg_ids=tuple(i for i in [network.pod_nsg_id] if i is not None),
    kms_key_id=config.encryption.kms_key_id,
)
pools = {
    pool.name: RdmaGpuNodePool(
        pool.name,
        pool_args(
            pool,
            pool_target,
            gpus_from_dra=config.gpu_driver.enabled,
            sriov_rdma_mode=config.network_operator.rdma_mode,
            protect=config.protect.gpu_pools,
            rails_unmarked_label=pool.name in rails_unmarked,
        ),
        opts=pulumi.ResourceOptions(depends_on=pool_dependencies),
    )
    for pool in config.node_pools
}

# The untainted CPU pool for the pods every cluster runs (components/nodes/system_pool.py); what runs its
# controllers there waits for it as for the GPU pools.
system_nodes: list[pulumi.Resource] = []
if config.creates_system_pool:
    system_nodes.append(
        SystemNodePool(
            config.system_pool.name,
            system_pool_args(
                config.system_pool, pool_target, config.system_pool_ads, config.protect.system_pool
            ),
        )
    )

# --- Kubernetes: GPU Operator, DRA drivers, workload namespaces, aligned claim templates ----------

# --- Kubernetes: metrics, dashboards and alerts (monitoring.enabled) -------------------------------

monitoring_config = config.monitoring
monitoring: Monitoring | None = None
if monitoring_config.enabled:
    monitoring = Monitoring(
        "monitoring",
        MonitoringArgs(
            config=monitoring_config,
            rules=rule_settings(config),
            provider=cluster.provider,
            system_pool=config.system_pool.name if config.creates_system_pool else None,
            taints=list(dict.fromkeys([*taints, *sriov_taints, *railless_taints])),
            scrape_dranet=config.dranet.enabled and bool(config.dra_pools),
            remediation_namespace=config.health.remediation.namespace
            if config.health.remediation.enabled
            else None,
            compute_domain_namespace=config.gpu_driver.namespace
            if compute_domain_plan.enabled(config)
            else None,
            # Its node exporter runs on every pool; its controllers on the system pool.
            depends_on=[*pools.values(), *system_nodes],
        ),
    )

gpu_operator: GpuOperator | None = None
if config.deploys_gpu_operator:
    gpu_operator = GpuOperator(
        "gpu-operator",
        GpuOperatorArgs(
            config=config.gpu_operator,
            taints=list(dict.fromkeys([*taints, *sriov_taints, *railless_taints, *rail_marks])),
            provider=cluster.provider,
            node_pools=[*pools.values(), *system_nodes],
            # Off as soon as a pool's GPUs come from the DRA driver: the validator's plugin-validation would
            # crash-loop there (stack_config/drivers/gpu_operator_plan.py).
            device_plugin=gpu_operator_plan.operator_device_plugin(config),
            service_monitor_labels=selector_labels(monitoring_config) if monitoring is not None else None,
            after=[monitoring] if monitoring is not None else [],
        ),
    )
if gpu_operator_plan.separate_device_plugin(config):
    # The pools that still take nvidia.com/gpu (rdma: none, rdma: sriov) get NVIDIA's device plugin chart.
    plugin_pools = gpu_operator_plan.device_plugin_pools(config)
    NvidiaDevicePlugin(
        "device-plugin",
        DevicePluginArgs(
            taints=list(dict.fromkeys(t for pool in plugin_pools for t in pool.taints)),
            provider=cluster.provider,
            node_pools=[pools[pool.name] for pool in plugin_pools],
            operator=gpu_operator,
        ),
    )

device_classes: list[str] = []
drivers: list[pulumi.Resource] = []


def on_dra_pools() -> pulumi.ResourceOptions:
    """A DRA driver on the rdma: dranet pools runs on the cluster, declared once the pools exist."""
    return pulumi.ResourceOptions(
        providers=[cluster.provider], depends_on=[pools[name] for name in dra_pool_names]
    )


if config.dranet.enabled:
    drivers.append(
        Dranet(
            "dranet",
            dranet_args(config.dranet, dra_pool_names, taints),
            opts=pulumi.ResourceOptions.merge(renamed("dranet"), on_dra_pools()),
        )
    )
    device_classes.append(dranet.DEVICE_CLASS)
compute_domains = compute_domain_plan.enabled(config)
if config.gpu_driver.enabled:
    gpu_driver = NvidiaGpuDraDriver(
        "gpu-dra-driver",
        gpu_driver_args(
            config.gpu_driver,
            dra_pool_names,
            [*taints, *rail_marks],
            health_checks=config.health.gpu,
        ),
        opts=pulumi.ResourceOptions.merge(renamed("gpu-dra-driver"), on_dra_pools()),
    )
    drivers.append(gpu_driver)
    device_classes.append(nvidia_gpu.DEVICE_CLASS)
    if compute_domains:
        # After the GPU release: it creates the namespace and gives up the IMEX daemons' RBAC to this one.
        nvlink_pools = compute_domain_plan.nvlink_pools(config)
        drivers.append(
            NvidiaComputeDomainDriver(
                "compute-domain-driver",
                compute_domain_driver_args(
                    config.gpu_driver,
                    [p.name for p in nvlink_pools],
                    list(dict.fromkeys([*(t for p in nvlink_pools for t in p.taints), *rail_marks])),
                    config.system_pool.name if config.creates_system_pool else None,
                ),
                opts=pulumi.ResourceOptions(
                    providers=[cluster.provider],
                    depends_on=[gpu_driver, *(pools[p.name] for p in nvlink_pools), *system_nodes],
                ),
            )
        )
        device_classes.append(CHANNEL_DEVICE_CLASS)

# Every namespace a claim template lives in gets the same Pod Security level and tools as the workloads'.
workloads = config.workloads
claim_templates: GpuRailClaimTemplates | None = None
namespaces: dict[str, RdmaWorkloadNamespace] = {}
if config.dra_pools:
    namespaces = {
        namespace: RdmaWorkloadNamespace(
            "workloads" if namespace == workloads.namespace else f"workloads-{namespace}",
            RdmaWorkloadNamespaceArgs(namespace=namespace),
            opts=pulumi.ResourceOptions.merge(
                renamed("workloads") if namespace == workloads.namespace else None,
                pulumi.ResourceOptions(providers=[cluster.provider]),
            ),
        )
        for namespace in valid_stack.workload_namespaces
    }
    # The component builds and judges the templates as the stack config did while it loaded
    # (stack_config/claims/claim_plan.py judged_templates): the same templates.
    claim_templates = GpuRailClaimTemplates(
        "claim-templates",
        claim_template_args(valid_stack.claims, config),
        opts=pulumi.ResourceOptions.merge(
            renamed("claim-templates"),
            pulumi.ResourceOptions(providers=[cluster.provider], depends_on=list(namespaces.values())),
        ),
    )

# --- Kubernetes: Kueue, topology-aware scheduling over the RDMA fabric (docs/scheduling.md) -------

kueue: Kueue | None = None
scheduling = valid_stack.scheduling
if scheduling is not None:
    # The controller runs on the system pool; the queue's objects need the workload namespaces.
    kueue = Kueue(
        "kueue",
        kueue_args(
            scheduling,
            flavor_taint_inputs(scheduling, {pool.name: list(pool.taints) for pool in config.node_pools}),
        ),
        opts=pulumi.ResourceOptions(
            providers=[cluster.provider],
            depends_on=[*pools.values(), *system_nodes, *namespaces.values()],
        ),
    )

# --- Kubernetes: day-2 health of the rails (the GPUs' is the GPU DRA driver's own, health.gpu) -------

rail_health: RailHealthAgent | None = None
if config.health.rails.enabled:
    # One DaemonSet per DRANET shape (each shape has its own rails), marking a bad rail on its DRANET device
    # or, where the Kubernetes version serves no v1 DeviceTaintRule, on its node (oke_gpu_rdma/health/health_marks.py).
    dra_shapes: dict[str, list[str]] = {}
    for pool in health_plan.agent_pools(config):  # not the onboarding ones: their rails are not known yet
        dra_shapes.setdefault(pool.shape, []).append(pool.name)
    rail_health = RailHealthAgent(
        "rail-health",
        RailHealthAgentArgs(
            config=config.health.rails,
            mode=health.rail_mark_mode(cluster_spec.kubernetes_version),
            kubernetes_minor=cluster_minor,
            pools=dra_shapes,
            topologies=health_plan.rail_topologies(config),
            taints=taints,
            provider=cluster.provider,
            node_pools=[pools[name] for name in dra_pool_names],
        ),
    )

# --- Kubernetes: SR-IOV rails (NVIDIA Network Operator) for rdma: sriov pools ----------------------

sriov_networks: SriovRailNetworks | None = None
if valid_stack.sriov is not None:
    operator = NetworkOperator(
        "network-operator",
        NetworkOperatorArgs(
            plan=valid_stack.sriov,
            provider=cluster.provider,
            node_pools=[*(pools[name] for name in valid_stack.sriov.pools), *system_nodes],
            taints=sriov_taints,
            # Without its own NFD the chart's NodeFeatureRule needs the GPU Operator's NFD CRDs.
            after=[gpu_operator]
            if gpu_operator is not None and not config.network_operator.deploy_nfd
            else [],
        ),
    )
    sriov_networks = SriovRailNetworks(
        "rail-vfs",
        SriovRailNetworksArgs(plan=valid_stack.sriov, operator=operator, provider=cluster.provider),
    )

acceptance = workloads.acceptance_jobs
# Per gating job: its threshold and the command that prints its measured figures (stack output).
acceptance_reports: dict[str, GateReport] = {}
if (
    acceptance.enabled
    and valid_stack.sriov is not None
    and sriov_networks is not None
    and not config.dra_pools
):
    acceptance_reports |= SriovAcceptanceJobs(
        "vf-acceptance",
        SriovAcceptanceJobsArgs(
            config=acceptance,
            plan=valid_stack.sriov,
            shape=valid_stack.sriov.acceptance_shape(acceptance.node_pool),
            taints=sriov_taints,
            provider=cluster.provider,
            depends_on=[sriov_networks, *system_nodes],
        ),
    ).reports
if acceptance.active and claim_templates is not None:
    # The jobs run on one pool, with the templates of its shape. The stack config checked that the NCCL
    # job's template is in the plan (stack_config/claims/claim_plan.py).
    # Not an onboarding pool: its shape has no templates (the stack config refuses naming one).
    acceptance_pool = acceptance.node_pool or config.templated_pools[0].name
    acceptance_shape = next(p.shape for p in config.node_pools if p.name == acceptance_pool)
    # The stack config refused a pool without a template for the NCCL job.
    nccl_template = template_requests.acceptance_template(config) or ""
    acceptance_queue: JobQueue | None = None
    # On a multi-node NVLink shape with ComputeDomains and Kueue, the NCCL gate runs in a ComputeDomain of its own,
    # its workers required within one GPU memory fabric (one NVLink domain), its threshold NVLink's.
    nvlink_gate: NvlinkGate | None = None
    if scheduling is not None and compute_domains and multi_node_nvlink(acceptance_shape):
        acceptance_topology = CATALOG.topology(acceptance_shape)
        nvlink_gate = NvlinkGate(
            domain=NVLINK_GATE_DOMAIN,
            min_busbw=nvlink_threshold(acceptance_topology.nvlink_gbps, acceptance.nccl_busbw_gbs),
            nvlink_gbps=acceptance_topology.nvlink_gbps,
            rail_ceiling_gbs=rail_ceiling_gbs(
                len(acceptance_topology.rails), len(acceptance_topology.gpus), acceptance_topology.rail_gbps
            ),
        )
    if scheduling is not None:
        size = config.node_size(acceptance_shape)
        assert size is not None  # the stack config refused a shape without a known size
        system_flavor = scheduling.system_flavor
        acceptance_queue = JobQueue(
            scheduling.local_queue,
            GPU_MEMORY_FABRIC_LABEL if nvlink_gate is not None else scheduling.acceptance_level,
            size.whole_node_cpus,
            acceptance_shape,
            dict(system_flavor.node_labels) if system_flavor is not None else {},
        )
    acceptance_reports |= AcceptanceJobs(
        "acceptance",
        AcceptanceJobsArgs(
            config=acceptance,
            namespace=workloads.namespace,
            nccl_template=valid_stack.claims.aligned_template(nccl_template, acceptance_shape)
            if acceptance.nccl
            else None,
            rails_template=valid_stack.claims.rails_only(acceptance_shape)
            if acceptance.rail_bandwidth
            else None,
            pool=acceptance_pool,
            taints=taints,
            provider=cluster.provider,
            depends_on=[claim_templates, *drivers, *system_nodes, *([kueue] if kueue is not None else [])],
            queue=acceptance_queue,
            nvlink=nvlink_gate,
            kubernetes_minor=cluster_minor,
        ),
        opts=renamed("acceptance"),
    ).reports

# --- Kubernetes: day 2, closed loop: bad nodes cordoned, their jobs requeued, replaced and proven -----

remediation: NodeRemediation | None = None
remediation_config = config.health.remediation
if remediation_config.enabled:
    # The stack config checked that the scheduled fabric check runs on every remediated pool
    # (stack_config/health/remediation_plan.py); a replaced node passes it alone before it serves.
    check_pool = remediation_plan.checked_pool(config)
    assert check_pool is not None
    remediation = NodeRemediation(
        "node-remediation",
        NodeRemediationArgs(
            config=remediation_config,
            node_pool_ids={name: pools[name].node_pool_id for name in remediation_config.pools},
            node_specs={name: pools[name].node_spec for name in remediation_config.pools},
            mode=fabric_check.taint_mode(cluster_minor),
            kubernetes_minor=cluster_minor,
            check_namespace=workloads.namespace,
            check_cronjob=fabric_checks.cronjob_spec(
                acceptance, check_pool, workloads.namespace, fabric_check.taint_mode(cluster_minor), taints
            ),
            system_pool=config.system_pool.name if config.creates_system_pool else None,
            taints=taints,
            provider=cluster.provider,
            prometheus=(
                (
                    monitoring_objects_namespace(monitoring_config),
                    monitoring_config.existing_prometheus is None,
                )
                if monitoring_config.enabled
                else None
            ),
            depends_on=[*system_nodes, *([kueue] if kueue is not None else [])],
        ),
    )

pulumi.export("clusterId", cluster.cluster_id)
if network.load_balancer_nsg_id is not None:
    # For a Service's oci.oraclecloud.com/oci-network-security-groups annotation (docs/network-security.md).
    pulumi.export("loadBalancerNsgId", network.load_balancer_nsg_id)
pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("nodePools", {name: p.node_pool_id for name, p in pools.items()})
pulumi.export(
    "computeClusters",
    {name: p.compute_cluster_id for name, p in pools.items() if p.compute_cluster_id is not None},
)
pulumi.export("deviceClasses", device_classes)
pulumi.export("claimTemplates", claim_templates.claim_templates if claim_templates is not None else [])
pulumi.export("ncclSettings", dict(NCCL_SETTINGS))
if acceptance_reports:
    pulumi.export("acceptanceJobs", {job: report.to_output() for job, report in acceptance_reports.items()})
if kueue is not None:
    pulumi.export(
        "scheduling",
        {"clusterQueue": kueue.cluster_queue, "localQueue": kueue.local_queue, "topology": kueue.topology},
    )
if sriov_networks is not None:
    pulumi.export("sriovNetworks", sriov_networks.networks)
    pulumi.export("sriovResources", sriov_networks.resources)
