"""The component package (provider/): started as the Pulumi CLI starts it, over gRPC.

GetSchema lists every component the package serves (components/package.py) under the program's own
type tokens, with typed, described inputs and outputs; Construct builds each from plain inputs (as a
YAML or TypeScript program sends them) and registers the children the program's own run registers.
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2
from pulumi.runtime.proto import provider_pb2

from components.claims.rdma_workloads import COMPONENT_KEYS
from components.component_inputs import from_wire
from components.package import PACKAGE_COMPONENTS, PACKAGE_NAME, PACKAGE_VERSION, package_version
from oke_gpu_rdma.claims import aligned_claim_spec, judge_claim, rails_only_claim_spec
from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.drivers import dranet, nvidia_gpu
from oke_gpu_rdma.nodes.labels import DEVICE_PLUGIN_LABEL, DEVICE_PLUGIN_OFF, POOL_LABEL
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from stack_config.claims.claim_plan import judged_templates
from stack_config.claims.template_requests import TemplateRequest
from tests.provider.provider_support import (
    K8S_PROVIDER,
    PLUGIN_DIR,
    PROJECT,
    ROOT,
    STACK,
    Engine,
    construct_request,
    served_engine,
    started_provider,
    values,
)
from tools.package_schema import schema_text

SHAPE = "BM.GPU.B4.8"
COMPARTMENT = "ocid1.compartment.oc1..aaaaaaaaexamplecompartment"
IMAGE = "ocid1.image.oc1.iad.aaaaaaaaexampleimage"
CLUSTER_URN = f"urn:pulumi:{STACK}::{PROJECT}::oci:ContainerEngine/cluster:Cluster::oke"
POOLS_URN = f"urn:pulumi:{STACK}::{PROJECT}::oke-gpu-rdma:index:RdmaGpuNodePool::gpu-b4"
HELM_RELEASE = resource_types.HELM_RELEASE
CLAIM_TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"


@pytest.fixture(scope="module")
def plugin() -> Iterator[tuple[Any, str]]:
    """One engine and one provider process for the module: a stub and the monitor address."""
    with served_engine() as (_, address), started_provider(address) as stub:
        yield stub, address


def construct(
    plugin: tuple[Any, str], type_: str, name: str, inputs: dict[str, Any], **kwargs: Any
) -> tuple[Engine, dict[str, Any]]:
    """Construct ``type_`` with a monitor of its own; what it registered and the state it returned."""
    stub, _ = plugin
    with served_engine() as (engine, address):
        response = stub.Construct(construct_request(address, type_, name, inputs, **kwargs), timeout=120)
    return engine, values(response.state)


def construct_error(type_: str, name: str, inputs: dict[str, Any], **kwargs: Any) -> str:
    """The error a Construct of ``type_`` ends with, from a provider process of its own: a failed
    Construct fails the deployment, after which the engine stops the plugin (RPCs it left in flight
    would hold up the next Construct)."""
    with (
        served_engine() as (_, address),
        started_provider(address) as stub,
        pytest.raises(grpc.RpcError) as raised,
    ):
        stub.Construct(construct_request(address, type_, name, inputs, **kwargs), timeout=120)
    details: str = raised.value.details()
    return details


@pytest.fixture(scope="module")
def schema(plugin: tuple[Any, str]) -> dict[str, Any]:
    stub, _ = plugin
    data: dict[str, Any] = json.loads(stub.GetSchema(provider_pb2.GetSchemaRequest(), timeout=60).schema)
    return data


# --- the package -----------------------------------------------------------------------------------


def test_plugin_runs_python_from_its_own_virtualenv() -> None:
    text = (PLUGIN_DIR / "PulumiPlugin.yaml").read_text()
    assert re.search(r"^runtime:\n  name: python\n  options:\n(    .*\n)*    virtualenv: venv$", text, re.M)


def test_plugin_installs_the_programs_pins() -> None:
    # One source of truth for versions: the package runs the components with what `pulumi up` installs.
    def pins(path: Path) -> set[str]:
        return {line for line in path.read_text().splitlines() if "==" in line and not line.startswith("#")}

    assert pins(PLUGIN_DIR / "requirements.txt") == pins(ROOT / "requirements.txt")
    assert "-e .." in (PLUGIN_DIR / "requirements.txt").read_text().splitlines()


# --- the version -----------------------------------------------------------------------------------


def test_the_plugin_serves_pyprojects_version(plugin: tuple[Any, str], schema: dict[str, Any]) -> None:
    # One home: pyproject.toml's [project].version, in the schema (the generated SDKs' version: the SDK's
    # schema sets language.<lang>.respectSchemaVersion) and in GetPluginInfo; not the host's default 0.0.0.
    stub, _ = plugin
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert PACKAGE_VERSION == version != "0.0.0"
    assert schema["version"] == version
    assert all(schema["language"][lang]["respectSchemaVersion"] for lang in ("nodejs", "python"))
    assert stub.GetPluginInfo(empty_pb2.Empty(), timeout=60).version == version


def test_make_consumers_generates_the_sdks_from_the_schema_the_plugin_serves(schema: dict[str, Any]) -> None:
    assert json.loads(schema_text()) == schema


def test_a_version_that_is_no_release_is_refused(tmp_path: Path) -> None:
    # The CLI checks a git source out at the tag v<semver> (sdk/go/common/workspace/plugins.go gitSource).
    pyproject = tmp_path / "pyproject.toml"
    for bad in ("0.1", "1.0.0rc1", "01.2.3"):
        pyproject.write_text(f'[project]\nversion = "{bad}"\n')
        with pytest.raises(ValueError, match=r"needs a release version X\.Y\.Z \(its git tag is vX\.Y\.Z\)"):
            package_version(pyproject)


def test_a_release_tag_on_head_is_the_packages_version() -> None:
    # A tagged commit (the one `pulumi package add ...@X.Y.Z` checks out) serves X.Y.Z.
    described = subprocess.run(
        ["git", "describe", "--tags", "--exact-match", "--match", "v[0-9]*", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if described.returncode != 0:
        pytest.skip("HEAD carries no release tag")
    assert described.stdout.strip() == f"v{PACKAGE_VERSION}"


def test_the_docs_add_the_package_at_its_version_without_placeholders() -> None:
    page = (ROOT / "docs" / "component-package.md").read_text()
    commands = re.findall(r"pulumi package add (\S+?)`", page)
    assert commands, "docs/component-package.md gives no `pulumi package add` command"
    assert not [c for c in commands if "<" in c or ">" in c], commands
    # The git form (tools/package_source.py, `make package-source`), at this version.
    assert f"example.com/team/oke-gpu-rdma.git/provider@{PACKAGE_VERSION}" in commands
    assert "make package-source" in page


# --- GetSchema -------------------------------------------------------------------------------------


def test_schema_lists_every_component_under_the_programs_tokens(schema: dict[str, Any]) -> None:
    assert schema["name"] == PACKAGE_NAME == "oke-gpu-rdma"
    tokens = {
        resource_types.NODE_POOL_COMPONENT,
        resource_types.DRANET_COMPONENT,
        resource_types.GPU_DRIVER_COMPONENT,
        resource_types.WORKLOAD_NAMESPACE_COMPONENT,
        resource_types.CLAIM_TEMPLATES_COMPONENT,
    }
    assert set(schema["resources"]) == {f"oke-gpu-rdma:index:{c.__name__}" for c in PACKAGE_COMPONENTS}
    assert tokens <= set(schema["resources"])
    assert all(r["isComponent"] and r["description"] for r in schema["resources"].values())


def _typed_and_described(prop: dict[str, Any]) -> bool:
    return bool(prop.get("description")) and ("type" in prop or "$ref" in prop)


def test_every_input_and_output_is_typed_and_described(schema: dict[str, Any]) -> None:
    for token, resource in schema["resources"].items():
        assert resource["inputProperties"] and resource["properties"], token
        for kind in ("inputProperties", "properties"):
            for name, prop in resource[kind].items():
                assert _typed_and_described(prop), f"{token} {kind}.{name}: {prop}"
    for token, type_ in schema["types"].items():
        assert type_["description"], token
        for name, prop in type_.get("properties", {}).items():
            assert _typed_and_described(prop), f"{token}.{name}: {prop}"


def test_node_pool_inputs(schema: dict[str, Any]) -> None:
    pool = schema["resources"][resource_types.NODE_POOL_COMPONENT]
    inputs = pool["inputProperties"]
    assert set(pool["requiredInputs"]) == {
        "compartmentId",
        "clusterId",
        "kubernetesVersion",
        "workerSubnetId",
        "imageId",
        "count",
    }
    # Another resource's Output can feed these: they are not plain.
    for name in (
        "compartmentId",
        "clusterId",
        "workerSubnetId",
        "imageId",
        "availabilityDomain",
        "sshPublicKey",
    ):
        assert inputs[name]["type"] == "string" and "plain" not in inputs[name], name
    # These decide which resources exist and their options: plain.
    assert inputs["shape"]["plain"] and inputs["count"]["plain"] and inputs["count"]["type"] == "integer"
    assert inputs["rdma"]["$ref"] == "#/types/oke-gpu-rdma:index:RdmaPath"
    assert [e["value"] for e in schema["types"]["oke-gpu-rdma:index:RdmaPath"]["enum"]] == [
        "dranet",
        "sriov",
        "none",
    ]
    assert inputs["taints"]["items"]["$ref"] == "#/types/oke-gpu-rdma:index:PoolTaint"
    assert set(pool["properties"]) == {"computeClusterId", "nodePoolId", "nodeSpec", "availabilityDomain"}


def test_claim_template_inputs(schema: dict[str, Any]) -> None:
    templates = schema["resources"][resource_types.CLAIM_TEMPLATES_COMPONENT]
    assert set(templates["inputProperties"]) == {
        "shapes",
        "namespace",
        "claimTemplates",
        "railsOnlyTemplate",
        "shapeTopologies",
    }
    request = schema["types"]["oke-gpu-rdma:index:ClaimTemplateRequest"]
    assert set(request["properties"]) == {"name", "gpusPerWorker", "namespace", "shapes"}
    assert set(request["required"]) == {"name", "gpusPerWorker"}
    assert set(templates["properties"]) == {"claimTemplates"}


# --- Construct -------------------------------------------------------------------------------------

POOL_INPUTS: dict[str, Any] = {
    "compartmentId": COMPARTMENT,
    "clusterId": "ocid1.cluster.oc1.iad.aaaaaaaaexamplecluster",
    "kubernetesVersion": "v1.34.1",
    "workerSubnetId": "ocid1.subnet.oc1.iad.aaaaaaaaexampleworkers",
    "imageId": IMAGE,
    "count": 2,
    "shape": SHAPE,
    "availabilityDomain": "Uocm:US-ASHBURN-AD-1",
}


def test_node_pool_from_plain_inputs(plugin: tuple[Any, str]) -> None:
    engine, state = construct(
        plugin,
        resource_types.NODE_POOL_COMPONENT,
        "gpu-b4",
        POOL_INPUTS,
        input_dependencies={"clusterId": [CLUSTER_URN]},
    )
    component = engine.one(resource_types.NODE_POOL_COMPONENT)
    assert component.urn == f"urn:pulumi:{STACK}::{PROJECT}::{resource_types.NODE_POOL_COMPONENT}::gpu-b4"
    compute_cluster = engine.one(resource_types.COMPUTE_CLUSTER)
    nodes = engine.one(resource_types.NODE_POOL)
    assert {compute_cluster.parent, nodes.parent} == {component.urn}
    assert compute_cluster.inputs["availabilityDomain"] == "Uocm:US-ASHBURN-AD-1"
    assert compute_cluster.inputs["compartmentId"] == COMPARTMENT
    assert nodes.inputs["name"] == "gpu-b4" and nodes.inputs["nodeShape"] == SHAPE
    assert nodes.inputs["kubernetesVersion"] == "v1.34.1"
    assert nodes.inputs["nodeSourceDetails"] == {
        "sourceType": "IMAGE",
        "imageId": IMAGE,
        "bootVolumeSizeInGbs": "500",
    }
    details = nodes.inputs["nodeConfigDetails"]
    assert details["size"] == 2
    labels = {label["key"]: label["value"] for label in nodes.inputs["initialNodeLabels"]}
    assert labels == {POOL_LABEL: "gpu-b4", DEVICE_PLUGIN_LABEL: DEVICE_PLUGIN_OFF}
    # The cluster id came from another resource: the pool waits for it.
    assert CLUSTER_URN in nodes.dependencies
    # Bare-metal capacity: protected and deleted before it is replaced, as in the program.
    assert nodes.protect and compute_cluster.protect and nodes.delete_before_replace
    assert (
        component.outputs["nodePoolId"]
        == state["nodePoolId"]
        == "ocid1.nodepool.oc1.iad." + state["nodePoolId"].split(".")[-1]
    )
    assert state["availabilityDomain"] == "Uocm:US-ASHBURN-AD-1"


def test_system_pool_from_plain_inputs(plugin: tuple[Any, str]) -> None:
    inputs = {
        key: POOL_INPUTS[key]
        for key in ("compartmentId", "clusterId", "kubernetesVersion", "workerSubnetId", "imageId")
    }
    ads = ["Uocm:US-ASHBURN-AD-1", "Uocm:US-ASHBURN-AD-2"]
    engine, state = construct(
        plugin, resource_types.SYSTEM_POOL_COMPONENT, "system", {**inputs, "availabilityDomains": ads}
    )
    nodes = engine.one(resource_types.NODE_POOL)
    assert nodes.inputs["name"] == "system" and nodes.inputs["nodeShape"] == "VM.Standard.E5.Flex"
    assert nodes.inputs["nodeShapeConfig"] == {"ocpus": 2, "memoryInGbs": 16}
    placements = nodes.inputs["nodeConfigDetails"]["placementConfigs"]
    assert [p["availabilityDomain"] for p in placements] == ads
    assert nodes.inputs["nodeConfigDetails"]["size"] == 2
    assert [label["key"] for label in nodes.inputs["initialNodeLabels"]] == [POOL_LABEL]
    assert "taints" not in json.dumps(nodes.inputs) and nodes.protect
    assert state["nodePoolId"].startswith("ocid1.nodepool.")


def test_network_creates_a_vcn_with_a_subnet_per_role(plugin: tuple[Any, str]) -> None:
    engine, state = construct(
        plugin,
        resource_types.NETWORK_COMPONENT,
        "network",
        {
            "compartmentId": COMPARTMENT,
            "create": {"dnsLabel": "training"},
        },
    )
    vcn = engine.one(resource_types.VCN)
    assert (
        vcn.inputs["cidrBlocks"] == ["10.140.0.0/16"] and vcn.inputs["dnsLabel"] == "training" and vcn.protect
    )
    subnets = {r.name: r.inputs["cidrBlock"] for r in engine.registrations if r.type == resource_types.SUBNET}
    # The stack config's defaults; no pod subnet without vcnNativePods.
    assert subnets == {
        "network-api-endpoint": "10.140.0.0/28",
        "network-load-balancers": "10.140.1.0/24",
        "network-workers": "10.140.64.0/19",
    }
    assert state["workerSubnetId"].startswith("ocid1.subnet.")


def test_existing_cluster_gets_its_kubeconfig_from_oci(plugin: tuple[Any, str]) -> None:
    cluster_id = "ocid1.cluster.oc1.iad.aaaaaaaaexamplecluster"
    engine, state = construct(
        plugin,
        resource_types.CLUSTER_COMPONENT,
        "oke",
        {
            "compartmentId": COMPARTMENT,
            "existingClusterId": cluster_id,
            "kubeconfigEndpoint": "PRIVATE_ENDPOINT",
        },
    )
    # No cluster is created; the kubeconfig is OCI's, asked for by an invoke (answered as offline).
    assert not [r for r in engine.registrations if r.type == resource_types.CLUSTER]
    (invoke,) = [args for token, args in engine.invokes if token.endswith("getClusterKubeConfig")]
    assert invoke == {"clusterId": cluster_id, "endpoint": "PRIVATE_ENDPOINT", "tokenVersion": "2.0.0"}
    provider = engine.one("pulumi:providers:kubernetes")
    # The kubeconfig reaches the provider as a secret (the wire's secret signature).
    assert (
        provider.inputs["kubeconfig"]["4dabf18193072939515e22adb298388d"]
        == "1b47061264138c4ac30d75fd1eb44270"
    )
    assert state["clusterId"] == cluster_id


def test_node_pool_bad_input_is_named_with_its_value_and_fix() -> None:
    message = construct_error(
        resource_types.NODE_POOL_COMPONENT, "gpu-b4", {**POOL_INPUTS, "imageId": "my-image"}
    )
    assert "RdmaGpuNodePool 'gpu-b4': invalid inputs" in message
    assert (
        "input imageId = 'my-image': is not an OCI OCID (expected ocid1.image.oc1.<region>.<unique id>)"
        in message
    )


def test_dranet_from_plain_inputs(plugin: tuple[Any, str]) -> None:
    engine, state = construct(
        plugin,
        resource_types.DRANET_COMPONENT,
        "dranet",
        {
            "pools": ["gpu-b4"],
            "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        },
        providers={"kubernetes": K8S_PROVIDER},
        dependencies=(POOLS_URN,),
    )
    component = engine.one(resource_types.DRANET_COMPONENT)
    device_class = engine.one("kubernetes:resource.k8s.io/v1:DeviceClass")
    release = engine.one(HELM_RELEASE)
    assert {device_class.parent, release.parent} == {component.urn}
    # The Kubernetes provider reaches the children through the component's providers option.
    assert device_class.provider == release.provider == K8S_PROVIDER
    assert device_class.inputs["metadata"]["name"] == dranet.DEVICE_CLASS
    assert device_class.inputs["spec"]["selectors"] == [{"cel": {"expression": dranet.CLASS_SELECTOR}}]
    assert release.inputs["chart"] == dranet.CHART and release.inputs["namespace"] == "kube-system"
    assert release.inputs["version"] == dranet.DEFAULT_VERSION
    values_ = release.inputs["values"]
    terms = values_["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [{"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": ["gpu-b4"]}]}]
    assert values_["args"] == {"cloudProviderHint": "OKE"}
    # The release waits for the pools the component depends on.
    assert POOLS_URN in release.dependencies
    assert state["deviceClass"] == dranet.DEVICE_CLASS


def test_dranet_bad_child_range_is_named() -> None:
    message = construct_error(
        resource_types.DRANET_COMPONENT,
        "dranet",
        {"pools": ["gpu-b4"], "childRange": "10.0.0.0/31"},
        providers={"kubernetes": K8S_PROVIDER},
    )
    assert "Dranet 'dranet': invalid inputs" in message
    assert (
        "input childRange = '10.0.0.0/31': has prefix /31; DRANET accepts child ranges from /8 to /30"
        in message
    )


def test_gpu_dra_driver_from_plain_inputs(plugin: tuple[Any, str]) -> None:
    engine, state = construct(
        plugin,
        resource_types.GPU_DRIVER_COMPONENT,
        "gpu-dra-driver",
        {"pools": ["gpu-b4"], "taints": [{"key": "nvidia.com/gpu", "value": "present"}]},
        providers={"kubernetes": K8S_PROVIDER},
        dependencies=(POOLS_URN,),
    )
    release = engine.one(HELM_RELEASE)
    assert release.provider == K8S_PROVIDER and POOLS_URN in release.dependencies
    assert release.inputs["chart"] == nvidia_gpu.CHART
    assert release.inputs["namespace"] == nvidia_gpu.NAMESPACE and "createNamespace" not in release.inputs
    namespace = engine.one(resource_types.NAMESPACE)
    assert namespace.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert namespace.urn in release.dependencies
    plugin_values = release.inputs["values"]["kubeletPlugin"]
    assert plugin_values["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert release.inputs["values"]["resources"] == {
        "gpus": {"enabled": True},
        "computeDomains": {"enabled": False, "imex": {"mode": "hostManaged"}},
    }
    assert state["deviceClass"] == nvidia_gpu.DEVICE_CLASS


def test_compute_domains_from_plain_inputs(plugin: tuple[Any, str]) -> None:
    """The two ComputeDomain components through the gRPC protocol: the driver's second release on the NVLink pools
    with its controller on the system pool, and a job's ComputeDomain with the claims its pods name."""
    engine, state = construct(
        plugin,
        resource_types.COMPUTE_DOMAIN_DRIVER_COMPONENT,
        "compute-domain-driver",
        {"pools": ["gb200-a"], "systemPool": "system"},
        providers={"kubernetes": K8S_PROVIDER},
        dependencies=(POOLS_URN,),
    )
    release = engine.one(HELM_RELEASE)
    assert release.inputs["name"] == nvidia_gpu.COMPUTE_DOMAIN_RELEASE and POOLS_URN in release.dependencies
    assert release.inputs["values"]["resources"] == {
        "gpus": {"enabled": False},
        "computeDomains": {"enabled": True},
    }
    assert release.inputs["values"]["controller"] == {"nodeSelector": {"oke-gpu-rdma/node-pool": "system"}}
    assert state["channelDeviceClass"] == "compute-domain-default-channel.nvidia.com"
    engine, state = construct(
        plugin,
        resource_types.JOB_COMPUTE_DOMAIN_COMPONENT,
        "train",
        {"namespace": "ml", "allocationMode": "All"},
        providers={"kubernetes": K8S_PROVIDER},
    )
    domain = engine.one("kubernetes:resource.nvidia.com/v1beta1:ComputeDomain")
    assert domain.inputs["spec"]["channel"] == {
        "resourceClaimTemplate": {"name": "train-channel"},
        "allocationMode": "All",
    }
    assert state["podClaim"] == {
        "name": "compute-domain-channel",
        "resourceClaimTemplateName": "train-channel",
    }
    assert state["containerClaim"] == {"name": "compute-domain-channel"}


def test_claim_templates_from_a_shape_and_requests(plugin: tuple[Any, str]) -> None:
    engine, state = construct(
        plugin,
        resource_types.CLAIM_TEMPLATES_COMPONENT,
        "claim-templates",
        {
            "shapes": [SHAPE],
            "namespace": "training",
            "claimTemplates": [{"name": "aligned-8gpu-16rails", "gpusPerWorker": 8}],
            "railsOnlyTemplate": "all-rails",
        },
        providers={"kubernetes": K8S_PROVIDER},
    )
    found = {r.inputs["metadata"]["name"]: r for r in engine.registrations if r.type == CLAIM_TEMPLATE}
    assert set(found) == {"aligned-8gpu-16rails", "all-rails"}
    topology = CATALOG.topology(SHAPE)
    aligned = found["aligned-8gpu-16rails"]
    # The very spec the stack config builds, judged aligned on the shape.
    assert aligned.inputs["spec"]["spec"] == json.loads(json.dumps(aligned_claim_spec(topology, 8)))
    # Numbers arrive as doubles (the wire's); as ints, the registered spec is judged aligned.
    assert judge_claim(from_wire(aligned.inputs["spec"]["spec"]), topology).kind == "aligned"
    assert found["all-rails"].inputs["spec"]["spec"] == json.loads(
        json.dumps(rails_only_claim_spec(topology))
    )
    assert all(
        r.inputs["metadata"]["namespace"] == "training" and r.provider == K8S_PROVIDER for r in found.values()
    )
    assert all(r.delete_before_replace for r in found.values())
    assert state["claimTemplates"] == [
        {"name": "aligned-8gpu-16rails", "namespace": "training", "alignment": "pcieRoot"},
        {"name": "all-rails", "namespace": "training"},
    ]


def test_claim_templates_refuse_a_claim_the_shape_cannot_align() -> None:
    message = construct_error(
        resource_types.CLAIM_TEMPLATES_COMPONENT,
        "claim-templates",
        {"shapes": [SHAPE], "namespace": "training", "claimTemplates": [{"name": "odd", "gpusPerWorker": 3}]},
        providers={"kubernetes": K8S_PROVIDER},
    )
    # The stack config's judgement, under the component's input name.
    plan = judged_templates(
        CATALOG, [SHAPE], [TemplateRequest("odd", 3, "training")], None, "training", COMPONENT_KEYS
    )
    (problem,) = plan.problems
    assert problem.path == "claimTemplates[0].gpusPerWorker"
    assert f"input {problem.render()}" in message


def test_workload_namespace(plugin: tuple[Any, str]) -> None:
    engine, state = construct(
        plugin,
        resource_types.WORKLOAD_NAMESPACE_COMPONENT,
        "workloads",
        {"namespace": "training"},
        providers={"kubernetes": K8S_PROVIDER},
    )
    namespace = engine.one("kubernetes:core/v1:Namespace")
    assert namespace.inputs["metadata"] == {
        "name": "training",
        "labels": {f"pod-security.kubernetes.io/{mode}": "baseline" for mode in ("enforce", "warn", "audit")},
    }
    maps = sorted(
        r.inputs["metadata"]["name"] for r in engine.registrations if r.type == resource_types.CONFIG_MAP
    )
    assert maps == ["nccl-env", "rdma-dranet-tools"]
    assert state["namespace"] == "training"
