"""The health settings against the rest of the stack (what each needs to do what it says), and the node taint
the rail health agent may write, which the DaemonSets on the DRANET pools must tolerate."""

from __future__ import annotations

from oke_gpu_rdma.claims import feature_gates
from oke_gpu_rdma.common.errors import TopologyError
from oke_gpu_rdma.drivers import nvidia_gpu
from oke_gpu_rdma.health import health_marks as health
from oke_gpu_rdma.nodes.labels import RAIL_UNHEALTHY_TAINT_KEY
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from oke_gpu_rdma.nodes.topology import Topology
from stack_config.claims.template_requests import emits_aligned_templates, emits_rails_only_template
from stack_config.model import StackConfig
from stack_config.nodes.pool_settings import NodePoolConfig, Taint
from stack_config.problems import ConfigProblem


def problems(config: StackConfig) -> list[ConfigProblem]:
    """One problem per health setting that would do nothing: never a switch silently ignored."""
    found: list[ConfigProblem] = []
    version = config.cluster.spec.kubernetes_version
    if config.health.gpu:
        if not config.gpu_driver.enabled or not config.dra_pools:
            found.append(
                ConfigProblem(
                    "health.gpu",
                    True,
                    "needs the NVIDIA DRA driver on a DRANET pool (gpuDriver.enabled: true and a pool with "
                    "rdma: dranet); turn it on, or set health.gpu: false",
                )
            )
        elif not health.driver_has_health_checks(config.gpu_driver.chart_version):
            found.append(
                ConfigProblem(
                    "gpuDriver.chartVersion",
                    config.gpu_driver.chart_version,
                    f"has no NVML health checks (feature gate {nvidia_gpu.HEALTH_FEATURE_GATE}, from "
                    f"v{nvidia_gpu.HEALTH_SINCE_VERSION}); set gpuDriver.chartVersion: {nvidia_gpu.DEFAULT_VERSION}, "
                    "or health.gpu: false",
                )
            )
        if not health.gpu_health_supported(version):
            found.append(
                ConfigProblem(
                    "health.gpu",
                    True,
                    f"the API server drops the device taints the driver writes: "
                    f"{feature_gates.gate_note(feature_gates.DRA_DEVICE_TAINTS, version)} (OKE turns no gate on); "
                    "set health.gpu: false or run Kubernetes v1.36 or later",
                )
            )
    rails = config.health.rails
    if rails.enabled and (not config.dranet.enabled or not config.dra_pools):
        found.append(
            ConfigProblem(
                "health.rails.enabled",
                True,
                "checks DRANET's rails, and the stack runs DRANET on no pool (dranet.enabled: true and a pool "
                "with rdma: dranet); turn DRANET on, or set health.rails.enabled: false",
            )
        )
    # A shape without a known topology is reported once: by the claim plan while it builds templates for it.
    if rails.enabled and not (emits_aligned_templates(config) or emits_rails_only_template(config)):
        for shape in dict.fromkeys(p.shape for p in agent_pools(config)):
            try:
                rail_topologies(config, [shape])
            except TopologyError as err:
                found.append(
                    ConfigProblem(
                        "health.rails.enabled",
                        True,
                        f"the agent checks the rails of each DRANET pool's shape, and {err}; add "
                        f"shapeTopologies.{shape} (make topology), or set health.rails.enabled: false",
                    )
                )
    return found


def agent_pools(config: StackConfig) -> list[NodePoolConfig]:
    """The DRANET pools the rail health agent watches: all but those onboarding their shape, whose rails are
    not known until its topology is supplied (nodePools[].onboarding; docs/health.md)."""
    return [p for p in config.dra_pools if not p.onboarding]


def rail_topologies(config: StackConfig, shapes: list[str] | None = None) -> dict[str, Topology]:
    """The topology (the rails) of each watched DRANET pool's shape, from the catalog and shapeTopologies."""
    catalog = CATALOG.with_topologies(config.shape_topologies)
    wanted = shapes if shapes is not None else list(dict.fromkeys(p.shape for p in agent_pools(config)))
    return {shape: catalog.topology(shape) for shape in wanted}


def mark_taints(config: StackConfig) -> list[Taint]:
    """The taint the rail health agent puts on a DRANET node whose rail is bad where the Kubernetes version
    makes it mark the whole node (oke_gpu_rdma/health/health_marks.py rail_mark_mode), else none. The node's own agents
    and drivers tolerate it (a restarted pod must come back there); training pods and claims never do."""
    if not config.health.rails.enabled or not config.dra_pools:
        return []
    if health.rail_mark_mode(config.cluster.spec.kubernetes_version) != "node":
        return []
    return [
        Taint(
            key=RAIL_UNHEALTHY_TAINT_KEY, value=health.RAIL_AGENT_MARK_VALUE, effect=health.RAIL_MARK_EFFECT
        )
    ]


def rails_unmarked_pools(config: StackConfig) -> frozenset[str]:
    """The pools whose nodes carry the rail agent's oke-gpu-rdma/rails-unmarked label (starting "true"), which
    the shapes' Kueue flavors then select: the pools the agent watches, where it runs and marks rails per
    device (oke_gpu_rdma/health/health_marks.py rails_unmarked_label); none otherwise."""
    if not config.health.rails.enabled or not health.rails_unmarked_label(
        health.rail_mark_mode(config.cluster.spec.kubernetes_version)
    ):
        return frozenset()
    return frozenset(p.name for p in agent_pools(config))
