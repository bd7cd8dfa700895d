"""Day-2 health marks: which taints take a bad GPU or rail out of scheduling, and how a rail is marked at a
Kubernetes version.

GPUs: the NVIDIA DRA driver taints them itself in its ResourceSlices from NVML events
(:mod:`oke_gpu_rdma.drivers.nvidia_gpu`, HEALTH_*), which the API server keeps only where the gate
DRADeviceTaints is on (beta and on by default from 1.36; kubernetes pkg/api/resourceslice DropDisabledFields).

Rails: DRANET reports no rail health (kubernetes-sigs/dranet #293), so the stack's rail health agent
(components/health/scripts/rail-health.sh) marks a bad rail under :data:`~oke_gpu_rdma.nodes.labels.RAIL_UNHEALTHY_TAINT_KEY`:
with a DeviceTaintRule on that one DRANET device where the cluster serves ``resource.k8s.io/v1``
DeviceTaintRule (GA, gate DRADeviceTaintRules on, from 1.37); where it does not (1.36 serves it only from
``resource.k8s.io/v1beta2`` behind the default-off DRADeviceTaintRules gate, kubernetes PR #137170, and OKE
lets no cluster turn a gate on) with a taint on the whole node. Effect NoSchedule only: nothing already
running is evicted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from oke_gpu_rdma.claims import feature_gates
from oke_gpu_rdma.drivers import nvidia_gpu
from oke_gpu_rdma.nodes.labels import RAIL_UNHEALTHY_TAINT_KEY
from oke_gpu_rdma.nodes.topology import Topology

# Every taint key a health mark of this stack (or of the GPU driver) uses: a claim or pod that tolerates one
# of them would be given the bad device or node again (policies/.../rules/health_taint_tolerations.py).
HEALTH_TAINT_KEYS: Final = (RAIL_UNHEALTHY_TAINT_KEY, *nvidia_gpu.HEALTH_TAINT_KEYS)
# The one effect the rail agent writes.
RAIL_MARK_EFFECT: Final = "NoSchedule"
# The value of the taint the agent writes: it lifts only a mark with this value, so a mark another checker
# (a scheduled bandwidth check) wrote under the same key stays until that checker lifts it.
RAIL_AGENT_MARK_VALUE: Final = "rail-agent"

RailMarkMode = Literal["device", "node"]
# The first release that serves DeviceTaintRule in resource.k8s.io/v1 (its GA).
DEVICE_TAINT_RULE_V1_SINCE: Final = (1, 37)
DEVICE_TAINT_RULE_API_VERSION: Final = "resource.k8s.io/v1"


def rail_mark_mode(kubernetes_version: str) -> RailMarkMode:
    """``device`` (a DeviceTaintRule per bad rail) where the release serves resource.k8s.io/v1 DeviceTaintRule
    and its gate is on by default, else ``node`` (a taint on the node)."""
    served = feature_gates.release(
        kubernetes_version
    ) >= DEVICE_TAINT_RULE_V1_SINCE and feature_gates.enabled(
        feature_gates.DRA_DEVICE_TAINT_RULES, kubernetes_version
    )
    return "device" if served else "node"


def rails_unmarked_label(mode: RailMarkMode) -> bool:
    """Whether the rail agent keeps :data:`~oke_gpu_rdma.nodes.labels.RAILS_UNMARKED_LABEL` on its node, and the
    shapes' Kueue flavors select it: in device mode only (in node mode the node taint keeps TAS off the node:
    Kueue's simulator honours NoSchedule taints, scheduling_simulator_default.go l. 72-80)."""
    return mode == "device"


def gpu_health_supported(kubernetes_version: str) -> bool:
    """Whether the API server keeps the device taints a driver writes in its ResourceSlices."""
    return feature_gates.enabled(feature_gates.DRA_DEVICE_TAINTS, kubernetes_version)


def _version(text: str) -> tuple[int, ...] | None:
    parts = text.strip().lstrip("v").split("-")[0].split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) and parts else None


def driver_has_health_checks(chart_version: str) -> bool:
    """Whether dra-driver-nvidia-gpu at ``chart_version`` has the NVML health checks (from v0.4.0; its
    calendar-named releases 25.x came before and have none)."""
    found = _version(chart_version)
    since = _version(nvidia_gpu.HEALTH_SINCE_VERSION)
    return found is not None and since is not None and found[0] == 0 and found >= since


def rail_mark_toleration() -> dict[str, str]:
    """The toleration a DaemonSet on the DRANET pools needs so its pod still starts on a node marked whole
    (node mode): the node's own agents and drivers must keep running there."""
    return {"key": RAIL_UNHEALTHY_TAINT_KEY, "operator": "Exists", "effect": RAIL_MARK_EFFECT}


def tolerates_health_taint(toleration: Mapping[str, Any]) -> str | None:
    """The health taint key ``toleration`` (a pod or device toleration) tolerates, or None: one with a health
    key, or operator Exists with no key (which tolerates every taint), or None."""
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    effect = toleration.get("effect") or ""
    if effect and effect != "NoSchedule":
        # A toleration of one effect matches only taints of that effect: the marks that keep a device or node
        # out are NoSchedule (the GPU driver's None taints keep nothing out), never NoExecute.
        return None
    if not key:
        return "every key (operator Exists with no key)" if operator == "Exists" else None
    return key if key in HEALTH_TAINT_KEYS else None


# The rail agent's image: Kubernetes' own kubectl image, which has bash, grep, sed, gawk, coreutils and jq
# beside kubectl (kubernetes/kubernetes build/server-image/kubectl/Dockerfile, since PR #119592; published
# to registry.k8s.io/kubectl from v1.28). Its kubectl minor matches the clusters the examples run.
RAIL_AGENT_IMAGE: Final = (
    "registry.k8s.io/kubectl:v1.36.3@sha256:6e4fce3c83651edb91b74bc67701c5cd263dd8aa3cd4254b1798d6425a5ab789"
)
# The port counters (sysfs-class-infiniband, counters/) whose growth between two checks marks a rail bad.
DEFAULT_ERROR_COUNTERS: Final = (
    "counters/link_downed",
    "counters/link_error_recovery",
    "counters/symbol_error",
    "counters/port_rcv_errors",
    "counters/local_link_integrity_errors",
    "counters/excessive_buffer_overrun_errors",
)


# Each of the agent's kubectl calls is bounded by kubectl's --request-timeout (rail-health.sh kube): without
# one, a connection that stops answering stalls every later check (issue 35).
AGENT_REQUEST_TIMEOUT_SECONDS: Final = 10
# The agent's container requests, by measurement (benchmarks/bench_rail_agent.py): a round of 16 rails costs
# the script about 30 ms of CPU and each kubectl call some 50-100 ms (a steady round reads one thing from the API
# server), about 4m at the default 30 s interval; its memory is bash's and one kubectl's at a time.
AGENT_CPU_REQUEST: Final = "10m"
AGENT_MEMORY_REQUEST: Final = "32Mi"
AGENT_MEMORY_LIMIT: Final = "96Mi"


def agent_calls_per_round(rails: int) -> int:
    """The most kubectl calls one round of the agent makes on a node of ``rails`` rails: a read per rail and
    the node's mark when it starts (adopt), a mark or a lift per rail, and the label's and the node mark's read
    and write (rail-health.sh round)."""
    return (rails + 1) + rails + 2 + 2


def agent_liveness_seconds(interval_seconds: int, rails: int) -> int:
    """How old the agent's heartbeat (touched at the start of each round) may grow before its pod is taken for
    hung: the sleep between rounds plus the longest a round can take with every call timing out, plus one
    interval of slack for a slow /sys read."""
    return 2 * interval_seconds + agent_calls_per_round(rails) * AGENT_REQUEST_TIMEOUT_SECONDS


def agent_rails(topology: Topology) -> str:
    """The agent's RAILS for a shape: ``<interface>=<PCI address>`` of each rail, in rail order. The agent
    names each rail's DRANET device from its PCI address as DRANET does (drivers/dranet.py dranet_slice)."""
    return " ".join(f"{rail.name}={rail.pci_address}" for root in topology.roots for rail in root.rails)
