"""The network and the OKE cluster (components/nodes/network.py, components/nodes/cluster.py)."""

from __future__ import annotations

from collections.abc import Callable

import yaml

from components.nodes.cluster import CLUSTER_TYPE
from preview.mock_runtime import ROOT, placeholder_kubeconfig
from stack_config.nodes.network_rules import nsg_rules
from stack_config.nodes.network_settings import NewNetwork
from tests.support import EXAMPLE_REGION, Run, raw_config

SUBNET = "oci:Core/subnet:Subnet"
CLUSTER = "oci:ContainerEngine/cluster:Cluster"
NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"
NSG = "oci:Core/networkSecurityGroup:NetworkSecurityGroup"


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
    pod_nsg = run.one(NSG, "network-pods-nsg")
    for pool in run.of_type(NODE_POOL):
        details = pool.inputs["nodeConfigDetails"]["nodePoolPodNetworkOptionDetails"]
        assert details == {
            "cniType": "OCI_VCN_IP_NATIVE",
            "podSubnetIds": [pods.id],
            "podNsgIds": [pod_nsg.id],
        }


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
    endpoint_nsg = run.one(NSG, "network-api-endpoint-nsg")
    assert cluster.inputs["endpointConfig"] == {
        "subnetId": endpoint.id,
        "isPublicIpEnabled": False,
        "nsgIds": [endpoint_nsg.id],
    }
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


NSG_RULE = "oci:Core/networkSecurityGroupSecurityRule:NetworkSecurityGroupSecurityRule"
SECURITY_LIST = "oci:Core/securityList:SecurityList"


def test_a_created_vcn_has_an_nsg_per_role_with_its_rules(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    nsgs = {r.name: r for r in run.of_type(NSG)}
    assert set(nsgs) == {"network-api-endpoint-nsg", "network-workers-nsg", "network-load-balancers-nsg"}
    vcn = run.one("oci:Core/vcn:Vcn")
    assert all(n.inputs["vcnId"] == vcn.id for n in nsgs.values())
    new = NewNetwork.model_validate(raw_config("full")["network"]["create"])
    expected = nsg_rules(new, vcn_native_pods=False)
    rules = {r.name: r.inputs for r in run.of_type(NSG_RULE)}
    assert len(rules) == sum(len(v) for v in expected.values())
    # One rule as OCI gets it: the bootstrap port from the worker subnet, on the endpoint's NSG.
    assert rules["network-api-endpoint-bootstrap-from-workers"] == {
        "networkSecurityGroupId": nsgs["network-api-endpoint-nsg"].id,
        "direction": "INGRESS",
        "protocol": "6",
        "description": "OKE node bootstrap and proxymux from the worker nodes only",
        "stateless": False,
        "source": "10.140.64.0/19",
        "sourceType": "CIDR_BLOCK",
        "tcpOptions": {"destinationPortRange": {"min": 12250, "max": 12250}},
    }
    services = rules["network-workers-to-services"]
    assert services["destinationType"] == "SERVICE_CIDR_BLOCK" and services["direction"] == "EGRESS"


def test_no_ingress_of_the_created_network_comes_from_anywhere(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("full")
    raw["network"]["create"]["apiEndpointPublic"] = True
    raw["network"]["create"]["apiAllowedCidrs"] = ["203.0.113.0/24"]
    raw["cluster"]["create"]["cniType"] = "OCI_VCN_IP_NATIVE"
    run = run_stack("full", raw)
    ingress = [r.inputs for r in run.of_type(NSG_RULE) if r.inputs["direction"] == "INGRESS"]
    ingress += [
        rule for sl in run.of_type(SECURITY_LIST) for rule in sl.inputs.get("ingressSecurityRules", [])
    ]
    assert ingress and not [r for r in ingress if r["source"] == "0.0.0.0/0"]
    allowed = [r for r in ingress if r["source"] == "203.0.113.0/24"]
    assert [r["tcpOptions"]["destinationPortRange"] for r in allowed] == [{"min": 6443, "max": 6443}]


def test_every_subnet_gets_the_icmp_only_list_not_the_vcn_default(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    (baseline,) = run.of_type(SECURITY_LIST)
    assert baseline.inputs["egressSecurityRules"] == []
    assert [r["protocol"] for r in baseline.inputs["ingressSecurityRules"]] == ["1"]
    assert all(s.inputs["securityListIds"] == [baseline.id] for s in run.of_type(SUBNET))


def test_node_pools_and_the_endpoint_take_their_nsgs(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    workers = run.one(NSG, "network-workers-nsg")
    for pool in run.of_type(NODE_POOL):
        assert pool.inputs["nodeConfigDetails"]["nsgIds"] == [workers.id]
    assert run.run.outputs["loadBalancerNsgId"] == run.one(NSG, "network-load-balancers-nsg").id


def test_existing_subnets_get_no_nsgs(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev")
    assert run.of_type(NSG) == [] and run.of_type(NSG_RULE) == []
    assert all("nsgIds" not in p.inputs["nodeConfigDetails"] for p in run.of_type(NODE_POOL))
    assert "loadBalancerNsgId" not in run.run.outputs


KEY = "ocid1.key.oc1.iad.bbpvrcsjaaaae.abuwcljrexamplekeyforbootvolumes"


def test_a_customer_managed_key_encrypts_the_boot_volumes_and_the_cluster_secrets(
    run_stack: Callable[..., Run],
) -> None:
    raw = raw_config("full")
    raw["encryption"] = {"kmsKeyId": KEY}
    run = run_stack("full", raw)
    assert run.one(CLUSTER).inputs["kmsKeyId"] == KEY
    pools = run.of_type(NODE_POOL)
    assert len(pools) == 3 and all(p.inputs["nodeConfigDetails"]["kmsKeyId"] == KEY for p in pools)
    # Off by default: Oracle-managed keys, nothing sent.
    default = run_stack("full")
    assert "kmsKeyId" not in default.one(CLUSTER).inputs
    assert all("kmsKeyId" not in p.inputs["nodeConfigDetails"] for p in default.of_type(NODE_POOL))


def test_an_existing_cluster_keeps_its_secrets_key_and_its_pools_take_the_key(
    run_stack: Callable[..., Run],
) -> None:
    raw = raw_config("dev")
    raw["encryption"] = {"kmsKeyId": KEY}
    run = run_stack("dev", raw)
    assert run.of_type(CLUSTER) == []
    assert [p.inputs["nodeConfigDetails"]["kmsKeyId"] for p in run.of_type(NODE_POOL)] == [KEY]


def test_in_transit_encryption_is_sent_for_the_pools_that_ask(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("full")
    raw["systemPool"]["inTransitEncryption"] = True
    run = run_stack("full", raw)
    details = {p.name: p.inputs["nodeConfigDetails"] for p in run.of_type(NODE_POOL)}
    assert details["system-nodes"]["isPvEncryptionInTransitEnabled"] is True
    assert not any("isPvEncryptionInTransitEnabled" in d for n, d in details.items() if n != "system-nodes")


def test_the_committed_renderings_open_nothing_to_the_internet() -> None:
    # What a reviewer reads in rendered/<stack>/resources: no ingress from 0.0.0.0/0 on any NSG rule or
    # security list, and 12250 admitted from the worker subnet only.
    checked = 0
    for path in sorted((ROOT / "rendered").glob("*/resources/oci-core-*.yaml")):
        document = yaml.safe_load(path.read_text())
        inputs = document["inputs"]
        if document["type"] == NSG_RULE and inputs["direction"] == "INGRESS":
            ingress = [inputs]
        elif document["type"] == SECURITY_LIST:
            ingress = inputs.get("ingressSecurityRules", [])
        else:
            continue
        for rule in ingress:
            checked += 1
            assert rule["source"] != "0.0.0.0/0", path.name
            ports = (rule.get("tcpOptions") or {}).get("destinationPortRange") or {"min": 1, "max": 65535}
            if rule["protocol"] in ("6", "all") and ports["min"] <= 12250 <= ports["max"]:
                assert rule["source"] == "10.140.64.0/19", path.name
    assert checked > 10
