"""How long bare-metal GPU nodes take to come up, as the timeouts of what waits for them.

A BM.GPU node boots a bare-metal host (firmware and POST of 8 GPUs and 16 RDMA NICs), writes a 500 GB
boot volume from a custom image, runs cloud-init (the pool's `update-initramfs -u` for ib_core's shared
mode, CRI-O drop-ins) and then OKE's bootstrap before its kubelet registers: 20-40 minutes per node,
where a VM node takes 5.

The providers' defaults are sized for VMs:
- terraform-provider-oci `internal/service/containerengine/containerengine_node_pool_resource.go`:
  `Timeouts: Create/Update/Delete: tfresource.GetTimeoutDuration("50m")`; pulumi-oci is that provider,
  and a node pool's create waits for its work request.
- `internal/service/core/core_compute_cluster_resource.go`: `Timeouts: tfresource.DefaultTimeout`, which
  `internal/tfresource/crud_helpers.go` sets to 20 minutes for create, update and delete.
- pulumi-kubernetes' Helm Release waits 300 s (`timeout`) for its workloads to become ready.

Oracle's own HPC stack gives bare-metal GPU capacity two hours: oracle-quickstart/oci-hpc `instance-pool.tf`
(`timeouts { create = "120m" }` on the instance pool of its BM.GPU nodes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

# One bare-metal GPU node from launch to Ready, with margin (boot, image, cloud-init, OKE bootstrap).
BM_GPU_NODE_MINUTES: Final = 45
# Oracle's bare-metal GPU create timeout (oci-hpc instance-pool.tf).
BM_GPU_CREATE_MINUTES: Final = 120
# Deleting bare-metal nodes: evict, drain, terminate and wipe the hosts; as long as creating them.
BM_GPU_DELETE_MINUTES: Final = 120
# Compute clusters: created empty in seconds; deleted only once their hosts are gone.
COMPUTE_CLUSTER_CREATE_MINUTES: Final = 20
COMPUTE_CLUSTER_DELETE_MINUTES: Final = 60
# Helm releases whose pods run on GPU nodes (DaemonSets that become ready once the nodes are Ready): the
# wait covers nodes that join while the release installs, one node's bring-up.
GPU_RELEASE_WAIT_SECONDS: Final = BM_GPU_NODE_MINUTES * 60


@dataclass(frozen=True)
class Timeouts:
    """Create, update and delete timeouts in Pulumi's duration form ("120m")."""

    create: str
    update: str
    delete: str


def gpu_node_pool_timeouts(count: int, maximum_surge: int, maximum_unavailable: int) -> Timeouts:
    """A GPU node pool's timeouts: create as Oracle's HPC stack; an update that cycles nodes replaces them
    `surge + unavailable` at a time (at least one), each batch a node's bring-up."""
    batch = max(1, maximum_surge + maximum_unavailable)
    cycling = math.ceil(count / batch) * BM_GPU_NODE_MINUTES
    return Timeouts(
        create=f"{BM_GPU_CREATE_MINUTES}m",
        update=f"{max(BM_GPU_CREATE_MINUTES, cycling)}m",
        delete=f"{BM_GPU_DELETE_MINUTES}m",
    )


COMPUTE_CLUSTER_TIMEOUTS: Final = Timeouts(
    create=f"{COMPUTE_CLUSTER_CREATE_MINUTES}m",
    update=f"{COMPUTE_CLUSTER_CREATE_MINUTES}m",
    delete=f"{COMPUTE_CLUSTER_DELETE_MINUTES}m",
)
