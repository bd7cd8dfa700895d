"""The system pool (components/nodes/system_pool.py) and what waits for it, as the program declares them."""

from __future__ import annotations

from collections.abc import Callable

import pulumi
import pytest

from oke_gpu_rdma.common.resource_types import SYSTEM_POOL_COMPONENT
from oke_gpu_rdma.nodes.labels import POOL_LABEL
from preview.mock_runtime import placeholder_ocid
from stack_config.loading import load_stack
from stack_config.problems import ConfigError
from tests.support import EXAMPLE_REGION, Run, raw_config, without_remediation

NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"
MPIJOB = "kubernetes:kubeflow.org/v2beta1:MPIJob"
# The MPI operator: its release manifest, applied by a ConfigFile at apply time.
MPI_OPERATOR_MANIFEST = "kubernetes:yaml/v2:ConfigFile"
IMAGE = "ocid1.image.oc1.iad.aaaaaaaaexampleoracleolinuxoke"
SOURCE = "stacks/Pulumi.full.yaml"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def problems_of(raw: dict) -> list[str]:
    with pytest.raises(ConfigError) as err:
        load_stack(raw, SOURCE, EXAMPLE_REGION)
    return [p.render() for p in err.value.problems]


def test_a_created_cluster_gets_an_untainted_cpu_pool(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    pool = run.one(NODE_POOL, "system-nodes")
    assert pool.parent == run.one(SYSTEM_POOL_COMPONENT, "system").urn
    assert pool.options == {"protect": True}
    subnet = placeholder_ocid("subnet", "network-workers", EXAMPLE_REGION)
    assert pool.inputs == {
        "clusterId": placeholder_ocid("cluster", "oke-cluster", EXAMPLE_REGION),
        "compartmentId": "ocid1.compartment.oc1..aaaaaaaaexamplecompartmentgpurdma",
        "name": "system",
        "kubernetesVersion": "v1.36.4",
        "nodeShape": "VM.Standard.E5.Flex",
        "nodeShapeConfig": {"ocpus": 2, "memoryInGbs": 16},
        "nodeSourceDetails": {"sourceType": "IMAGE", "imageId": IMAGE, "bootVolumeSizeInGbs": "50"},
        "nodeConfigDetails": {
            "size": 2,
            "placementConfigs": [
                {"availabilityDomain": "Uocm:US-ASHBURN-AD-1", "subnetId": subnet},
                {"availabilityDomain": "Uocm:US-ASHBURN-AD-2", "subnetId": subnet},
            ],
            "nodePoolPodNetworkOptionDetails": {"cniType": "FLANNEL_OVERLAY"},
            # The created VCN's worker NSG (components/nodes/network.py).
            "nsgIds": [placeholder_ocid("networksecuritygroup", "network-workers-nsg", EXAMPLE_REGION)],
        },
        # OKE's own image and cloud-init: no taint, no RDMA, no compute cluster.
        "initialNodeLabels": [{"key": POOL_LABEL, "value": "system"}],
    }


def test_existing_cluster_gets_none_by_default(run_stack: Callable[..., Run]) -> None:
    assert [p.name for p in run_stack("dev").of_type(NODE_POOL)] == ["gpu-b4-nodes"]


def test_ads_default_to_the_gpu_pools_and_a_fixed_shape_has_no_shape_config(
    run_stack: Callable[..., Run],
) -> None:
    raw = raw_config("full")
    raw["systemPool"] = {"imageId": IMAGE, "shape": "VM.Standard3.Flex", "count": 3}
    pool = run_stack("full", raw).one(NODE_POOL, "system-nodes").inputs
    assert [p["availabilityDomain"] for p in pool["nodeConfigDetails"]["placementConfigs"]] == [
        "Uocm:US-ASHBURN-AD-1",
        "Uocm:US-ASHBURN-AD-2",
    ]
    assert pool["nodeConfigDetails"]["size"] == 3
    raw["systemPool"] = {"imageId": IMAGE, "shape": "VM.Standard2.4"}
    assert "nodeShapeConfig" not in run_stack("full", raw).one(NODE_POOL, "system-nodes").inputs


def test_image_is_required_with_a_created_cluster() -> None:
    raw = raw_config("full")
    del raw["systemPool"]
    assert problems_of(raw) == [
        "systemPool.imageId is missing; the system pool (created with cluster.create) needs an OKE Oracle Linux "
        "image for the cluster's Kubernetes version (oci ce node-pool-options get --node-pool-option-id all); set "
        "systemPool.enabled: false only when the cluster has other nodes without taints for CoreDNS and the "
        "operators' controllers"
    ]


def test_cpu_shape_and_flex_memory_are_checked() -> None:
    raw = raw_config("full")
    raw["systemPool"] = {"imageId": IMAGE, "shape": "BM.GPU.B4.8"}
    (problem,) = problems_of(raw)
    assert "shape BM.GPU.B4.8 is a GPU shape; the system pool is for CPU pods" in problem
    raw["systemPool"] = {"imageId": IMAGE, "ocpus": 2, "memoryGbs": 256}
    (problem,) = problems_of(raw)
    assert "memoryGbs 256 is outside 2-128 GB for 2 OCPUs" in problem
    raw["systemPool"] = {"imageId": IMAGE, "name": "gpu-b4-a"}
    assert problems_of(raw) == [
        "systemPool.name = 'gpu-b4-a': is also a nodePools name; pool names (and their oke-gpu-rdma/node-pool "
        "labels) must be unique"
    ]


def test_without_it_a_created_cluster_has_nowhere_for_coredns_and_the_controllers() -> None:
    """The issue's failure: every pool carries the GPU taint, so the first apply could never finish."""
    raw = raw_config("full")
    raw["systemPool"] = {"enabled": False}
    taint = "taint nvidia.com/gpu=present:NoSchedule is not tolerated"
    pools = f"gpu-b4-a: {taint}; gpu-b4-b: {taint}"
    fix = "turn the system pool on (systemPool.enabled: true, with its imageId)"
    controllers = [
        "Deployment kube-system/coredns (OKE cluster add-on)",
        "Deployment gpu-operator (chart gpu-operator, release gpu-operator)",
        "Deployment nfd-master (chart gpu-operator, release gpu-operator)",
        "Deployment nfd-gc (chart gpu-operator, release gpu-operator)",
        # The chart's hook Jobs tolerate the control plane only, as the operator does.
        "Job nfd-prune (post-delete hook) (chart gpu-operator, release gpu-operator)",
        "Job gpu-operator-upgrade-crd (pre-upgrade hook) (chart gpu-operator, release gpu-operator)",
        # The full example schedules through Kueue and runs the NCCL acceptance job.
        "Deployment kueue-controller-manager (chart kueue)",
        "Deployment mpi-operator/mpi-operator",
        # kube-prometheus-stack's controllers (monitoring.enabled).
        *(
            f"{workload} (chart kube-prometheus-stack, release kube-prometheus-stack)"
            for workload in (
                "Deployment kube-prometheus-stack-operator",
                "Job kube-prometheus-stack-admission-create (pre-install hook)",
                "StatefulSet prometheus-kube-prometheus-stack-prometheus",
                "StatefulSet alertmanager-kube-prometheus-stack-alertmanager",
                "Deployment kube-prometheus-stack-grafana",
                "Deployment kube-prometheus-stack-kube-state-metrics",
            )
        ),
    ]
    # One reason for all fourteen: said once, with the fix, then the controllers it applies to.
    assert problems_of(raw) == [
        f"systemPool: 14 pods fit no node pool of the stack: {pools}; {fix}:"
        + "".join(f"\n- {pod}" for pod in controllers)
    ]


def test_the_program_stops_before_declaring_anything(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("full")
    raw["systemPool"] = {"enabled": False}
    with pytest.raises(pulumi.RunError, match="Deployment kube-system/coredns"):
        run_stack("full", raw)


def test_the_mpi_operator_and_the_launcher_wait_for_it_and_the_launcher_tolerates_the_gpu_taint(
    run_stack: Callable[..., Run],
) -> None:
    raw = without_remediation(raw_config("full"))
    raw["workloads"] = {"acceptanceJobs": {"enabled": True}}
    run = run_stack("full", raw)
    system = run.one(NODE_POOL, "system-nodes").urn
    assert system in run.one(MPI_OPERATOR_MANIFEST).dependencies
    job = run.one(MPIJOB)
    assert system in job.dependencies
    replicas = job.inputs["spec"]["mpiReplicaSpecs"]
    assert replicas["Launcher"]["template"]["spec"]["tolerations"] == [GPU_TOLERATION]
    assert replicas["Worker"]["template"]["spec"]["tolerations"] == [GPU_TOLERATION]
