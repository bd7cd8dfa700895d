"""RDMA GPU nodes on OKE, configured for DRA: read the stack config, build the parts, export outputs."""

import pulumi

from components.cluster import OkeCluster, OkeClusterArgs
from components.gpu_node_pool import (
    ComputeClusterLaunchPolicy,
    ComputeClusterLaunchPolicyArgs,
    RdmaGpuNodePool,
    RdmaGpuNodePoolArgs,
)
from components.network import Network, NetworkArgs
from components.stack_config import ConfigError, load_stack_config

try:
    config = load_stack_config()
except ConfigError as err:
    # RunError ends the program with just this message: no traceback, nothing declared.
    raise pulumi.RunError(str(err)) from None

stack = pulumi.get_stack()
cluster_spec = config.cluster.spec
native_pods = cluster_spec.cni_type == "OCI_VCN_IP_NATIVE"

network = Network(
    f"{stack}-network",
    NetworkArgs(compartment_id=config.compartment_id, network=config.network, vcn_native_pods=native_pods),
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
            pod_subnet_id=network.pod_subnet_id,
            pool=pool,
        ),
        opts=pulumi.ResourceOptions(depends_on=pool_dependencies),
    )
    for pool in config.node_pools
}

pulumi.export("clusterId", cluster.cluster_id)
pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("nodePools", {name: p.node_pool_id for name, p in pools.items()})
pulumi.export("computeClusters", {name: p.compute_cluster_id for name, p in pools.items()})
