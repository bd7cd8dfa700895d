"""RDMA GPU node pools in compute clusters, as the program declares them (components/nodes/gpu_node_pool.py)."""

from __future__ import annotations

import base64
import inspect
import re
from collections.abc import Callable

import pulumi_oci
import pulumi_oci.config.vars
import yaml

from components.component_inputs import schema_name
from components.nodes.gpu_node_pool import launch_statement
from oke_gpu_rdma.common.resource_types import LAUNCH_POLICY_COMPONENT, NODE_POOL_COMPONENT
from oke_gpu_rdma.nodes import cloud_init
from oke_gpu_rdma.nodes.labels import DEVICE_PLUGIN_LABEL, FABRIC_LEVEL_LABELS, HOSTNAME_LABEL, POOL_LABEL
from preview.mock_runtime import placeholder_ocid
from tests.support import EXAMPLE_REGION, Run, raw_config

NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"
COMPUTE_CLUSTER = "oci:Core/computeCluster:ComputeCluster"
IAM_POLICY = "oci:Identity/policy:Policy"
COMPARTMENT = "ocid1.compartment.oc1..aaaaaaaaexamplecompartmentgpurdma"


def labels_of(pool_inputs: dict) -> dict[str, str]:
    return {label["key"]: label["value"] for label in pool_inputs["initialNodeLabels"]}


def user_data(pool_inputs: dict) -> str:
    return base64.b64decode(pool_inputs["nodeMetadata"]["user_data"]).decode()


def test_node_pool_is_b4_8_in_its_compute_cluster(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev")
    compute = run.one(COMPUTE_CLUSTER, "gpu-b4-compute-cluster")
    pool = run.one(NODE_POOL, "gpu-b4-nodes")
    component = run.one(NODE_POOL_COMPONENT, "gpu-b4")
    assert compute.parent == component.urn and pool.parent == component.urn
    assert compute.inputs == {
        "availabilityDomain": "Uocm:US-ASHBURN-AD-1",
        "compartmentId": COMPARTMENT,
        "displayName": "gpu-b4-compute-cluster",
    }
    inputs = pool.inputs
    assert inputs["nodeShape"] == "BM.GPU.B4.8"
    assert inputs["clusterId"] == "ocid1.cluster.oc1.iad.aaaaaaaaexampleclustergpurdma"
    assert inputs["kubernetesVersion"] == "v1.36.4"
    details = inputs["nodeConfigDetails"]
    assert (
        details["computeClusterId"]
        == compute.id
        == placeholder_ocid("computecluster", "gpu-b4-compute-cluster", EXAMPLE_REGION)
    )
    assert details["size"] == 2
    assert details["placementConfigs"] == [
        {
            "availabilityDomain": "Uocm:US-ASHBURN-AD-1",
            "subnetId": "ocid1.subnet.oc1.iad.aaaaaaaaexampleworkersubnet",
        }
    ]
    assert "faultDomains" not in details["placementConfigs"][0]
    assert details["nodePoolPodNetworkOptionDetails"] == {"cniType": "FLANNEL_OVERLAY"}
    assert inputs["nodeSourceDetails"] == {
        "sourceType": "IMAGE",
        "imageId": "ocid1.image.oc1.iad.aaaaaaaaexampleubuntudocaofed",
        "bootVolumeSizeInGbs": "500",
    }
    assert inputs["nodePoolCyclingDetails"] == {
        "isNodeCyclingEnabled": True,
        "maximumSurge": "0",
        "maximumUnavailable": "1",
    }


def test_labels_turn_the_device_plugin_off(run_stack: Callable[..., Run]) -> None:
    labels = labels_of(run_stack("dev").one(NODE_POOL).inputs)
    assert labels == {POOL_LABEL: "gpu-b4", DEVICE_PLUGIN_LABEL: "false"}


def test_device_plugin_label_absent_without_the_gpu_dra_driver(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("dev")
    raw["gpuDriver"] = {"enabled": False}
    raw["nodePools"][0]["labels"] = {"team": "research"}
    labels = labels_of(run_stack("dev", raw).one(NODE_POOL).inputs)
    assert labels == {POOL_LABEL: "gpu-b4", "team": "research"}


def test_cloud_init_carries_every_node_setting(run_stack: Callable[..., Run]) -> None:
    text = user_data(run_stack("dev").one(NODE_POOL).inputs)
    assert text == cloud_init.render_cloud_init(
        cloud_init.NodeBootstrap(("nvidia.com/gpu=present:NoSchedule",))
    )
    document = yaml.safe_load(text)
    files = {f["path"]: f["content"] for f in document["write_files"]}
    assert "enable_nri = true" in files[cloud_init.NRI_PATH]
    assert 'nri_plugin_request_timeout = "30s"' in files[cloud_init.NRI_PATH]
    assert "memlock=-1:-1" in files[cloud_init.MEMLOCK_PATH]
    assert "options ib_core netns_mode=1" in files[cloud_init.IB_CORE_PATH]
    assert "ManageForeignRoutes=no" in files[cloud_init.NETWORKD_PATH]
    assert document["runcmd"][-1] == [
        cloud_init.BOOTSTRAP_PATH,
        "--register-with-taints=nvidia.com/gpu=present:NoSchedule",
        *cloud_init.TOPOLOGY_LABELS_COMMAND,
    ]
    assert files[cloud_init.TOPOLOGY_LABELS_PATH] == cloud_init.TOPOLOGY_LABELS_SH


def test_existing_compute_cluster_is_used_not_created(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("dev")
    existing = "ocid1.computecluster.oc1.iad.aaaaaaaaexisting"
    del raw["nodePools"][0]["availabilityDomain"]
    raw["nodePools"][0]["computeClusterId"] = existing
    run = run_stack("dev", raw)
    assert run.of_type(COMPUTE_CLUSTER) == []
    details = run.one(NODE_POOL).inputs["nodeConfigDetails"]
    assert details["computeClusterId"] == existing
    # The AD comes from the existing compute cluster (looked up through the OCI API), named as OCI names
    # Ashburn's ADs.
    assert details["placementConfigs"][0]["availabilityDomain"] == "Uocm:US-ASHBURN-AD-1"


def test_launch_policy_is_created_once_and_pools_wait_for_it(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    policy = run.one(IAM_POLICY)
    assert policy.inputs["statements"] == [launch_statement(COMPARTMENT)]
    # Only node pools of the stack's compartment may launch, and only into its compute clusters.
    assert policy.inputs["statements"][0] == (
        f"Allow any-user to {{COMPUTE_CLUSTER_LAUNCH_INSTANCE}} in compartment id {COMPARTMENT} "
        f"where all {{request.principal.type = 'nodepool', request.principal.compartment.id = '{COMPARTMENT}'}}"
    )
    assert run.by_urn(policy.parent).type == LAUNCH_POLICY_COMPONENT
    # depends_on the policy component reaches the engine as a dependency on the policy itself.
    for component in run.of_type(NODE_POOL_COMPONENT):
        assert policy.urn in component.dependencies


def test_policy_can_be_left_to_the_tenancy(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("dev")
    raw["createComputeClusterPolicy"] = False
    assert run_stack("dev", raw).of_type(IAM_POLICY) == []


def test_several_pools_each_get_their_compute_cluster(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    pools = {r.name: r for r in run.of_type(NODE_POOL)}
    computes = {r.name: r for r in run.of_type(COMPUTE_CLUSTER)}
    assert set(pools) == {"gpu-b4-a-nodes", "gpu-b4-b-nodes", "system-nodes"}
    for name in ("gpu-b4-a", "gpu-b4-b"):
        details = pools[f"{name}-nodes"].inputs["nodeConfigDetails"]
        assert details["computeClusterId"] == computes[f"{name}-compute-cluster"].id
        assert (
            details["placementConfigs"][0]["availabilityDomain"]
            == (computes[f"{name}-compute-cluster"].inputs["availabilityDomain"])
        )
    assert labels_of(pools["gpu-b4-b-nodes"].inputs)["team"] == "research"


def test_the_launch_policy_is_replaced_deleting_first(run_stack: Callable[..., Run]) -> None:
    # name and compartmentId are not updatable and the name is unique in the tenancy: a replacement
    # created first would collide with the policy it replaces.
    policy = run_stack("dev").one(IAM_POLICY)
    assert policy.options == {"deleteBeforeReplace": True}


def test_a_tenancy_as_compartment_gets_the_root_compartment_statement(run_stack: Callable[..., Run]) -> None:
    tenancy = "ocid1.tenancy.oc1..aaaaaaaaexampletenancygpurdma"
    raw = raw_config("dev")
    raw["compartmentId"] = tenancy
    policy = run_stack("dev", raw).one(IAM_POLICY)
    assert policy.inputs["compartmentId"] == tenancy
    # `in tenancy` covers every compartment: the target is pinned to the root compartment itself.
    assert policy.inputs["statements"] == [
        "Allow any-user to {COMPUTE_CLUSTER_LAUNCH_INSTANCE} in tenancy where all "
        f"{{request.principal.type = 'nodepool', request.principal.compartment.id = '{tenancy}', "
        f"target.compartment.id = '{tenancy}'}}"
    ]


def test_a_pool_is_replaced_deleting_first_unless_the_stack_says_create_first(
    run_stack: Callable[..., Run],
) -> None:
    run = run_stack("dev")
    assert run.one(NODE_POOL).options["deleteBeforeReplace"] is True
    # Its compute cluster holds no hosts: created first.
    assert "deleteBeforeReplace" not in run.one(COMPUTE_CLUSTER).options
    raw = raw_config("dev")
    raw["nodePools"][0]["replaceOrder"] = "createFirst"
    assert "deleteBeforeReplace" not in run_stack("dev", raw).one(NODE_POOL).options


def test_provider_settings_are_read_under_the_keys_pulumi_oci_reads() -> None:
    # The config keys pulumi-oci's own config module reads (pulumi_oci/config/vars.py) are the
    # camelCase of its ProviderArgs parameters: the home-region provider reads the same keys.
    source = inspect.getsource(pulumi_oci.config.vars)
    read = set(re.findall(r"__config__\.get\w*\('(\w+)'\)", source))
    parameters = set(inspect.signature(pulumi_oci.ProviderArgs.__init__).parameters) - {"__self__"}
    assert {schema_name(name) for name in parameters} == read


def test_bare_metal_pools_and_compute_clusters_get_bare_metal_timeouts(run_stack: Callable[..., Run]) -> None:
    """pulumi-oci's defaults (50 min for a node pool, 20 min for a compute cluster) are sized for VMs; the
    options reach the engine as custom timeouts (oke_gpu_rdma/nodes/provisioning.py cites both)."""
    run = run_stack("full")
    for name in ("gpu-b4-a", "gpu-b4-b"):
        assert run.one(NODE_POOL, f"{name}-nodes").options == {
            "protect": True,
            "deleteBeforeReplace": True,
            "customTimeouts": {"create": "120m", "update": "120m", "delete": "120m"},
        }
        assert run.one(COMPUTE_CLUSTER, f"{name}-compute-cluster").options == {
            "protect": True,
            "customTimeouts": {"create": "20m", "update": "20m", "delete": "60m"},
        }


def test_cycling_a_big_pool_one_node_at_a_time_gets_time_for_every_node(
    run_stack: Callable[..., Run],
) -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["count"] = 8
    options = run_stack("dev", raw).one(NODE_POOL).options
    # 8 nodes, one at a time (surge 0, unavailable 1), 45 minutes each.
    assert options["customTimeouts"] == {"create": "120m", "update": "360m", "delete": "120m"}
    raw["nodePools"][0]["cycling"] = {"maximumSurge": 2, "maximumUnavailable": 2}
    options = run_stack("dev", raw).one(NODE_POOL).options
    assert options["customTimeouts"]["update"] == "120m"


def _with_railless_pools() -> dict:
    """The full example plus an H100 pool and an A10 inference pool without rails (rdma: none)."""
    raw = raw_config("full")
    b4 = raw["nodePools"][0]
    raw["nodePools"] += [
        {**b4, "name": "gpu-h100", "shape": "BM.GPU.H100.8", "rdma": "none"},
        {
            **b4,
            "name": "infer-a10",
            "shape": "VM.GPU.A10.1",
            "rdma": "none",
            "availabilityDomain": "Uocm:US-ASHBURN-AD-3",
            "taints": [{"key": "dedicated", "value": "inference", "effect": "NoExecute"}],
        },
    ]
    return raw


def test_a_pool_without_rails_gets_no_compute_cluster_and_sits_in_its_ad(
    run_stack: Callable[..., Run],
) -> None:
    run = run_stack("full", _with_railless_pools())
    assert sorted(r.name for r in run.of_type(COMPUTE_CLUSTER)) == [
        "gpu-b4-a-compute-cluster",
        "gpu-b4-b-compute-cluster",
    ]
    details = run.one(NODE_POOL, "infer-a10-nodes").inputs["nodeConfigDetails"]
    assert "computeClusterId" not in details
    worker = run.one(NODE_POOL, "gpu-b4-a-nodes").inputs["nodeConfigDetails"]["placementConfigs"][0][
        "subnetId"
    ]
    assert details["placementConfigs"] == [{"availabilityDomain": "Uocm:US-ASHBURN-AD-3", "subnetId": worker}]
    assert run.one(NODE_POOL, "infer-a10-nodes").inputs["nodeShape"] == "VM.GPU.A10.1"
    assert sorted(run.run.outputs["computeClusters"]) == ["gpu-b4-a", "gpu-b4-b"]
    assert sorted(run.run.outputs["nodePools"]) == ["gpu-b4-a", "gpu-b4-b", "gpu-h100", "infer-a10"]


def test_a_pool_without_rails_keeps_the_device_plugin_and_gets_only_the_bootstrap(
    run_stack: Callable[..., Run],
) -> None:
    run = run_stack("full", _with_railless_pools())
    inputs = run.one(NODE_POOL, "gpu-h100-nodes").inputs
    # No nvidia.com/gpu.deploy.device-plugin=false: the GPU Operator's device plugin offers its GPUs.
    assert labels_of(inputs) == {POOL_LABEL: "gpu-h100"}
    text = user_data(inputs)
    assert text == cloud_init.render_cloud_init(
        cloud_init.NodeBootstrap(("nvidia.com/gpu=present:NoSchedule",), rdma_netns=None)
    )
    document = yaml.safe_load(text)
    assert [f["path"] for f in document["write_files"]] == [cloud_init.BOOTSTRAP_PATH]
    assert document["runcmd"] == [
        [cloud_init.BOOTSTRAP_PATH, "--register-with-taints=nvidia.com/gpu=present:NoSchedule"]
    ]
    a10 = yaml.safe_load(user_data(run.one(NODE_POOL, "infer-a10-nodes").inputs))
    assert a10["runcmd"] == [
        [cloud_init.BOOTSTRAP_PATH, "--register-with-taints=dedicated=inference:NoExecute"]
    ]


def test_no_dra_driver_selects_a_pool_without_rails_and_the_gpu_operator_tolerates_it(
    run_stack: Callable[..., Run],
) -> None:
    run = run_stack("full", _with_railless_pools())
    releases = {r.name: r.inputs["values"] for r in run.of_type("kubernetes:helm.sh/v3:Release")}
    for name in ("dranet-release", "gpu-dra-driver-release"):
        terms = releases[name]
        if name == "gpu-dra-driver-release":
            terms = terms["kubeletPlugin"]
        (term,) = terms["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        assert term == {
            "matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": ["gpu-b4-a", "gpu-b4-b"]}]
        }
    assert {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"} in releases[
        "gpu-operator-release"
    ]["daemonsets"]["tolerations"]


def test_every_rdma_pool_registers_the_fabric_levels_and_a_pool_without_rails_none(
    run_stack: Callable[..., Run],
) -> None:
    """The full example's DRANET pools, plus pools without rails: the fabric level keys each pool's nodes
    register at boot (the kubelet adds kubernetes.io/hostname, the Topology's last level)."""
    run = run_stack("full", _with_railless_pools())
    registered = {
        r.name: cloud_init.registered_label_keys(user_data(r.inputs))
        for r in run.of_type(NODE_POOL)
        if r.inputs["nodeShape"] != "VM.Standard.E5.Flex"
    }
    assert registered == {
        "gpu-b4-a-nodes": FABRIC_LEVEL_LABELS[:-1],
        "gpu-b4-b-nodes": FABRIC_LEVEL_LABELS[:-1],
        "gpu-h100-nodes": (),
        "infer-a10-nodes": (),
    }
    assert FABRIC_LEVEL_LABELS[-1] == HOSTNAME_LABEL
