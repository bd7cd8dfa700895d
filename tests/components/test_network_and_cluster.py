"""The network and the OKE cluster (components/network.py, components/cluster.py)."""

from __future__ import annotations

from collections.abc import Callable

from components.cluster import CLUSTER_TYPE
from preview.mock_runtime import placeholder_kubeconfig
from tests.support import EXAMPLE_REGION, Run, raw_config

SUBNET = "oci:Core/subnet:Subnet"
CLUSTER = "oci:ContainerEngine/cluster:Cluster"
NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"


def test_existing_network_and_cluster_create_nothing_in_oci(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev")
    oci_types = {r.type for r in run.resources if r.type.startswith("oci:")}
    assert oci_types == {
        "oci:Core/computeCluster:ComputeCluster",
        "oci:ContainerEngine/nodePool:NodePool",
        "oci:Identity/policy:Policy",
    }


def test_full_stack_creates_the_subnets_with_their_cidrs(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    vcn = run.one("oci:Core/vcn:Vcn")
    assert vcn.inputs["cidrBlocks"] == ["10.140.0.0/16"]
    subnets = {r.name: r.inputs for r in run.of_type(SUBNET)}
    assert {name: s["cidrBlock"] for name, s in subnets.items()} == {
        "network-api-endpoint": "10.140.0.0/28",
        "network-load-balancers": "10.140.1.0/24",
        "network-workers": "10.140.64.0/19",
    }
    assert all(s["prohibitPublicIpOnVnic"] for s in subnets.values())
    workers = run.one(SUBNET, "network-workers")
    for pool in run.of_type(NODE_POOL):
        assert pool.inputs["nodeConfigDetails"]["placementConfigs"][0]["subnetId"] == workers.id


def test_vcn_native_pods_get_a_pod_subnet(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("full")
    raw["cluster"]["create"]["cniType"] = "OCI_VCN_IP_NATIVE"
    run = run_stack("full", raw)
    pods = run.one(SUBNET, "network-pods")
    assert pods.inputs["cidrBlock"] == "10.140.128.0/18"
    details = run.of_type(NODE_POOL)[0].inputs["nodeConfigDetails"]["nodePoolPodNetworkOptionDetails"]
    assert details == {"cniType": "OCI_VCN_IP_NATIVE", "podSubnetIds": [pods.id]}


def test_created_cluster_is_enhanced_with_the_configured_cidrs(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    cluster = run.one(CLUSTER)
    assert cluster.inputs["type"] == CLUSTER_TYPE == "ENHANCED_CLUSTER"
    assert cluster.inputs["kubernetesVersion"] == "v1.36.4"
    assert cluster.inputs["clusterPodNetworkOptions"] == [{"cniType": "FLANNEL_OVERLAY"}]
    assert cluster.inputs["options"]["kubernetesNetworkConfig"] == {
        "podsCidr": "10.240.0.0/12",
        "servicesCidr": "10.96.0.0/16",
    }
    endpoint = run.one(SUBNET, "network-api-endpoint")
    assert cluster.inputs["endpointConfig"] == {"subnetId": endpoint.id, "isPublicIpEnabled": False}
    for pool in run.of_type(NODE_POOL):
        assert pool.inputs["clusterId"] == cluster.id


def test_kubernetes_provider_gets_the_cluster_kubeconfig_as_a_secret(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev")
    provider = run.one("pulumi:providers:kubernetes")
    assert provider.inputs["kubeconfig"] == "[secret]"
    assert run.run.outputs["kubeconfig"] == "[secret]"
    assert run.run.outputs["clusterId"] == "ocid1.cluster.oc1.iad.aaaaaaaaexampleclustergpurdma"
    assert "generate-token" in placeholder_kubeconfig(run.run.outputs["clusterId"], EXAMPLE_REGION)


def kubeconfig_lookup(run: Run) -> dict:
    (found,) = [args for token, args in run.run.invokes if token.endswith("getClusterKubeConfig")]
    return found


def test_kubeconfig_endpoint_follows_the_api_endpoint(run_stack: Callable[..., Run]) -> None:
    assert kubeconfig_lookup(run_stack("full"))["endpoint"] == "PRIVATE_ENDPOINT"
    raw = raw_config("full")
    raw["network"]["create"]["apiEndpointPublic"] = True
    lookup = kubeconfig_lookup(run_stack("full", raw))
    assert lookup["endpoint"] == "PUBLIC_ENDPOINT" and lookup["tokenVersion"] == "2.0.0"


def test_existing_cluster_kubeconfig_endpoint_is_configurable(run_stack: Callable[..., Run]) -> None:
    assert kubeconfig_lookup(run_stack("dev"))["endpoint"] == "PUBLIC_ENDPOINT"
    raw = raw_config("dev")
    raw["cluster"]["existing"]["kubeconfigEndpoint"] = "PRIVATE_ENDPOINT"
    assert kubeconfig_lookup(run_stack("dev", raw))["endpoint"] == "PRIVATE_ENDPOINT"
