"""The policy pack's config for a stack, derived from the stack config.

The pack sees only the resources a stack declares. What a stack merely references (an existing VCN,
subnets, an existing cluster's pod and service CIDRs) and what it knows about its nodes (the worker
subnet, the RDMA network, user-supplied topologies) reaches the pack through this config, in the
contract both sides share (:mod:`oke_gpu_rdma.common.pack_settings`): `make preview` passes it to the pack,
and writes it to `rendered/<stack>/` for CI's
`pulumi preview --policy-pack policies --policy-pack-config ...`.
"""

from __future__ import annotations

from oke_gpu_rdma.common import images
from oke_gpu_rdma.common.pack_settings import (
    ChildRangeSettings,
    ClaimsSettings,
    NamedCidr,
    PackConfig,
    PodsAllRailsSettings,
    RailRootDevicesSettings,
    VfPoolSettings,
)
from stack_config.nodes import address_plan

from .model import StackConfig

FILENAME = "policy-pack-config.json"


def policy_pack_config(config: StackConfig) -> PackConfig:
    """The pack config of a validated stack."""
    # Ranges the stack creates reach the pack as resources; the ones it only references, through this list.
    existing = [
        r
        for r in address_plan.plan_ranges(config)
        if not r.declared and r.role is not address_plan.Role.OCA_RDMA_NETWORK
    ]
    existing_cidrs = tuple(NamedCidr(name=r.label, cidr=r.network) for r in existing)
    topologies = {k: dict(v) for k, v in config.shape_topologies.items()}
    # The SR-IOV policies look the pools' shapes up as the claims policy does, with the same topologies.
    sriov_shapes = bool(config.sriov_pools and topologies)
    return PackConfig(
        child_range=ChildRangeSettings(
            oca_rdma_network=config.network.rdma_cidr,
            existing_cidrs=existing_cidrs,
            worker_subnet_cidrs=(address_plan.worker_range(config).network,),
        ),
        vf_pool=VfPoolSettings(oca_rdma_network=config.network.rdma_cidr, existing_cidrs=existing_cidrs)
        if config.sriov_pools
        else None,
        claims=ClaimsSettings(
            shape=config.node_pools[0].shape,
            shape_topologies=topologies,
            kubernetes_version=config.cluster.spec.kubernetes_version,
            child_range=config.dranet.child_range,
            onboarding_shapes=tuple(dict.fromkeys(p.shape for p in config.dra_pools if p.onboarding)),
            managed_device_classes=config.policy_pack.managed_device_classes,
            managed_helm_releases=config.policy_pack.managed_helm_releases,
        ),
        rail_root_devices=RailRootDevicesSettings(shape_topologies=topologies) if sriov_shapes else None,
        pods_all_rails=PodsAllRailsSettings(shape_topologies=topologies) if sriov_shapes else None,
        pinned_images=images.allowance_for(written_images(config)),
    )


def written_images(config: StackConfig) -> list[str]:
    """The images the stack writes that may be known gaps (images.KNOWN_GAPS): DRANET's, the acceptance jobs'
    and the MPI operator's, the Network Operator's; allowance_for keeps only the gaps among them."""
    written: list[str] = []
    if config.dra_pools:
        written.append(images.DRANET_IMAGE)
    acceptance = config.workloads.acceptance_jobs
    if acceptance.enabled:
        written += [acceptance.image, images.MPI_OPERATOR_IMAGE]
    if config.sriov_pools:
        written += images.NETWORK_OPERATOR_IMAGES
    return written
