"""Kueue's flavors, quotas and queue from the stack (stack_config/scheduling/scheduling_plan.py)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.fleet import b4_like
from oke_gpu_rdma.nodes import node_sizes
from oke_gpu_rdma.nodes.labels import FABRIC_LEVEL_LABELS, NVLINK_LEVEL_LABELS, POOL_LABEL
from oke_gpu_rdma.nodes.node_sizes import node_size
from oke_gpu_rdma.scheduling import kueue_chart as kueue
from oke_gpu_rdma.scheduling.kueue_objects import quota_count
from oke_gpu_rdma.scheduling.node_selection import selector_matches
from stack_config.claims.template_requests import topology
from stack_config.loading import load_stack
from stack_config.problems import ConfigError
from stack_config.scheduling.pool_nodes import planned_pools
from stack_config.scheduling.scheduling_plan import SYSTEM_FLAVOR, SchedulingPlan, objects
from tests.support import EXAMPLE_REGION, raw_config, without_remediation


def scheduled(raw: dict[str, Any]) -> tuple[SchedulingPlan, Any]:
    raw.setdefault("workloads", {})["scheduling"] = {"enabled": True}
    stack = load_stack(raw, "test", EXAMPLE_REGION)
    assert stack.scheduling is not None
    return stack.scheduling, stack.config


def mixed_fleet() -> dict[str, Any]:
    """The full example plus an H100 DRA pool, an SR-IOV B4.8 pool and a railless B4.8 pool: three pools share
    the B4.8 shape, only one path of each."""
    raw = raw_config("full")
    pools = raw["nodePools"]
    h100 = {**pools[0], "name": "gpu-h100", "shape": "BM.GPU.H100.8", "count": 3}
    sriov = {**pools[0], "name": "gpu-b4-vf", "rdma": "sriov"}
    railless = {**pools[0], "name": "gpu-b4-plain", "rdma": "none", "count": 1}
    raw["nodePools"] = [*pools, h100, sriov, railless]
    raw["shapeTopologies"] = {"BM.GPU.H100.8": b4_like("NVIDIA H100 80GB HBM3")}
    return raw


def test_off_by_default() -> None:
    stack = load_stack(without_remediation(raw_config("full")) | {"workloads": {}}, "test", EXAMPLE_REGION)
    assert stack.scheduling is None


def test_the_full_example_turns_it_on() -> None:
    assert raw_config("full")["workloads"]["scheduling"]["enabled"] is True


@pytest.mark.parametrize("fleet", [lambda: raw_config("full"), mixed_fleet], ids=["full", "mixed"])
def test_quotas_are_the_pools_capacity(fleet: Any) -> None:
    plan, config = scheduled(fleet())
    for shape in dict.fromkeys(p.shape for p in config.dra_pools):
        pools = [p for p in config.dra_pools if p.shape == shape]
        nodes = sum(p.count for p in pools)
        size = node_size(shape)
        assert size is not None
        quotas = {k: quota_count(v) for k, v in plan.shape_flavor(shape).quotas.items()}
        assert quotas == {
            "cpu": nodes * size.cpus,
            "memory": nodes * size.memory_gib << 30,
            "pods": nodes * 110,
            kueue.GPU_RESOURCE: nodes * len(topology(config, shape).gpus),
            kueue.RAIL_RESOURCE: nodes * len(topology(config, shape).rails),
        }
    # The full example: 4 B4.8 nodes of 8 GPUs and 16 rails each.
    if len(config.node_pools) == 2:
        assert plan.shape_flavor("BM.GPU.B4.8").quotas[kueue.GPU_RESOURCE] == "32"
        assert plan.shape_flavor("BM.GPU.B4.8").quotas[kueue.RAIL_RESOURCE] == "64"


@pytest.mark.parametrize("fleet", [lambda: raw_config("full"), mixed_fleet], ids=["full", "mixed"])
def test_each_flavor_selects_exactly_its_shapes_dra_pools(fleet: Any) -> None:
    plan, config = scheduled(fleet())
    nodes = planned_pools(config)
    for flavor in plan.flavors:
        selected = sorted(p.name for p in nodes if selector_matches(flavor.node_labels, p.labels))
        if flavor.name == SYSTEM_FLAVOR:
            assert selected == [config.system_pool.name]
            continue
        shape = next(p.shape for p in config.dra_pools if p.name == plan.flavor_pools[flavor.name][0])
        assert selected == sorted(p.name for p in config.dra_pools if p.shape == shape)
        assert list(plan.flavor_pools[flavor.name]) == selected
        assert flavor.topology == "rdma-fabric"
    # The SR-IOV and railless B4.8 pools are in no flavor.
    if len(config.node_pools) > 2:
        assert not any({"gpu-b4-vf", "gpu-b4-plain"} & set(pools) for pools in plan.flavor_pools.values())


def test_flavors_tolerate_their_pools_taints() -> None:
    before = scheduled(raw_config("full"))[0].shape_flavor("BM.GPU.B4.8").object_name
    raw = raw_config("full")
    raw["nodePools"][1]["taints"] = [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "team", "value": "research", "effect": "NoExecute"},
    ]
    plan, _ = scheduled(raw)
    assert list(plan.shape_flavor("BM.GPU.B4.8").tolerations) == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "team", "operator": "Exists", "effect": "NoExecute"},
    ]
    # Tolerations are immutable once a flavor has a topology: the changed flavor is a new object.
    assert plan.shape_flavor("BM.GPU.B4.8").object_name != before


def test_the_objects() -> None:
    plan, _ = scheduled(raw_config("full"))
    by_kind = {(o["kind"], o["metadata"]["name"]): o for o in objects(plan)}
    system_flavor, gpu = (f.object_name for f in plan.flavors)
    # Named by the shape and a digest of what the CRD makes immutable: a new taint is a new flavor.
    assert gpu.startswith("bm-gpu-b4-8-") and len(gpu) == len("bm-gpu-b4-8-") + 6
    assert by_kind[("Topology", "rdma-fabric")]["spec"] == {
        "levels": [{"nodeLabel": label} for label in FABRIC_LEVEL_LABELS]
    }
    assert by_kind[("Topology", "hosts")]["spec"] == {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]}
    assert by_kind[("ResourceFlavor", system_flavor)]["spec"] == {
        "nodeLabels": {POOL_LABEL: "system"},
        "topologyName": "hosts",
    }
    queue = by_kind[("ClusterQueue", "rdma-gpus")]["spec"]
    group = queue["resourceGroups"][0]
    assert group["coveredResources"] == ["cpu", "memory", "pods", kueue.GPU_RESOURCE, kueue.RAIL_RESOURCE]
    assert [f["name"] for f in group["flavors"]] == [system_flavor, gpu]
    # The system flavor holds no GPU and no rail: a pod set that claims them never lands there.
    system = {r["name"]: r["nominalQuota"] for r in group["flavors"][0]["resources"]}
    assert system == {
        "cpu": "8",
        "memory": "32Gi",
        "pods": "220",
        kueue.GPU_RESOURCE: "0",
        kueue.RAIL_RESOURCE: "0",
    }
    assert queue["namespaceSelector"]["matchExpressions"][0]["values"] == ["rdma-dranet"]
    local = by_kind[("LocalQueue", "rdma-gpus")]
    assert local["metadata"]["namespace"] == "rdma-dranet"
    assert local["spec"] == {"clusterQueue": "rdma-gpus"}


# -- which flavor Kueue gives a pod set (issue 34 items 1 and 2) ---------------------------------------------------
# A model of Kueue v0.19.2's choice, read from its code, small enough to check against the stack's objects:
# - a pod set requests its containers' resources, plus its pod count when the queue covers `pods`
#   (pkg/scheduler/flavorassigner/flavorassigner.go l. 739-752); with no request it gets no flavor at all;
# - flavors are tried in the queue's order, the first that fits is taken (findFlavorForPodSets l. 1089-1190):
#   it fits when its nodeLabels agree with the pod's nodeSelector on the keys they share and every request is
#   within the flavor's nominal quota (no cohort, so no borrowing);
# - a flavor with a topology takes a pod set without a topology request only when every flavor of the queue has
#   one (tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS l. 166-203, isTASImplied l. 219-221;
#   pkg/cache/scheduler/clusterqueue.go isTASOnly l. 741-750); a pod set in a TAS-only queue that got no flavor
#   finds no topology flavor and is not admitted (onlyTASFlavor l. 143-163).
def kueue_flavor(
    objs: list[dict[str, Any]], requests: dict[str, int], node_selector: dict[str, str], annotated: bool
) -> str | None:
    """The flavor Kueue admits a one-pod pod set on, or None when it admits it on none."""
    flavors = {o["metadata"]["name"]: o["spec"] for o in objs if o["kind"] == "ResourceFlavor"}
    [queue] = [o["spec"] for o in objs if o["kind"] == "ClusterQueue"]
    [group] = queue["resourceGroups"]
    asked = dict(requests)
    if "pods" in group["coveredResources"]:
        asked["pods"] = 1
    tas_only = all("topologyName" in flavors[f["name"]] for f in group["flavors"])
    if not asked:
        return None
    for entry in group["flavors"]:
        flavor = flavors[entry["name"]]
        if any(node_selector.get(k, v) != v for k, v in flavor["nodeLabels"].items()):
            continue
        if "topologyName" in flavor and not annotated and not tas_only:
            continue  # "supports only TopologyAwareScheduling"
        quota = {r["name"]: quota_count(r["nominalQuota"]) for r in entry["resources"]}
        if all(quota.get(name, 0) >= value for name, value in asked.items()):
            return str(entry["name"])
    return None


def test_a_single_node_gpu_pod_set_without_a_topology_annotation_is_admitted_on_its_shape() -> None:
    """Item 1: a user's one-node job names the queue and claims 8 GPUs and 16 rails, nothing of Kueue more."""
    plan, _ = scheduled(raw_config("full"))
    objs = objects(plan)
    requests = {"cpu": 1, kueue.GPU_RESOURCE: 8, kueue.RAIL_RESOURCE: 16}
    chosen = kueue_flavor(
        objs, requests, {"node.kubernetes.io/instance-type": "BM.GPU.B4.8"}, annotated=False
    )
    assert chosen == plan.shape_flavor("BM.GPU.B4.8").object_name
    # ... so every flavor of the queue has a Topology the stack declares, whose levels its nodes carry.
    topologies = {o["metadata"]["name"] for o in objs if o["kind"] == "Topology"}
    assert {f.topology for f in plan.flavors} == topologies == {"rdma-fabric", "hosts"}


def test_a_pod_set_that_requests_nothing_gets_the_system_flavor() -> None:
    """Item 2: the NCCL job's launcher requests nothing and tolerates the GPU taints; it must get the system
    flavor (whose node labels Kueue then gives it), not no flavor (any node) nor a GPU flavor."""
    plan, _ = scheduled(raw_config("full"))
    system = next(f for f in plan.flavors if f.name == SYSTEM_FLAVOR)
    assert kueue_flavor(objects(plan), {}, {}, annotated=False) == system.object_name
    # A CPU-only pod set too; one that claims a GPU goes on to its shape's flavor.
    assert kueue_flavor(objects(plan), {"cpu": 2}, {}, annotated=False) == system.object_name
    assert kueue_flavor(objects(plan), {"cpu": 2, kueue.GPU_RESOURCE: 1}, {}, annotated=True) == (
        plan.shape_flavor("BM.GPU.B4.8").object_name
    )


def test_the_fabric_topologys_name_may_not_be_the_hosts_one() -> None:
    raw = raw_config("full")
    raw["workloads"]["scheduling"] = {"enabled": True, "topology": "hosts"}
    with pytest.raises(ConfigError) as err:
        load_stack(raw, "test", EXAMPLE_REGION)
    assert "workloads.scheduling.topology = 'hosts': is the name of the stack's Topology" in str(err.value)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"gpuDriver": {"enabled": False}}, "needs gpuDriver.enabled"),
        ({"dranet": {"enabled": False}}, "needs dranet.enabled"),
        (
            {"_unsized": "BM.GPU.B4.8"},
            "shape BM.GPU.B4.8 has no known CPUs and memory",
        ),
    ],
)
def test_stacks_it_cannot_schedule_are_refused(
    change: dict[str, Any], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = raw_config("full")
    unsized = change.pop("_unsized", None)
    if unsized is not None:
        # A catalog shape whose size oke_gpu_rdma/nodes/node_sizes.py does not list yet.
        monkeypatch.delitem(node_sizes.SIZES, unsized)
    raw.update(change)
    raw.setdefault("workloads", {})["scheduling"] = {"enabled": True}
    with pytest.raises(ConfigError) as err:
        load_stack(raw, "test", EXAMPLE_REGION)
    key = f"workloads.scheduling.nodeSizes.{unsized}" if unsized else "workloads.scheduling.enabled = true"
    assert f"{key}: {message}" in str(err.value)


def test_an_acceptance_level_the_topology_lacks_is_refused() -> None:
    raw = raw_config("full")
    raw["workloads"]["scheduling"] = {"enabled": True, "acceptanceLevel": "kubernetes.io/hostname"}
    with pytest.raises(ConfigError) as err:
        load_stack(raw, "test", EXAMPLE_REGION)
    assert "workloads.scheduling.acceptanceLevel" in str(err.value)
    assert "is not a fabric level of the Topology" in str(err.value)


def gb200_fleet() -> dict[str, Any]:
    """The full example with a BM.GPU.GB200-v3.4 pool beside its B4.8 pool."""
    raw = raw_config("full")
    raw["nodePools"].append({**raw["nodePools"][0], "name": "gpu-gb200", "shape": "BM.GPU.GB200-v3.4"})
    return raw


def test_a_gb200_pool_is_scheduled_from_ocis_figures_for_the_shape() -> None:
    plan, config = scheduled(gb200_fleet())
    flavor = plan.shape_flavor("BM.GPU.GB200-v3.4")
    nodes = sum(p.count for p in config.dra_pools if p.shape == "BM.GPU.GB200-v3.4")
    # 144 Arm cores (one CPU per OCPU) and 960 GB a node; 4 GPUs and 8 rails (the shape's topology); one IMEX
    # channel a node (ComputeDomains are on with a multi-node NVLink pool).
    assert dict(flavor.quotas) == {
        "cpu": str(nodes * 144),
        "memory": f"{nodes * 960}Gi",
        "pods": str(nodes * 110),
        kueue.GPU_RESOURCE: str(nodes * 4),
        kueue.RAIL_RESOURCE: str(nodes * 8),
        kueue.CHANNEL_RESOURCE: str(nodes),
    }
    # Its flavor schedules over the Topology with the GPU memory fabric (oke_gpu_rdma/nodes/labels.py NVLINK_LEVEL_LABELS).
    assert flavor.topology == plan.nvlink_topology == "rdma-fabric-nvlink"
    assert plan.topologies()["rdma-fabric-nvlink"] == NVLINK_LEVEL_LABELS
    assert plan.shape_flavor("BM.GPU.B4.8").topology == "rdma-fabric"


def test_a_shape_without_figures_takes_them_from_the_stack_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(node_sizes.SIZES, "BM.GPU.GB200-v3.4")
    raw = gb200_fleet()
    with pytest.raises(ConfigError) as err:
        scheduled(raw)
    assert (
        "workloads.scheduling.nodeSizes.BM.GPU.GB200-v3.4: shape BM.GPU.GB200-v3.4 has no known CPUs and memory"
        in str(err.value)
    )
    assert (
        "workloads.scheduling.nodeSizes: {BM.GPU.GB200-v3.4: {cpus: <cpu>, memoryGiB: <memory in GiB>}}"
        in str(err.value)
    )
    raw["workloads"]["scheduling"] = {
        "enabled": True,
        "nodeSizes": {"BM.GPU.GB200-v3.4": {"cpus": 140, "memoryGiB": 900}},
    }
    stack = load_stack(raw, "test", EXAMPLE_REGION)
    assert stack.scheduling is not None
    quotas = stack.scheduling.shape_flavor("BM.GPU.GB200-v3.4").quotas
    nodes = sum(p.count for p in stack.config.dra_pools if p.shape == "BM.GPU.GB200-v3.4")
    assert (quotas["cpu"], quotas["memory"]) == (str(nodes * 140), f"{nodes * 900}Gi")


def test_figures_for_a_shape_the_stack_has_no_pool_of_are_refused() -> None:
    raw = raw_config("full")
    raw["workloads"]["scheduling"] = {
        "enabled": True,
        "nodeSizes": {"BM.GPU.GB200-v3.4": {"cpus": 144, "memoryGiB": 960}},
    }
    with pytest.raises(ConfigError) as err:
        load_stack(raw, "test", EXAMPLE_REGION)
    assert (
        "workloads.scheduling.nodeSizes.BM.GPU.GB200-v3.4: no rdma: dranet pool with claim templates has shape "
        "BM.GPU.GB200-v3.4 (theirs: BM.GPU.B4.8); remove the entry or add a pool of that shape"
        in str(err.value)
    )
