"""Nodes without kubelets: the Node objects a stack's pools register, and the ResourceSlices their drivers
publish.

- Labels: what the scheduler sees on a pool's nodes (stack_config/scheduling/pool_nodes.py planned_pools: initial node
  labels, the kubelet's, NFD's and the GPU Operator's), the kubelet's hostname label, and the fabric labels
  the pool's own cloud-init registers: its rendered user_data is booted for real against recorded instance
  metadata (tests/fixtures/node_boot.py), one rdmaTopologyData document per node.
- Taints: the ones that boot hands the kubelet (`--register-with-taints`).
- Allocatable: the shape's CPUs and memory (oke_gpu_rdma/nodes/node_sizes.py), the pods a kubelet admits by
  default (110), and the device plugin's GPUs where the device plugin runs.
- ResourceSlices: the recorded slices of one node of the shape (tests/fixtures/resourceslices/), renamed to
  the node: the B4.8 dump and DRANET's published GB200-v3.4 slices.
"""

from __future__ import annotations

import copy
import json
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from oke_gpu_rdma.drivers import compute_domains, dranet, nvidia_gpu
from oke_gpu_rdma.drivers.attributes import NVIDIA_GPU_RESOURCE
from oke_gpu_rdma.nodes import labels
from oke_gpu_rdma.nodes.node_sizes import NodeSize
from oke_gpu_rdma.nodes.shape_catalog import CATALOG, multi_node_nvlink
from oke_gpu_rdma.scheduling.pod_admission import PoolNodes
from oke_gpu_rdma.sriov import operator_objects as sriov
from oke_gpu_rdma.sriov.network_operator_chart import KUBELET_OS_LABELS
from stack_config.drivers import compute_domain_plan
from stack_config.model import StackConfig
from stack_config.nodes.pool_settings import NodePoolConfig
from stack_config.scheduling.pool_nodes import planned_pools
from tests.e2e import compute_domain_driver
from tests.e2e.kube import Kube
from tests.e2e.stacks import RenderedStack
from tests.fixtures.node_boot import boot_cloud_init, kubelet_flags, node_labels

ROOT = Path(__file__).resolve().parents[2]
SLICES = ROOT / "tests" / "fixtures" / "resourceslices"
# One recorded node per shape: the file, and the node whose slices it holds.
RECORDED_SLICES = {
    "BM.GPU.B4.8": (SLICES / "b4-two-nodes.yaml", "10.140.64.11"),
    "BM.GPU.GB200-v3.4": (SLICES / "gb200-v3.4-published.yaml", "10.140.65.248"),
}
# kubelet's --max-pods default (pkg/kubelet/apis/config/v1beta1/defaults.go: MaxPods 110).
MAX_PODS = 110
# The stand-in for an existing cluster's own CPU pool: the flexible shape OKE's quick create gives it.
EXISTING_CPU_NODE = "existing-cpu-0"
EXISTING_CPU_SHAPE = "VM.Standard.E5.Flex"
HPC_ISLAND = "ocid1.hpcisland.oc1.iad.anuwcljrg5pyaeycajoqlss2hz4f3kfjvg7y2hajdanvkwhbk4xgmd5x7e2e"


@dataclass(frozen=True)
class FakeNode:
    name: str
    pool: str
    shape: str
    labels: Mapping[str, str]
    taints: tuple[dict[str, str], ...]
    allocatable: Mapping[str, str]
    local_block: str = ""
    network_block: str = ""
    drivers: frozenset[str] = frozenset()
    """The DRA drivers whose kubelet plugins publish this node's devices."""

    def object(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": dict(self.labels)},
            "spec": {"taints": list(self.taints)} if self.taints else {},
        }

    def status(self) -> dict[str, Any]:
        return {
            "status": {
                "capacity": dict(self.allocatable),
                "allocatable": dict(self.allocatable),
                "conditions": [
                    {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "e2e node"}
                ],
                "nodeInfo": {
                    "architecture": "amd64",
                    "operatingSystem": "linux",
                    "kubeletVersion": "v1.36.4",
                },
            }
        }


@dataclass(frozen=True)
class Placement:
    """Where each node of a pool sits in the RDMA fabric: node index -> (network block, local block)."""

    nodes_per_local_block: int = 2
    blocks: Mapping[str, list[tuple[str, str]]] = field(default_factory=dict)

    def of(self, pool: str, index: int) -> tuple[str, str]:
        if pool in self.blocks:
            return self.blocks[pool][index]
        return f"block-{pool}", f"local-{pool}-{index // self.nodes_per_local_block}"


def _ocid(kind: str, key: str) -> str:
    """A well-formed OCID for a fabric level (the unique segment padded to the 60 characters real ones have)."""
    return f"ocid1.{kind}.oc1.iad." + key.replace("_", "-").ljust(60, "x")[:60]


def _taint(flag: str) -> dict[str, str]:
    key_value, effect = flag.rsplit(":", 1)
    key, _, value = key_value.partition("=")
    return {"key": key, "value": value, "effect": effect} if value else {"key": key, "effect": effect}


def _booted(
    stack: RenderedStack, pool: str, network_block: str, local_block: str, host: str, shape: str = ""
) -> list[str]:
    """The kubelet flags the pool's cloud-init hands `oke bootstrap` on a host in that fabric position; a host of a
    multi-node NVLink shape is in its local block's one GPU memory fabric (a fabric lies in one local block)."""
    topology = {
        "customerHPCIslandId": HPC_ISLAND,
        "customerNetworkBlock": _ocid("computenetworkblock", network_block),
        "customerLocalBlock": _ocid("computelocalblock", local_block),
        "customerHostId": _ocid("computebaremetalhost", host),
    }
    if multi_node_nvlink(shape):
        topology["customerGpuMemoryFabric"] = _ocid("computegpumemoryfabric", local_block)
    with tempfile.TemporaryDirectory() as tmp:
        done = boot_cloud_init(
            Path(tmp), stack.user_data(pool), {"host/rdmaTopologyData": json.dumps(topology)}
        )
        if done.returncode != 0:
            raise RuntimeError(f"pool {pool}: the rendered cloud-init failed to boot: {done.stderr}")
        return kubelet_flags(Path(tmp))


def _vf_counts(stack: RenderedStack) -> dict[str, int]:
    """VFs per resource, as the SR-IOV device plugin advertises them: each SriovNetworkNodePolicy's numVfs on
    the one rail PF it selects, summed per resourceName (under the Network Operator's resource prefix)."""
    counts: dict[str, int] = {}
    for obj in stack.manifests.values():
        if obj["kind"] == "SriovNetworkNodePolicy":
            resource = sriov.qualified(obj["spec"]["resourceName"])
            counts[resource] = counts.get(resource, 0) + int(obj["spec"]["numVfs"])
    return counts


def _allocatable(pool: PoolNodes, shape: str, vfs: dict[str, int], size: NodeSize | None) -> dict[str, str]:
    if size is None:
        raise ValueError(
            f"pool {pool.name}: no CPUs and memory for {shape} (oke_gpu_rdma/nodes/node_sizes.py)"
        )
    out = {"cpu": str(size.cpus), "memory": f"{size.memory_gib}Gi"}
    out["pods"] = str(MAX_PODS)
    if NVIDIA_GPU_RESOURCE in pool.extended_resources:
        topology = CATALOG.info(shape).topology if shape in CATALOG else None
        if topology is None:
            raise ValueError(
                f"pool {pool.name}: no topology for {shape}, so no GPU count for its device plugin"
            )
        out[NVIDIA_GPU_RESOURCE] = str(len(topology.gpus))
    for resource in sorted(pool.extended_resources - {NVIDIA_GPU_RESOURCE}):
        out[resource] = str(vfs[resource])
    return out


def _drivers(config: StackConfig, pool: NodePoolConfig) -> frozenset[str]:
    """DRANET runs on the rdma: dranet pools, the GPU DRA driver there too when it is on
    (components/drivers/dra_drivers.py)."""
    if pool.rdma is not sriov.RdmaPath.DRANET:
        return frozenset()
    compute_domains_here = compute_domain_plan.enabled(config) and multi_node_nvlink(pool.shape)
    return frozenset(
        {
            dranet.DRIVER,
            *([nvidia_gpu.DRIVER] if config.gpu_driver.enabled else []),
            *([compute_domains.DRIVER] if compute_domains_here else []),
        }
    )


def stack_nodes(stack: RenderedStack, placement: Placement | None = None) -> list[FakeNode]:
    """Every node the stack's pools register, ``count`` per pool."""
    placement = placement or Placement()
    config = stack.stack.config
    plan = stack.stack.sriov
    pools = {p.name: p for p in planned_pools(config, plan.pool_vf_resources() if plan else {})}
    vfs = _vf_counts(stack)
    nodes: list[FakeNode] = []
    for pool in config.node_pools:
        planned = pools[pool.name]
        for index in range(pool.count):
            name = f"{pool.name}-{index}"
            network_block, local_block = placement.of(pool.name, index)
            flags = _booted(stack, pool.name, network_block, local_block, name, pool.shape)
            taint_flags = [f for f in flags if f.startswith("--register-with-taints=")]
            taints = tuple(_taint(t) for f in taint_flags for t in f.split("=", 1)[1].split(",") if t)
            node_label_flags = [f for f in flags if f.startswith("--node-labels=")]
            fabric = node_labels(node_label_flags) if node_label_flags else {}
            nodes.append(
                FakeNode(
                    name,
                    pool.name,
                    pool.shape,
                    {**planned.labels, **fabric, labels.HOSTNAME_LABEL: name},
                    taints,
                    _allocatable(planned, pool.shape, vfs, config.node_size(pool.shape)),
                    local_block,
                    network_block,
                    _drivers(config, pool),
                )
            )
    if config.creates_system_pool:
        system = config.system_pool
        planned = pools[system.name]
        for index in range(system.count):
            name = f"{system.name}-{index}"
            nodes.append(
                FakeNode(
                    name,
                    system.name,
                    system.shape,
                    {**planned.labels, labels.HOSTNAME_LABEL: name},
                    tuple({"key": t.key, "value": t.value, "effect": t.effect} for t in planned.taints),
                    _allocatable(planned, system.shape, vfs, NodeSize.x86(system.ocpus, system.memory_gbs)),
                )
            )
    if config.cluster.existing is not None:
        # An existing cluster has pools of its own the stack does not declare (stack_config/scheduling/pool_nodes.py
        # unseen_pools); at least one untainted CPU node runs its system pods (CoreDNS). One stands for them.
        nodes.append(
            FakeNode(
                EXISTING_CPU_NODE,
                "existing",
                EXISTING_CPU_SHAPE,
                {
                    **KUBELET_OS_LABELS,
                    labels.INSTANCE_TYPE_LABEL: EXISTING_CPU_SHAPE,
                    labels.HOSTNAME_LABEL: EXISTING_CPU_NODE,
                },
                (),
                {"cpu": "16", "memory": "64Gi", "pods": str(MAX_PODS)},
            )
        )
    return nodes


def recorded_slices(shape: str, node: str) -> list[dict[str, Any]]:
    """The shape's recorded ResourceSlices, made the node's: node name, pool name and slice names, and the
    GPUs' UUIDs (unique per node, as NVML's are)."""
    if shape not in RECORDED_SLICES:
        return []
    path, recorded = RECORDED_SLICES[shape]
    slices = []
    for item in yaml.safe_load(path.read_text())["items"]:
        if item["spec"].get("nodeName") != recorded:
            continue
        item = copy.deepcopy(item)
        item["metadata"] = {"name": item["metadata"]["name"].replace(recorded, node, 1)}
        item["spec"]["nodeName"] = node
        item["spec"]["pool"]["name"] = node
        for device in item["spec"].get("devices") or ():
            uuid = (device.get("attributes") or {}).get("uuid")
            if uuid and "string" in uuid:
                uuid["string"] = uuid["string"].replace(recorded, node)
        slices.append(item)
    return slices


# The taint the API server's TaintNodesByCondition admission plugin puts on every new node
# (plugin/pkg/admission/nodetaint), which the node lifecycle controller lifts once the node reports Ready.
NOT_READY_TAINT = "node.kubernetes.io/not-ready"


def register(kube: Kube, nodes: Iterable[FakeNode], with_slices: bool = True) -> None:
    """Create the nodes with their status, and each DRA node's ResourceSlices.

    The node lifecycle controller does not run (no kubelet renews a lease: it would mark every node
    unreachable), so its one step for a Ready node is taken here: the not-ready taint is lifted."""
    for node in nodes:
        created = kube.create(node.object())
        kube.patch(f"/api/v1/nodes/{node.name}/status", node.status(), "strategic")
        taints = [t for t in created["spec"].get("taints") or () if t["key"] != NOT_READY_TAINT]
        kube.patch(
            f"/api/v1/nodes/{node.name}",
            [{"op": "replace", "path": "/spec/taints", "value": taints}],
            "json",
        )
        if with_slices:
            for item in recorded_slices(node.shape, node.name):
                if item["spec"]["driver"] in node.drivers:
                    kube.create(item)
            if compute_domains.DRIVER in node.drivers:
                kube.create(compute_domain_driver.node_slice(node.name))
