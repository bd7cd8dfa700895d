"""The YAML consumer (../Pulumi.yaml) in Python, through the SDK `pulumi install` generates from the
package's schema (make consumers type-checks this file against it with mypy --strict)."""

import oke_gpu_rdma_oke_gpu_rdma as rdma
import pulumi
import pulumi_kubernetes as k8s

config = pulumi.Config()
compartment_id = config.require("compartmentId")
kubernetes_version = config.get("kubernetesVersion") or "v1.34.1"

# The existing cluster: its kubeconfig from OCI (token v2, so the OCI CLI runs where Pulumi runs).
oke = rdma.OkeCluster(
    "oke", rdma.OkeClusterArgs(compartment_id=compartment_id, existing_cluster_id=config.require("clusterId"))
)
# Resource options take no Outputs, so a program in a language (not YAML, which takes ${oke.provider}) builds
# its Kubernetes provider from the kubeconfig output, as the component builds its own.
provider = k8s.Provider("oke-k8s", kubeconfig=oke.kubeconfig)


def on_cluster(*depends_on: pulumi.Resource) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(providers=[provider], depends_on=list(depends_on))


pool = rdma.RdmaGpuNodePool(
    "gpu-b4",
    rdma.RdmaGpuNodePoolArgs(
        compartment_id=compartment_id,
        cluster_id=oke.cluster_id,
        kubernetes_version=kubernetes_version,
        worker_subnet_id=config.require("workerSubnetId"),
        image_id=config.require("imageId"),
        availability_domain=config.require("availabilityDomain"),
        shape="BM.GPU.B4.8",
        count=2,
    ),
)
dranet = rdma.Dranet("dranet", rdma.DranetArgs(pools=["gpu-b4"]), on_cluster(pool))
gpu_driver = rdma.NvidiaGpuDraDriver(
    "gpu-dra-driver", rdma.NvidiaGpuDraDriverArgs(pools=["gpu-b4"]), on_cluster(pool)
)
workloads = rdma.RdmaWorkloadNamespace(
    "workloads", rdma.RdmaWorkloadNamespaceArgs(namespace="training"), on_cluster()
)
templates = rdma.GpuRailClaimTemplates(
    "claim-templates",
    rdma.GpuRailClaimTemplatesArgs(
        shapes=["BM.GPU.B4.8"],
        namespace="training",
        claim_templates=[
            rdma.ClaimTemplateRequestArgs(name="aligned-8gpu-16rails", gpus_per_worker=8),
            rdma.ClaimTemplateRequestArgs(name="aligned-4gpu-8rails", gpus_per_worker=4),
        ],
        rails_only_template="all-rails",
    ),
    on_cluster(),
)
rdma.Kueue(
    "kueue",
    rdma.KueueArgs(
        flavors=[
            rdma.KueueFlavorArgs(
                name="bm-gpu-b4-8",
                node_labels={
                    "node.kubernetes.io/instance-type": "BM.GPU.B4.8",
                    "nvidia.com/gpu.deploy.device-plugin": "false",
                },
                taints=[rdma.PoolTaintArgs(key="nvidia.com/gpu", value="present")],
                quotas={
                    "cpu": "256",
                    "memory": "4096Gi",
                    "oke-gpu-rdma/gpus": "16",
                    "oke-gpu-rdma/rails": "32",
                },
            )
        ],
        levels=[
            "oke-gpu-rdma/rdma-hpc-island",
            "oke-gpu-rdma/rdma-network-block",
            "oke-gpu-rdma/rdma-local-block",
            "kubernetes.io/hostname",
        ],
        namespaces=["training"],
    ),
    on_cluster(workloads, dranet, gpu_driver),
)

pulumi.export("nodePoolId", pool.node_pool_id)
pulumi.export("claimTemplates", templates.claim_templates)
