"""The stack config's `health` section: the rail agent and closed-loop remediation."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import (
    AfterValidator,
    Field,
    StrictBool,
    StrictInt,
)

from oke_gpu_rdma.common import images
from oke_gpu_rdma.health import health_marks as health
from stack_config.settings_types import ConfigModel, DnsLabel

_COUNTER = re.compile(r"^(counters|hw_counters)/[a-z0-9_]+$")


def _error_counters(names: list[str]) -> list[str]:
    bad = [n for n in names if not _COUNTER.match(n)]
    if bad:
        raise ValueError(
            f"{', '.join(repr(n) for n in bad)} names no file of a port's counters/ or hw_counters/ directory "
            "(/sys/class/infiniband/<device>/ports/1/); write counters/<name> or hw_counters/<name>, e.g. "
            "counters/symbol_error"
        )
    return list(dict.fromkeys(names))


class RailHealthConfig(ConfigModel):
    """The rail health agent: a DaemonSet on every DRANET pool that checks each rail and marks a bad one
    (docs/health.md)."""

    enabled: StrictBool = Field(False, description="Run the rail health agent on the DRANET pools.")
    image: str = Field(
        health.RAIL_AGENT_IMAGE,
        description="Image with bash and kubectl the agent runs in (Kubernetes' own).",
    )
    namespace: DnsLabel = Field("rail-health", description="Namespace of the agent (created).")
    interval_seconds: StrictInt = Field(
        30, ge=5, le=3600, alias="intervalSeconds", description="Seconds between two checks of the rails."
    )
    recovery_checks: StrictInt = Field(
        5,
        ge=1,
        le=1000,
        alias="recoveryChecks",
        description="Good checks in a row a marked rail needs before its mark is lifted.",
    )
    recovery_minutes: StrictInt = Field(
        10,
        ge=0,
        le=1440,
        alias="recoveryMinutes",
        description="Minutes since its last bad check a marked rail needs before its mark is lifted (a "
        "flapping link stays marked).",
    )
    error_threshold: StrictInt = Field(
        0,
        ge=0,
        alias="errorThreshold",
        description="Growth of an error counter between two checks above which the rail is bad (0: any).",
    )
    error_counters: Annotated[list[str], AfterValidator(_error_counters)] = Field(
        default_factory=lambda: list(health.DEFAULT_ERROR_COUNTERS),
        alias="errorCounters",
        description="The port's error counters the agent watches, as counters/<name> or hw_counters/<name>.",
    )


class RemediationConfig(ConfigModel):
    """Closed-loop remediation (docs/remediation.md): a node of a listed pool whose GPU, rail or
    fabric-check mark lasts is cordoned, its Kueue jobs evicted and requeued, drained, replaced in its node
    pool, checked alone and returned."""

    pools: list[DnsLabel] = Field(
        default_factory=list,
        description="GPU pools remediated (opt-in per pool; none by default). Each needs the scheduled fabric "
        "check on it (workloads.acceptanceJobs.schedule and nodePool) to prove a replacement.",
    )
    after_minutes: StrictInt = Field(
        15,
        ge=0,
        le=10080,
        alias="afterMinutes",
        description="Minutes a mark must last before the node is cordoned.",
    )
    grace_minutes: StrictInt = Field(
        30,
        ge=0,
        le=1440,
        alias="graceMinutes",
        description="Minutes a cordoned node's jobs keep running (to checkpoint) before Kueue evicts them.",
    )
    drain_minutes: StrictInt = Field(
        30,
        ge=1,
        le=1440,
        alias="drainMinutes",
        description="Minutes eviction and drain may take before the repair.",
    )
    replace_minutes: StrictInt = Field(
        90,
        ge=10,
        le=1440,
        alias="replaceMinutes",
        description="Minutes OKE may take to remove the node and bring its replacement.",
    )
    max_nodes_per_pool: StrictInt = Field(
        1, ge=1, le=64, alias="maxNodesPerPool", description="Nodes of one pool in remediation at once."
    )
    max_attempts: StrictInt = Field(
        2,
        ge=1,
        le=10,
        alias="maxAttempts",
        description="Failed repairs or checks before a node is held cordoned.",
    )
    keep_schedulable: StrictInt = Field(
        2,
        ge=0,
        le=1000,
        alias="keepSchedulable",
        description="Schedulable nodes a pool keeps: no node is taken out while fewer others would serve.",
    )
    interval_seconds: StrictInt = Field(
        30,
        ge=5,
        le=3600,
        alias="intervalSeconds",
        description="Seconds between two rounds of the controller.",
    )
    namespace: DnsLabel = Field("node-remediation", description="Namespace of the controller (created).")
    image: str = Field(
        images.PYTHON_IMAGE,
        description="Python 3 image the controller and its repair Jobs run in (the standard library is enough "
        "for the controller; a repair Job installs the OCI SDK from a hashed lock).",
    )

    @property
    def enabled(self) -> bool:
        return bool(self.pools)


class HealthConfig(ConfigModel):
    """Day-2 health: bad GPUs and rails taken out of scheduling (docs/health.md)."""

    gpu: StrictBool = Field(
        False,
        description="The NVIDIA DRA driver's NVML health checks (feature gate NVMLDeviceHealthCheck): a GPU "
        "with a fatal XID or lost is tainted NoSchedule in its ResourceSlice. Needs driver v0.4.0+ and "
        "Kubernetes 1.36+ (DRADeviceTaints).",
    )
    rails: RailHealthConfig = Field(default_factory=lambda: RailHealthConfig())
    remediation: RemediationConfig = Field(default_factory=lambda: RemediationConfig())
