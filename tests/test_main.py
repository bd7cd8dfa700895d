"""What a real `pulumi up` needs from the program (__main__.py): resource options, providers, placement.

Each test reads the exact options the engine would receive (preview.mock_runtime records them from the
RegisterResource request): `protect`, `aliases`, `replaceOnChanges`, `deleteBeforeReplace`, the provider.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
import pytest

from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.drivers import gpu_operator_chart, nvidia_gpu
from oke_gpu_rdma.nodes.labels import DEVICE_PLUGIN_LABEL, POD_SECURITY_ENFORCE_LABEL, POOL_LABEL
from oke_gpu_rdma.scheduling.node_selection import affinity_matches
from preview.mock_runtime import pulumi_config_map, run_program, secret_config_keys
from tests.support import Run, as_stack_file, raw_config, without_remediation

TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
RELEASE = resource_types.HELM_RELEASE


def alias_names(run: Run, type_: str, name: str) -> list[str]:
    return [a["spec"]["name"] for a in run.one(type_, name).options.get("aliases", [])]


# --- 1. claim templates: spec is immutable -------------------------------------------------------


def test_claim_templates_are_replaced_delete_first_when_their_spec_changes(
    run_stack: Callable[..., Run],
) -> None:
    templates = run_stack("dev").of_type(TEMPLATE)
    assert len(templates) == 3
    for template in templates:
        assert template.options["replaceOnChanges"] == ["spec"]
        assert template.options["deleteBeforeReplace"] is True


# --- 2. every namespace a template uses exists ------------------------------------------------------


def test_a_template_namespace_is_created_with_baseline_and_the_tools(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("dev")
    raw["workloads"] = {"claimTemplates": [{"name": "pair", "gpusPerWorker": 2, "namespace": "team-a"}]}
    run = run_stack("dev", raw)
    namespaces = {r.inputs["metadata"]["name"]: r for r in run.of_type(resource_types.NAMESPACE)}
    assert set(namespaces) == {"rdma-dranet", "team-a", "dra-driver-nvidia-gpu"}
    assert namespaces["team-a"].inputs["metadata"]["labels"][POD_SECURITY_ENFORCE_LABEL] == "baseline"
    maps = {
        (r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"])
        for r in run.of_type(resource_types.CONFIG_MAP)
    }
    assert {("team-a", "rdma-dranet-tools"), ("team-a", "nccl-env")} <= maps
    (template,) = [t for t in run.of_type(TEMPLATE) if t.inputs["metadata"]["name"] == "pair"]
    # The template waits for its namespace (a component dependency reaches the engine as its children).
    assert namespaces["team-a"].urn in template.dependencies


# --- 3. IAM in the home region ------------------------------------------------------------------------


def test_the_launch_policy_is_written_through_a_home_region_provider(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("dev")
    raw["homeRegion"] = "us-phoenix-1"
    run = run_stack("dev", raw)
    policy = run.one(resource_types.IAM_POLICY)
    provider = run.one("pulumi:providers:oci", "compute-cluster-launch-home-region")
    assert provider.inputs["region"] == "us-phoenix-1"
    assert policy.provider.startswith(provider.urn + "::")
    assert policy.inputs["name"] == "dev-compute-cluster-launch"
    # Everything else uses the stack's default provider (oci:region).
    assert all(not r.provider.startswith(provider.urn) for r in run.of_type(resource_types.NODE_POOL))


def test_the_home_region_provider_authenticates_like_the_default_one() -> None:
    # A stack on session-token auth with a profile of ~/.oci/config, a typed setting and a secret one.
    document = as_stack_file(raw_config("dev"))
    document["config"] |= {
        "oci:auth": "SecurityToken",
        "oci:configFileProfile": "gpu-admin",
        "oci:retryDurationSeconds": "120",
        "oci:tenancyOcid": {"secure": "v1:c2VjcmV0LXRlbmFuY3k="},
    }
    run = Run(run_program("dev", pulumi_config_map(document), secret_keys=secret_config_keys(document)))
    provider = run.one("pulumi:providers:oci", "compute-cluster-launch-home-region")
    assert provider.inputs == {
        "region": "us-ashburn-1",
        "auth": "SecurityToken",
        "configFileProfile": "gpu-admin",
        # pulumi-oci sends non-string provider settings as JSON text, as the engine does for the default one.
        "retryDurationSeconds": "120",
        "tenancyOcid": "[secret]",
    }


def test_a_provider_setting_of_the_wrong_type_is_one_message_and_nothing_declared() -> None:
    document = as_stack_file(raw_config("dev"))
    document["config"]["oci:retryDurationSeconds"] = "soon"
    with pytest.raises(pulumi.RunError) as caught:
        run_program("dev", pulumi_config_map(document))
    assert str(caught.value) == "Configuration 'oci:retryDurationSeconds' value 'soon' is not a valid 'int'"


# --- 4. the GPU Operator where the stack creates the cluster ----------------------------------------


def gpu_operator(run: Run) -> list[Any]:
    return [r for r in run.of_type(RELEASE) if r.inputs["chart"] == gpu_operator_chart.CHART_NAME]


def test_a_created_cluster_gets_the_gpu_operator_with_the_images_driver(
    run_stack: Callable[..., Run],
) -> None:
    (release,) = gpu_operator(run_stack("full"))
    assert release.inputs["repositoryOpts"] == {"repo": gpu_operator_chart.REPO}
    assert (release.inputs["version"], release.inputs["namespace"]) == ("v26.3.3", "gpu-operator")
    assert release.inputs["values"]["driver"] == {"enabled": False}


def test_an_existing_cluster_keeps_its_own_gpu_operator_unless_asked(run_stack: Callable[..., Run]) -> None:
    assert gpu_operator(run_stack("dev")) == []
    raw = raw_config("dev")
    raw["gpuOperator"] = {"enabled": True}
    assert len(gpu_operator(run_stack("dev", raw))) == 1


@pytest.mark.parametrize("stack", ["dev", "full"])
def test_the_gpu_dra_driver_selects_exactly_the_gpu_pools_by_their_initial_labels(
    run_stack: Callable[..., Run], stack: str
) -> None:
    run = run_stack(stack)
    (driver,) = [r for r in run.of_type(RELEASE) if r.inputs["chart"] == nvidia_gpu.CHART]
    affinity = driver.inputs["values"]["kubeletPlugin"]["affinity"]["nodeAffinity"]
    (term,) = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    (expression,) = term["matchExpressions"]
    assert (expression["key"], expression["operator"]) == (POOL_LABEL, "In")
    gpu_pools = [p for p in run.of_type(resource_types.NODE_POOL) if p.name != "system-nodes"]
    for pool in gpu_pools:
        labels = {item["key"]: item["value"] for item in pool.inputs["initialNodeLabels"]}
        assert labels[POOL_LABEL] in expression["values"]
    assert len(expression["values"]) == len(gpu_pools)


def templates_of(run: Run) -> dict[str, tuple[str, Any]]:
    """Each claim template the program declares: its object name -> (logical name, spec)."""
    return {t.inputs["metadata"]["name"]: (t.name, t.inputs["spec"]) for t in run.of_type(TEMPLATE)}


def test_an_onboarding_h100_pool_gets_both_drivers_and_no_templates_next_to_b4_pools(
    run_stack: Callable[..., Run],
) -> None:
    """Issue 23 acceptance: an H100 pool in onboarding mode next to the full example's two B4.8 pools. DRANET
    and the GPU DRA driver select its nodes (their affinity, matched as the DaemonSet controller does against
    the pool's initial labels), its shape gets no claim template, and the B4.8 templates are the ones the
    stack declares without it: same objects, names and specs."""
    raw = raw_config("full")
    raw["nodePools"].append(
        {**raw["nodePools"][0], "name": "gpu-h100", "shape": "BM.GPU.H100.8", "onboarding": True}
    )
    run = run_stack("full", raw)
    h100 = run.one(resource_types.NODE_POOL, "gpu-h100-nodes")
    assert h100.inputs["nodeShape"] == "BM.GPU.H100.8"
    labels = {item["key"]: item["value"] for item in h100.inputs["initialNodeLabels"]}
    # Its GPUs come from the DRA driver, as on every DRANET pool: the operator's device plugin stays off.
    assert labels[DEVICE_PLUGIN_LABEL] == "false" and labels[POOL_LABEL] == "gpu-h100"
    dranet_release = run.one(RELEASE, "dranet-release")
    gpu_driver = run.one(RELEASE, "gpu-dra-driver-release")
    for affinity in (
        dranet_release.inputs["values"]["affinity"],
        gpu_driver.inputs["values"]["kubeletPlugin"]["affinity"],
    ):
        (term,) = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        assert term["matchExpressions"] == [
            {"key": POOL_LABEL, "operator": "In", "values": ["gpu-b4-a", "gpu-b4-b", "gpu-h100"]}
        ]
        assert affinity_matches(affinity, labels) is True
    # The drivers wait for the onboarding pool's nodes too (a component dependency reaches the engine as its
    # children).
    for release in (dranet_release, gpu_driver):
        assert h100.urn in run.by_urn(release.parent).dependencies
    assert templates_of(run) == templates_of(run_stack("full"))
    assert set(templates_of(run)) == {"aligned-8gpu-16rails", "aligned-4gpu-8rails", "all-rails"}
    assert run.run.outputs["claimTemplates"] == run_stack("full").run.outputs["claimTemplates"]


def test_a_stack_whose_only_dranet_pool_onboards_declares_the_drivers_and_no_template(
    run_stack: Callable[..., Run],
) -> None:
    raw = raw_config("dev")
    raw["nodePools"][0] |= {"shape": "BM.GPU.H100.8", "onboarding": True}
    run = run_stack("dev", raw)
    assert {r.name for r in run.of_type(RELEASE)} >= {"dranet-release", "gpu-dra-driver-release"}
    assert run.of_type(TEMPLATE) == [] and run.run.outputs["claimTemplates"] == []


# --- 6. acceptance jobs stay in one pool --------------------------------------------------------------


def acceptance_config(**changes: Any) -> dict[str, Any]:
    raw = without_remediation(raw_config("full"))
    raw["workloads"] = {"acceptanceJobs": {"enabled": True, **changes}}
    return raw


def test_the_nccl_job_runs_in_one_pool(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full", acceptance_config(nodePool="gpu-b4-b"))
    (job,) = run.of_type("kubernetes:kubeflow.org/v2beta1:MPIJob")
    worker = job.inputs["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    assert worker["nodeSelector"] == {POOL_LABEL: "gpu-b4-b"}


def test_the_rail_test_defaults_to_the_first_pool(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full", acceptance_config(nccl=False, railBandwidth=True))
    (job,) = run.of_type("kubernetes:kubeflow.org/v2beta1:MPIJob")
    worker = job.inputs["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    assert worker["nodeSelector"] == {POOL_LABEL: "gpu-b4-a"}


def test_the_jobs_default_to_the_first_pool_with_templates_not_an_onboarding_one(
    run_stack: Callable[..., Run],
) -> None:
    raw = acceptance_config(nccl=False, railBandwidth=True)
    h100 = {**raw["nodePools"][0], "name": "gpu-h100", "shape": "BM.GPU.H100.8", "onboarding": True}
    raw["nodePools"].insert(0, h100)
    (job,) = run_stack("full", raw).of_type("kubernetes:kubeflow.org/v2beta1:MPIJob")
    worker = job.inputs["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    assert worker["nodeSelector"] == {POOL_LABEL: "gpu-b4-a"}
    assert worker["resourceClaims"] == [{"name": "rails", "resourceClaimTemplateName": "all-rails"}]


def test_an_unknown_acceptance_pool_is_refused(run_stack: Callable[..., Run]) -> None:
    with pytest.raises(pulumi.RunError) as caught:
        run_stack("full", acceptance_config(nodePool="gpu-b4-c"))
    assert (
        "workloads.acceptanceJobs.nodePool = 'gpu-b4-c': no such pool in nodePools (gpu-b4-a, gpu-b4-b)"
        in str(caught.value)
    )


# --- 7. protect what is expensive to lose ---------------------------------------------------------------

PROTECTED = [
    resource_types.VCN,
    resource_types.CLUSTER,
    resource_types.COMPUTE_CLUSTER,
    resource_types.NODE_POOL,
]


def test_created_cluster_network_compute_clusters_and_pools_are_protected(
    run_stack: Callable[..., Run],
) -> None:
    run = run_stack("full")
    for type_ in PROTECTED:
        found = run.of_type(type_)
        assert found and all(r.options.get("protect") is True for r in found), type_
    assert not any(r.options.get("protect") for r in run.of_type(resource_types.SUBNET))


def test_protect_false_allows_a_teardown(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("full")
    raw["protect"] = False
    run = run_stack("full", raw)
    assert not any(r.options.get("protect") for r in run.resources)


# --- 8. names that survive a stack rename ------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_", "name"),
    [
        (resource_types.NETWORK_COMPONENT, "network"),
        (resource_types.CLUSTER_COMPONENT, "oke"),
        (resource_types.LAUNCH_POLICY_COMPONENT, "compute-cluster-launch"),
        (resource_types.DRANET_COMPONENT, "dranet"),
        (resource_types.GPU_DRIVER_COMPONENT, "gpu-dra-driver"),
        (resource_types.WORKLOAD_NAMESPACE_COMPONENT, "workloads"),
        (resource_types.CLAIM_TEMPLATES_COMPONENT, "claim-templates"),
    ],
)
def test_components_drop_the_stack_prefix_and_alias_the_old_name(
    run_stack: Callable[..., Run], type_: str, name: str
) -> None:
    run = run_stack("full")
    assert alias_names(run, type_, name) == [f"full-{name}"]
    # Children are named after their component, so the engine derives their old names from the alias.
    children = [r for r in run.resources if r.parent == run.one(type_, name).urn]
    assert children and all(r.name.startswith(name) for r in children)


def test_no_logical_name_carries_the_stack_name(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    assert [r.name for r in run.resources[1:] if r.name.startswith("full-")] == []
    # Display names keep the stack, so two stacks stay apart in the console.
    assert run.one(resource_types.VCN).inputs["displayName"] == "full-network-vcn"


# --- no setting silently ignored, no traceback from a value -----------------------------------------


def test_the_program_refuses_a_key_nothing_reads() -> None:
    document = as_stack_file(raw_config("dev"))
    document["config"]["oke-gpu-rmda:dranet"] = {"enabled": False}
    with pytest.raises(pulumi.RunError) as caught:
        run_program("dev", pulumi_config_map(document))
    assert str(caught.value).splitlines() == [
        "invalid stack config:",
        "  stacks/Pulumi.dev.yaml: oke-gpu-rmda:dranet is in namespace 'oke-gpu-rmda', which nothing of this stack "
        "reads (the program reads oke-gpu-rdma:, the OCI provider oci:, the engine pulumi:); did you mean "
        "oke-gpu-rdma:dranet?",
    ]


def test_a_number_python_cannot_read_is_a_message_not_a_traceback() -> None:
    # `pulumi up` hands structured values as JSON text: a 5,000-digit count reaches the program as such.
    config_map = pulumi_config_map(as_stack_file(raw_config("dev")))
    config_map["oke-gpu-rdma:nodePools"] = '[{"name": "a", "count": ' + "1" * 5000 + "}]"
    with pytest.raises(pulumi.RunError) as caught:
        run_program("dev", config_map)
    assert str(caught.value).splitlines() == [
        "invalid stack config:",
        "  stacks/Pulumi.dev.yaml: nodePools is JSON with an integer of 5000 digits; no setting takes a number "
        "that large",
    ]


@pytest.mark.parametrize(
    ("protect", "unprotected"),
    [
        (True, set()),
        (False, {"network-vcn", "oke-cluster", "gpu-b4-a-nodes", "gpu-b4-a-compute-cluster", "system-nodes"}),
        ({"gpuPools": False}, {"gpu-b4-a-nodes", "gpu-b4-a-compute-cluster"}),
        ({"network": False, "systemPool": False}, {"network-vcn", "system-nodes"}),
    ],
)
def test_each_kind_takes_its_own_protect_flag(
    run_stack: Callable[..., Run], protect: object, unprotected: set[str]
) -> None:
    raw = raw_config("full")
    raw["protect"] = protect
    run = run_stack("full", raw)
    kinds = {"network-vcn", "oke-cluster", "gpu-b4-a-nodes", "gpu-b4-a-compute-cluster", "system-nodes"}
    found = {r.name: bool(r.options.get("protect")) for r in run.resources if r.name in kinds}
    assert found == {name: name not in unprotected for name in kinds}
