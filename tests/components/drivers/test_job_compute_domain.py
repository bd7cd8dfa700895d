"""ComputeDomains on multi-node NVLink pools (docs/compute-domains.md): the second release of the GPU DRA driver,
the GPU release's hand-over of the IMEX daemons' RBAC, the Kueue Topology and quota, the NCCL gate's
ComputeDomain and what the GB200 example declares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from components.component_inputs import ComponentInputError
from components.drivers.dra_drivers import compute_domain_values, gpu_driver_values
from components.drivers.job_compute_domain import JobComputeDomain, JobComputeDomainArgs
from oke_gpu_rdma.common.charts import undocumented_value_paths
from oke_gpu_rdma.drivers import compute_domains, nvidia_gpu
from oke_gpu_rdma.nodes.labels import GPU_MEMORY_FABRIC_LABEL, NVLINK_LEVEL_LABELS, POOL_LABEL
from oke_gpu_rdma.scheduling import kueue_chart
from stack_config.loading import load_stack
from stack_config.problems import ConfigError
from tests.support import EXAMPLE_REGION, Run, raw_config

RELEASE = "kubernetes:helm.sh/v3:Release"
COMPUTE_DOMAIN = f"kubernetes:{compute_domains.API_VERSION}:ComputeDomain"
TOPOLOGY = "kubernetes:kueue.x-k8s.io/v1beta2:Topology"
CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
MPIJOB = "kubernetes:kubeflow.org/v2beta1:MPIJob"


def releases(run: Run) -> dict[str, dict[str, Any]]:
    return {r.inputs["name"]: r.inputs for r in run.of_type(RELEASE)}


def test_the_compute_domain_release_serves_compute_domains_alone_on_the_nvlink_pools() -> None:
    values = compute_domain_values(["gb200-a"], [], "system")
    assert values["resources"] == {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}}
    assert values["nameOverride"] == nvidia_gpu.COMPUTE_DOMAIN_RELEASE
    (term,) = values["kubeletPlugin"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert term == {"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": ["gb200-a"]}]}
    assert "containers" not in values["kubeletPlugin"]  # GPU feature discovery writes nvidia.com/gpu.clique
    assert values["controller"] == {"nodeSelector": {POOL_LABEL: "system"}}
    assert "controller" not in compute_domain_values(["gb200-a"], [], None)
    assert undocumented_value_paths(values, nvidia_gpu.VALUE_PATHS) == []


def test_the_gpu_release_never_renders_the_imex_daemons_rbac() -> None:
    """hostManaged IMEX mode with compute domains off drops only rbac-compute-domain-daemon.yaml: the ComputeDomain
    release can come and go in either order without an object two releases claim."""
    assert gpu_driver_values(["gb200-a"], [])["resources"]["computeDomains"] == {
        "enabled": False,
        "imex": {"mode": "hostManaged"},
    }


def test_the_gb200_example_declares_the_compute_domain_pieces(run_stack: Callable[..., Run]) -> None:
    run = run_stack("gb200")
    found = releases(run)
    gpu, cd = found[nvidia_gpu.RELEASE], found[nvidia_gpu.COMPUTE_DOMAIN_RELEASE]
    assert (cd["chart"], cd["version"], cd["namespace"]) == (gpu["chart"], gpu["version"], gpu["namespace"])
    assert gpu["values"]["resources"]["computeDomains"]["imex"] == {"mode": "hostManaged"}
    assert cd["values"]["kubeletPlugin"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["gb200-a", "gb200-b"]
    # The ComputeDomain release waits for the GPU release (it hands over the IMEX daemons' RBAC) and the pools.
    cd_release = run.one(RELEASE, "compute-domain-driver-release")
    assert run.one(RELEASE, "gpu-dra-driver-release").urn in cd_release.dependencies
    topologies = {t.inputs["metadata"]["name"]: t.inputs["spec"]["levels"] for t in run.of_type(TOPOLOGY)}
    assert topologies["rdma-fabric-nvlink"] == [{"nodeLabel": label} for label in NVLINK_LEVEL_LABELS]
    (queue,) = run.of_type(CLUSTER_QUEUE)
    (group,) = queue.inputs["spec"]["resourceGroups"]
    assert kueue_chart.CHANNEL_RESOURCE in group["coveredResources"]
    quota = {
        f["name"].rsplit("-", 1)[0]: {r["name"]: r["nominalQuota"] for r in f["resources"]}
        for f in group["flavors"]
    }
    assert (
        quota["bm-gpu-gb200-v3-4"][kueue_chart.CHANNEL_RESOURCE] == "4"
    )  # 2 pools of 2 nodes, 1 channel each
    assert quota["system"][kueue_chart.CHANNEL_RESOURCE] == "0"
    assert compute_domains.CHANNEL_DEVICE_CLASS in run.run.outputs["deviceClasses"]


def test_the_nvlink_gate_runs_in_its_own_compute_domain_within_one_fabric(
    run_stack: Callable[..., Run],
) -> None:
    run = run_stack("gb200")
    (domain,) = run.of_type(COMPUTE_DOMAIN)
    assert domain.inputs["metadata"] == {"name": "nccl-all-reduce-nvlink", "namespace": "rdma-dranet"}
    assert domain.inputs["spec"] == {
        "numNodes": 0,
        "channel": {
            "resourceClaimTemplate": {"name": "nccl-all-reduce-nvlink-channel"},
            "allocationMode": "Single",
        },
    }
    (job,) = run.of_type(MPIJOB)
    assert domain.urn in job.dependencies
    worker = job.inputs["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    assert worker["metadata"]["annotations"] == {
        "kueue.x-k8s.io/podset-required-topology": GPU_MEMORY_FABRIC_LABEL
    }
    assert worker["spec"]["resourceClaims"][1] == {
        "name": "compute-domain-channel",
        "resourceClaimTemplateName": "nccl-all-reduce-nvlink-channel",
    }
    assert worker["spec"]["containers"][0]["resources"]["claims"] == [
        {"name": "gpus-rails"},
        {"name": "compute-domain-channel"},
    ]
    launcher = job.inputs["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    script = " ".join(launcher.get("args", []) + launcher.get("command", []))
    assert "-x NCCL_MNNVL_ENABLE=1" in script and "-x NCCL_CUMEM_ENABLE=1" in script
    assert "nccl-busbw-check.sh" in script and "720.0" in script
    threshold = job.inputs["metadata"]["annotations"]["oke-gpu-rdma/threshold"]
    assert threshold == (
        "NCCL all_reduce busbw at 8 GiB (out of place) >= 720.0 GB/s over multi-node NVLink (NVIDIA's figure: "
        "900 GB/s per GPU each way; the rails alone carry at most 100 GB/s per GPU)"
    )


def test_other_shapes_get_no_compute_domains(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    assert nvidia_gpu.COMPUTE_DOMAIN_RELEASE not in releases(run)
    assert run.of_type(COMPUTE_DOMAIN) == []


def test_compute_domains_can_be_turned_off(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("gb200")
    raw["gpuDriver"] = {"computeDomains": {"enabled": False}}
    run = run_stack("gb200", raw)
    assert nvidia_gpu.COMPUTE_DOMAIN_RELEASE not in releases(run)
    assert run.of_type(COMPUTE_DOMAIN) == []
    (job,) = run.of_type(MPIJOB)
    worker = job.inputs["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    assert len(worker["spec"]["resourceClaims"]) == 1


def test_compute_domains_on_without_an_nvlink_pool_is_refused() -> None:
    raw = raw_config("full")
    raw["gpuDriver"] = {"computeDomains": {"enabled": True}}
    with pytest.raises(ConfigError) as err:
        load_stack(raw, "examples/Pulumi.full.yaml", EXAMPLE_REGION)
    assert (
        "gpuDriver.computeDomains.enabled = true: no rdma: dranet pool has a shape with multi-node NVLink"
        in str(err.value)
    )


def test_a_job_compute_domain_names_a_bad_allocation_mode(
    declare: Callable[[Callable[[], object]], Run],
) -> None:
    with pytest.raises(ComponentInputError) as err:
        declare(
            lambda: JobComputeDomain("train", JobComputeDomainArgs(namespace="ml", allocation_mode="Many"))
        )
    assert "allocationMode = 'Many': is not an allocation mode of the driver's ComputeDomain" in str(
        err.value
    )


def test_a_job_compute_domain_gives_the_pod_its_claims(
    declare: Callable[[Callable[[], object]], Run],
) -> None:
    run = declare(
        lambda: JobComputeDomain("train", JobComputeDomainArgs(namespace="ml", allocation_mode="All"))
    )
    domain = run.one(COMPUTE_DOMAIN)
    assert domain.inputs["spec"]["channel"] == {
        "resourceClaimTemplate": {"name": "train-channel"},
        "allocationMode": "All",
    }
    assert domain.options.get("replaceOnChanges") == ["spec"]
