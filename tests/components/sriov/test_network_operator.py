"""The SR-IOV path as the program declares it (components/sriov/network_operator.py, components/sriov/sriov_acceptance.py),
compared field by field with seed 001's objects."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest

from components.claims.rdma_workloads import SCRIPTS
from components.sriov.network_operator import MULTUS_RESOURCES, NIC_POLICY_READY, WAIT_FOR_ANNOTATION
from components.sriov.sriov_acceptance import EXPECTED_TWO_JOBS, EXPECTED_VF_RAILS
from oke_gpu_rdma.common import charts, resource_types
from oke_gpu_rdma.drivers import dranet, gpu_operator_chart, nvidia_gpu
from oke_gpu_rdma.nodes.labels import DEVICE_PLUGIN_LABEL, POOL_LABEL, RDMA_PATH_LABEL
from oke_gpu_rdma.sriov import network_operator_chart as network_operator
from oke_gpu_rdma.sriov.operator_objects import NETWORKS_ANNOTATION
from preview.rendering import manifest
from stack_config.sriov.sriov_settings import SRIOV_JOBS_NAMESPACE
from tests.fixtures import seed001
from tests.support import Run, meta_plugins, raw_config

SUCCEEDED = 'jsonpath={.status.conditions[?(@.type=="Succeeded")].status}=True'

RELEASE = resource_types.HELM_RELEASE
NODE_POOL = resource_types.NODE_POOL
MPIJOB = "kubernetes:kubeflow.org/v2beta1:MPIJob"


def by_name(run: Run, type_: str) -> dict[str, dict[str, Any]]:
    """Objects of one kind as rendered/ shows them, by metadata.name."""
    return {r.inputs["metadata"]["name"]: manifest(r) for r in run.of_type(type_)}


@pytest.fixture(scope="module")
def sriov_run() -> Run:
    from preview.mock_runtime import pulumi_config_map, run_program
    from tests.support import stack_document

    return Run(run_program("sriov", pulumi_config_map(stack_document("sriov"))))


def test_release_has_the_seed_values(sriov_run: Run) -> None:
    (release,) = sriov_run.of_type(RELEASE)
    inputs = release.inputs
    assert (inputs["name"], inputs["chart"], inputs["version"], inputs["namespace"]) == (
        "network-operator",
        "network-operator",
        "26.7.1",
        "nvidia-network-operator",
    )
    assert inputs["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
    assert inputs["values"] == seed001("values")
    assert charts.undocumented_value_paths(inputs["values"], network_operator.VALUE_PATHS) == []


SRIOV_NODES_ONLY = {
    "requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": RDMA_PATH_LABEL, "operator": "In", "values": ["sriov"]}]}
        ]
    }
}


def test_nic_cluster_policy_is_the_seeds_with_multus_memory_raised(sriov_run: Run) -> None:
    (policy,) = sriov_run.of_type(resource_types.NIC_CLUSTER_POLICY)
    rendered = manifest(policy)
    multus = rendered["spec"]["secondaryNetwork"]["multus"]
    assert multus.pop("containerResources") == [MULTUS_RESOURCES]
    annotations = rendered["metadata"].pop("annotations")
    assert annotations == {WAIT_FOR_ANNOTATION: NIC_POLICY_READY}
    # The operator's DaemonSets stay on the SR-IOV nodes; the example's pools carry only the GPU taint,
    # which they tolerate of their own, so the policy adds no toleration.
    assert rendered["spec"].pop("nodeAffinity") == SRIOV_NODES_ONLY
    assert "tolerations" not in rendered["spec"]
    assert rendered == seed001("nic-cluster-policy")
    assert "ofedDriver" not in rendered["spec"]
    # The seed saw Multus OOM-killed at its 50Mi default.
    assert MULTUS_RESOURCES["limits"]["memory"] != "50Mi"


def test_ip_pool_and_pool_config_are_the_seeds(sriov_run: Run) -> None:
    (pool,) = sriov_run.of_type(resource_types.IP_POOL)
    assert manifest(pool) == seed001("ip-pool")
    (config,) = sriov_run.of_type(resource_types.SRIOV_POOL_CONFIG)
    assert manifest(config) == seed001("sriov-network-pool-config")


def test_per_rail_node_policies_are_the_seeds(sriov_run: Run) -> None:
    policies = by_name(sriov_run, resource_types.SRIOV_NODE_POLICY)
    assert policies == {p["metadata"]["name"]: p for p in seed001.all("sriov-node-policies-per-rail")}


def test_per_rail_networks_are_the_seeds_text_and_json(sriov_run: Run) -> None:
    networks = by_name(sriov_run, resource_types.SRIOV_NETWORK)
    # The seed's pods ran in `default`; the stack's run in a namespace it creates and labels baseline.
    seed = {n["metadata"]["name"]: n for n in seed001.all("sriov-networks-per-rail")}
    for network in seed.values():
        network["spec"]["networkNamespace"] = SRIOV_JOBS_NAMESPACE
    assert networks == seed
    for network in networks.values():
        assert meta_plugins(network) == meta_plugins(seed001("sriov-network-shared"))


def test_the_ip_pool_waits_for_the_nic_cluster_policy(sriov_run: Run) -> None:
    # The IPPool CRD appears only once the operator has reconciled the NicClusterPolicy.
    (policy,) = sriov_run.of_type(resource_types.NIC_CLUSTER_POLICY)
    (pool,) = sriov_run.of_type(resource_types.IP_POOL)
    (release,) = sriov_run.of_type(RELEASE)
    assert policy.urn in pool.dependencies
    assert release.urn in policy.dependencies
    nodes = {r.urn for r in sriov_run.of_type(NODE_POOL)}
    assert nodes <= set(release.dependencies)
    for type_ in (resource_types.SRIOV_NODE_POLICY, resource_types.SRIOV_POOL_CONFIG):
        for obj in sriov_run.of_type(type_):
            assert release.urn in obj.dependencies
    for network in sriov_run.of_type(resource_types.SRIOV_NETWORK):
        assert {release.urn, pool.urn} <= set(network.dependencies)


def test_sriov_pool_keeps_the_device_plugin_and_shared_mode(sriov_run: Run) -> None:
    (pool,) = sriov_run.of_type(NODE_POOL)
    labels = {item["key"]: item["value"] for item in pool.inputs["initialNodeLabels"]}
    assert labels == {POOL_LABEL: "gpu-b4-vf", RDMA_PATH_LABEL: "sriov"}
    assert DEVICE_PLUGIN_LABEL not in labels
    text = base64.b64decode(pool.inputs["nodeMetadata"]["user_data"]).decode()
    assert "options ib_core netns_mode=1" in text
    assert sriov_run.of_type(resource_types.HELM_RELEASE)[0].inputs["chart"] == "network-operator"


def test_two_job_nccl_run_matches_the_seeds_worker(sriov_run: Run) -> None:
    jobs = {r.inputs["metadata"]["name"]: r.inputs for r in sriov_run.of_type(MPIJOB)}
    assert sorted(jobs) == ["nccl-vf-a", "nccl-vf-b"]
    seed_worker = seed001("nccl-vf-a-per-rail")["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    for job in jobs.values():
        assert job["metadata"]["annotations"]["oke-gpu-rdma/expected"] == EXPECTED_TWO_JOBS
        assert job["spec"]["slotsPerWorker"] == seed001("nccl-vf-a-per-rail")["spec"]["slotsPerWorker"] == 4
        worker = job["spec"]["mpiReplicaSpecs"]["Worker"]
        assert worker["replicas"] == 2
        template = worker["template"]
        assert template["metadata"] == seed_worker["metadata"]
        container = template["spec"]["containers"][0]
        assert container["resources"]["limits"] == seed_worker["spec"]["containers"][0]["resources"]["limits"]
        assert template["spec"]["nodeSelector"] == seed_worker["spec"]["nodeSelector"]
        assert template["spec"]["tolerations"] == seed_worker["spec"]["tolerations"]
        launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["args"][0]
        assert "-x NCCL_IB_GID_INDEX=3" in launcher and "-x NCCL_IB_TC=41" in launcher
        assert "basename -a /sys/class/net/net*/device/infiniband/*" in launcher
        # The gate: each job at seed 001's lower figure of the two-job run, awaited by pulumi up.
        assert launcher.endswith("bash /tmp/nccl-busbw-check.sh 96.28 /tmp/all_reduce.log\n")
        assert job["metadata"]["annotations"]["pulumi.com/waitFor"] == SUCCEEDED
        assert job["spec"]["runPolicy"] == {"cleanPodPolicy": "Running", "backoffLimit": 0}
    assert sriov_run.run.outputs["acceptanceJobs"] == {
        name: {
            "namespace": SRIOV_JOBS_NAMESPACE,
            "threshold": "NCCL all_reduce busbw at 8 GiB (out of place) >= 96.28 GB/s",
            "results": f"kubectl -n {SRIOV_JOBS_NAMESPACE} logs job/{name}-launcher",
        }
        for name in ("nccl-vf-a", "nccl-vf-b")
    }
    for job in sriov_run.of_type(MPIJOB):
        assert job.options == {"deleteBeforeReplace": True, "replaceOnChanges": ["spec"]}


def test_vf_rail_test_is_a_gating_mpijob_with_a_vf_of_every_rail(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("sriov")
    raw["workloads"]["acceptanceJobs"] = {"enabled": True, "nccl": False, "railBandwidth": True}
    run = run_stack("sriov", raw)
    assert run.of_type("kubernetes:core/v1:Pod") == []
    (job,) = run.of_type(MPIJOB)
    assert job.inputs["metadata"]["name"] == "vf-rail-bandwidth"
    assert job.inputs["metadata"]["annotations"] == {
        "oke-gpu-rdma/expected": EXPECTED_VF_RAILS,
        "oke-gpu-rdma/threshold": "ib_write_bw >= 96.86 Gb/s on every rail",
        "oke-gpu-rdma/results": f"kubectl -n {SRIOV_JOBS_NAMESPACE} logs job/vf-rail-bandwidth-launcher",
        "pulumi.com/waitFor": SUCCEEDED,
        "pulumi.com/timeoutSeconds": "1800",
    }
    assert job.options == {"deleteBeforeReplace": True, "replaceOnChanges": ["spec"]}
    assert job.inputs["spec"]["runPolicy"] == {"cleanPodPolicy": "Running", "backoffLimit": 0}
    worker = job.inputs["spec"]["mpiReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2
    seed_pod = seed001.all("vf-pods")[0]
    template = worker["template"]
    assert template["metadata"]["annotations"] == {
        NETWORKS_ANNOTATION: ",".join(f"rdma-vf-{i}" for i in range(16))
    }
    assert template["spec"]["containers"][0]["resources"]["limits"] == {
        f"nvidia.com/rdma-vf-{i}": 1 for i in range(16)
    }
    assert template["spec"]["tolerations"] == seed_pod["spec"]["tolerations"]
    launcher = job.inputs["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["args"][
        0
    ]
    assert (
        f"cat > /tmp/rail-gate.sh <<'SCRIPT'\n{(SCRIPTS / 'rail-gate.sh').read_text()}SCRIPT\n"
        f"cat > /tmp/vf-rail-bandwidth.sh <<'SCRIPT'\n{(SCRIPTS / 'vf-rail-bandwidth.sh').read_text()}SCRIPT\n"
    ) in launcher
    assert launcher.endswith('bash /tmp/vf-rail-bandwidth.sh 96.86 "$SERVER" "$CLIENT"\n')


def exclusive(raw: dict[str, Any]) -> dict[str, Any]:
    raw["networkOperator"]["rdmaMode"] = "exclusive"
    return raw


def test_exclusive_mode_networks_carry_top_level_rdma_qos(run_stack: Callable[..., Run]) -> None:
    run = run_stack("sriov", exclusive(raw_config("sriov")))
    for network in by_name(run, resource_types.SRIOV_NETWORK).values():
        assert meta_plugins(network) == meta_plugins(seed001("sriov-network-exclusive-qos"))
    (pool,) = run.of_type(NODE_POOL)
    text = base64.b64decode(pool.inputs["nodeMetadata"]["user_data"]).decode()
    assert "options ib_core netns_mode=0" in text and "rdma system set netns exclusive" in text


def test_one_vf_per_pf_gives_the_seeds_single_policy(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("sriov")
    raw["nodePools"][0]["sriov"] = {"vfsPerPf": 1, "resourcePerRail": False}
    run = run_stack("sriov", raw)
    assert by_name(run, resource_types.SRIOV_NODE_POLICY) == {
        "bm-gpu-b4-8": seed001("sriov-network-node-policy")
    }
    seed_network = seed001("sriov-network-shared")
    seed_network["spec"]["networkNamespace"] = SRIOV_JOBS_NAMESPACE  # the seed's `default`: see above
    assert by_name(run, resource_types.SRIOV_NETWORK) == {"rdma-vf": seed_network}
    (job,) = run.of_type(MPIJOB)
    worker = job.inputs["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    seed_pod = seed001.all("vf-pods")[0]
    assert worker["metadata"]["annotations"] == seed_pod["metadata"]["annotations"]
    assert worker["spec"]["containers"][0]["resources"]["limits"] == {
        "nvidia.com/gpu": 8,
        **seed_pod["spec"]["containers"][0]["resources"]["limits"],
    }


def mixed(raw: dict[str, Any]) -> dict[str, Any]:
    dev = raw_config("dev")
    raw["nodePools"] = [*dev["nodePools"], *raw["nodePools"]]
    raw.pop("dranet")
    raw.pop("gpuDriver")
    raw["workloads"] = {}
    return raw


def test_dra_drivers_stay_off_sriov_pools_in_a_mixed_stack(run_stack: Callable[..., Run]) -> None:
    run = run_stack("sriov", mixed(raw_config("sriov")))
    releases = {r.inputs["chart"]: r.inputs["values"] for r in run.of_type(RELEASE)}
    # Both DRA drivers select the DRANET pools by name: the SR-IOV pool is not among them.
    only_dra = [{"key": POOL_LABEL, "operator": "In", "values": ["gpu-b4"]}]
    for affinity in (
        releases[dranet.CHART]["affinity"],
        releases[nvidia_gpu.CHART]["kubeletPlugin"]["affinity"],
    ):
        (term,) = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        assert term["matchExpressions"] == only_dra
    # Same shape on both paths: the node policies select the SR-IOV pool's label, not the shape alone.
    for policy in by_name(run, resource_types.SRIOV_NODE_POLICY).values():
        assert policy["spec"]["nodeSelector"] == {
            "node.kubernetes.io/instance-type": "BM.GPU.B4.8",
            RDMA_PATH_LABEL: "sriov",
        }
    pools = {r.inputs["name"]: r.inputs for r in run.of_type(NODE_POOL)}
    dra_labels = {i["key"]: i["value"] for i in pools["gpu-b4"]["initialNodeLabels"]}
    assert dra_labels == {POOL_LABEL: "gpu-b4", DEVICE_PLUGIN_LABEL: "false"}


def test_network_metaplugins_parse_as_the_operator_renders_them(sriov_run: Run) -> None:
    for network in sriov_run.of_type(resource_types.SRIOV_NETWORK):
        text = network.inputs["spec"]["metaPlugins"]
        assert isinstance(json.loads("[" + text + "]"), list)
        assert json.loads(network.inputs["spec"]["ipam"]) == {"type": "nv-ipam", "poolName": "sriov-pool"}


def test_nic_cluster_policy_waits_for_a_bare_metal_nodes_bring_up(run_stack: Callable[..., Run]) -> None:
    policy = run_stack("sriov").one("kubernetes:mellanox.com/v1alpha1:NicClusterPolicy")
    assert policy.options["customTimeouts"] == {"create": "45m"}


def test_two_sriov_shapes_each_get_policies_and_jobs_from_their_topology(
    run_stack: Callable[..., Run],
) -> None:
    """Issue 19 item 2: a BM.GPU.B4.8 and an H100 SR-IOV pool; the VF jobs run on the H100 pool with its
    4 GPUs a node (its topology), not a fixed 8."""
    h100 = "BM.GPU.H100.8"
    raw = raw_config("sriov")
    raw["nodePools"].append(
        {**raw["nodePools"][0], "name": "gpu-h100-vf", "shape": h100, "sriov": {"vfsPerPf": 1}}
    )
    raw["shapeTopologies"] = {
        h100: {
            "roots": [
                {
                    "name": f"pci0000:{i:02x}",
                    "numaNode": i,
                    "gpus": [f"0000:{16 + 2 * i + g:02x}:00.0" for g in range(2)],
                    "rails": [
                        {"name": f"rdma{4 * i + r}", "pciAddress": f"0000:{64 + 4 * i + r:02x}:00.0"}
                        for r in range(4)
                    ],
                }
                for i in range(2)
            ]
        }
    }
    raw["workloads"]["acceptanceJobs"]["nodePool"] = "gpu-h100-vf"
    run = run_stack("sriov", raw)
    policies = by_name(run, resource_types.SRIOV_NODE_POLICY)
    assert len(policies) == 24
    assert policies["rdma-vf-bm-gpu-h100-8-7"]["spec"]["nodeSelector"] == {
        "node.kubernetes.io/instance-type": h100
    }
    assert policies["rdma-vf-bm-gpu-h100-8-7"]["spec"]["nicSelector"]["rootDevices"] == ["0000:47:00.0"]
    assert sorted(by_name(run, resource_types.SRIOV_NETWORK)) == sorted(policies)
    (config,) = run.of_type(resource_types.SRIOV_POOL_CONFIG)
    assert manifest(config)["spec"]["nodeSelector"]["matchExpressions"][0]["values"] == ["BM.GPU.B4.8", h100]
    (job,) = run.of_type(MPIJOB)
    assert job.inputs["metadata"]["name"] == "nccl-vf"
    assert job.inputs["spec"]["slotsPerWorker"] == 4
    pod = job.inputs["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    assert pod["spec"]["nodeSelector"] == {"node.kubernetes.io/instance-type": h100}
    limits = pod["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/gpu": 4, **{f"nvidia.com/rdma-vf-bm-gpu-h100-8-{i}": 1 for i in range(8)}}
    assert pod["metadata"]["annotations"][NETWORKS_ANNOTATION] == ",".join(
        f"rdma-vf-bm-gpu-h100-8-{i}" for i in range(8)
    )


def test_the_nic_cluster_policy_tolerates_the_sriov_taints_its_daemonsets_do_not() -> None:
    from components.sriov.network_operator import nic_cluster_policy_spec
    from stack_config.nodes.pool_settings import GPU_TAINT, Taint
    from stack_config.sriov.sriov_settings import NetworkOperatorConfig

    config = NetworkOperatorConfig()
    # The operator's DaemonSets tolerate nvidia.com/gpu NoSchedule themselves: nothing to add.
    assert "tolerations" not in nic_cluster_policy_spec(config, [GPU_TAINT])
    spec = nic_cluster_policy_spec(
        config,
        [
            GPU_TAINT,
            Taint(key="dedicated", value="a"),
            Taint(key="dedicated", value="b"),
            Taint(key="x", effect="NoExecute"),
        ],
    )
    assert spec["tolerations"] == [
        {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "x", "operator": "Exists", "effect": "NoExecute"},
    ]
    assert spec["nodeAffinity"] == SRIOV_NODES_ONLY


def test_without_its_own_nfd_the_release_waits_for_the_gpu_operators(run_stack: Callable[..., Run]) -> None:
    """The chart renders its NodeFeatureRule even with nfd.enabled false, and Helm leaves out the NFD
    subchart's CRDs then: the GPU Operator's NFD must have installed the NodeFeatureRule CRD first."""
    raw = raw_config("sriov")
    raw["gpuOperator"] = {"enabled": True}
    run = run_stack("sriov", raw)
    by_chart = {r.inputs["chart"]: r for r in run.of_type(RELEASE)}
    # Depending on the component is depending on its children: the engine gets the release.
    gpu_release = by_chart[gpu_operator_chart.CHART_NAME].urn
    assert gpu_release in by_chart[network_operator.CHART_NAME].dependencies
    raw["networkOperator"]["deployNfd"] = True
    run = run_stack("sriov", raw)
    by_chart = {r.inputs["chart"]: r for r in run.of_type(RELEASE)}
    gpu_release = by_chart[gpu_operator_chart.CHART_NAME].urn
    assert gpu_release not in by_chart[network_operator.CHART_NAME].dependencies
