"""RDMA GPU nodes on OKE, with rails from DRA (DRANET) or SR-IOV VFs: read the stack config, build the parts,
export outputs."""

import pulumi

from components.acceptance_jobs import AcceptanceJobs, AcceptanceJobsArgs
from components.cluster import OkeCluster, OkeClusterArgs
from components.dra_drivers import Dranet, DranetArgs, NvidiaGpuDraDriver, NvidiaGpuDraDriverArgs
from components.gpu_node_pool import (
    ComputeClusterLaunchPolicy,
    ComputeClusterLaunchPolicyArgs,
    RdmaGpuNodePool,
    RdmaGpuNodePoolArgs,
)
from components.network import Network, NetworkArgs
from components.network_operator import (
    NetworkOperator,
    NetworkOperatorArgs,
    SriovRailNetworks,
    SriovRailNetworksArgs,
)
from components.rdma_workloads import (
    ClaimTemplate,
    GpuRailClaimTemplates,
    GpuRailClaimTemplatesArgs,
    RdmaWorkloadNamespace,
    RdmaWorkloadNamespaceArgs,
)
from components.sriov_acceptance import SriovAcceptanceJobs, SriovAcceptanceJobsArgs
from oke_gpu_rdma import attributes
from oke_gpu_rdma.nccl import NCCL_SETTINGS
from stack_config.loading import load_program_stack
from stack_config.problems import ConfigError

stack = pulumi.get_stack()
try:
    checked = load_program_stack(pulumi.runtime.get_config_env(), stack)
except ConfigError as err:
    # RunError ends the program with just this message: no traceback, nothing declared.
    raise pulumi.RunError(str(err)) from None

config = checked.config
cluster_spec = config.cluster.spec
# The DRA drivers run on the rdma: dranet pools only; rdma: sriov pools get the NVIDIA Network Operator.
shapes = list(dict.fromkeys(pool.shape for pool in config.dra_pools))
taints = list({t: None for pool in config.dra_pools for t in pool.taints})
sriov_taints = list({t: None for pool in config.sriov_pools for t in pool.taints})
has_sriov = bool(config.sriov_pools)

# --- OCI: network, cluster, GPU node pools -------------------------------------------------------

network = Network(
    f"{stack}-network",
    NetworkArgs(
        compartment_id=config.compartment_id,
        network=config.network,
        vcn_native_pods=cluster_spec.cni_type == "OCI_VCN_IP_NATIVE",
    ),
)
cluster = OkeCluster(
    f"{stack}-oke",
    OkeClusterArgs(
        compartment_id=config.compartment_id,
        cluster=config.cluster,
        vcn_id=network.vcn_id,
        api_endpoint_subnet_id=network.api_endpoint_subnet_id,
        load_balancer_subnet_id=network.load_balancer_subnet_id,
        api_endpoint_public=bool(config.network.create and config.network.create.api_endpoint_public),
    ),
)

pool_dependencies: list[pulumi.Resource] = []
if config.create_compute_cluster_policy:
    pool_dependencies.append(
        ComputeClusterLaunchPolicy(
            f"{stack}-compute-cluster-launch",
            ComputeClusterLaunchPolicyArgs(compartment_id=config.compartment_id),
        )
    )

pools = {
    pool.name: RdmaGpuNodePool(
        pool.name,
        RdmaGpuNodePoolArgs(
            compartment_id=config.compartment_id,
            cluster_id=cluster.cluster_id,
            kubernetes_version=cluster_spec.kubernetes_version,
            worker_subnet_id=network.worker_subnet_id,
            cni_type=cluster_spec.cni_type,
            gpus_from_dra=config.gpu_driver.enabled,
            sriov_rdma_mode=config.network_operator.rdma_mode,
            pod_subnet_id=network.pod_subnet_id,
            pool=pool,
        ),
        opts=pulumi.ResourceOptions(depends_on=pool_dependencies),
    )
    for pool in config.node_pools
}

# --- Kubernetes: DRA drivers, workload namespace, aligned claim templates -------------------------

device_classes: list[str] = []
drivers: list[pulumi.Resource] = []
if config.dranet.enabled:
    drivers.append(
        Dranet(
            f"{stack}-dranet",
            DranetArgs(
                config=config.dranet,
                shapes=shapes,
                taints=taints,
                provider=cluster.provider,
                node_pools=list(pools.values()),
                avoid_sriov=has_sriov,
            ),
        )
    )
    device_classes.append(attributes.DRANET_DEVICE_CLASS)
if config.gpu_driver.enabled:
    drivers.append(
        NvidiaGpuDraDriver(
            f"{stack}-gpu-dra-driver",
            NvidiaGpuDraDriverArgs(
                config=config.gpu_driver,
                shapes=shapes,
                taints=taints,
                provider=cluster.provider,
                node_pools=list(pools.values()),
                avoid_sriov=has_sriov,
            ),
        )
    )
    device_classes.append(attributes.NVIDIA_GPU_DEVICE_CLASS)

workloads = config.workloads
claim_templates: GpuRailClaimTemplates | None = None
if config.dra_pools:
    workload_namespace = RdmaWorkloadNamespace(
        f"{stack}-workloads",
        RdmaWorkloadNamespaceArgs(namespace=workloads.namespace, provider=cluster.provider),
    )
    # Templates were judged aligned on every pool shape while the config loaded; they are emitted as judged.
    claim_templates = GpuRailClaimTemplates(
        f"{stack}-claim-templates",
        GpuRailClaimTemplatesArgs(
            templates=[ClaimTemplate(t.name, t.namespace, t.spec) for t in checked.claims.templates],
            provider=cluster.provider,
            depends_on=[workload_namespace],
        ),
    )

# --- Kubernetes: SR-IOV rails (NVIDIA Network Operator) for rdma: sriov pools ----------------------

sriov_networks: SriovRailNetworks | None = None
if checked.sriov is not None:
    operator = NetworkOperator(
        f"{stack}-network-operator",
        NetworkOperatorArgs(
            plan=checked.sriov,
            provider=cluster.provider,
            node_pools=[pools[name] for name in checked.sriov.pools],
        ),
    )
    sriov_networks = SriovRailNetworks(
        f"{stack}-rail-vfs",
        SriovRailNetworksArgs(plan=checked.sriov, operator=operator, provider=cluster.provider),
    )

acceptance = workloads.acceptance_jobs
if acceptance.enabled and checked.sriov is not None and sriov_networks is not None and not config.dra_pools:
    SriovAcceptanceJobs(
        f"{stack}-vf-acceptance",
        SriovAcceptanceJobsArgs(
            config=acceptance,
            plan=checked.sriov,
            taints=sriov_taints,
            provider=cluster.provider,
            depends_on=[sriov_networks],
        ),
    )
if acceptance.enabled and claim_templates is not None:
    # The stack config checked that the NCCL job's template is in the plan (stack_config/claim_plan.py).
    AcceptanceJobs(
        f"{stack}-acceptance",
        AcceptanceJobsArgs(
            config=acceptance,
            namespace=workloads.namespace,
            nccl_template=checked.claims.aligned_template(acceptance.claim_template)
            if acceptance.nccl
            else None,
            rails_template=checked.claims.rails_only if acceptance.rail_bandwidth else None,
            shape=shapes[0],
            taints=taints,
            provider=cluster.provider,
            depends_on=[claim_templates, *drivers],
        ),
    )

pulumi.export("clusterId", cluster.cluster_id)
pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("nodePools", {name: p.node_pool_id for name, p in pools.items()})
pulumi.export("computeClusters", {name: p.compute_cluster_id for name, p in pools.items()})
pulumi.export("deviceClasses", device_classes)
pulumi.export("claimTemplates", claim_templates.names if claim_templates is not None else [])
pulumi.export("ncclSettings", dict(NCCL_SETTINGS))
if sriov_networks is not None:
    pulumi.export("sriovNetworks", sriov_networks.networks)
    pulumi.export("sriovResources", sriov_networks.resources)
