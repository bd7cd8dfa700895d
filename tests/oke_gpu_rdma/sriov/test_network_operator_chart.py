"""The Network Operator's workloads (oke_gpu_rdma/sriov/network_operator_chart.py), as the network-operator
chart at v26.7.0-rc.2, the SR-IOV Network Operator and the Network Operator's state manifests place them."""

from __future__ import annotations

from typing import Any

from oke_gpu_rdma.scheduling.pod_admission import NodeTaint, PodPlacement, PoolNodes, check
from oke_gpu_rdma.sriov.network_operator_chart import (
    MELLANOX_NIC_LABEL,
    MOFED_WAIT_LABEL,
    SRIOV_DEVICE_PLUGIN_LABEL,
    coalesce,
    config_daemon_node_selector,
    missing_node_agents,
    nic_cluster_policy_workloads,
    operator_config_workloads,
    release_workloads,
    with_operator_labels,
)
from stack_config.sriov.network_operator_values import release_values
from stack_config.sriov.sriov_settings import NetworkOperatorConfig

WHERE = "(chart network-operator, release network-operator)"
FROM_CONFIG = "(SR-IOV Network Operator, from SriovOperatorConfig default)"
FROM_NCP = "(Network Operator, from NicClusterPolicy nic-cluster-policy)"
GPU = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
EQUAL_MASTER = {
    "key": "node-role.kubernetes.io/master",
    "operator": "Equal",
    "value": "",
    "effect": "NoSchedule",
}
EQUAL_CP = {
    "key": "node-role.kubernetes.io/control-plane",
    "operator": "Equal",
    "value": "",
    "effect": "NoSchedule",
}
EXISTS_MASTER = {"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"}
EXISTS_CP = {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
PREFER_CONTROL_PLANE = {
    "nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [{"key": k, "operator": "In", "values": [""]}]}}
            for k in ("node-role.kubernetes.io/master", "node-role.kubernetes.io/control-plane")
        ]
    }
}
CHART_SELECTOR = {"beta.kubernetes.io/os": "linux", MOFED_WAIT_LABEL: "false"}


def by_name(pods: list[PodPlacement]) -> dict[str, PodPlacement]:
    return {p.name: p for p in pods}


def test_the_charts_defaults_start_the_operator_its_hooks_and_nfd() -> None:
    pods = by_name(release_workloads("network-operator", {}))
    operator = PodPlacement(
        f"Deployment network-operator {WHERE}",
        affinity=PREFER_CONTROL_PLANE,
        tolerations=(EQUAL_MASTER, EQUAL_CP),
        priority_class="system-node-critical",
    )
    assert list(pods) == [
        f"Deployment network-operator {WHERE}",
        f"Job network-operator-keep-ncp (pre-install/pre-upgrade hook) {WHERE}",
        f"Job network-operator-upgrade-crd (pre-install/pre-upgrade hook) {WHERE}",
        f"Deployment network-operator-node-feature-discovery-master {WHERE}",
        f"DaemonSet network-operator-node-feature-discovery-worker {WHERE}",
        f"Deployment network-operator-node-feature-discovery-gc {WHERE}",
    ]
    assert pods[operator.name] == operator
    # The hooks take operator.* too, but no priority class.
    hook = pods[f"Job network-operator-keep-ncp (pre-install/pre-upgrade hook) {WHERE}"]
    assert (hook.affinity, hook.tolerations, hook.priority_class) == (
        PREFER_CONTROL_PLANE,
        (EQUAL_MASTER, EQUAL_CP),
        None,
    )
    assert pods[f"Deployment network-operator-node-feature-discovery-master {WHERE}"].tolerations == (
        EQUAL_CP,
    )
    assert pods[f"Deployment network-operator-node-feature-discovery-gc {WHERE}"].tolerations == ()
    assert pods[f"DaemonSet network-operator-node-feature-discovery-worker {WHERE}"].tolerations == (
        EXISTS_MASTER,
        EXISTS_CP,
        GPU,
    )
    assert pods[f"DaemonSet network-operator-node-feature-discovery-worker {WHERE}"].daemonset


def test_the_stacks_values_start_the_sriov_operator_and_its_daemonsets() -> None:
    pods = by_name(release_workloads("network-operator", release_values(NetworkOperatorConfig())))
    assert list(pods) == [
        f"Deployment network-operator {WHERE}",
        f"Job network-operator-keep-ncp (pre-install/pre-upgrade hook) {WHERE}",
        f"Job network-operator-upgrade-crd (pre-install/pre-upgrade hook) {WHERE}",
        f"Deployment network-operator-sriov-network-operator {WHERE}",
        f"Job network-operator-sriov-network-operator-pre-delete-hook (pre-delete hook) {WHERE}",
        f"DaemonSet sriov-network-config-daemon {FROM_CONFIG}",
        f"DaemonSet sriov-device-plugin {FROM_CONFIG}",
    ]
    sriov = pods[f"Deployment network-operator-sriov-network-operator {WHERE}"]
    assert (sriov.tolerations, sriov.affinity, sriov.priority_class) == (
        (EXISTS_MASTER, EXISTS_CP),
        PREFER_CONTROL_PLANE,
        "system-node-critical",
    )
    assert pods[f"Job network-operator-sriov-network-operator-pre-delete-hook (pre-delete hook) {WHERE}"] == (
        PodPlacement(
            f"Job network-operator-sriov-network-operator-pre-delete-hook (pre-delete hook) {WHERE}",
            affinity=PREFER_CONTROL_PLANE,
            tolerations=(EXISTS_CP, EXISTS_MASTER),
        )
    )
    assert pods[f"DaemonSet sriov-network-config-daemon {FROM_CONFIG}"] == PodPlacement(
        f"DaemonSet sriov-network-config-daemon {FROM_CONFIG}",
        node_selector=CHART_SELECTOR,
        tolerations=({"operator": "Exists"},),
        daemonset=True,
        priority_class="system-node-critical",
    )
    assert pods[f"DaemonSet sriov-device-plugin {FROM_CONFIG}"].node_selector == {
        **CHART_SELECTOR,
        SRIOV_DEVICE_PLUGIN_LABEL: "Enabled",
    }


def test_values_coalesce_over_the_chart_defaults_as_helm_merges_them() -> None:
    # A map merges key by key, a null removes a default key, a list replaces the default.
    values: dict[str, Any] = {
        "sriovNetworkOperator": {"enabled": True},
        "sriov-network-operator": {
            "sriovOperatorConfig": {"configDaemonNodeSelector": {MOFED_WAIT_LABEL: None, "pool": "vf"}}
        },
        "operator": {"tolerations": [GPU]},
    }
    assert config_daemon_node_selector(values) == {"beta.kubernetes.io/os": "linux", "pool": "vf"}
    assert config_daemon_node_selector({}) == CHART_SELECTOR
    assert release_workloads("network-operator", values)[0].tolerations == (GPU,)
    assert coalesce({"a": {"b": 1, "c": 2}}, {"a": {"c": None, "d": 3}}) == {"a": {"b": 1, "d": 3}}


def test_a_release_name_without_the_charts_gets_it_appended() -> None:
    names = [
        p.name
        for p in release_workloads(
            "netop", {"nfd": {"enabled": False}, "sriovNetworkOperator": {"enabled": True}}
        )
    ]
    assert names[0] == "Deployment netop-network-operator (chart network-operator, release netop)"
    assert names[3] == "Deployment netop-sriov-network-operator (chart network-operator, release netop)"


def test_an_empty_config_daemon_selector_falls_back_to_the_operators_defaults() -> None:
    daemon, plugin = operator_config_workloads({}, webhooks=False)
    assert daemon.node_selector == {"kubernetes.io/os": "linux", "node-role.kubernetes.io/worker": ""}
    assert plugin.node_selector == {"kubernetes.io/os": "linux", SRIOV_DEVICE_PLUGIN_LABEL: "Enabled"}


def test_the_admission_webhooks_need_control_plane_nodes_which_oke_does_not_show() -> None:
    pods = operator_config_workloads(CHART_SELECTOR, webhooks=True)
    injector, webhook = pods[2:]
    assert injector.name == f"DaemonSet network-resources-injector {FROM_CONFIG}"
    assert webhook.name == f"DaemonSet operator-webhook {FROM_CONFIG}"
    pool = PoolNodes("system", {"kubernetes.io/os": "linux"})
    verdict = check([injector], [pool])
    assert verdict.problems == (
        f"{injector.name} fits no node pool of the stack: system: its labels match no required node affinity term",
    )


def test_every_daemonset_of_the_policy_takes_its_tolerations_and_node_affinity() -> None:
    affinity = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]
        }
    }
    extra = {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}
    spec = {
        "secondaryNetwork": {"multus": {"image": "multus-cni"}, "cniPlugins": {"image": "plugins"}},
        "nvIpam": {"image": "nvidia-k8s-ipam"},
        "tolerations": [extra],
        "nodeAffinity": affinity,
    }
    pods = by_name(nic_cluster_policy_workloads(spec))
    assert list(pods) == [
        f"DaemonSet kube-multus-ds {FROM_NCP}",
        f"DaemonSet cni-plugins-ds {FROM_NCP}",
        f"Deployment nv-ipam-controller {FROM_NCP}",
        f"DaemonSet nv-ipam-node {FROM_NCP}",
    ]
    for name in (
        f"DaemonSet kube-multus-ds {FROM_NCP}",
        f"DaemonSet cni-plugins-ds {FROM_NCP}",
        f"DaemonSet nv-ipam-node {FROM_NCP}",
    ):
        assert (pods[name].tolerations, pods[name].affinity, pods[name].daemonset) == (
            (extra, GPU),
            {"nodeAffinity": affinity},
            True,
        )
    assert pods[f"DaemonSet kube-multus-ds {FROM_NCP}"].priority_class == "system-node-critical"
    assert pods[f"DaemonSet cni-plugins-ds {FROM_NCP}"].priority_class is None
    # The controller takes deploymentTolerations/deploymentNodeAffinity, not the DaemonSets' ones.
    assert pods[f"Deployment nv-ipam-controller {FROM_NCP}"] == PodPlacement(
        f"Deployment nv-ipam-controller {FROM_NCP}",
        tolerations=(GPU, EXISTS_MASTER, EXISTS_CP),
        priority_class="system-cluster-critical",
    )


def test_the_rdma_shared_device_plugin_runs_where_nfd_sees_a_mellanox_nic_and_no_driver_is_awaited() -> None:
    (plugin,) = nic_cluster_policy_workloads(
        {"rdmaSharedDevicePlugin": {"image": "k8s-rdma-shared-dev-plugin"}}
    )
    assert plugin.node_selector == {MELLANOX_NIC_LABEL: "true", MOFED_WAIT_LABEL: "false"}


SRIOV_NODE = {
    "kubernetes.io/os": "linux",
    "beta.kubernetes.io/os": "linux",
    MELLANOX_NIC_LABEL: "true",
    "rdma": "sriov",
}


def test_the_operators_label_the_nodes_their_daemonsets_select() -> None:
    pools = [
        PoolNodes("vf", SRIOV_NODE),
        PoolNodes("system", {"kubernetes.io/os": "linux", "beta.kubernetes.io/os": "linux"}),
    ]
    labelled = with_operator_labels(pools, {"nvIpam": {}}, CHART_SELECTOR, [{"rdma": "sriov"}])
    assert labelled[0].labels == {
        **SRIOV_NODE,
        MOFED_WAIT_LABEL: "false",
        SRIOV_DEVICE_PLUGIN_LABEL: "Enabled",
    }
    # No Mellanox NIC: no mofed.wait, so the config daemon does not list it and the device plugin skips it.
    assert labelled[1].labels == pools[1].labels
    # With a DOCA driver in the policy, mofed.wait turns "false" only once the driver runs.
    assert (
        MOFED_WAIT_LABEL not in with_operator_labels(pools, {"ofedDriver": {}}, CHART_SELECTOR, [])[0].labels
    )
    # No node policy selects the node: no device plugin label.
    assert (
        SRIOV_DEVICE_PLUGIN_LABEL
        not in with_operator_labels(pools, {}, CHART_SELECTOR, [{"rdma": "other"}])[0].labels
    )


def test_an_sriov_pool_without_its_node_agents_is_named_with_the_missing_ones() -> None:
    pools = with_operator_labels(
        [PoolNodes("vf", SRIOV_NODE, taints=(NodeTaint("dedicated", "x", "NoSchedule"),))],
        {},
        CHART_SELECTOR,
        [{"rdma": "sriov"}],
    )
    pods = [
        *operator_config_workloads(CHART_SELECTOR, webhooks=False),
        *nic_cluster_policy_workloads({"secondaryNetwork": {"multus": {}, "cniPlugins": {}}, "nvIpam": {}}),
    ]
    verdict = check(pods, pools)
    assert missing_node_agents(verdict.placements, ["vf"]) == [
        "SR-IOV pool vf gets no pod of DaemonSet kube-multus-ds, cni-plugins-ds, nv-ipam-node: its VF pods "
        "would not get their rails"
    ]
    tolerated = [
        *pods[:2],
        *nic_cluster_policy_workloads(
            {
                "secondaryNetwork": {"multus": {}, "cniPlugins": {}},
                "nvIpam": {},
                "tolerations": [{"key": "dedicated", "operator": "Exists"}],
            }
        ),
    ]
    assert missing_node_agents(check(tolerated, pools).placements, ["vf"]) == []


def test_the_operators_name_follows_its_overrides() -> None:
    (named, *_) = release_workloads(
        "netop", {"operator": {"nameOverride": "netop"}, "nfd": {"enabled": False}}
    )
    assert named.name == "Deployment netop (chart network-operator, release netop)"
    (full, *_) = release_workloads(
        "netop", {"operator": {"fullnameOverride": "nvnet"}, "nfd": {"enabled": False}}
    )
    assert full.name == "Deployment nvnet (chart network-operator, release netop)"
