"""Shared helpers for the policy tests: resources as the engine sends them, seed variants, one call to analyze.

Every test goes through the real analyzer: resources become `AnalyzeRequest`s and one
`AnalyzeStackRequest` (property names as the providers define them, values in a protobuf Struct,
unknowns as the engine's sentinel) sent to the SDK servicer the CLI talks to
(`preview.policy_check.analyze_resources`).
"""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from preview.mock_runtime import RecordedResource
from preview.policy_check import Finding, analyze_requests, analyze_resources, configure_request
from tests.fixtures import seed000, seed001
from tests.support import meta_plugins, topology_to_dict

# What the engine sends for a value unknown during preview (pulumi_policy.proxy.UNKNOWN_STRING_VALUE).
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
STACK = "test"
PROJECT = "oke-gpu-rdma"
K8S_PROVIDER = f"urn:pulumi:{STACK}::{PROJECT}::pulumi:providers:kubernetes::k8s::provider-id"


def urn(type_: str, name: str) -> str:
    return f"urn:pulumi:{STACK}::{PROJECT}::{type_}::{name}"


def struct(props: Mapping[str, Any]) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(props)
    return s


def resource(
    type_: str,
    name: str,
    props: Mapping[str, Any],
    *,
    parent: str = "",
    provider: str = "",
    dependencies: Sequence[str] = (),
) -> RecordedResource:
    """A registration as the mock runtime records it (inputs in `struct`, as the engine forwards them)."""
    return RecordedResource(
        urn=urn(type_, name),
        type=type_,
        name=name,
        custom=True,
        parent=parent,
        inputs=dict(props),
        struct=struct(props),
        id="",
        provider=provider,
        dependencies=list(dependencies),
    )


def k8s_type(obj: Mapping[str, Any]) -> str:
    api_version = str(obj["apiVersion"])
    group_version = api_version if "/" in api_version else f"core/{api_version}"
    return f"kubernetes:{group_version}:{obj['kind']}"


def k8s(obj: Mapping[str, Any] | str, name: str | None = None, **kwargs: Any) -> RecordedResource:
    """A Kubernetes object (dict or YAML) as pulumi-kubernetes registers it."""
    data: dict[str, Any] = yaml.safe_load(obj) if isinstance(obj, str) else dict(obj)
    kwargs.setdefault("provider", K8S_PROVIDER)
    return resource(k8s_type(data), name or data["metadata"]["name"], data, **kwargs)


def analyze(resources: Sequence[RecordedResource], config: Mapping[str, Any] | None = None) -> list[Finding]:
    return analyze_resources(list(resources), config)


def of(findings: Sequence[Finding], policy: str, level: str | None = None) -> list[Finding]:
    return [f for f in findings if f.policy == policy and (level is None or f.level == level)]


def violations(findings: Sequence[Finding], policy: str) -> list[Finding]:
    """Findings of ``policy`` that are not 'could not check' notes."""
    return [f for f in of(findings, policy) if "during preview" not in f.message]


def notes(findings: Sequence[Finding], policy: str) -> list[Finding]:
    return [f for f in of(findings, policy) if "during preview" in f.message]


# --- the seed cluster (seed 000; oracle-quickstart/oci-hpc-oke) --------------------------------------------

DRANET_CHART = "oci://registry.k8s.io/networking/charts/dranet"
GPU_CHART = "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"


def dranet_release(name: str = "dranet", child: str | None = None, **kwargs: Any) -> RecordedResource:
    """seed 000's dranet-values.yaml as a helm.sh/v3 Release; ``child`` sets the child range."""
    args: dict[str, Any] = {"cloudProviderHint": "OKE"}
    if child is not None:
        args["cloudProviderOptions"] = {"oke": {"rdma-child-ipv4-cidr": child}}
    values = {
        "image": {"tag": "v1.5.0"},
        "nodeSelector": {"node.kubernetes.io/instance-type": "BM.GPU.B4.8"},
        "args": args,
    }
    props = {"chart": DRANET_CHART, "version": "v1.5.0", "namespace": "kube-system", "values": values}
    kwargs.setdefault("provider", K8S_PROVIDER)
    return resource("kubernetes:helm.sh/v3:Release", name, props, **kwargs)


def seed_plan(
    *,
    vcn: str = "10.140.0.0/16",
    workers: str = "10.140.64.0/19",
    pods: str = "10.240.0.0/12",
    services: str = "10.96.0.0/16",
    device_plugin_label: bool = True,
) -> list[RecordedResource]:
    """The seed cluster's network, cluster and one BM.GPU.B4.8 pool, as pulumi-oci inputs."""
    vcn_res = resource(
        "oci:Core/vcn:Vcn", "vcn", {"cidrBlocks": [vcn], "compartmentId": "ocid1.compartment.x"}
    )
    subnet = resource(
        "oci:Core/subnet:Subnet",
        "workers",
        {"cidrBlock": workers, "vcnId": UNKNOWN},
        dependencies=[vcn_res.urn],
    )
    cluster = resource(
        "oci:ContainerEngine/cluster:Cluster",
        "oke",
        {
            "options": {"kubernetesNetworkConfig": {"podsCidr": pods, "servicesCidr": services}},
            "vcnId": UNKNOWN,
        },
        dependencies=[vcn_res.urn],
    )
    labels = [{"key": "oke-gpu-rdma/node-pool", "value": "gpu-b4"}]
    if device_plugin_label:
        labels.append({"key": "nvidia.com/gpu.deploy.device-plugin", "value": "false"})
    pool = resource(
        "oci:ContainerEngine/nodePool:NodePool",
        "gpu-b4",
        {
            "nodeShape": "BM.GPU.B4.8",
            "initialNodeLabels": labels,
            "nodeConfigDetails": {"placementConfigs": [{"subnetId": UNKNOWN, "availabilityDomain": "AD-1"}]},
        },
        dependencies=[cluster.urn, subnet.urn],
    )
    return [vcn_res, subnet, cluster, pool]


NAMESPACE_YAML = """\
apiVersion: v1
kind: Namespace
metadata:
  name: rdma-dranet
  labels:
    pod-security.kubernetes.io/enforce: baseline
"""


def aligned_mpijob() -> dict[str, Any]:
    """seed 000's nccl-dranet-a-device-plugin with GPUs and rails from aligned-4gpu-8rails-a (no nvidia.com/gpu)."""
    job = seed000("nccl-dranet-a-device-plugin")
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    worker["resourceClaims"] = [{"name": "gpus-rails", "resourceClaimTemplateName": "aligned-4gpu-8rails-a"}]
    worker["containers"][0]["resources"] = {"claims": [{"name": "gpus-rails"}]}
    return job


# --- the SR-IOV cluster of seed 001 -----------------------------------------------------------------------


def sriov_pool(
    netns_mode: int = 1, labels: dict[str, str] | None = None, name: str = "gpu-b4-vf"
) -> RecordedResource:
    """A BM.GPU.B4.8 pool whose cloud-init sets ib_core netns_mode (1 shared, 0 exclusive); device plugin on."""
    user_data = base64.b64encode(
        f"#cloud-config\n# options ib_core netns_mode={netns_mode}\n".encode()
    ).decode()
    items = [{"key": k, "value": v} for k, v in {"oke-gpu-rdma/node-pool": name, **(labels or {})}.items()]
    return resource(
        "oci:ContainerEngine/nodePool:NodePool",
        name,
        {"nodeShape": "BM.GPU.B4.8", "initialNodeLabels": items, "nodeMetadata": {"user_data": user_data}},
    )


def seed_sriov_final(
    netns_mode: int = 1, networks: list[dict[str, Any]] | None = None
) -> list[RecordedResource]:
    """Seed 001's final design: the IPPool, 16 per-rail node policies (2 VFs) and 16 networks, on one pool."""
    objects = [
        seed001("ip-pool"),
        *seed001.all("sriov-node-policies-per-rail"),
        *(networks or seed001.all("sriov-networks-per-rail")),
    ]
    return [
        sriov_pool(netns_mode),
        *(k8s(o, f"{o['kind'].lower()}-{o['metadata']['name']}") for o in objects),
    ]


def exclusive_qos_under_args_cni() -> dict[str, Any]:
    """sriov-network-exclusive-qos.yaml with rdmaQoS moved under args.cni (the README's form the seed tried)."""
    network = seed001("sriov-network-exclusive-qos")
    plugins = meta_plugins(network)
    rdma = next(p for p in plugins if p["type"] == "rdma")
    rdma["args"] = {"cni": {"rdmaQoS": rdma.pop("rdmaQoS")}}
    network["spec"]["metaPlugins"] = ",\n".join(json.dumps(p, indent=2) for p in plugins) + "\n"
    return network


def misspelt_network(rail: int = 3, resource: str = "rdma-vf3") -> dict[str, Any]:
    """The per-rail network of ``rail`` with a resource name no node policy provides."""
    network = seed001.all("sriov-networks-per-rail")[rail]
    network["spec"]["resourceName"] = resource
    return network


@contextlib.contextmanager
def started_pack(
    python: Path, pack_dir: Path, env: Mapping[str, str] | None = None, timeout: float = 30
) -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    """The pack started exactly as the Pulumi CLI starts it, and a gRPC stub for its Analyzer.

    The CLI runs `<pack venv python> -u -m pulumi.policy <engine address> .` from the pack's directory
    and reads the port from the first line of stdout; the SDK only uses the engine address to log a
    crash, so no engine is needed.
    """
    proc = subprocess.Popen(
        [str(python), "-u", "-m", "pulumi.policy", "127.0.0.1:1", "."],
        cwd=pack_dir,
        env=dict(env) if env is not None else None,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        line = proc.stdout.readline().strip()
        if not line.isdigit():
            proc.kill()
            pytest.fail(
                f"the pack in {pack_dir} printed {line!r} instead of a port; stderr: {proc.stderr.read()}"
            )
        channel = grpc.insecure_channel(f"127.0.0.1:{line}")
        grpc.channel_ready_future(channel).result(timeout=timeout)
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# A shape the catalog does not verify, with the user's topology (the B4.8 layout): the built pack
# needs its vendored shape files and the supplied topology to find the non-rail PF below.
SUPPLIED_SHAPE = "BM.GPU.H100.8"


PACK_CONFIG = {
    "dranet-child-range": {"workerSubnetCidrs": ["10.140.64.0/19"]},
    "sriov-rail-root-devices": {
        "shapeTopologies": {SUPPLIED_SHAPE: topology_to_dict(CATALOG.topology("BM.GPU.B4.8"))}
    },
}


def tolerating_health_taints(
    toleration: Mapping[str, Any] | None = None, name: str = "rails-despite-health"
) -> dict[str, Any]:
    """Seed 000's all-rails template whose request tolerates the rail health mark (or ``toleration``)."""
    claim = seed000("all-rails")
    claim["metadata"]["name"] = name
    claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = [
        dict(
            toleration or {"key": "oke-gpu-rdma/rail-unhealthy", "operator": "Exists", "effect": "NoSchedule"}
        )
    ]
    return claim


def tripping_every_policy() -> list[RecordedResource]:
    """The seed stack gone wrong in every way a DRA policy checks, and two of seed 001's SR-IOV traps."""
    passthrough = seed000("all-rails")
    passthrough["spec"]["spec"]["devices"]["config"] = [
        {"opaque": {"driver": "dra.net", "parameters": {"interface": {"type": "Passthrough"}}}}
    ]
    job = seed000("nccl-dranet-a-device-plugin")
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["env"] = [{"name": "NCCL_IB_GID_INDEX", "value": "3"}]
    node_policy = seed001("sriov-network-node-policy")
    node_policy["spec"]["nodeSelector"]["node.kubernetes.io/instance-type"] = SUPPLIED_SHAPE
    node_policy["spec"]["nicSelector"]["rootDevices"].append("0000:01:00.0")  # not a rail PF
    namespace = yaml.safe_load(NAMESPACE_YAML)
    namespace["metadata"]["labels"] = {}
    gpu_driver = resource(
        "kubernetes:helm.sh/v3:Release",
        "gpu-dra",
        {
            "chart": GPU_CHART,
            "version": "0.5.1",
            "values": {
                "kubeletPlugin": {"nodeSelector": {"node.kubernetes.io/instance-type": "BM.GPU.B4.8"}}
            },
        },
        provider=K8S_PROVIDER,
    )
    # The API endpoint open to the internet in two halves.
    open_nsg = resource("oci:Core/networkSecurityGroup:NetworkSecurityGroup", "api-nsg", {})
    halves = [
        resource(
            "oci:Core/networkSecurityGroupSecurityRule:NetworkSecurityGroupSecurityRule",
            f"api-from-half-{i}",
            {"direction": "INGRESS", "protocol": "6", "source": half, "sourceType": "CIDR_BLOCK"},
            dependencies=[open_nsg.urn],
        )
        for i, half in enumerate(("0.0.0.0/1", "128.0.0.0/1"))
    ]
    return [
        open_nsg,
        *halves,
        *seed_plan(pods="10.208.0.0/12", device_plugin_label=False),
        dranet_release(),
        gpu_driver,
        *_kueue_trips(job),
        k8s(namespace),
        k8s(passthrough),
        k8s(seed000("shape-root")),
        k8s(seed000("rails-8-a")),
        k8s(tolerating_health_taints()),
        k8s(job),
        k8s(seed001("sriov-network-exclusive")),  # rdmaQoS missing
        k8s(misspelt_network()),  # a resource name no node policy provides
        k8s(node_policy),
        k8s(two_channels()),  # more IMEX channels than a node publishes
    ]


def two_channels() -> dict[str, Any]:
    """A claim template for two channels of a ComputeDomain's default class: the driver publishes one a node."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "two-channels", "namespace": "rdma-dranet"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "channel",
                            "exactly": {
                                "deviceClassName": "compute-domain-default-channel.nvidia.com",
                                "count": 2,
                            },
                        }
                    ]
                }
            }
        },
    }


def _kueue_trips(job: Mapping[str, Any]) -> list[RecordedResource]:
    """Kueue with topology-aware scheduling over the seed pool (whose nodes, without the program's cloud-init,
    carry no fabric levels), a flavor for a shape the stack has no pool of, and a copy of ``job`` queued with a
    level the Topology lacks and a claim for 9 GPUs per PCIe root, which no B4 node holds. ``job`` itself has
    no queue."""
    kueue = "kueue.x-k8s.io/v1beta2"
    levels = [{"nodeLabel": k} for k in ("oke-gpu-rdma/rdma-local-block", "kubernetes.io/hostname")]
    nine = seed000("aligned-4gpu-8rails-a")
    nine["metadata"]["name"] = "nine-gpus"
    nine["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 9
    queued = json.loads(json.dumps(job))
    queued["metadata"] = {
        **queued["metadata"],
        "name": "nccl-queued",
        "labels": {"kueue.x-k8s.io/queue-name": "gpu"},
    }
    worker = queued["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    worker["metadata"] = {
        "annotations": {"kueue.x-k8s.io/podset-required-topology": "oke-gpu-rdma/rdma-rack"}
    }
    worker["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "nine-gpus"}]
    objects: list[dict[str, Any]] = [
        {"apiVersion": kueue, "kind": "Topology", "metadata": {"name": "fabric"}, "spec": {"levels": levels}},
        {
            "apiVersion": kueue,
            "kind": "ResourceFlavor",
            "metadata": {"name": "b4"},
            "spec": {
                "nodeLabels": {"node.kubernetes.io/instance-type": "BM.GPU.B4.8"},
                "topologyName": "fabric",
            },
        },
        {
            "apiVersion": kueue,
            "kind": "ResourceFlavor",
            "metadata": {"name": "a100"},
            "spec": {"nodeLabels": {"node.kubernetes.io/instance-type": "BM.GPU.A100-v2.8"}},
        },
        {
            "apiVersion": kueue,
            "kind": "ClusterQueue",
            "metadata": {"name": "gpu"},
            "spec": {
                "resourceGroups": [{"coveredResources": ["gpu.nvidia.com"], "flavors": [{"name": "b4"}]}]
            },
        },
        {
            "apiVersion": kueue,
            "kind": "LocalQueue",
            "metadata": {"name": "gpu", "namespace": "rdma-dranet"},
            "spec": {"clusterQueue": "gpu"},
        },
        nine,
        queued,
    ]
    return [k8s(o, f"{o['kind'].lower()}-{o['metadata']['name']}") for o in objects]


Key = tuple[str, str, str, str, str]


def over_grpc(stub: analyzer_pb2_grpc.AnalyzerStub, resources: Sequence[RecordedResource]) -> list[Key]:
    """Configure, Analyze each resource and AnalyzeStack as the engine does; one key per diagnostic."""
    info = stub.GetAnalyzerInfo(empty_pb2.Empty())
    stub.Configure(configure_request(PACK_CONFIG, info))
    single, stack = analyze_requests(resources)
    keyed = [(d, request.urn) for request in single for d in stub.Analyze(request).diagnostics]
    keyed += [(d, "") for d in stub.AnalyzeStack(stack).diagnostics]
    out = []
    for d, urn in keyed:
        message = d.message
        if d.description and message.startswith(d.description):
            message = message[len(d.description) :].lstrip("\n")
        level = analyzer_pb2.EnforcementLevel.Name(d.enforcementLevel).lower()
        out.append((d.policyName, level, d.urn or urn, d.description, message))
    return sorted(out)
