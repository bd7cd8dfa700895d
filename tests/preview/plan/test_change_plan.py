"""The change plan: one input changed at a time on the example stacks, the exact plan and GPU lines
(preview/plan/change_plan.py, preview/plan/gpu_impact.py)."""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import pytest

import components.nodes.gpu_node_pool
from oke_gpu_rdma.scheduling import mpi_operator
from preview import rendering
from preview.mock_runtime import pulumi_config_map, run_program
from preview.plan import change_plan, gpu_impact, plan_lines
from stack_config.loading import parse_stack_config, stack_source
from stack_config.loading import raw_config as config_of
from stack_config.pack_config import policy_pack_config
from tests.support import as_stack_file, raw_config, without_remediation

Raw = dict[str, Any]


def render(stack: str, raw: Raw) -> dict[str, str]:
    """rendered/<stack>/ for the stack's config replaced by `raw`."""
    config = pulumi_config_map(as_stack_file(raw))
    run = run_program(stack, config)
    parsed = parse_stack_config(config_of(config), stack_source(stack), config.get("oci:region"))
    return rendering.render_files(run.resources, policy_pack_config(parsed).to_dict())


@functools.cache
def base_rendering(stack: str) -> change_plan.Rendering:
    return change_plan.parse(render(stack, raw_config(stack)))


def plan_for(stack: str, change: Callable[[Raw], object]) -> change_plan.Plan:
    raw = copy.deepcopy(raw_config(stack))
    change(raw)
    return change_plan.build(base_rendering(stack), change_plan.parse(render(stack, raw)), "the example")


def lines(plan: change_plan.Plan) -> list[str]:
    return [s.line() for s in plan.changed()]


def pool(raw: Raw, index: int = 0) -> dict[str, Any]:
    pools: list[dict[str, Any]] = raw["nodePools"]
    return pools[index]


BARE_METAL = (
    "Oracle's documents disagree whether bare-metal nodes cycle by instance replacement (the cycling guide: "
    '"You cannot cycle nodes with bare metal shapes"; the API takes it), the nodes may keep the old spec; '
    "BOOT_VOLUME_REPLACE is documented for bare metal"
)


def test_no_change_is_no_change() -> None:
    plan = plan_for("dev", lambda raw: None)
    assert lines(plan) == [] and gpu_impact.gpu_node_lines(plan) == []
    assert plan_lines.plan_lines(plan) == ["Plan against the example:", "  no changes"]
    assert plan_lines.summary_lines(plan) == ["Resources:", "    24 unchanged"]


def test_no_base_makes_everything_a_create() -> None:
    plan = change_plan.build(
        None, base_rendering("dev"), "no base: git is not installed; everything is a create"
    )
    assert {s.op for s in plan.steps} == {"create"}
    assert plan_lines.summary_lines(plan) == ["Resources:", "    + 24 to create"]
    assert plan_lines.plan_lines(plan) == ["Plan: no base: git is not installed; everything is a create."]


@pytest.mark.parametrize(("count", "impact"), [(3, "1 added"), (1, "1 removed")])
def test_node_count_updates_the_pool(count: int, impact: str) -> None:
    plan = plan_for("dev", lambda raw: pool(raw).update(count=count))
    assert lines(plan) == [
        "~ oci:ContainerEngine/nodePool:NodePool gpu-b4-nodes update [diff: ~nodeConfigDetails.size]"
    ]
    assert gpu_impact.gpu_node_lines(plan) == [f"gpu-b4: 2 => {count} BM.GPU.B4.8 nodes: {impact}"]
    assert plan_lines.summary_lines(plan) == [
        "Resources:",
        "    ~ 1 to update",
        "    1 change. 23 unchanged",
    ]


def test_cloud_init_change_cycles_every_node(monkeypatch: pytest.MonkeyPatch) -> None:
    # A commit that changes the node cloud-init (what oke_gpu_rdma/nodes/cloud_init.py renders).
    base_rendering("dev")  # the base is the unpatched program's (cached: render it before patching)
    original = components.nodes.gpu_node_pool.render_cloud_init
    monkeypatch.setattr(
        components.nodes.gpu_node_pool,
        "render_cloud_init",
        lambda bootstrap: original(bootstrap).replace("#cloud-config\n", "#cloud-config\n# changed\n", 1),
    )
    plan = plan_for("dev", lambda raw: None)
    assert lines(plan) == [
        "~ oci:ContainerEngine/nodePool:NodePool gpu-b4-nodes update [diff: ~nodeMetadata.user_data]"
    ]
    assert gpu_impact.gpu_node_lines(plan) == [
        "gpu-b4: 2 BM.GPU.B4.8 nodes cycled (surge 0, unavailable 1, cycleModes unset: INSTANCE_REPLACE): "
        "cloud-init (nodeMetadata.user_data)",
        f"gpu-b4: {BARE_METAL}",
    ]
    # The detail shows the decoded text's diff, not base64.
    detail = plan_lines.step_lines(plan.step("gpu-b4-nodes"))
    assert "          +# changed" in detail


def test_cloud_init_change_without_cycling_leaves_the_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    base_rendering("dev")  # the base is the unpatched program's (cached: render it before patching)
    original = components.nodes.gpu_node_pool.render_cloud_init
    monkeypatch.setattr(
        components.nodes.gpu_node_pool,
        "render_cloud_init",
        lambda bootstrap: original(bootstrap) + "# changed\n",
    )
    raw = raw_config("dev")
    pool(raw)["cycling"] = {"enabled": False}
    base = change_plan.parse(render("dev", raw))
    monkeypatch.undo()
    plan = change_plan.build(base, change_plan.parse(render("dev", raw)), "x")
    assert gpu_impact.gpu_node_lines(plan) == [
        "gpu-b4: 2 BM.GPU.B4.8 nodes keep the old cloud-init (nodeMetadata.user_data)",
        "gpu-b4: node cycling is off: only nodes launched later get the change, until an update with cycling "
        "on cycles them, whatever it changes",
    ]


def test_node_image_cycles_every_node() -> None:
    plan = plan_for(
        "dev", lambda raw: pool(raw).update(imageId="ocid1.image.oc1.iad.aaaaaaaaexamplenewimage")
    )
    assert lines(plan) == [
        "~ oci:ContainerEngine/nodePool:NodePool gpu-b4-nodes update [diff: ~nodeSourceDetails.imageId]"
    ]
    assert gpu_impact.gpu_node_lines(plan) == [
        "gpu-b4: 2 BM.GPU.B4.8 nodes cycled (surge 0, unavailable 1, cycleModes unset: INSTANCE_REPLACE): "
        "node image (nodeSourceDetails.imageId)",
        f"gpu-b4: {BARE_METAL}",
    ]


def test_a_caveat_of_several_pools_is_said_once_naming_them() -> None:
    def new_image(raw: Raw) -> None:
        # Both pools cycled by OKE: the first without the remediation that rolls it otherwise (see below).
        without_remediation(raw)
        del pool(raw)["cycling"]
        for each in raw["nodePools"]:
            each["imageId"] = "ocid1.image.oc1.iad.aaaaaaaaexamplenewimage"

    plan = plan_for("full", new_image)
    cycled = (
        "2 BM.GPU.B4.8 nodes cycled (surge 0, unavailable 1, cycleModes unset: INSTANCE_REPLACE): "
        "node image (nodeSourceDetails.imageId)"
    )
    assert gpu_impact.gpu_node_lines(plan) == [
        f"gpu-b4-a: {cycled}",
        f"gpu-b4-b: {cycled}",
        f"gpu-b4-a, gpu-b4-b: {BARE_METAL}",
        f"gpu-b4-a: {gpu_impact.CYCLING_TURNED_ON}",
    ]


def test_compute_cluster_availability_domain_replaces_the_cluster_and_the_pool() -> None:
    def move(raw: Raw) -> None:
        pool(raw)["availabilityDomain"] = "Uocm:US-ASHBURN-AD-2"
        raw["protect"] = False  # unprotecting and replacing in one apply works (step_generator.go)

    plan = plan_for("dev", move)
    assert lines(plan) == [
        "+- oci:Core/computeCluster:ComputeCluster gpu-b4-compute-cluster replace [diff: ~availabilityDomain]",
        # The pool is deleted first (replaceOrder: deleteFirst, the default); its compute cluster is
        # created first, since it holds no hosts.
        "-+ oci:ContainerEngine/nodePool:NodePool gpu-b4-nodes replace "
        "[diff: ~nodeConfigDetails.computeClusterId, ~nodeConfigDetails.placementConfigs[0].availabilityDomain]",
    ]
    assert gpu_impact.gpu_node_lines(plan) == [
        "gpu-b4: 2 BM.GPU.B4.8 nodes replaced: its compute cluster gpu-b4-compute-cluster is replaced "
        "(availabilityDomain) and created first (it holds no hosts); deleted first (replaceOrder: deleteFirst): no BM.GPU.B4.8 node of the pool runs "
        "from the delete until the 2 new ones join"
    ]
    cluster = plan.step("gpu-b4-compute-cluster")
    assert cluster.changes[0].rule.why == (
        "oci_core_compute_cluster (terraform-provider-oci v8.28.0): availabilityDomain is ForceNew"
    )
    assert plan.refused() == []
    assert plan_lines.summary_lines(plan) == [
        "Resources:",
        "    +-2 to replace",
        "    2 changes. 22 unchanged",
    ]


def test_a_protected_replacement_is_the_engines_error_not_a_replacement() -> None:
    plan = plan_for("dev", lambda raw: pool(raw).update(availabilityDomain="Uocm:US-ASHBURN-AD-2"))
    cluster = plan.step("gpu-b4-compute-cluster")
    urn = cluster.base.urn if cluster.base else ""
    assert plan_lines.step_lines(cluster)[-2:] == [
        f'      error: unable to replace resource "{urn}"',
        "      error: as it is currently marked for protection. To replace it, set "
        "`oke-gpu-rdma:protect: {gpuPools: false}` in the stack file: the same `pulumi up` unprotects and "
        "replaces it",
    ]
    assert [s.record.name for s in plan.refused()] == ["gpu-b4-compute-cluster", "gpu-b4-nodes"]
    assert gpu_impact.gpu_node_lines(plan) == [
        "gpu-b4: 2 BM.GPU.B4.8 nodes would be replaced (its compute cluster gpu-b4-compute-cluster is "
        "replaced (availabilityDomain)), but the apply stops here: its compute cluster "
        "gpu-b4-compute-cluster and the node pool are protected (`oke-gpu-rdma:protect: {gpuPools: false}` lifts it)"
    ]
    assert plan_lines.summary_lines(plan) == [
        "Resources:",
        "    ! 2 refused: protected (`pulumi preview` fails; `pulumi up` stops at the first one)",
        "    22 unchanged",
    ]


def test_pods_cidr_of_a_created_cluster_replaces_everything_on_it() -> None:
    def pods_cidr(raw: Raw) -> None:
        raw["cluster"]["create"]["podsCidr"] = "10.244.0.0/16"
        raw["protect"] = False

    plan = plan_for("full", pods_cidr)
    by_name = {s.record.name: s for s in plan.changed()}
    assert by_name["oke-cluster"].line() == (
        "+- oci:ContainerEngine/cluster:Cluster oke-cluster replace [diff: ~options.kubernetesNetworkConfig.podsCidr]"
    )
    assert (
        by_name["gpu-b4-a-nodes"].line()
        == "-+ oci:ContainerEngine/nodePool:NodePool gpu-b4-a-nodes replace [diff: ~clusterId]"
    )
    # The kubeconfig is unknown before apply, so pulumi-kubernetes replaces its provider and every object.
    assert by_name["oke-k8s"].line() == "+- pulumi:providers:kubernetes oke-k8s replace [diff: ~kubeconfig]"
    assert (
        by_name["dranet-release"].line()
        == "+- kubernetes:helm.sh/v3:Release dranet-release replace [diff: ~[provider]]"
    )
    assert by_name["claim-templates-rdma-dranet-all-rails"].symbol == "-+"
    assert {s.op for s in plan.changed()} == {"replace"}
    assert gpu_impact.gpu_node_lines(plan) == [
        f"{name}: 2 BM.GPU.B4.8 nodes replaced: the OKE cluster oke-cluster is replaced "
        "(options.kubernetesNetworkConfig.podsCidr); deleted first (replaceOrder: deleteFirst): no BM.GPU.B4.8 "
        "node of the pool runs from the delete until the 2 new ones join"
        for name in ("gpu-b4-a", "gpu-b4-b")
    ]
    assert plan_lines.summary_lines(plan) == [
        "Resources:",
        # The full example's Kueue (release, two Topologies, two flavors, ClusterQueue, LocalQueue) and NCCL job
        # (MPIJob, the MPI operator's manifest), the rail health agent and monitoring's NetworkPolicies and
        # Grafana admin Job are on the cluster too.
        "    +-91 to replace",
        "    91 changes. 58 unchanged",
    ]


def test_pods_cidr_of_an_existing_cluster_changes_only_the_pack_config() -> None:
    plan = plan_for("dev", lambda raw: raw["cluster"]["existing"].update(podsCidr="10.244.0.0/16"))
    assert lines(plan) == []
    assert plan_lines.plan_lines(plan)[1:] == [
        "  ~ policy-pack-config.json (not a resource: the policy pack's config)",
        '      ~ dranet-child-range.existingCidrs[2].cidr: "10.240.0.0/12" => "10.244.0.0/16"',
    ]


def test_dranet_child_range_is_called_out() -> None:
    plan = plan_for("dev", lambda raw: raw["dranet"].update(childRange="10.192.0.0/12"))
    assert lines(plan) == [
        "~ kubernetes:helm.sh/v3:Release dranet-release update [diff: +values.args.cloudProviderOptions]"
    ]
    assert gpu_impact.gpu_node_lines(plan) == [
        "dranet: child range 10.208.0.0/12 => 10.192.0.0/12 on 2 BM.GPU.B4.8 nodes (gpu-b4): "
        "the nodes must be drained (seed 003)"
    ]


def test_claim_template_gpu_count_replaces_it_deleting_first() -> None:
    def two_gpus(raw: Raw) -> None:
        raw["workloads"] = {
            "claimTemplates": [
                {"name": "aligned-8gpu-16rails", "gpusPerWorker": 8},
                {"name": "aligned-4gpu-8rails", "gpusPerWorker": 2},
            ]
        }

    plan = plan_for("dev", two_gpus)
    assert lines(plan) == [
        "-+ kubernetes:resource.k8s.io/v1:ResourceClaimTemplate claim-templates-rdma-dranet-aligned-4gpu-8rails "
        "replace [diff: -spec.spec.devices.constraints[1], -spec.spec.devices.requests[2], "
        "-spec.spec.devices.requests[3]]"
    ]
    assert {c.rule.why for c in plan.changed()[0].changes} == {"replaceOnChanges: spec"}
    assert gpu_impact.gpu_node_lines(plan) == []


def test_a_new_pool_is_created_and_the_drivers_follow_it() -> None:
    def second_pool(raw: Raw) -> None:
        raw["nodePools"].append({**pool(raw), "name": "gpu-b4-b"})

    plan = plan_for("dev", second_pool)
    assert lines(plan) == [
        "~ kubernetes:helm.sh/v3:Release dranet-release update [diff: +values.affinity.nodeAffinity."
        "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[1]]",
        "+ oke-gpu-rdma:index:RdmaGpuNodePool gpu-b4-b create",
        "+ oci:Core/computeCluster:ComputeCluster gpu-b4-b-compute-cluster create",
        "+ oci:ContainerEngine/nodePool:NodePool gpu-b4-b-nodes create",
        "~ kubernetes:helm.sh/v3:Release gpu-dra-driver-release update [diff: +values.kubeletPlugin.affinity."
        "nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]."
        "values[1]]",
    ]
    assert gpu_impact.gpu_node_lines(plan) == []


def test_a_removed_pool_deletes_its_nodes() -> None:
    plan = plan_for("full", lambda raw: raw["nodePools"].pop())
    deleted = [s.line() for s in plan.changed() if s.op == "delete"]
    assert deleted == [
        "- oke-gpu-rdma:index:RdmaGpuNodePool gpu-b4-b delete",
        "- oci:Core/computeCluster:ComputeCluster gpu-b4-b-compute-cluster delete",
        "- oci:ContainerEngine/nodePool:NodePool gpu-b4-b-nodes delete",
    ]
    nodes = plan.step("gpu-b4-b-nodes")
    assert nodes.error.startswith(
        f'resource "{nodes.record.urn}" cannot be deleted\nbecause it is protected.'
    )
    assert nodes.error.endswith(f"`pulumi state unprotect '{nodes.record.urn}'`")
    assert gpu_impact.gpu_node_lines(plan) == [
        "gpu-b4-b: 2 BM.GPU.B4.8 nodes would be deleted (the pool is no longer declared), but the apply "
        "stops here: the node pool is protected (`oke-gpu-rdma:protect: {gpuPools: false}` lifts it)"
    ]
    # The ClusterQueue's quotas follow the pools: the B4.8 flavor loses the pool's GPUs, rails, CPUs and memory.
    queue = plan.step("kueue-clusterqueue-rdma-gpus")
    assert queue.line().startswith(
        "~ kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue kueue-clusterqueue-rdma-gpus update"
    )
    assert plan_lines.summary_lines(plan) == [
        "Resources:",
        "    ~ 5 to update",
        "    - 1 to delete",
        "    ! 2 refused: protected (`pulumi preview` fails; `pulumi up` stops at the first one)",
        "    6 changes. 141 unchanged",
    ]


def test_an_alias_keeps_a_renamed_resource() -> None:
    base = base_rendering("dev")
    (urn,) = [u for u, r in base.records.items() if r.name == "network"]
    old = base.records[urn]
    renamed = change_plan.Record(
        urn.replace("::network", "::net"), old.type, "net", old.parent, old.provider,
        {"aliases": ["name=network"]}, old.depends_on, old.inputs,
    )  # fmt: skip
    records = {u: r for u, r in base.records.items() if u != urn} | {renamed.urn: renamed}
    plan = change_plan.build(base, change_plan.Rendering(records, base.pack_config), "x")
    assert lines(plan) == []


def test_a_cni_change_replaces_the_pool_although_the_sdk_calls_it_updatable() -> None:
    # terraform-provider-oci: node_pool_pod_network_option_details.cni_type is ForceNew; the SDK's
    # docstring says "(Updatable)". The plan follows the schema (preview/plan/oci_schema.py).
    def vcn_native(raw: Raw) -> None:
        raw["cluster"]["existing"]["cniType"] = "OCI_VCN_IP_NATIVE"
        raw["network"]["existing"]["podSubnet"] = {
            "id": "ocid1.subnet.oc1.iad.aaaaaaaaexamplepodsubnet",
            "cidr": "10.140.128.0/18",
        }
        raw["protect"] = False

    plan = plan_for("dev", vcn_native)
    assert lines(plan) == [
        "-+ oci:ContainerEngine/nodePool:NodePool gpu-b4-nodes replace "
        "[diff: ~nodeConfigDetails.nodePoolPodNetworkOptionDetails.cniType, "
        "+nodeConfigDetails.nodePoolPodNetworkOptionDetails.podSubnetIds]"
    ]
    assert gpu_impact.gpu_node_lines(plan) == [
        "gpu-b4: 2 BM.GPU.B4.8 nodes replaced: the node pool is replaced "
        "(nodeConfigDetails.nodePoolPodNetworkOptionDetails.cniType); deleted first (replaceOrder: "
        "deleteFirst): no BM.GPU.B4.8 node of the pool runs from the delete until the 2 new ones join"
    ]


def test_a_public_api_endpoint_replaces_its_subnet_and_so_the_cluster() -> None:
    plan = plan_for("full", lambda raw: raw["network"]["create"].update(apiEndpointPublic=True))
    subnet = plan.step("network-api-endpoint")
    assert subnet.op == "replace"
    assert [(c.shown, c.rule.replaces) for c in subnet.changes] == [
        ("prohibitPublicIpOnVnic", True),
        ("routeTableId", False),
    ]
    cluster = plan.step("oke-cluster")
    assert cluster.op == "replace"
    why = {c.shown: (c.rule.replaces, c.rule.why) for c in cluster.changes}
    # isPublicIpEnabled updates in place; the endpoint subnet, set before and changed, replaces.
    assert why["endpointConfig.isPublicIpEnabled"][0] is False
    assert why["endpointConfig.subnetId"] == (
        True,
        "oci_containerengine_cluster (terraform-provider-oci v8.28.0): CustomizeDiff ForceNewIfChange on "
        "endpointConfig.subnetId",
    )
    # The cluster and the pools are protected: the plan shows the engine's refusal.
    assert gpu_impact.gpu_node_lines(plan)[0].startswith("gpu-b4-a: 2 BM.GPU.B4.8 nodes would be replaced")
    assert cluster.error.startswith("unable to replace resource")


def test_a_kubeconfig_for_another_endpoint_replaces_the_provider_and_its_objects() -> None:
    # pulumi-kubernetes DiffConfig: the active cluster's server changes, so the provider is replaced.
    plan = plan_for(
        "dev", lambda raw: raw["cluster"]["existing"].update(kubeconfigEndpoint="PRIVATE_ENDPOINT")
    )
    provider = plan.step("oke-k8s")
    assert provider.line() == "+- pulumi:providers:kubernetes oke-k8s replace [diff: ~kubeconfig]"
    assert provider.changes[0].rule.why == (
        "pulumi-kubernetes DiffConfig replaces the provider when the kubeconfig's active cluster changes (server)"
    )
    assert plan.step("workloads-namespace").op == "replace"
    assert gpu_impact.gpu_node_lines(plan) == []


def test_an_unchanged_active_cluster_replaces_nothing() -> None:
    plan = plan_for(
        "dev", lambda raw: raw["cluster"]["existing"].update(kubeconfigEndpoint="PUBLIC_ENDPOINT")
    )
    assert lines(plan) == []


def test_a_compartment_move_replaces_the_launch_policy_deleting_first() -> None:
    new = "ocid1.compartment.oc1..aaaaaaaaexampleothercompartment"
    plan = plan_for("dev", lambda raw: raw.update(compartmentId=new))
    policy = plan.step("compute-cluster-launch-policy")
    assert policy.line() == (
        "-+ oci:Identity/policy:Policy compute-cluster-launch-policy replace "
        "[diff: ~compartmentId, ~statements[0]]"
    )
    assert [c.rule.why for c in policy.replacing()] == [
        "oci_identity_policy (terraform-provider-oci v8.28.0): compartmentId is ForceNew"
    ]


def test_a_pool_replaced_create_first_needs_its_hosts_twice_in_its_ad() -> None:
    def create_first_in_a_new_compute_cluster(raw: Raw) -> None:
        pool(raw)["replaceOrder"] = "createFirst"
        pool(raw)["computeClusterId"] = "ocid1.computecluster.oc1.iad.aaaaaaaaexampleother"
        pool(raw)["availabilityDomain"] = "Uocm:US-ASHBURN-AD-1"

    base_raw = copy.deepcopy(raw_config("dev"))
    pool(base_raw)["replaceOrder"] = "createFirst"
    base_raw["protect"] = False
    base = change_plan.parse(render("dev", base_raw))
    raw = copy.deepcopy(raw_config("dev"))
    create_first_in_a_new_compute_cluster(raw)
    plan = change_plan.build(base, change_plan.parse(render("dev", raw)), "x")
    assert plan.step("gpu-b4-nodes").line() == (
        "+- oci:ContainerEngine/nodePool:NodePool gpu-b4-nodes replace [diff: ~nodeConfigDetails.computeClusterId]"
    )
    assert gpu_impact.gpu_node_lines(plan) == [
        "gpu-b4: 2 BM.GPU.B4.8 nodes replaced: the node pool is replaced (nodeConfigDetails.computeClusterId); "
        "created first (replaceOrder: createFirst): needs 4 free BM.GPU.B4.8 hosts in Uocm:US-ASHBURN-AD-1 "
        "(twice the pool) while both pools run"
    ]


def test_a_pool_replaced_create_first_in_another_ad_needs_its_hosts_there() -> None:
    base_raw = copy.deepcopy(raw_config("dev"))
    pool(base_raw)["replaceOrder"] = "createFirst"
    base_raw["protect"] = False
    base = change_plan.parse(render("dev", base_raw))
    raw = copy.deepcopy(base_raw)
    pool(raw).update(availabilityDomain="Uocm:US-ASHBURN-AD-2", count=3)
    plan = change_plan.build(base, change_plan.parse(render("dev", raw)), "x")
    assert gpu_impact.gpu_node_lines(plan)[0].endswith(
        "created first (replaceOrder: createFirst): needs 3 free BM.GPU.B4.8 hosts in Uocm:US-ASHBURN-AD-2 "
        "while the old 2 still run"
    )


# --- issue 17 item 3: every replacement says its order in words, and why --------------------------------


def test_every_replacement_says_its_order_and_why() -> None:
    def move(raw: Raw) -> None:
        pool(raw)["availabilityDomain"] = "Uocm:US-ASHBURN-AD-2"
        raw["protect"] = False

    plan = plan_for("dev", move)
    assert plan_lines.step_lines(plan.step("gpu-b4-compute-cluster"))[:2] == [
        "  +- oci:Core/computeCluster:ComputeCluster gpu-b4-compute-cluster replace [diff: ~availabilityDomain]",
        "      order: created first (the engine's default): the new one exists before the old one is deleted; "
        "a compute cluster holds no hosts, so this needs none, but its node pool is replaced with it "
        "(nodeConfigDetails.computeClusterId is ForceNew): see the GPU line",
    ]
    assert plan_lines.step_lines(plan.step("gpu-b4-nodes"))[1] == (
        "      order: deleted first (its deleteBeforeReplace option): the old one is gone before the new one "
        "exists"
    )
    for step in plan.changed():
        assert step.op != "replace" or plan_lines.step_lines(step)[1].startswith("      order: ")


def test_a_kubernetes_replacement_deleting_first_says_the_provider_asks_for_it() -> None:
    # A commit that changes the NCCL ConfigMap's data: pulumi-kubernetes replaces it, keeping its name.
    base = base_rendering("dev")
    (urn,) = [u for u, r in base.records.items() if r.name == "workloads-nccl"]
    record = base.records[urn]
    data = {**record.inputs["data"], "NCCL_DEBUG": "TRACE"}
    new = change_plan.Rendering(
        {**base.records, urn: dataclasses.replace(record, inputs={**record.inputs, "data": data})},
        base.pack_config,
    )
    step = change_plan.build(base, new, "x").step("workloads-nccl")
    assert step.line().startswith("-+ kubernetes:core/v1:ConfigMap workloads-nccl replace")
    assert plan_lines.step_lines(step)[1] == (
        "      order: deleted first (the provider's rule: the replacement keeps the object's name, which two "
        "objects cannot share): the old one is gone before the new one exists"
    )


def test_an_update_says_no_order() -> None:
    plan = plan_for("dev", lambda raw: pool(raw).update(count=3))
    assert not any("order:" in line for line in plan_lines.step_lines(plan.step("gpu-b4-nodes")))


# --- issue 17 item 5: node cycling as OKE and the provider do it -------------------------------------


def _cloud_init_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    base_rendering("dev")  # the base is the unpatched program's (cached: render it before patching)
    original = components.nodes.gpu_node_pool.render_cloud_init
    monkeypatch.setattr(
        components.nodes.gpu_node_pool,
        "render_cloud_init",
        lambda bootstrap: original(bootstrap) + "# changed\n",
    )


def test_turning_cycling_on_cycles_the_nodes_an_earlier_cycling_off_change_left_stale() -> None:
    base_raw = copy.deepcopy(raw_config("dev"))
    pool(base_raw)["cycling"] = {"enabled": False}
    base = change_plan.parse(render("dev", base_raw))
    # An unrelated change (one more node) with cycling back on: the provider sends nodePoolCyclingDetails
    # with the update, and OKE brings every node in line with the pool's spec.
    raw = copy.deepcopy(raw_config("dev"))
    pool(raw)["count"] = 3
    plan = change_plan.build(base, change_plan.parse(render("dev", raw)), "x")
    assert gpu_impact.gpu_node_lines(plan) == [
        "gpu-b4: 2 => 3 BM.GPU.B4.8 nodes: 1 added",
        "gpu-b4: node cycling was off in the base and is on now: this update cycles every node still built "
        "from an older spec of the pool (changes applied while cycling was off; the renderings cannot show "
        "which nodes)",
    ]


def test_cycling_on_in_base_and_now_warns_of_no_stale_nodes() -> None:
    plan = plan_for("dev", lambda raw: pool(raw).update(count=3))
    assert gpu_impact.gpu_node_lines(plan) == ["gpu-b4: 2 => 3 BM.GPU.B4.8 nodes: 1 added"]


def test_boot_volume_replacement_cycles_the_nodes_on_their_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = copy.deepcopy(raw_config("dev"))
    pool(raw)["cycling"] = {"cycleModes": ["BOOT_VOLUME_REPLACE"]}
    base = change_plan.parse(render("dev", raw))
    assert base.records[next(u for u in base.records if u.endswith("::gpu-b4-nodes"))].inputs[
        "nodePoolCyclingDetails"
    ] == {
        "cycleModes": ["BOOT_VOLUME_REPLACE"],
        "isNodeCyclingEnabled": True,
        "maximumSurge": "0",
        "maximumUnavailable": "1",
    }
    _cloud_init_changed(monkeypatch)
    plan = change_plan.build(base, change_plan.parse(render("dev", raw)), "x")
    assert gpu_impact.gpu_node_lines(plan) == [
        "gpu-b4: 2 BM.GPU.B4.8 nodes cycled by boot-volume replacement, same hosts (surge 0, unavailable 1): "
        "cloud-init (nodeMetadata.user_data)"
    ]


def test_boot_volume_replacement_cannot_change_node_labels() -> None:
    raw = copy.deepcopy(raw_config("dev"))
    pool(raw)["cycling"] = {"cycleModes": ["BOOT_VOLUME_REPLACE"]}
    base = change_plan.parse(render("dev", raw))
    pool(raw)["labels"] = {"team": "ml"}
    plan = change_plan.build(base, change_plan.parse(render("dev", raw)), "x")
    (line,) = gpu_impact.gpu_node_lines(plan)
    assert line.startswith("gpu-b4: 2 BM.GPU.B4.8 nodes cycled by boot-volume replacement, same hosts")
    assert line.endswith(
        "; BOOT_VOLUME_REPLACE cannot change node labels: each node's boot-volume cycle fails "
        "(add INSTANCE_REPLACE to cycleModes)"
    )
    pool(raw)["cycling"] = {"cycleModes": ["BOOT_VOLUME_REPLACE", "INSTANCE_REPLACE"]}
    plan = change_plan.build(base, change_plan.parse(render("dev", raw)), "x")
    assert gpu_impact.gpu_node_lines(plan)[0].endswith("fails (then INSTANCE_REPLACE)")


def test_a_cycle_mode_that_oke_does_not_know_is_one_clear_message() -> None:
    raw = copy.deepcopy(raw_config("dev"))
    pool(raw)["cycling"] = {"cycleModes": ["REBOOT"]}
    config = pulumi_config_map(as_stack_file(raw))
    with pytest.raises(Exception) as raised:
        parse_stack_config(config_of(config), stack_source("dev"), config.get("oci:region"))
    assert str(raised.value).splitlines()[1:] == [
        "  stacks/Pulumi.dev.yaml: nodePools[0].cycling.cycleModes[0] = 'REBOOT': takes one of: "
        "BOOT_VOLUME_REPLACE, INSTANCE_REPLACE"
    ]


def test_a_new_worker_subnet_moves_the_nodes_by_instance_replacement_only() -> None:
    def new_subnet(raw: Raw) -> None:
        raw["network"]["existing"]["workerSubnet"]["id"] = "ocid1.subnet.oc1.iad.aaaaaaaaexampleothersubnet"

    plan = plan_for("dev", new_subnet)
    assert plan.step("gpu-b4-nodes").line() == (
        "~ oci:ContainerEngine/nodePool:NodePool gpu-b4-nodes update "
        "[diff: ~nodeConfigDetails.placementConfigs[0].subnetId]"
    )
    assert gpu_impact.gpu_node_lines(plan) == [
        "gpu-b4: 2 BM.GPU.B4.8 nodes cycled (surge 0, unavailable 1, cycleModes unset: INSTANCE_REPLACE): "
        "placement (nodeConfigDetails.placementConfigs[0].subnetId)",
        f"gpu-b4: {BARE_METAL}",
    ]
    raw = copy.deepcopy(raw_config("dev"))
    pool(raw)["cycling"] = {"cycleModes": ["BOOT_VOLUME_REPLACE"]}
    base = change_plan.parse(render("dev", raw))
    new_subnet(raw)
    plan = change_plan.build(base, change_plan.parse(render("dev", raw)), "x")
    assert gpu_impact.gpu_node_lines(plan)[0].endswith(
        "; BOOT_VOLUME_REPLACE cannot change placement: each node's boot-volume cycle fails "
        "(add INSTANCE_REPLACE to cycleModes)"
    )


def test_the_two_renderings_load_a_shared_file_once_and_plan_the_same() -> None:
    raw = copy.deepcopy(raw_config("dev"))
    base_files = render("dev", raw)
    pool(raw)["count"] = 3
    new_files = render("dev", raw)
    loaded: dict[str, Any] = {}
    base, new = change_plan.parse(base_files, loaded), change_plan.parse(new_files, loaded)
    assert len(loaded) < len([p for p in base_files if p.endswith(".yaml")]) + 2
    (pool_urn,) = [u for u, r in new.records.items() if r.name == "gpu-b4-nodes"]
    (template_urn,) = [u for u, r in new.records.items() if r.name.endswith("aligned-4gpu-8rails")]
    assert new.records[template_urn].inputs is base.records[template_urn].inputs
    assert new.records[pool_urn].inputs is not base.records[pool_urn].inputs
    shared = change_plan.build(base, new, "x")
    alone = change_plan.build(change_plan.parse(base_files), change_plan.parse(new_files), "x")
    assert plan_lines.plan_lines(shared) == plan_lines.plan_lines(alone)
    assert plan_lines.step_lines(shared.step("gpu-b4-nodes"))[1:] == [
        "      ~ nodeConfigDetails.size: 2 => 3"
    ]


def test_a_new_workload_namespace_creates_its_objects_first() -> None:
    """pulumi-kubernetes provider.go Diff: a new name or namespace is `+-`, never `-+`."""
    plan = plan_for("dev", lambda raw: raw.setdefault("workloads", {}).update(namespace="rdma-b"))
    by_name = {s.record.name: s for s in plan.changed()}
    assert by_name["workloads-tools"].line() == (
        "+- kubernetes:core/v1:ConfigMap workloads-tools replace [diff: ~metadata.namespace]"
    )
    assert by_name["workloads-namespace"].line() == (
        "+- kubernetes:core/v1:Namespace workloads-namespace replace [diff: ~metadata.name]"
    )


def _declared_one_by_one(new: change_plan.Rendering) -> change_plan.Rendering:
    """`new` as it was before the MPI operator's manifest moved to a ConfigFile: each object a resource of
    the MpiOperator component, named `<component>-<kind>-<name>`."""
    manifest = next(r for r in new.records.values() if r.type == mpi_operator.CONFIG_FILE_TYPE)
    component = manifest.parent.rpartition("::")[2]
    records = {urn: r for urn, r in new.records.items() if r is not manifest}
    for obj in mpi_operator.release("v0.6.0").objects:
        name = mpi_operator.alias_name(component, obj.kind, obj.name)
        urn = f"urn:pulumi:sriov::oke-gpu-rdma::oke-gpu-rdma:index:MpiOperator${obj.resource_type}::{name}"
        records[urn] = change_plan.Record(
            urn, obj.resource_type, name, component, manifest.provider, {}, (), {"kind": obj.kind}
        )
    return change_plan.Rendering(records, new.pack_config)


def test_the_mpi_operators_objects_move_under_its_manifest_instead_of_being_deleted() -> None:
    new = change_plan.parse(render("sriov", raw_config("sriov")))
    plan = change_plan.build(_declared_one_by_one(new), new, "the example")
    assert lines(plan) == ["+ kubernetes:yaml/v2:ConfigFile vf-acceptance-mpi-operator-manifest create"]
    text = plan_lines.plan_lines(plan)
    assert (
        "  vf-acceptance-mpi-operator-customresourcedefinition-mpijobs.kubeflow.org: moves under "
        "ConfigFile vf-acceptance-mpi-operator-manifest as vf-acceptance-mpi-operator-manifest:"
        "mpijobs.kubeflow.org (aliased: kept, not deleted); its inputs come from the manifest fetched at "
        "apply time"
    ) in text
    # One line per note, naming every object it concerns (objects of one name share the ConfigFile child's).
    moved = [line.split(": moves under", 1)[0].strip() for line in text if "moves under ConfigFile" in line]
    assert sum(len(names.split(", ")) for names in moved) == 9


def test_objects_no_known_manifest_takes_over_are_deleted() -> None:
    """A ConfigFile of a URL the facts do not name (another commit) adopts nothing: the engine would
    delete the old objects, and the plan says so."""
    new = change_plan.parse(render("sriov", raw_config("sriov")))
    base = _declared_one_by_one(new)
    urn, manifest = next((u, r) for u, r in new.records.items() if r.type == mpi_operator.CONFIG_FILE_TYPE)
    other = dataclasses.replace(manifest, inputs={"file": "https://example.invalid/mpi-operator.yaml"})
    plan = change_plan.build(base, change_plan.Rendering({**new.records, urn: other}, new.pack_config), "x")
    assert sum(s.op == "delete" for s in plan.steps) == 9


def test_protection_is_per_kind_and_its_change_is_a_line_of_its_own() -> None:
    def move_gpu_pool_unprotected(raw: Raw) -> None:
        raw["protect"] = {"gpuPools": False}
        pool(raw).update(availabilityDomain="Uocm:US-ASHBURN-AD-2")

    plan = plan_for("full", move_gpu_pool_unprotected)
    # The moved pool's resources are unprotected and replaced in the same `pulumi up`; the VCN and the
    # cluster stay protected.
    assert plan.refused() == []
    assert plan.step("network-vcn").record.protect and plan.step("oke-cluster").record.protect
    assert plan.step("system-nodes").record.protect
    assert plan_lines.plan_lines(plan)[-1:] == [
        "  gpu-b4-b-compute-cluster, gpu-b4-b-nodes: protect: true => false",
    ]
    # The remediation controller's config names the pool's OKE node pool, whose new OCID is known after the apply.
    assert [s.record.name for s in plan.changed()] == [
        "gpu-b4-a-compute-cluster",
        "gpu-b4-a-nodes",
        "node-remediation-program",
    ]


def test_a_refusal_names_the_protect_key_of_its_kind() -> None:
    plan = plan_for("full", lambda raw: raw["network"]["create"].update(dnsLabel="okegpu2"))
    # A new VCN replaces what lives in it: each refusal knows the key of its kind.
    assert {s.record.name: s.protect_key for s in plan.refused()} == {
        "network-vcn": "network",
        "oke-cluster": "cluster",
        "gpu-b4-a-nodes": "gpuPools",
        "gpu-b4-b-nodes": "gpuPools",
        "system-nodes": "systemPool",
    }
    assert change_plan.protect_setting(plan.step("network-vcn")) == "`oke-gpu-rdma:protect: {network: false}`"
    assert change_plan.protect_setting(*plan.refused()) == (
        "`oke-gpu-rdma:protect: {network: false, cluster: false, gpuPools: false, systemPool: false}`"
    )


def test_nsg_rules_change_in_the_plan_like_any_resource() -> None:
    # A new allowed CIDR is one new rule on the endpoint's NSG, nothing else changes.
    def allow_office(raw: Raw) -> None:
        raw["network"]["create"]["apiAllowedCidrs"] = ["203.0.113.0/24"]

    plan = plan_for("full", allow_office)
    assert [s.line() for s in plan.changed()] == [
        "+ oci:Core/networkSecurityGroupSecurityRule:NetworkSecurityGroupSecurityRule "
        "network-api-endpoint-api-from-203-0-113-0-24 create"
    ]


def test_a_moved_worker_subnet_updates_the_rules_that_name_it_in_place() -> None:
    # source/destination are updatable (terraform-provider-oci's NSG rule schema, generated into
    # preview/plan/oci_schema_rules.json): no rule and no NSG is replaced.
    def move_workers(raw: Raw) -> None:
        raw["network"]["create"]["workerSubnetCidr"] = "10.140.96.0/19"
        raw["protect"] = False

    rules = {
        s.record.name: s.line()
        for s in plan_for("full", move_workers).changed()
        if "networkSecurityGroupSecurityRule" in s.line()
    }
    assert rules["network-api-endpoint-bootstrap-from-workers"] == (
        "~ oci:Core/networkSecurityGroupSecurityRule:NetworkSecurityGroupSecurityRule "
        "network-api-endpoint-bootstrap-from-workers update [diff: ~source]"
    )
    assert all(" update [diff: ~" in line for line in rules.values())


# --- issue 37: a remediated pool's new spec rolled by the remediation controller, block by block -----------


def test_an_image_change_on_full_names_the_block_by_block_rollout() -> None:
    plan = plan_for("full", lambda raw: pool(raw).update(imageId="ocid1.image.oc1.iad.aaaaaaaanewimage"))
    assert gpu_impact.gpu_node_lines(plan) == [
        "gpu-b4-a: 2 BM.GPU.B4.8 nodes rolled onto the new node image (nodeSourceDetails.imageId) by the "
        "remediation controller, one local block at a time in the order of their oke-gpu-rdma/rdma-local-block "
        "labels, 1 node(s) at a time: each cordoned, its jobs given 30 min to finish, then evicted and requeued "
        "by Kueue, drained, replaced by OKE in its node pool (about 45 min) and checked alone by the fabric check "
        "before it serves; a block starts once the one before passed: up to 165 min a node, 330 min for the pool"
    ]
    # The controller learns of it through its config: the pool's node spec digest changed.
    assert "node-remediation-program" in [s.record.name for s in plan.changed()]


def test_an_image_change_of_a_pool_not_remediated_still_says_what_oke_does() -> None:
    plan = plan_for("full", lambda raw: pool(raw, 1).update(imageId="ocid1.image.oc1.iad.aaaaaaaanewimage"))
    [line, *_] = gpu_impact.gpu_node_lines(plan)
    assert line.startswith("gpu-b4-b: 2 BM.GPU.B4.8 nodes cycled (surge 0, unavailable 1")
    assert "node-remediation-program" not in [s.record.name for s in plan.changed()]


def test_an_upgrade_to_1_37_says_the_order_and_the_node_taints_the_switch_leaves_behind() -> None:
    plan = plan_for("full", lambda raw: raw["cluster"]["create"].update(kubernetesVersion="v1.37.1"))
    lines = gpu_impact.gpu_node_lines(plan)
    assert lines[-2].startswith(
        "Kubernetes v1.36.4 => v1.37.1, in the order the apply makes it: OKE upgrades the control plane; the "
        "pools' node specs follow; then the rail agent's DaemonSets, which wait for the pools, mark rails with "
        "DeviceTaintRules instead of node taints"
    )
    assert lines[-1] == (
        "a rail mark written as a node taint on 1.36 is lifted by no agent after the switch: the nodes replaced "
        "start without one; on a node kept, lift it with `kubectl taint nodes <node> oke-gpu-rdma/rail-unhealthy-`"
    )
    # The remediated pool is rolled block by block onto the new version; the other is cycled by OKE.
    assert lines[0].startswith("gpu-b4-a: 2 BM.GPU.B4.8 nodes rolled onto the new node labels")
    assert "Kubernetes version (kubernetesVersion) by the remediation controller" in lines[0]
    assert lines[1].startswith("gpu-b4-b: 2 BM.GPU.B4.8 nodes cycled")


def test_a_patch_upgrade_says_nothing_of_the_marks() -> None:
    plan = plan_for("full", lambda raw: raw["cluster"]["create"].update(kubernetesVersion="v1.36.5"))
    assert gpu_impact.upgrade_lines(plan) == []
