"""The SR-IOV path for RDMA rails, without Pulumi: the objects the NVIDIA Network Operator needs and its limits.

One VF per rail per pod, from the SR-IOV Network Operator the NVIDIA Network Operator deploys,
attached by Multus, addressed by NVIDIA IPAM; GPUs come from the GPU Operator's device plugin.
Both the program (which generates the objects from the shape catalog) and the policy pack (which
judges any object of these kinds) read the rules here.

Sources of the rules:

- k8snetworkplumbingwg/sriov-network-operator `api/v1/sriovnetworknodepolicy_types.go`:
  `priority` has `+kubebuilder:validation:Minimum=0` / `Maximum=99`; `pkg/webhook/validate.go`
  `resourceNameRegexp` is ``^[a-zA-Z0-9]([a-zA-Z0-9_-]*[a-zA-Z0-9])?$``.
- The same repository's `bindata/manifests/cni-config/sriov/sriov-cni-config.yaml` pastes a
  SriovNetwork's `metaPlugins` text verbatim into the NetworkAttachmentDefinition's `plugins` list,
  after the sriov plugin: ``"[" + metaPlugins + "]"`` is what the chain holds.
- k8snetworkplumbingwg/rdma-cni `pkg/types/types.go`: the plugin's `args.cni` (`RdmaCNIArgs`)
  holds only `debug`, so a `rdmaQoS` there is ignored; the RDMA CNI shipped with Network
  Operator 26.7.1 reads `rdmaQoS` from the top level of the plugin config and, without it, writes
  traffic class 0 into the VF's `tc/1/traffic_class` before moving the device into the pod.
- Oracle Cloud allows at most 2 VFs on each RDMA PF.
- The measurements (expectations, never computed): 1 VF per PF gave 96.86-96.88 Gb/s per rail and
  190.55 GB/s NCCL busbw; one resource over 32 VFs gave pods both VFs on some rails and none on
  others; two 4-GPU jobs splitting 16 VFs got 17.95 and 8.99 GB/s; per-rail resources with 2 VFs
  gave 96.28 and 96.35 GB/s; exclusive mode without a top-level `rdmaQoS` gave 43.20-59.45 Gb/s
  per rail.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Literal

from oke_gpu_rdma.drivers import dranet
from oke_gpu_rdma.drivers.nccl import NCCL_SETTINGS
from oke_gpu_rdma.nodes.labels import INSTANCE_TYPE_LABEL, RDMA_PATH_SRIOV
from oke_gpu_rdma.nodes.topology import Topology

RdmaMode = Literal["shared", "exclusive"]


class RdmaPath(StrEnum):
    """Where a node pool's pods get their rails (stack config `nodePools[].rdma`)."""

    DRANET = dranet.CHART_NAME
    SRIOV = RDMA_PATH_SRIOV
    # No rails: GPUs only (inference), from the GPU Operator's device plugin; no compute cluster, no DRA driver.
    NONE = "none"


# Oracle Cloud: at most 2 VFs on each RDMA PF.
MAX_VFS_PER_PF: Final = 2
PRIORITY_MIN: Final = 0
PRIORITY_MAX: Final = 99
RESOURCE_NAME: Final = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9_-]*[a-zA-Z0-9])?$")

# The network-operator chart sets sriov-network-operator.operator.resourcePrefix to nvidia.com.
RESOURCE_PREFIX: Final = "nvidia.com"
# Resource (and node policy, network) names: one for every rail, or one for all of them.
RESOURCE_BASE: Final = "rdma-vf"
MELLANOX_VENDOR: Final = "15b3"
RAIL_MTU: Final = 4220
NODE_POLICY_PRIORITY: Final = 90
DEVICE_TYPE: Final = "netdevice"

# Multus: the pod annotation listing the networks, one interface per entry (net1, net2, ... in order).
NETWORKS_ANNOTATION: Final = "k8s.v1.cni.cncf.io/networks"

# CNI plugin types and keys the checks read.
NV_IPAM_TYPE: Final = "nv-ipam"
RDMA_CNI_TYPE: Final = "rdma"
RDMA_QOS_KEY: Final = "rdmaQoS"
RDMA_QOS_TC_KEY: Final = "tc"
TRAFFIC_CLASS_MAX: Final = 255

# A VF's RoCE v2 GID for its IPv4 address is at index 3 (seed 001: every VF in its tests); NCCL uses the
# RDMA devices of the pod's own VFs (net1 ... net16), whose names differ from node to node.
VF_GID_INDEX: Final = 3
NCCL_VF_HCA_EXPORT: Final = (
    'export NCCL_IB_HCA="=$(basename -a /sys/class/net/net*/device/infiniband/* | paste -sd, -)"'
)

# The traffic class the jobs ask for (NCCL_IB_TC, ib_write_bw --tclass): rdmaQoS must write the same one.
JOB_TRAFFIC_CLASS: Final = int(NCCL_SETTINGS["NCCL_IB_TC"])

# The ARP and reverse-path settings of the seed's tuning plugin, and source-based routing (sbr).
TUNING_SYSCTLS: Final[dict[str, str]] = {
    "net.ipv4.conf.all.rp_filter": "0",
    "net.ipv4.conf.IFNAME.arp_announce": "2",
    "net.ipv4.conf.IFNAME.arp_filter": "1",
    "net.ipv4.conf.IFNAME.arp_ignore": "1",
    "net.ipv4.conf.IFNAME.rp_filter": "0",
    "net.ipv4.conf.IFNAME.accept_local": "1",
}


def resource_name(rail: int | None, tag: str | None = None) -> str:
    """`rdma-vf-<rail>` for a per-rail resource, `rdma-vf` for one over every rail; with ``tag`` (a shape's
    slug, when SR-IOV pools of several shapes each have their rails) `rdma-vf-<tag>-<rail>`, `rdma-vf-<tag>`."""
    base = RESOURCE_BASE if tag is None else f"{RESOURCE_BASE}-{tag}"
    return base if rail is None else f"{base}-{rail}"


def qualified(resource: str) -> str:
    """The extended resource a pod asks for: `nvidia.com/rdma-vf-3`."""
    return f"{RESOURCE_PREFIX}/{resource}"


# --- CNI chain ---------------------------------------------------------------------------------------


def tuning_plugin() -> dict[str, Any]:
    return {"type": "tuning", "sysctl": dict(TUNING_SYSCTLS)}


def sbr_plugin() -> dict[str, Any]:
    return {"type": "sbr", "addSourceHints": True}


def rdma_plugin(traffic_class: int = JOB_TRAFFIC_CLASS) -> dict[str, Any]:
    """The RDMA CNI with `rdmaQoS` at the top level of the plugin (where the CNI reads it)."""
    return {"type": RDMA_CNI_TYPE, RDMA_QOS_KEY: {RDMA_QOS_TC_KEY: traffic_class}}


def meta_plugins(mode: RdmaMode, traffic_class: int = JOB_TRAFFIC_CLASS) -> list[dict[str, Any]]:
    """The chain after the sriov plugin: tuning, the RDMA CNI in exclusive mode only, then sbr.

    Shared mode must not call the RDMA CNI (it refuses to run, pods stay in ContainerCreating);
    exclusive mode needs it (without it the pod gets the interface but 0 RDMA devices).
    """
    chain = [tuning_plugin()]
    if mode == "exclusive":
        chain.append(rdma_plugin(traffic_class))
    return [*chain, sbr_plugin()]


def meta_plugins_text(plugins: Sequence[Mapping[str, Any]]) -> str:
    """SriovNetwork.spec.metaPlugins: the plugin objects joined by commas, without brackets."""
    return ",\n".join(json.dumps(p, indent=2) for p in plugins) + "\n"


class MetaPluginsError(ValueError):
    """metaPlugins text that does not form a JSON list of objects once the operator wraps it."""


def parse_meta_plugins(text: str) -> list[Any]:
    """The plugins of a metaPlugins text as the operator renders them: ``json("[" + text + "]")``."""
    try:
        value = json.loads(f"[{text}]")
    except json.JSONDecodeError as err:
        raise MetaPluginsError(
            f"is not a comma-separated list of JSON objects ({err.msg} at line {err.lineno} column {err.colno}); "
            "the operator pastes it into the NetworkAttachmentDefinition's plugin list, so the network breaks"
        ) from None
    if not isinstance(value, list):
        raise MetaPluginsError("is not a list of plugin objects")
    return value


def ipam_text(pool: str) -> str:
    """SriovNetwork.spec.ipam: NVIDIA IPAM with the VF address pool."""
    return json.dumps({"type": NV_IPAM_TYPE, "poolName": pool}, indent=2) + "\n"


def ipam_pool_names(ipam: Mapping[str, Any]) -> list[str]:
    """The IPPool names an nv-ipam config names (`poolName` may list an IPv4 and an IPv6 pool, comma-separated)."""
    value = ipam.get("poolName")
    if not isinstance(value, str):
        return []
    return [p.strip() for p in value.split(",") if p.strip()]


@dataclass(frozen=True)
class QosFinding:
    """What is wrong with the RDMA CNI's rdmaQoS in one plugin of a chain."""

    index: int
    problem: str


def rdma_qos_findings(plugins: Sequence[Any]) -> list[QosFinding]:
    """Every RDMA CNI plugin of a chain without a usable top-level `rdmaQoS.tc` (one finding each)."""
    found: list[QosFinding] = []
    for i, plugin in enumerate(plugins):
        if not isinstance(plugin, Mapping) or plugin.get("type") != RDMA_CNI_TYPE:
            continue
        qos = plugin.get(RDMA_QOS_KEY)
        nested = plugin.get("args")
        nested_qos = (
            nested.get("cni", {}).get(RDMA_QOS_KEY)
            if isinstance(nested, Mapping) and isinstance(nested.get("cni"), Mapping)
            else None
        )
        if qos is None and nested_qos is not None:
            found.append(
                QosFinding(i, f"{RDMA_QOS_KEY} is nested under args.cni, where the RDMA CNI ignores it")
            )
        elif qos is None:
            found.append(QosFinding(i, f"has no {RDMA_QOS_KEY}"))
        elif not isinstance(qos, Mapping):
            found.append(QosFinding(i, f"{RDMA_QOS_KEY} is not an object"))
        else:
            tc = qos.get(RDMA_QOS_TC_KEY)
            if isinstance(tc, bool) or not isinstance(tc, int) or not 0 <= tc <= TRAFFIC_CLASS_MAX:
                found.append(
                    QosFinding(
                        i, f"{RDMA_QOS_KEY}.{RDMA_QOS_TC_KEY} is {tc!r}, not a traffic class from 0 to 255"
                    )
                )
    return found


def has_rdma_cni(plugins: Sequence[Any]) -> bool:
    return any(isinstance(p, Mapping) and p.get("type") == RDMA_CNI_TYPE for p in plugins)


# --- node policies and networks ------------------------------------------------------------------------


@dataclass(frozen=True)
class RailResource:
    """One SR-IOV resource: its name, the rail PFs it holds and the rails' numbers (rail order)."""

    name: str
    rails: tuple[int, ...]
    pfs: tuple[str, ...]


def rail_resources(topology: Topology, per_rail: bool, tag: str | None = None) -> list[RailResource]:
    """Resources for the rail PFs of a shape (front-end NICs are never rails): one per rail, or one for all;
    ``tag`` as for :func:`resource_name`."""
    rails = topology.rails
    if per_rail:
        return [RailResource(resource_name(r.index, tag), (r.index,), (r.pci_address,)) for r in rails]
    return [
        RailResource(
            resource_name(None, tag), tuple(r.index for r in rails), tuple(r.pci_address for r in rails)
        )
    ]


def node_policy_spec(
    resource: RailResource, vfs_per_pf: int, node_selector: Mapping[str, str]
) -> dict[str, Any]:
    """SriovNetworkNodePolicy.spec of seed 001 (`sriov-network-node-policy.yaml` and the per-rail ones)."""
    if not 1 <= vfs_per_pf <= MAX_VFS_PER_PF:
        raise ValueError(f"numVfs {vfs_per_pf}: Oracle Cloud allows 1 to {MAX_VFS_PER_PF} VFs per RDMA PF")
    return {
        "deviceType": DEVICE_TYPE,
        "mtu": RAIL_MTU,
        "nicSelector": {"vendor": MELLANOX_VENDOR, "rootDevices": list(resource.pfs)},
        "nodeSelector": dict(node_selector),
        "isRdma": True,
        "numVfs": vfs_per_pf,
        "priority": NODE_POLICY_PRIORITY,
        "resourceName": resource.name,
        # The operator creates the VFs: nothing else may write sriov_numvfs.
        "externallyManaged": False,
    }


def network_spec(resource: RailResource, network_namespace: str, pool: str, mode: RdmaMode) -> dict[str, Any]:
    """SriovNetwork.spec of seed 001 (shared: `sriov-network-shared.yaml`; exclusive: `...-exclusive-qos.yaml`)."""
    return {
        "resourceName": resource.name,
        "networkNamespace": network_namespace,
        "ipam": ipam_text(pool),
        "metaPlugins": meta_plugins_text(meta_plugins(mode)),
    }


def default_node_selector(shape: str) -> dict[str, str]:
    return {INSTANCE_TYPE_LABEL: shape}


# --- pods ----------------------------------------------------------------------------------------------


def pod_networks(resources: Sequence[RailResource]) -> str:
    """The Multus annotation for one VF of every rail, networks in rail order (net1 = rail 0, ...)."""
    names: list[str] = []
    for res in sorted(resources, key=lambda r: r.rails[0]):
        names += [res.name] * (len(res.rails) if len(resources) == 1 else 1)
    return ",".join(names)


def pod_vf_limits(resources: Sequence[RailResource]) -> dict[str, int]:
    """Container limits for one VF of every rail: `nvidia.com/rdma-vf-N: 1` each, or `nvidia.com/rdma-vf: 16`."""
    return {qualified(r.name): len(r.rails) for r in sorted(resources, key=lambda r: r.rails[0])}
