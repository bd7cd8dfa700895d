// The YAML consumer (../Pulumi.yaml) in TypeScript, through the SDK `pulumi install` generates from the
// package's schema (make consumers type-checks this file against it with tsc).
import * as pulumi from "@pulumi/pulumi";
import * as k8s from "@pulumi/kubernetes";
import * as rdma from "@oke-gpu-rdma/oke-gpu-rdma";

const config = new pulumi.Config();
const compartmentId = config.require("compartmentId");
const kubernetesVersion = config.get("kubernetesVersion") ?? "v1.34.1";

// The existing cluster: its kubeconfig from OCI (token v2, so the OCI CLI runs where Pulumi runs).
const oke = new rdma.OkeCluster("oke", {
    compartmentId,
    existingClusterId: config.require("clusterId"),
});
// Resource options take no Outputs, so a program in a language (not YAML, which takes ${oke.provider}) builds
// its Kubernetes provider from the kubeconfig output, as the component builds its own.
const provider = new k8s.Provider("oke-k8s", { kubeconfig: oke.kubeconfig });
const onCluster = { providers: [provider] };

const pool = new rdma.RdmaGpuNodePool("gpu-b4", {
    compartmentId,
    clusterId: oke.clusterId,
    kubernetesVersion,
    workerSubnetId: config.require("workerSubnetId"),
    imageId: config.require("imageId"),
    availabilityDomain: config.require("availabilityDomain"),
    shape: "BM.GPU.B4.8",
    count: 2,
});
const dranet = new rdma.Dranet("dranet", { pools: ["gpu-b4"] }, { ...onCluster, dependsOn: [pool] });
const gpuDriver = new rdma.NvidiaGpuDraDriver(
    "gpu-dra-driver",
    { pools: ["gpu-b4"] },
    { ...onCluster, dependsOn: [pool] },
);
const workloads = new rdma.RdmaWorkloadNamespace("workloads", { namespace: "training" }, onCluster);
const templates = new rdma.GpuRailClaimTemplates(
    "claim-templates",
    {
        shapes: ["BM.GPU.B4.8"],
        namespace: "training",
        claimTemplates: [
            { name: "aligned-8gpu-16rails", gpusPerWorker: 8 },
            { name: "aligned-4gpu-8rails", gpusPerWorker: 4 },
        ],
        railsOnlyTemplate: "all-rails",
    },
    onCluster,
);
new rdma.Kueue(
    "kueue",
    {
        flavors: [
            {
                name: "bm-gpu-b4-8",
                nodeLabels: {
                    "node.kubernetes.io/instance-type": "BM.GPU.B4.8",
                    "nvidia.com/gpu.deploy.device-plugin": "false",
                },
                taints: [{ key: "nvidia.com/gpu", value: "present" }],
                quotas: {
                    cpu: "256",
                    memory: "4096Gi",
                    "oke-gpu-rdma/gpus": "16",
                    "oke-gpu-rdma/rails": "32",
                },
            },
        ],
        levels: [
            "oke-gpu-rdma/rdma-hpc-island",
            "oke-gpu-rdma/rdma-network-block",
            "oke-gpu-rdma/rdma-local-block",
            "kubernetes.io/hostname",
        ],
        namespaces: ["training"],
    },
    { ...onCluster, dependsOn: [workloads, dranet, gpuDriver] },
);

export const nodePoolId = pool.nodePoolId;
export const claimTemplates = templates.claimTemplates;
