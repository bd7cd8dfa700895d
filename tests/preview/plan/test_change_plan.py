"""The change plan: one input changed at a time on the example stacks, the exact plan and GPU lines
(preview/plan/change_plan.py, preview/plan/gpu_impact.py)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

import pytest

import components.gpu_node_pool
from preview import rendering
from preview.mock_runtime import pulumi_config_map, run_program
from preview.plan import change_plan, gpu_impact
from stack_config.loading import parse_stack_config, stack_source
from stack_config.loading import raw_config as config_of
from stack_config.pack_config import policy_pack_config
from tests.support import as_stack_file, raw_config

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


def test_no_change_is_no_change() -> None:
    plan = plan_for("dev", lambda raw: None)
    assert lines(plan) == [] and gpu_impact.gpu_node_lines(plan) == []
    assert change_plan.plan_lines(plan) == ["Plan against the example:", "  no changes"]
    assert change_plan.summary_lines(plan) == ["Resources:", "    23 unchanged"]


def test_no_base_makes_everything_a_create() -> None:
    plan = change_plan.build(
        None, base_rendering("dev"), "no base: git is not installed; everything is a create"
    )
    assert {s.op for s in plan.steps} == {"create"}
    assert change_plan.summary_lines(plan) == ["Resources:", "    + 23 to create"]
    assert change_plan.plan_lines(plan) == ["Plan: no base: git is not installed; everything is a create."]


@pytest.mark.parametrize(("count", "impact"), [(3, "1 added"), (1, "1 removed")])
def test_node_count_updates_the_pool(count: int, impact: str) -> None:
    plan = plan_for("dev", lambda raw: pool(raw).update(count=count))
    assert lines(plan) == [
        "~ oci:ContainerEngine/nodePool:NodePool gpu-b4-nodes update [diff: ~nodeConfigDetails.size]"
    ]
    assert gpu_impact.gpu_node_lines(plan) == [f"gpu-b4: 2 => {count} BM.GPU.B4.8 nodes: {impact}"]
    assert change_plan.summary_lines(plan) == [
        "Resources:",
        "    ~ 1 to update",
        "    1 change. 22 unchanged",
    ]


def test_cloud_init_change_cycles_every_node(monkeypatch: pytest.MonkeyPatch) -> None:
    # A commit that changes the node cloud-init (what oke_gpu_rdma/cloud_init.py renders).
    original = components.gpu_node_pool.render_cloud_init
    monkeypatch.setattr(
        components.gpu_node_pool,
        "render_cloud_init",
        lambda bootstrap: original(bootstrap).replace("#cloud-config\n", "#cloud-config\n# changed\n", 1),
    )
    plan = plan_for("dev", lambda raw: None)
    assert lines(plan) == [
        "~ oci:ContainerEngine/nodePool:NodePool gpu-b4-nodes update [diff: ~nodeMetadata.user_data]"
    ]
    assert gpu_impact.gpu_node_lines(plan) == [
        "gpu-b4: 2 BM.GPU.B4.8 nodes cycled (surge 0, unavailable 1): cloud-init (nodeMetadata.user_data)"
    ]
    # The detail shows the decoded text's diff, not base64.
    detail = change_plan.step_lines(plan.step("gpu-b4-nodes"))
    assert "          +# changed" in detail


def test_cloud_init_change_without_cycling_leaves_the_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    original = components.gpu_node_pool.render_cloud_init
    monkeypatch.setattr(
        components.gpu_node_pool,
        "render_cloud_init",
        lambda bootstrap: original(bootstrap) + "# changed\n",
    )
    raw = raw_config("dev")
    pool(raw)["cycling"] = {"enabled": False}
    base = change_plan.parse(render("dev", raw))
    monkeypatch.undo()
    plan = change_plan.build(base, change_plan.parse(render("dev", raw)), "x")
    assert gpu_impact.gpu_node_lines(plan) == [
        "gpu-b4: 2 BM.GPU.B4.8 nodes keep the old cloud-init (nodeMetadata.user_data): node cycling is off, "
        "only nodes launched later get it"
    ]


def test_node_image_cycles_every_node() -> None:
    plan = plan_for(
        "dev", lambda raw: pool(raw).update(imageId="ocid1.image.oc1.iad.aaaaaaaaexamplenewimage")
    )
    assert lines(plan) == [
        "~ oci:ContainerEngine/nodePool:NodePool gpu-b4-nodes update [diff: ~nodeSourceDetails.imageId]"
    ]
    assert gpu_impact.gpu_node_lines(plan) == [
        "gpu-b4: 2 BM.GPU.B4.8 nodes cycled (surge 0, unavailable 1): node image (nodeSourceDetails.imageId)"
    ]


def test_compute_cluster_availability_domain_replaces_the_cluster_and_the_pool() -> None:
    plan = plan_for("dev", lambda raw: pool(raw).update(availabilityDomain="Uocm:US-ASHBURN-AD-2"))
    assert lines(plan) == [
        "+- oci:Core/computeCluster:ComputeCluster gpu-b4-compute-cluster replace [diff: ~availabilityDomain]",
        "+- oci:ContainerEngine/nodePool:NodePool gpu-b4-nodes replace "
        "[diff: ~nodeConfigDetails.computeClusterId, ~nodeConfigDetails.placementConfigs[0].availabilityDomain]",
    ]
    assert gpu_impact.gpu_node_lines(plan) == [
        "gpu-b4: 2 BM.GPU.B4.8 nodes replaced: its compute cluster gpu-b4-compute-cluster is replaced "
        "(availabilityDomain)"
    ]
    cluster = plan.step("gpu-b4-compute-cluster")
    assert cluster.changes[0].rule.why == "pulumi-oci: availabilityDomain is not (Updatable)"
    # Both are protected: the plan says the apply stops there.
    assert cluster.notes == ["protected: pulumi up refuses to replace it until an apply sets protect: false"]
    assert change_plan.summary_lines(plan) == [
        "Resources:",
        "    +-2 to replace",
        "    2 changes. 21 unchanged",
    ]


def test_pods_cidr_of_a_created_cluster_replaces_everything_on_it() -> None:
    plan = plan_for("full", lambda raw: raw["cluster"]["create"].update(podsCidr="10.244.0.0/16"))
    by_name = {s.record.name: s for s in plan.changed()}
    assert by_name["oke-cluster"].line() == (
        "+- oci:ContainerEngine/cluster:Cluster oke-cluster replace [diff: ~options.kubernetesNetworkConfig.podsCidr]"
    )
    assert (
        by_name["gpu-b4-a-nodes"].line()
        == "+- oci:ContainerEngine/nodePool:NodePool gpu-b4-a-nodes replace [diff: ~clusterId]"
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
        "(options.kubernetesNetworkConfig.podsCidr)"
        for name in ("gpu-b4-a", "gpu-b4-b")
    ]
    assert change_plan.summary_lines(plan) == [
        "Resources:",
        "    +-15 to replace",
        "    15 changes. 24 unchanged",
    ]


def test_pods_cidr_of_an_existing_cluster_changes_only_the_pack_config() -> None:
    plan = plan_for("dev", lambda raw: raw["cluster"]["existing"].update(podsCidr="10.244.0.0/16"))
    assert lines(plan) == []
    assert change_plan.plan_lines(plan)[1:] == [
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
    assert plan.step("gpu-b4-b-nodes").notes == [
        "protected: pulumi up refuses to delete it until an apply sets protect: false"
    ]
    assert gpu_impact.gpu_node_lines(plan) == [
        "gpu-b4-b: 2 BM.GPU.B4.8 nodes deleted: the pool is no longer declared"
    ]
    assert change_plan.summary_lines(plan) == [
        "Resources:",
        "    ~ 2 to update",
        "    - 3 to delete",
        "    5 changes. 34 unchanged",
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
