"""The NVIDIA Network Operator's chart (its reference, the values this project sets) and where its pods go: the
chart's own workloads and the ones its operators create.

The SR-IOV path starts pods three ways, and each is modelled from the code that places it:

1. The `network-operator` chart (Mellanox/network-operator `deployment/network-operator` at tag
   v26.7.0-rc.2: the pinned 26.7.1 is not in the public repository, and rc.2 is the newest tag of the 26.7
   line, with the `v26.7.x` branch's chart unchanged since): the operator Deployment, the `keep-ncp` and
   `upgrade-crd` pre-install/pre-upgrade hook Jobs, the SR-IOV Network Operator subchart's Deployment and
   its pre-delete hook Job, and NFD's master, gc and worker when `nfd.enabled`.
2. The SR-IOV Network Operator, from the SriovOperatorConfig `default` that the subchart renders from
   `sriovOperatorConfig` (the config daemon and device plugin DaemonSets, the injector and operator
   webhook DaemonSets when admission controllers are on). The chart's images are built from the
   downstream fork Mellanox/sriov-network-operator (`hack/release.yaml` `downstreamFork: true`); its
   `network-operator-v26.7.*` tags are not public either, so the fork's master at 553d46ab is read.
3. The Network Operator, from the NicClusterPolicy the stack declares (`manifests/state-*`): Multus, the
   CNI plugins, NVIDIA IPAM's controller and node agent, and the device plugins and DOCA driver where
   a policy asks for them.

Helm merges a release's values over the chart's and a subchart's values over the parent's section for it
(helm `pkg/chart/v2/util/coalesce.go`: maps merge key by key, a null deletes the key), so placement is read
from the values as Helm coalesces them, with the defaults below as data.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from oke_gpu_rdma.common.release_facts import ReleaseFacts
from oke_gpu_rdma.drivers import attributes
from oke_gpu_rdma.scheduling.node_selection import selector_matches
from oke_gpu_rdma.scheduling.pod_admission import PodPlacement, PoolNodes

# The NVIDIA Network Operator (Mellanox/network-operator deployment/network-operator), from NVIDIA's Helm
# repository, with its SR-IOV Network Operator subchart (seed 001: 26.7.1). Its images in the
# NicClusterPolicy carry the tag network-operator-v<version>.
CHART_NAME: Final = "network-operator"
REPOSITORY: Final = "https://helm.ngc.nvidia.com/nvidia"
DEFAULT_VERSION: Final = "26.7.1"
RELEASE: Final = CHART_NAME
NAMESPACE: Final = "nvidia-network-operator"
IMAGE_REPOSITORY: Final = "nvcr.io/nvidia/mellanox"
SRIOV_SUBCHART: Final = "sriov-network-operator"
# The SR-IOV config daemon plugin that rewrites NIC firmware (and drains and reboots nodes to apply it).
SRIOV_FIRMWARE_PLUGIN: Final = "mellanox"


def image_tag(chart_version: str) -> str:
    """The tag of the operator's component images for a chart version: network-operator-v26.7.1."""
    return f"{CHART_NAME}-v{chart_version.removeprefix('v')}"


# The chart ships no values.schema.json, so Helm ignores a misspelt value silently: the component emits only
# these (deployment/network-operator/values.yaml and the sriov-network-operator subchart's values.yaml).
VALUE_PATHS: Final = frozenset(
    {
        "nfd.enabled",
        "node-feature-discovery.worker.tolerations",
        "sriovNetworkOperator.enabled",
        f"{SRIOV_SUBCHART}.sriovOperatorConfig.deploy",
        f"{SRIOV_SUBCHART}.sriovOperatorConfig.disableDrain",
        f"{SRIOV_SUBCHART}.sriovOperatorConfig.configurationMode",
        f"{SRIOV_SUBCHART}.sriovOperatorConfig.disablePlugins",
        f"{SRIOV_SUBCHART}.sriovOperatorConfig.configDaemonNodeSelector.*",
        "operator.resources.*",
        "operator.tolerations",
        "operator.nodeSelector.*",
    }
)

# --- node labels the path reads ---------------------------------------------------------------------

# kubernetes/kubernetes pkg/kubelet/kubelet_node_status.go initialNode: every kubelet registers its node
# with the GA and the legacy beta OS label (the chart's configDaemonNodeSelector reads the beta one).
OS_LABEL: Final = "kubernetes.io/os"
LEGACY_OS_LABEL: Final = "beta.kubernetes.io/os"
LINUX: Final = "linux"
KUBELET_OS_LABELS: Final[Mapping[str, str]] = {OS_LABEL: LINUX, LEGACY_OS_LABEL: LINUX}
# NFD labels a node with an NVIDIA (Mellanox) NIC, PCI vendor 15b3, class 0200 or 0207, by the chart's
# NodeFeatureRule (templates/nodefeaturerules.yaml:1-15, on by `nfd.deployNodeFeatureRules` whether or
# not the chart's own NFD runs); the operator reads it (pkg/nodeinfo/attributes.go:32).
MELLANOX_NIC_LABEL: Final = "feature.node.kubernetes.io/pci-15b3.present"
# controllers/nicclusterpolicy_controller.go:245-293 (handleWaitLabelsNoConfig): with no ofedDriver in the
# NicClusterPolicy the operator sets this to "false" on every node with MELLANOX_NIC_LABEL
# (pkg/nodeinfo/attributes.go:34); with one, to "true" until the driver pod is ready.
MOFED_WAIT_LABEL: Final = "network.nvidia.com/operator.mofed.wait"
# Mellanox/sriov-network-operator pkg/consts/constants.go:93-95: the node policy controller sets it to
# "Enabled" on each node the config daemon selector lists that some SriovNetworkNodePolicy selects
# (controllers/sriovnetworknodepolicy_controller.go:116-125 lists the nodes, 255-275 labels them).
SRIOV_DEVICE_PLUGIN_LABEL: Final = "sriovnetwork.openshift.io/device-plugin"
SRIOV_DEVICE_PLUGIN_ENABLED: Final = "Enabled"

# --- chart defaults (values.yaml), as Helm reads them ----------------------------------------------------


def _exists(key: str) -> dict[str, str]:
    return {"key": key, "operator": "Exists", "effect": "NoSchedule"}


def _equal_empty(key: str) -> dict[str, str]:
    return {"key": key, "operator": "Equal", "value": "", "effect": "NoSchedule"}


_MASTER = "node-role.kubernetes.io/master"
_CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
_GPU = _exists(attributes.NVIDIA_GPU_RESOURCE)
# The toleration every DaemonSet of the NicClusterPolicy carries of its own (manifests/state-*/).
OPERATOR_DAEMONSET_TOLERATION: Final[Mapping[str, str]] = _GPU
_PREFER_CONTROL_PLANE: Final[dict[str, Any]] = {
    "nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [{"key": k, "operator": "In", "values": [""]}]}}
            for k in (_MASTER, _CONTROL_PLANE)
        ]
    }
}
_REQUIRE_CONTROL_PLANE: Final[dict[str, Any]] = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": k, "operator": "Exists"}]} for k in (_MASTER, _CONTROL_PLANE)
            ]
        }
    }
}

NFD_SUBCHART: Final = "node-feature-discovery"
# deployment/network-operator/values.yaml (line numbers at v26.7.0-rc.2).
CHART_DEFAULTS: Final[dict[str, Any]] = {
    "nfd": {"enabled": True, "deployNodeFeatureRules": True},  # :19-23
    "upgradeCRDs": True,  # :26
    "keepNCP": True,  # :29
    "sriovNetworkOperator": {"enabled": False},  # :31-33
    NFD_SUBCHART: {
        "postDeleteCleanup": False,  # :47
        "worker": {"tolerations": [_exists(_MASTER), _exists(_CONTROL_PLANE), _GPU]},  # :85-94
    },
    SRIOV_SUBCHART: {
        "operator": {"admissionControllers": {"enabled": False}},  # :111-112
        "sriovOperatorConfig": {  # :175-182
            "deploy": True,
            "configDaemonNodeSelector": {LEGACY_OS_LABEL: LINUX, MOFED_WAIT_LABEL: "false"},
        },
    },
    "operator": {
        "priorityClassName": "system-node-critical",  # :234
        "tolerations": [_equal_empty(_MASTER), _equal_empty(_CONTROL_PLANE)],  # :244-252
        "nodeSelector": {},  # :254
        "affinity": _PREFER_CONTROL_PLANE,  # :255-271
    },
}
# deployment/network-operator/charts/sriov-network-operator/values.yaml.
SRIOV_SUBCHART_DEFAULTS: Final[dict[str, Any]] = {
    "operator": {
        "tolerations": [_exists(_MASTER), _exists(_CONTROL_PLANE)],  # :2-8
        "nodeSelector": {},  # :9
        "affinity": _PREFER_CONTROL_PLANE,  # :25-39
        "admissionControllers": {"enabled": False},  # :61-62
    },
    "sriovOperatorConfig": {"deploy": False, "configDaemonNodeSelector": {}},  # :115-119
}
# deployment/network-operator/charts/node-feature-discovery/values.yaml.
NFD_SUBCHART_DEFAULTS: Final[dict[str, Any]] = {
    "postDeleteCleanup": True,  # :44
    "master": {"nodeSelector": {}, "tolerations": [_equal_empty(_CONTROL_PLANE)], "affinity": {}},  # :227-293
    "worker": {"nodeSelector": {}, "tolerations": [], "affinity": {}},  # :772-788
    "gc": {"enable": True, "nodeSelector": {}, "tolerations": [], "affinity": {}},  # :1067-1202
}


def coalesce(defaults: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` over `defaults` as Helm coalesces them: maps merge recursively, a null removes the key."""
    merged = dict(defaults)
    for key, value in values.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = coalesce(merged[key], value)
        else:
            merged[key] = value
    return merged


def _section(values: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = values.get(key)
    return value if isinstance(value, Mapping) else {}


def chart_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The release's values over the chart's defaults."""
    return coalesce(CHART_DEFAULTS, values)


def sriov_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The SR-IOV subchart's values: its defaults, under the parent's `sriov-network-operator` section."""
    return coalesce(SRIOV_SUBCHART_DEFAULTS, _section(chart_values(values), SRIOV_SUBCHART))


def config_daemon_node_selector(values: Mapping[str, Any]) -> dict[str, str]:
    """The SriovOperatorConfig's configDaemonNodeSelector the subchart renders (templates/
    sriovoperatorconfig.yaml:10-13, every value quoted as a string)."""
    selector = _section(_section(sriov_values(values), "sriovOperatorConfig"), "configDaemonNodeSelector")
    return {str(k): str(v) for k, v in selector.items()}


def _flag(values: Mapping[str, Any], *path: str) -> bool:
    node: Any = values
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node is True


def _list(value: object) -> tuple[Mapping[str, Any], ...]:
    return tuple(v for v in value if isinstance(v, Mapping)) if isinstance(value, list) else ()


def _map(value: object) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _placed_by(what: str, section: Mapping[str, Any], **extra: Any) -> PodPlacement:
    return PodPlacement(
        what,
        node_selector={str(k): str(v) for k, v in _map(section.get("nodeSelector")).items()},
        affinity=_map(section.get("affinity")),
        tolerations=_list(section.get("tolerations")),
        **extra,
    )


def _fullname(release: str, name: str) -> str:
    """`<chart>.fullname` of both charts' _helpers.tpl: the release name when it contains the chart's."""
    return release if name in release else f"{release}-{name}"


# --- the chart's workloads -------------------------------------------------------------------------------

CONFIG_DAEMON: Final = "sriov-network-config-daemon"
SRIOV_DEVICE_PLUGIN: Final = "sriov-device-plugin"


def release_workloads(release: str, values: Mapping[str, Any]) -> list[PodPlacement]:
    """Every pod the release starts, directly or through the SR-IOV Network Operator."""
    merged = chart_values(values)
    where = f"(chart {CHART_NAME}, release {release})"
    operator = _section(merged, "operator")
    # templates/operator.yaml:38-52: operator.nodeSelector, .affinity, .tolerations, .priorityClassName.
    # templates/_helpers.tpl network-operator.fullname reads operator.fullnameOverride and .nameOverride.
    fullname = str(operator.get("fullnameOverride") or "") or _fullname(
        release, str(operator.get("nameOverride") or "") or CHART_NAME
    )
    pods = [
        _placed_by(
            f"Deployment {fullname[:63].rstrip('-')} {where}",
            operator,
            priority_class=operator.get("priorityClassName") or None,
        )
    ]
    # templates/keep-ncp-hook.yaml:45-76 and upgrade-crd-hook.yaml:45-76: pre-install and pre-upgrade hook
    # Jobs placed by the same operator.* values, without a priority class; Helm waits for them before it
    # installs anything else, so a hook with no node blocks the release.
    for switch, job in (
        ("keepNCP", "network-operator-keep-ncp"),
        ("upgradeCRDs", "network-operator-upgrade-crd"),
    ):
        if merged.get(switch) is True:
            pods.append(_placed_by(f"Job {job} (pre-install/pre-upgrade hook) {where}", operator))
    if _flag(merged, "nfd", "enabled"):
        pods += _nfd(release, merged, where)
    if _flag(merged, "sriovNetworkOperator", "enabled"):
        pods += _sriov(release, values, where)
    return pods


def _nfd(release: str, merged: Mapping[str, Any], where: str) -> list[PodPlacement]:
    """NFD's master and gc Deployments and worker DaemonSet (charts/node-feature-discovery/templates/
    master.yaml, nfd-gc.yaml, worker.yaml), and its post-delete cleanup Job (post-delete-job.yaml:1, 90-99:
    the master's placement) when postDeleteCleanup."""
    nfd = coalesce(NFD_SUBCHART_DEFAULTS, _section(merged, NFD_SUBCHART))
    # templates/_helpers.tpl node-feature-discovery.fullname; the objects are <fullname>-master, -gc, -worker.
    name = _fullname(release, NFD_SUBCHART)
    pods = [
        _placed_by(f"Deployment {name}-master {where}", _section(nfd, "master")),
        _placed_by(f"DaemonSet {name}-worker {where}", _section(nfd, "worker"), daemonset=True),
    ]
    if _flag(nfd, "gc", "enable"):
        pods.append(_placed_by(f"Deployment {name}-gc {where}", _section(nfd, "gc")))
    if nfd.get("postDeleteCleanup") is True:
        pods.append(_placed_by(f"Job {name}-prune (post-delete hook) {where}", _section(nfd, "master")))
    return pods


def _sriov(release: str, values: Mapping[str, Any], where: str) -> list[PodPlacement]:
    sriov = sriov_values(values)
    operator = _section(sriov, "operator")
    fullname = _fullname(release, SRIOV_SUBCHART)
    pods = [
        # charts/sriov-network-operator/templates/operator.yaml:21-34: operator.* values, system-node-critical.
        _placed_by(f"Deployment {fullname} {where}", operator, priority_class="system-node-critical"),
        # templates/pre-delete-webooks.yaml:5-46: fixed control-plane tolerations and preferred affinity.
        PodPlacement(
            f"Job {fullname}-pre-delete-hook (pre-delete hook) {where}",
            affinity=_PREFER_CONTROL_PLANE,
            tolerations=(_exists(_CONTROL_PLANE), _exists(_MASTER)),
        ),
    ]
    if _flag(sriov, "sriovOperatorConfig", "deploy"):
        admission = _flag(operator, "admissionControllers", "enabled")
        pods += operator_config_workloads(config_daemon_node_selector(values), webhooks=admission)
    return pods


def operator_config_workloads(
    config_daemon_selector: Mapping[str, str], webhooks: bool
) -> list[PodPlacement]:
    """The DaemonSets the SR-IOV Network Operator creates from its SriovOperatorConfig `default`
    (Mellanox/sriov-network-operator at 553d46ab)."""
    where = "(SR-IOV Network Operator, from SriovOperatorConfig default)"
    selector = dict(config_daemon_selector)
    # bindata/manifests/daemon/daemonset.yaml:46-52: kubernetes.io/os linux and node-role worker, tolerates
    # every taint; controllers/helper.go:500-519 (called at sriovoperatorconfig_controller.go:244) replaces
    # the selector with configDaemonNodeSelector whenever that is not empty.
    daemon_selector = selector or {OS_LABEL: LINUX, "node-role.kubernetes.io/worker": ""}
    # bindata/manifests/plugins/sriov-device-plugin.yaml:52-59 with controllers/helper.go:198-211: the
    # config daemon's selector plus the device-plugin label (or kubernetes.io/os and it), every taint.
    plugin_selector = {
        **(selector or {OS_LABEL: LINUX}),
        SRIOV_DEVICE_PLUGIN_LABEL: SRIOV_DEVICE_PLUGIN_ENABLED,
    }
    every_taint = ({"operator": "Exists"},)
    pods = [
        PodPlacement(
            f"DaemonSet {CONFIG_DAEMON} {where}",
            node_selector=daemon_selector,
            tolerations=every_taint,
            daemonset=True,
            priority_class="system-node-critical",
        ),
        PodPlacement(
            f"DaemonSet {SRIOV_DEVICE_PLUGIN} {where}",
            node_selector=plugin_selector,
            tolerations=every_taint,
            daemonset=True,
            priority_class="system-node-critical",
        ),
    ]
    if webhooks:
        # bindata/manifests/webhook/server.yaml:50-66 and operator-webhook/server.yaml:47-63: on control-plane
        # nodes only (required affinity unless the control plane is external, i.e. OpenShift HyperShift).
        for name in ("network-resources-injector", "operator-webhook"):
            pods.append(
                PodPlacement(
                    f"DaemonSet {name} {where}",
                    node_selector={OS_LABEL: LINUX},
                    affinity=_REQUIRE_CONTROL_PLANE,
                    tolerations=(
                        _exists(_MASTER),
                        _exists(_CONTROL_PLANE),
                        _exists("node.kubernetes.io/not-ready"),
                    ),
                    daemonset=True,
                    priority_class="system-cluster-critical",
                )
            )
    return pods


# --- the NicClusterPolicy's workloads ---------------------------------------------------------------------

MULTUS: Final = "kube-multus-ds"
CNI_PLUGINS: Final = "cni-plugins-ds"
NV_IPAM_NODE: Final = "nv-ipam-node"
NV_IPAM_CONTROLLER: Final = "nv-ipam-controller"


def _declared(spec: Mapping[str, Any], component: str) -> bool:
    """A component the policy asks for: the operator tests its spec pointer for nil, so even `{}` counts."""
    return spec.get(component) is not None


def nic_cluster_policy_workloads(spec: Mapping[str, Any]) -> list[PodPlacement]:
    """The pods the operator starts for a NicClusterPolicy spec (manifests/state-*/ at v26.7.0-rc.2).

    Every DaemonSet gets the policy's `tolerations` and `nodeAffinity` (api/v1alpha1/
    nicclusterpolicy_types.go:433-436; pkg/state/state_multus_cni.go:154-157 and the other states) after
    its own `nvidia.com/gpu` Exists NoSchedule toleration; the Deployments get `deploymentTolerations` and
    `deploymentNodeAffinity` (:437-440).
    """
    where = "(Network Operator, from NicClusterPolicy nic-cluster-policy)"
    tolerations = (*_list(spec.get("tolerations")), _GPU)
    node_affinity = _map(spec.get("nodeAffinity"))
    affinity = {"nodeAffinity": node_affinity} if node_affinity else {}
    # NicClusterPolicy has no nodeSelector (nicclusterpolicy_types.go:529-533).
    mellanox = {MELLANOX_NIC_LABEL: "true", MOFED_WAIT_LABEL: "false"}

    def daemonset(name: str, priority: str | None, selector: Mapping[str, str] | None = None) -> PodPlacement:
        return PodPlacement(
            f"DaemonSet {name} {where}",
            node_selector=dict(selector or {}),
            affinity=affinity,
            tolerations=tolerations,
            daemonset=True,
            priority_class=priority,
        )

    pods: list[PodPlacement] = []
    secondary = _map(spec.get("secondaryNetwork"))
    if _declared(secondary, "multus"):
        pods.append(daemonset(MULTUS, "system-node-critical"))  # state-multus-cni/0050-multus-ds.yml:26-45
    if _declared(secondary, "cniPlugins"):
        # state-container-networking-plugins/0010-container-networking-plugins-ds.yml:40-51, no priority class.
        pods.append(daemonset(CNI_PLUGINS, None))
    if _declared(spec, "nvIpam"):
        # state-nv-ipam-cni/040-nv-ipam-controller.yaml:41-97: the GPU and control-plane tolerations, a
        # required node affinity only from deploymentNodeAffinity.
        deployment_affinity = _map(spec.get("deploymentNodeAffinity"))
        required = deployment_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        pods.append(
            PodPlacement(
                f"Deployment {NV_IPAM_CONTROLLER} {where}",
                affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
                if required
                else {},
                tolerations=(
                    _GPU,
                    _exists(_MASTER),
                    _exists(_CONTROL_PLANE),
                    *_list(spec.get("deploymentTolerations")),
                ),
                priority_class="system-cluster-critical",
            )
        )
        pods.append(daemonset(NV_IPAM_NODE, None))  # state-nv-ipam-cni/040-nv-ipam-node.yaml:39-50
    if _declared(spec, "rdmaSharedDevicePlugin"):
        # state-rdma-shared-device-plugin/0060_rdma-shared-dev-plugin-ds.yaml:31-43, 115-125.
        pods.append(daemonset("rdma-shared-dp-ds", "system-node-critical", mellanox))
    if _declared(spec, "sriovDevicePlugin"):
        # state-sriov-device-plugin/0030-sriov-dp-daemonset.yaml:35-55.
        pods.append(daemonset("network-operator-sriov-device-plugin", "system-node-critical", mellanox))
    if _declared(spec, "ofedDriver"):
        # state-ofed-driver/0050_ofed-driver-ds.yaml:38-46, 295-310: also the node's OS and kernel labels
        # from NFD, which only a running node has; the Mellanox NIC label is the part the pools decide.
        pods.append(daemonset("mofed", "system-node-critical", {MELLANOX_NIC_LABEL: "true"}))
    return pods


# --- the labels the operators set at run time ---------------------------------------------------------------


def with_operator_labels(
    pools: Sequence[PoolNodes],
    nic_cluster_policy: Mapping[str, Any] | None,
    config_daemon_selector: Mapping[str, str] | None,
    node_policy_selectors: Iterable[Mapping[str, str]],
) -> list[PoolNodes]:
    """The pools with the labels the Network Operator and the SR-IOV Network Operator put on their nodes.

    `nic_cluster_policy`: the declared NicClusterPolicy's spec (None: none declared, no label). The
    mofed.wait label (nicclusterpolicy_controller.go:245-293) goes on nodes with a Mellanox NIC: "false"
    without an ofedDriver; with one it turns "false" only once the driver is ready, which the pools cannot
    show, so it is left unset. `config_daemon_selector`: the SriovOperatorConfig's configDaemonNodeSelector
    (None: no SR-IOV Network Operator); the device-plugin label goes on the nodes it lists (the default
    selector when empty, sriovnetworknodepolicy_controller.go:116-125) that a node policy selects.
    """
    selectors = [dict(s) for s in node_policy_selectors]
    found: list[PoolNodes] = []
    for pool in pools:
        labels = dict(pool.labels)
        if (
            nic_cluster_policy is not None
            and labels.get(MELLANOX_NIC_LABEL) == "true"
            and not _declared(nic_cluster_policy, "ofedDriver")
        ):
            labels[MOFED_WAIT_LABEL] = "false"
        if config_daemon_selector is not None:
            listed = dict(config_daemon_selector) or {"node-role.kubernetes.io/worker": "", OS_LABEL: LINUX}
            if selector_matches(listed, labels) and any(selector_matches(s, labels) for s in selectors):
                labels[SRIOV_DEVICE_PLUGIN_LABEL] = SRIOV_DEVICE_PLUGIN_ENABLED
        found.append(
            PoolNodes(
                pool.name, labels, pool.taints, pool.extended_resources, pool.device_classes, pool.marks
            )
        )
    return found


# The node agents a pod with VFs needs on its node: the config daemon creates the VFs, the device plugin
# offers them, Multus attaches them, the CNI plugins and nv-ipam-node configure and address them.
SRIOV_NODE_AGENTS: Final = (CONFIG_DAEMON, SRIOV_DEVICE_PLUGIN, MULTUS, CNI_PLUGINS, NV_IPAM_NODE)


def missing_node_agents(
    placements: Iterable[tuple[str, Sequence[str]]], sriov_pools: Sequence[str]
) -> list[str]:
    """One line per SR-IOV pool that a node agent its VF pods need does not reach (or that no workload
    models at all), from the check's placements (pod name, pools that admit it)."""
    where: dict[str, set[str]] = {}
    for name, pools in placements:
        for agent in SRIOV_NODE_AGENTS:
            if name.startswith(f"DaemonSet {agent} "):
                where.setdefault(agent, set()).update(pools)
    problems: list[str] = []
    for pool in sriov_pools:
        missing = [agent for agent in SRIOV_NODE_AGENTS if pool not in where.get(agent, set())]
        if missing:
            problems.append(
                f"SR-IOV pool {pool} gets no pod of DaemonSet {', '.join(missing)}: its VF pods would not get "
                "their rails"
            )
    return problems


FACTS: Final = ReleaseFacts(
    title="the NVIDIA Network Operator",
    chart_name=CHART_NAME,
    chart=CHART_NAME,
    repository=REPOSITORY,
    default_version=DEFAULT_VERSION,
    release=RELEASE,
    namespace=NAMESPACE,
    value_paths=VALUE_PATHS,
    workloads=release_workloads,
)
