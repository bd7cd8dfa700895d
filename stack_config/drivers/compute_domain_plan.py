"""Where ComputeDomains run (gpuDriver.computeDomains): the DRA pools of shapes whose shape file states
multi-node NVLink, their kubelet plugin on those pools only and their controller on the system pool
(docs/compute-domains.md says why each is so)."""

from __future__ import annotations

from oke_gpu_rdma.nodes.shape_catalog import multi_node_nvlink
from stack_config.model import StackConfig
from stack_config.nodes.pool_settings import NodePoolConfig
from stack_config.problems import ConfigProblem

KEY = "gpuDriver.computeDomains.enabled"


def nvlink_pools(config: StackConfig) -> list[NodePoolConfig]:
    """The DRA pools whose shape shares GPU memory across nodes over NVLink, in pool order."""
    return [p for p in config.dra_pools if multi_node_nvlink(p.shape)]


def enabled(config: StackConfig) -> bool:
    """ComputeDomains are served: the setting, by default on exactly where a multi-node NVLink pool exists."""
    if not config.gpu_driver.enabled:
        return False
    return config.gpu_driver.compute_domains.enabled is not False and bool(nvlink_pools(config))


def problems(config: StackConfig) -> list[ConfigProblem]:
    """A switch that cannot take effect: on without a pool to serve, or without the driver."""
    if config.gpu_driver.compute_domains.enabled is not True:
        return []
    if not config.gpu_driver.enabled:
        return [
            ConfigProblem(
                KEY, True, "needs gpuDriver.enabled: ComputeDomains are served by the GPU DRA driver"
            )
        ]
    if not nvlink_pools(config):
        shapes = sorted({p.shape for p in config.dra_pools})
        return [
            ConfigProblem(
                KEY,
                True,
                f"no rdma: dranet pool has a shape with multi-node NVLink (theirs: {', '.join(shapes) or 'none'}; "
                "BM.GPU.GB200-v3.4 has it); add such a pool or remove the setting",
            )
        ]
    return []
