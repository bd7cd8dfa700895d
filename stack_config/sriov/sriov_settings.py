"""The stack config's SR-IOV keys: a pool's `sriov` block, the VF address pool and the network operator."""

from __future__ import annotations

from ipaddress import IPv4Address
from typing import Annotated

from pydantic import (
    AfterValidator,
    Field,
    StrictBool,
    StrictInt,
    model_validator,
)

from oke_gpu_rdma.nodes import cidr_rules as cidr
from oke_gpu_rdma.sriov import network_operator_chart as network_operator
from oke_gpu_rdma.sriov.operator_objects import MAX_VFS_PER_PF, RdmaMode
from stack_config.settings_types import Cidr, ConfigModel, DnsLabel


class SriovPoolConfig(ConfigModel):
    """How an SR-IOV pool's rails become VFs (seed 001)."""

    vfs_per_pf: StrictInt = Field(
        2,
        ge=1,
        le=MAX_VFS_PER_PF,
        alias="vfsPerPf",
        description="VFs per rail PF (numVfs): 1 for one RDMA pod per node, 2 for two (Oracle Cloud allows at most 2).",
    )
    resource_per_rail: StrictBool = Field(
        True,
        alias="resourcePerRail",
        description="One node policy, network and resource per rail (rdma-vf-0 ... rdma-vf-15); false: one "
        "resource rdma-vf over every rail, only with vfsPerPf 1.",
    )

    @model_validator(mode="after")
    def _per_rail_with_two_vfs(self) -> SriovPoolConfig:
        if self.vfs_per_pf > 1 and not self.resource_per_rail:
            raise ValueError(
                f"vfsPerPf {self.vfs_per_pf} needs resourcePerRail: true: one resource over "
                f"{self.vfs_per_pf * 16} VFs lets the kubelet give a pod both VFs of some rails and none of others "
                "(seed 001: pods got 2 VFs on 4 or 5 rails and none on 4 or 5 others); set resourcePerRail: true"
            )
        return self


class VfPoolConfig(ConfigModel):
    """The NVIDIA IPAM IPPool the VFs get their addresses from (seed 001 ip-pool.yaml)."""

    name: DnsLabel = Field("sriov-pool", description="IPPool name; every SriovNetwork's ipam names it.")
    subnet: Cidr = Field(
        cidr.DEFAULT_VF_POOL,
        description="VF address range; must overlap no VCN, subnet, pods or services CIDR, the OCA RDMA "
        "network or the DRANET child range.",
    )
    gateway: IPv4Address | None = Field(
        IPv4Address("192.168.0.1"), description="Gateway of the pool, inside subnet (null: none)."
    )
    per_node_block_size: StrictInt = Field(
        100, ge=2, alias="perNodeBlockSize", description="Addresses NVIDIA IPAM gives each node."
    )

    @model_validator(mode="after")
    def _gateway_inside(self) -> VfPoolConfig:
        if self.gateway is not None and (
            self.gateway not in self.subnet
            or self.gateway in (self.subnet.network_address, self.subnet.broadcast_address)
        ):
            raise ValueError(f"gateway {self.gateway} is not a host address of subnet {self.subnet}")
        if self.per_node_block_size > self.subnet.num_addresses:
            raise ValueError(
                f"perNodeBlockSize {self.per_node_block_size} is larger than subnet {self.subnet} "
                f"({self.subnet.num_addresses} addresses)"
            )
        return self


# The namespace of the SR-IOV path's RDMA pods: the stack creates it and labels it Pod Security baseline.
SRIOV_JOBS_NAMESPACE = "rdma-sriov"


def _own_namespace(name: str) -> str:
    # Namespaces every cluster has: the stack would take over (and on destroy delete) what it does not own,
    # and `default` cannot carry the workloads' Pod Security level for them alone (issue 28).
    if name == "default" or name.startswith("kube-"):
        raise ValueError(
            f"{name} is a namespace every cluster has, whose Pod Security level the stack does not set; the "
            f"SR-IOV pods need one the stack creates and labels baseline: use {SRIOV_JOBS_NAMESPACE} (the "
            "default) or another name"
        )
    return name


class NetworkOperatorConfig(ConfigModel):
    """The NVIDIA Network Operator for pools with rdma: sriov (deployed only when a pool has it)."""

    chart_version: str = Field(
        network_operator.DEFAULT_VERSION,
        alias="chartVersion",
        description="network-operator chart version; the NicClusterPolicy images use network-operator-v<version>.",
    )
    namespace: DnsLabel = Field(network_operator.NAMESPACE, description="Namespace of the operator.")
    deploy_nfd: StrictBool = Field(
        False,
        alias="deployNfd",
        description="Deploy the chart's Node Feature Discovery (off: the cluster already runs NFD, e.g. the GPU "
        "Operator's; the release then waits for the GPU Operator's NFD, whose CRD its NodeFeatureRule needs, and a "
        "cluster the stack creates without the GPU Operator is refused).",
    )
    rdma_mode: RdmaMode = Field(
        "shared",
        alias="rdmaMode",
        description="RDMA namespace mode of the SR-IOV pools: shared (no RDMA CNI) or exclusive (netns_mode=0 "
        "on the nodes, the RDMA CNI with rdmaQoS in every network).",
    )
    network_namespace: Annotated[DnsLabel, AfterValidator(_own_namespace)] = Field(
        SRIOV_JOBS_NAMESPACE,
        alias="networkNamespace",
        description="Namespace of the NetworkAttachmentDefinitions, i.e. of the pods that use the VFs (the "
        "acceptance jobs among them). The stack creates it with Pod Security baseline; not `default` nor a "
        "kube- namespace, which the stack does not own.",
    )
    vf_pool: VfPoolConfig = Field(
        default_factory=lambda: VfPoolConfig(),
        alias="vfPool",
        description="The NVIDIA IPAM IPPool of the VFs.",
    )
