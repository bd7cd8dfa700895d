"""The SR-IOV path: the NVIDIA Network Operator (Helm), its NicClusterPolicy, the VF address pool, and the
per-rail SR-IOV node policies and networks (seed 001).

Order on a first `pulumi up`, and why each step waits for the one before:

1. The `network-operator` Helm release installs the operator, the SR-IOV Network Operator and their CRDs
   (NicClusterPolicy, SriovNetworkNodePolicy, SriovNetwork, SriovNetworkPoolConfig); a Release waits
   until its resources are ready.
2. The NicClusterPolicy makes the operator deploy Multus, the CNI plugins and NVIDIA IPAM. The IPPool
   CRD is *not* in the chart: the operator applies it from its `state-nv-ipam-cni` manifests while it
   reconciles the policy (Mellanox/network-operator `manifests/state-nv-ipam-cni/
   005-nv-ipam.nvidia.com_ippools.yaml`). So the policy carries pulumi-kubernetes' `pulumi.com/waitFor`
   annotation on `.status.state` = `ready` (the operator sets it once every state, nv-ipam's included,
   is applied and ready; `api/v1alpha1/nicclusterpolicy_types.go` `StateReady`), and the IPPool
   depends on the policy: Pulumi creates the IPPool only after its kind exists, instead of failing
   with "no matches for kind IPPool" or sleeping for a guessed time.
3. Node policies and networks depend on the release (their CRDs) and the networks on the IPPool
   they name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s

from components.common.namespaces import labelled_namespace
from components.drivers.dra_drivers import _documented
from oke_gpu_rdma.common import pod_security, resource_types
from oke_gpu_rdma.nodes import provisioning
from oke_gpu_rdma.nodes.labels import INSTANCE_TYPE_LABEL, RDMA_PATH_LABEL, RDMA_PATH_SRIOV
from oke_gpu_rdma.scheduling.pod_admission import NodeTaint, tolerates_taint
from oke_gpu_rdma.sriov import network_operator_chart as network_operator
from oke_gpu_rdma.sriov import operator_objects as sriov
from oke_gpu_rdma.sriov.network_operator_chart import OPERATOR_DAEMONSET_TOLERATION
from stack_config.nodes.pool_settings import Taint, tolerations
from stack_config.sriov.network_operator_values import release_values
from stack_config.sriov.sriov_plan import NamedSpec, SriovPlan
from stack_config.sriov.sriov_settings import NetworkOperatorConfig

NIC_CLUSTER_POLICY_NAME: Final = "nic-cluster-policy"  # the only name the operator reconciles
POOL_CONFIG_NAME: Final = sriov.RESOURCE_BASE  # seed 001 names it after the resource
# pulumi-kubernetes (>= 4.18) waits until this JSONPath matches before it reports the object created.
WAIT_FOR_ANNOTATION: Final = "pulumi.com/waitFor"
NIC_POLICY_READY: Final = "jsonpath={.status.state}=ready"
# seed 001: helm --wait --timeout 15m on running nodes; on a first apply its DaemonSets also wait for the
# bare-metal SR-IOV nodes to come up (oke_gpu_rdma/nodes/provisioning.py).
RELEASE_TIMEOUT_SECONDS: Final = max(900, provisioning.GPU_RELEASE_WAIT_SECONDS)
# The policy is ready once its DaemonSets run on the SR-IOV nodes: one bare-metal node's bring-up.
READY_TIMEOUT: Final = f"{max(20, provisioning.BM_GPU_NODE_MINUTES)}m"
# Multus was OOM-killed at its 50Mi default (seed 001, on the nodes without GPUs); the operator takes
# per-container resources in containerResources (api/v1alpha1 ImageSpec.ContainerResources).
MULTUS_CONTAINER: Final = "kube-multus"
MULTUS_RESOURCES: Final[dict[str, Any]] = {
    "name": MULTUS_CONTAINER,
    "requests": {"cpu": "100m", "memory": "100Mi"},
    "limits": {"cpu": "100m", "memory": "300Mi"},
}


def network_operator_values(config: NetworkOperatorConfig, taints: Sequence[Taint] = ()) -> dict[str, Any]:
    """The release's values (stack_config/sriov/network_operator_values.py), each a path the chart documents."""
    return _documented(
        release_values(config, taints),
        network_operator.VALUE_PATHS,
        network_operator.CHART_NAME,
    )


def nic_cluster_policy_spec(config: NetworkOperatorConfig, taints: Sequence[Taint] = ()) -> dict[str, Any]:
    """seed 001 nic-cluster-policy.yaml: Multus, CNI plugins, NVIDIA IPAM; no ofedDriver (the image has DOCA-OFED).

    The operator's DaemonSets (Multus, CNI plugins, nv-ipam-node) have no node selector and tolerate only
    `nvidia.com/gpu` NoSchedule besides the policy's `tolerations` (oke_gpu_rdma/sriov/network_operator_chart.py
    nic_cluster_policy_workloads): without more, an SR-IOV pool with another taint gets none of them and its
    VF pods never start. So the policy tolerates every other taint of the SR-IOV pools (`taints`), and its
    `nodeAffinity` keeps the DaemonSets on the SR-IOV nodes, the only ones that attach VFs, so that they do not
    also need the taints of the DRA and rail-less pools of a mixed cluster.
    """

    def image(name: str) -> dict[str, Any]:
        return {
            "image": name,
            "repository": network_operator.IMAGE_REPOSITORY,
            "version": network_operator.image_tag(config.chart_version),
        }

    spec: dict[str, Any] = {
        "nvIpam": {**image("nvidia-k8s-ipam"), "enableWebhook": False},
        "secondaryNetwork": {
            "cniPlugins": image("plugins"),
            "multus": {**image("multus-cni"), "containerResources": [MULTUS_RESOURCES]},
        },
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": RDMA_PATH_LABEL, "operator": "In", "values": [RDMA_PATH_SRIOV]}
                        ]
                    }
                ]
            }
        },
    }
    untolerated = [
        t
        for t in taints
        if not tolerates_taint(OPERATOR_DAEMONSET_TOLERATION, NodeTaint(t.key, t.value, t.effect))
    ]
    if untolerated:
        spec["tolerations"] = tolerations(untolerated)
    return spec


def ip_pool_spec(config: NetworkOperatorConfig) -> dict[str, Any]:
    """seed 001 ip-pool.yaml."""
    pool = config.vf_pool
    spec: dict[str, Any] = {"subnet": str(pool.subnet), "perNodeBlockSize": pool.per_node_block_size}
    if pool.gateway is not None:
        spec["gateway"] = str(pool.gateway)
    return spec


def pool_config_spec(shapes: Sequence[str]) -> dict[str, Any]:
    """seed 001 sriov-network-pool-config.yaml: configure (and drain) one GPU node at a time, over the nodes of
    every SR-IOV shape (a node belongs to one pool config)."""
    return {
        "maxUnavailable": 1,
        "nodeSelector": {
            "matchExpressions": [{"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": list(shapes)}]
        },
    }


@dataclass
class NetworkOperatorArgs:
    plan: SriovPlan
    """The stack's SR-IOV plan (operator config, shape, node policies, networks)."""
    provider: k8s.Provider
    """Provider of the target cluster."""
    node_pools: Sequence[pulumi.Resource] = field(default_factory=list)
    """The pools to wait for: the operator's DaemonSets and the VFs are for their nodes."""
    taints: Sequence[Taint] = ()
    """The taints of the SR-IOV pools, which the operator's DaemonSets must tolerate."""
    after: Sequence[pulumi.Resource] = ()
    """Releases that install CRDs the chart's templates use. The chart renders its NodeFeatureRule
    `nvidia-nics-rules` whenever `nfd.deployNodeFeatureRules` (default true; templates/nodefeaturerules.yaml),
    but ships the NodeFeatureRule CRD only in its NFD subchart, which Helm leaves out with `nfd.enabled:
    false`; so without its own NFD the release must wait for the GPU Operator's (whose NFD subchart ships
    the CRD), or Helm fails with "no matches for kind NodeFeatureRule"."""


class NetworkOperator(pulumi.ComponentResource):
    """The network-operator release, the NicClusterPolicy, the IPPool and the SriovNetworkPoolConfig."""

    release: k8s.helm.v3.Release
    ip_pool: k8s.apiextensions.CustomResource

    def __init__(
        self, name: str, args: NetworkOperatorArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.NETWORK_OPERATOR_COMPONENT, name, None, opts)
        config = args.plan.operator
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        # Its SR-IOV config daemon and device plugin are privileged DaemonSets with hostPath volumes.
        namespace = labelled_namespace(
            f"{name}-namespace", config.namespace, pod_security.NODE_AGENTS_LEVEL, child
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            k8s.helm.v3.ReleaseArgs(
                name=network_operator.RELEASE,
                chart=network_operator.CHART_NAME,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=network_operator.REPOSITORY),
                version=config.chart_version,
                namespace=config.namespace,
                values=network_operator_values(config, args.taints),
                timeout=RELEASE_TIMEOUT_SECONDS,
            ),
            opts=pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(depends_on=[namespace, *args.node_pools, *args.after])
            ),
        )
        after_release = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.release]))
        nic_policy = k8s.apiextensions.CustomResource(
            f"{name}-nic-cluster-policy",
            api_version="mellanox.com/v1alpha1",
            kind="NicClusterPolicy",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=NIC_CLUSTER_POLICY_NAME, annotations={WAIT_FOR_ANNOTATION: NIC_POLICY_READY}
            ),
            spec=nic_cluster_policy_spec(config, args.taints),
            opts=pulumi.ResourceOptions.merge(
                after_release,
                pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create=READY_TIMEOUT)),
            ),
        )
        # Its CRD exists once the NicClusterPolicy is ready (module docstring).
        self.ip_pool = k8s.apiextensions.CustomResource(
            f"{name}-ip-pool",
            api_version="nv-ipam.nvidia.com/v1alpha1",
            kind="IPPool",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=config.vf_pool.name, namespace=config.namespace),
            spec=ip_pool_spec(config),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[nic_policy])),
        )
        k8s.apiextensions.CustomResource(
            f"{name}-pool-config",
            api_version="sriovnetwork.openshift.io/v1",
            kind="SriovNetworkPoolConfig",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=POOL_CONFIG_NAME, namespace=config.namespace),
            spec=pool_config_spec([s.shape for s in args.plan.shapes]),
            opts=after_release,
        )
        self.register_outputs({"releaseName": self.release.name})


@dataclass
class SriovRailNetworksArgs:
    plan: SriovPlan
    """The node policies and networks to declare."""
    operator: NetworkOperator
    """The operator whose CRDs and IPPool these need."""
    provider: k8s.Provider
    """Provider of the target cluster."""


class SriovRailNetworks(pulumi.ComponentResource):
    """SriovNetworkNodePolicies (VFs on the rail PFs) and SriovNetworks (a NetworkAttachmentDefinition each)."""

    networks: list[str]
    resources: dict[str, int]

    def __init__(
        self, name: str, args: SriovRailNetworksArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.SRIOV_NETWORKS_COMPONENT, name, None, opts)
        namespace = args.plan.operator.namespace
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        # Where the operator writes the NetworkAttachmentDefinitions and the RDMA pods run: baseline, as on
        # the DRANET path (seed 001's pods ran unprivileged too).
        pods_namespace = labelled_namespace(
            f"{name}-pods-namespace",
            args.plan.operator.network_namespace,
            pod_security.WORKLOADS_LEVEL,
            child,
        )

        def declare(kind: str, role: str, objects: list[NamedSpec], needs: list[pulumi.Resource]) -> None:
            for o in objects:
                k8s.apiextensions.CustomResource(
                    f"{name}-{role}-{o.name}",
                    api_version="sriovnetwork.openshift.io/v1",
                    kind=kind,
                    metadata=k8s.meta.v1.ObjectMetaArgs(name=o.name, namespace=namespace),
                    spec=o.spec,
                    opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=needs)),
                )

        declare("SriovNetworkNodePolicy", "policy", args.plan.node_policies(), [args.operator.release])
        declare(
            "SriovNetwork",
            "network",
            args.plan.networks(),
            [args.operator.release, args.operator.ip_pool, pods_namespace],
        )
        self.networks = [n.name for n in args.plan.networks()]
        self.resources = args.plan.pod_vf_limits()
        self.register_outputs({"networks": self.networks, "resources": self.resources})
