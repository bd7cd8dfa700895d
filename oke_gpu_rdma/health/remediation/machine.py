"""The remediation state machine: what to do next with each node of the remediated pools, given what the
cluster shows now and what was decided before (docs/health.md, "Remediation").

Standard library only: the controller's pod runs this file as it is (components/node_remediation.py ships it in a
ConfigMap beside controller.py), and the tests drive it directly. Nothing here reads a clock or the API: a
step gets ``now`` and the nodes' views and returns the new records and the actions, so every transition can be
driven with injected faults.

A node with no record is in service. Its record (kept by the controller in a ConfigMap, so a restarted
controller resumes where it was) moves

    watching -> cordoned -> evicting -> draining -> repairing -> replacing -> verifying -> (uncordoned)
                                                        ^                          |
                                                        +------ a failed check ----+  (held after the last try)

- watching: a mark (GPU, rail, fabric check) was seen at ``since``; it must last ``after_seconds``.
- cordoned: spec.unschedulable set; the node's jobs keep running for ``grace_seconds``.
- evicting: each Kueue Workload with pods there is deactivated (spec.active false: Kueue evicts it and
  suspends its job, kueue pkg/controller/core/workload_controller.go), then reactivated once its pods left
  the node (Kueue requeues it, reason Reactivated); its next admission cannot pick the node, which Kueue's
  TAS cache leaves out while it is unschedulable (pkg/cache/scheduler/tas_nodes_cache.go sync).
- draining: every other pod but DaemonSets' and mirror pods is evicted through the Eviction API.
- repairing: the repair Job asks OKE to replace the instance (DeleteNode with isDecrementSize false: the node
  pool launches a replacement with its own node config, so in its compute cluster).
- replacing: waiting for the node to go and the pool's next new node, which takes over the record.
- verifying: the fabric check runs on the node alone; a pass uncordons it, a fail counts a try.
- held: the node failed ``max_attempts`` times (or its repair did); it stays cordoned and an alert fires.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

State = Literal["watching", "cordoned", "evicting", "draining", "repairing", "replacing", "verifying", "held"]
STATES: tuple[State, ...] = (
    "watching",
    "cordoned",
    "evicting",
    "draining",
    "repairing",
    "replacing",
    "verifying",
    "held",
)
# The states in which a node is out of service and counts against the budgets.
ACTIVE: frozenset[State] = frozenset(STATES) - {"watching"}
JobResult = Literal["running", "succeeded", "failed"]


@dataclass(frozen=True)
class Settings:
    after_seconds: float
    """How long a mark must last before the node is cordoned."""
    grace_seconds: float
    """How long a cordoned node's jobs keep running before they are evicted (to checkpoint or finish)."""
    drain_seconds: float
    """How long eviction and drain may take before the node is repaired with what is left on it."""
    replace_seconds: float
    """How long the old node may stay and the new one take to come once the repair Job succeeded."""
    max_per_pool: int
    """Nodes of one pool out of service at once (every state but watching)."""
    max_attempts: int = 2
    """Failed repairs or checks before the node is held."""
    min_schedulable: int = 2
    """Schedulable nodes a pool keeps: never its last healthy pair."""


@dataclass(frozen=True)
class NodeView:
    """One node of a remediated pool as the controller read it this round."""

    name: str
    pool: str
    block: str
    """Its local block (oke-gpu-rdma/rdma-local-block), '' when it has none."""
    created: float
    ready: bool
    unschedulable: bool
    marks: tuple[str, ...] = ()
    """What marks it bad now, said for people ('rail eth2: rail-agent', 'gpu 3: gpu.nvidia.com/xid=79')."""
    workloads: tuple[str, ...] = ()
    """Kueue Workloads (namespace/name) with pods on the node that are not finished."""
    pods: tuple[str, ...] = ()
    """Pods (namespace/name) on the node that a drain evicts: not DaemonSets', not mirror pods."""
    repair: JobResult | None = None
    """The node's repair Job, where there is one."""
    check: JobResult | None = None
    """The node's fabric check Job, where there is one."""
    outdated: bool = False
    """Built from an older spec of its pool than the one the stack now declares (a rollout: a new image,
    Kubernetes version or cloud-init), which only a new node gets (OKE applies a node pool update to the nodes
    it launches later)."""


@dataclass(frozen=True)
class Record:
    state: State
    since: float
    """When the node entered its state."""
    pool: str
    block: str
    reason: str = ""
    attempts: int = 0
    deactivated: tuple[str, ...] = ()
    """Workloads this controller deactivated and has not reactivated yet."""
    waiting: str = ""
    """Why a watching node waits past its threshold (a budget), said once."""
    cause: str = "mark"
    """What took it out of service: a lasting ``mark``, or a ``rollout`` of its pool's new spec."""


@dataclass(frozen=True)
class Action:
    kind: Literal[
        "cordon",
        "uncordon",
        "deactivate",
        "reactivate",
        "evict",
        "start-repair",
        "start-check",
        "delete-jobs",
    ]
    node: str
    target: str = ""
    """The workload or pod it acts on, where it is not the node."""


@dataclass(frozen=True)
class Event:
    node: str
    reason: str
    message: str
    warning: bool = False


@dataclass(frozen=True)
class Step:
    records: dict[str, Record]
    actions: list[Action] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


# The record of a replaced node waits for the pool's next new node under this key.
def successor_key(pool: str) -> str:
    return f"successor:{pool}"


def _active_in(records: Mapping[str, Record], pool: str, block: str | None = None) -> list[str]:
    return [
        name
        for name, r in records.items()
        if r.state in ACTIVE and r.pool == pool and (block is None or (block and r.block == block))
    ]


def _budget(
    name: str, view: NodeView, records: Mapping[str, Record], nodes: Sequence[NodeView], s: Settings
) -> str:
    """Why ``view`` may not go out of service now, or ''."""
    in_pool = _active_in(records, view.pool)
    if len(in_pool) >= s.max_per_pool:
        return f"{len(in_pool)} node(s) of pool {view.pool} already in remediation (at most {s.max_per_pool})"
    if view.block and (same := _active_in(records, view.pool, view.block)):
        return f"{same[0]} of the same local block {view.block} is in remediation (one per block)"
    others = [n for n in nodes if n.pool == view.pool and n.name != name and n.ready and not n.unschedulable]
    if len(others) < s.min_schedulable:
        return (
            f"pool {view.pool} would keep {len(others)} schedulable node(s), fewer than {s.min_schedulable}: "
            "its last healthy pair stays"
        )
    return ""


def _rollout_budget(
    name: str, view: NodeView, records: Mapping[str, Record], nodes: Sequence[NodeView], s: Settings
) -> str:
    """Why an outdated node may not start its rollout now, or ''. A pool rolls one local block at a time, in
    the order of the blocks' names: a block starts only once every node of the blocks before it is current
    and no node of another block is still out of service (its fabric check passed)."""
    outdated = sorted(
        (n.block, n.name) for n in nodes if n.pool == view.pool and n.outdated and n.name not in records
    )
    if outdated and outdated[0][0] != view.block:
        return f"pool {view.pool} rolls block {outdated[0][0] or '(none)'} first, one local block at a time"
    busy = [n for n in _active_in(records, view.pool) if records[n].block != view.block]
    if busy:
        return f"{busy[0]} of another local block is still out of service; blocks roll one at a time"
    in_pool = _active_in(records, view.pool)
    if len(in_pool) >= s.max_per_pool:
        return f"{len(in_pool)} node(s) of pool {view.pool} already out of service (at most {s.max_per_pool})"
    # A rollout was asked for by the apply that changed the pool's spec: it may leave fewer than keepSchedulable
    # nodes serving while a block rolls (a fault never does), but never none.
    others = [n for n in nodes if n.pool == view.pool and n.name != name and n.ready and not n.unschedulable]
    if not others:
        return f"pool {view.pool} would keep no schedulable node"
    return ""


def step(now: float, nodes: Iterable[NodeView], records: Mapping[str, Record], s: Settings) -> Step:
    """The next records, actions and events. Idempotent: a step that repeats (a controller that restarts or
    an action that failed) asks again for what is still not done, never for what is."""
    views = sorted(nodes, key=lambda n: n.name)
    by_name = {n.name: n for n in views}
    out: dict[str, Record] = dict(records)
    actions: list[Action] = []
    events: list[Event] = []

    def event(node: str, reason: str, message: str, warning: bool = False) -> None:
        events.append(Event(node, reason, message, warning))

    def fail_try(name: str, r: Record, what: str) -> None:
        tries = r.attempts + 1
        if tries >= s.max_attempts:
            out[name] = replace(r, state="held", since=now, attempts=tries, reason=what)
            event(name, "RemediationHeld", f"{what} ({tries} of {s.max_attempts} tries): left cordoned", True)
        else:
            out[name] = replace(r, state="draining", since=now, attempts=tries, reason=what)
            event(name, "RemediationRetry", f"{what}: try {tries + 1} of {s.max_attempts}", True)

    # Nodes that went away: a replaced node's record waits for its successor; any other is dropped, after
    # handing back the workloads it deactivated (their pods are gone with the node).
    for name, r in list(out.items()):
        if name in by_name or name.startswith("successor:"):
            continue
        for workload in r.deactivated:
            actions.append(Action("reactivate", name, workload))
        del out[name]
        if r.state == "replacing":
            out[successor_key(r.pool)] = replace(r, since=now, deactivated=())
            event(
                name, "NodeReplaced", "the node is gone; the pool's next new node is checked before it serves"
            )
        elif r.state != "watching":
            event(name, "NodeGone", f"the node went away while {r.state}; its record is dropped", True)

    # A pool's new node takes over a replaced node's record: cordoned until its check passes.
    for key, r in list(out.items()):
        if not key.startswith("successor:"):
            continue
        new = [n for n in views if n.pool == r.pool and n.name not in out and n.created > r.since]
        if new:
            node = new[0]
            del out[key]
            # Cordoned by its verifying step below, in this same step.
            out[node.name] = Record("verifying", now, node.pool, node.block, r.reason, r.attempts)
            event(
                node.name,
                "ReplacementArrived",
                "replaces a remediated node; cordoned until its fabric check passes",
            )
        elif now - r.since >= s.replace_seconds:
            del out[key]
            event(
                key,
                "ReplacementMissing",
                f"no new node of pool {r.pool} came to replace a remediated node",
                True,
            )

    for view in views:
        name = view.name
        found = out.get(name)
        if found is None and view.outdated and not view.marks:
            why = _rollout_budget(name, view, out, views, s)
            if not why:
                out[name] = Record(
                    "cordoned", now, view.pool, view.block, "rollout of the pool's new spec", cause="rollout"
                )
                actions.append(Action("cordon", name))
                event(
                    name, "RolloutCordoned", "built from the pool's older spec; cordoned, its jobs may finish"
                )
            continue
        if found is None:
            if view.marks:
                out[name] = Record("watching", now, view.pool, view.block, "; ".join(view.marks))
                event(name, "MarkSeen", f"marked: {'; '.join(view.marks)}")
            continue
        r = found
        if r.state == "watching":
            if not view.marks:
                del out[name]
                event(name, "MarkCleared", "the mark was lifted before remediation")
            elif now - r.since >= s.after_seconds:
                why = _budget(name, view, out, views, s)
                if why:
                    if why != r.waiting:
                        out[name] = replace(r, waiting=why)
                        event(name, "RemediationWaiting", why)
                else:
                    out[name] = replace(
                        r, state="cordoned", since=now, waiting="", reason="; ".join(view.marks)
                    )
                    actions.append(Action("cordon", name))
                    event(name, "Cordoned", f"marked for {int(now - r.since)} s: {'; '.join(view.marks)}")
            continue
        if r.state == "cordoned":
            if not view.unschedulable:
                actions.append(Action("cordon", name))
            if not view.workloads or now - r.since >= s.grace_seconds:
                for workload in view.workloads:
                    actions.append(Action("deactivate", name, workload))
                out[name] = replace(r, state="evicting", since=now, deactivated=view.workloads)
                if view.workloads:
                    event(name, "JobsEvicted", f"Kueue evicts and requeues {', '.join(view.workloads)}")
            continue
        if r.state == "evicting":
            left = tuple(w for w in r.deactivated if w in view.workloads)
            for workload in r.deactivated:
                actions.append(Action("reactivate" if workload not in left else "deactivate", name, workload))
            timed_out = now - r.since >= s.drain_seconds
            if not left or timed_out:
                out[name] = replace(r, state="draining", since=now, deactivated=())
                if timed_out and left:
                    for workload in left:
                        actions.append(Action("reactivate", name, workload))
                    event(name, "EvictionTimedOut", f"still on the node: {', '.join(left)}; draining", True)
            else:
                out[name] = replace(r, deactivated=left)
            continue
        if r.state == "draining":
            for pod in view.pods:
                actions.append(Action("evict", name, pod))
            if not view.pods or now - r.since >= s.drain_seconds:
                out[name] = replace(r, state="repairing", since=now)
                actions.append(Action("start-repair", name))
                event(name, "RepairStarted", "drained; OKE is asked to replace the instance in its node pool")
            continue
        if r.state == "repairing":
            if view.repair is None:
                actions.append(Action("start-repair", name))
            elif view.repair == "succeeded":
                out[name] = replace(r, state="replacing", since=now)
                event(name, "RepairAccepted", "OKE accepted the replacement; waiting for the new node")
            elif view.repair == "failed":
                actions.append(Action("delete-jobs", name))
                fail_try(name, r, "the repair Job failed")
            continue
        if r.state == "replacing":
            if now - r.since >= s.replace_seconds:
                actions.append(Action("delete-jobs", name))
                fail_try(name, r, f"the node is still here {int(s.replace_seconds)} s after its replacement")
            continue
        if r.state == "verifying":
            if not view.unschedulable:
                actions.append(Action("cordon", name))
            if not view.ready:
                continue
            if view.check is None:
                actions.append(Action("start-check", name))
            elif view.check == "succeeded" and not view.marks:
                del out[name]
                actions += [Action("uncordon", name), Action("delete-jobs", name)]
                event(name, "Returned", "the fabric check passed on the node alone; uncordoned")
            elif view.check in ("failed", "succeeded"):
                actions.append(Action("delete-jobs", name))
                fail_try(
                    name,
                    r,
                    "the fabric check failed" if view.check == "failed" else "still marked after its check",
                )
            continue
        # held: nothing moves until a person removes the record (docs/health.md)
    return Step(out, actions, events)


def to_json(records: Mapping[str, Record]) -> dict[str, dict[str, object]]:
    return {
        name: {
            "state": r.state,
            "since": r.since,
            "pool": r.pool,
            "block": r.block,
            "reason": r.reason,
            "attempts": r.attempts,
            "deactivated": list(r.deactivated),
            "waiting": r.waiting,
            "cause": r.cause,
        }
        for name, r in records.items()
    }


def from_json(data: Mapping[str, Mapping[str, Any]]) -> dict[str, Record]:
    """The records as :func:`to_json` wrote them; one of a state this version does not know is dropped."""
    out: dict[str, Record] = {}
    for name, d in data.items():
        state = next((s for s in STATES if s == d.get("state")), None)
        if state is None:
            continue
        out[name] = Record(
            state=state,
            since=float(d["since"]),
            pool=str(d["pool"]),
            block=str(d.get("block") or ""),
            reason=str(d.get("reason") or ""),
            attempts=int(d.get("attempts") or 0),
            deactivated=tuple(str(w) for w in d.get("deactivated") or []),
            waiting=str(d.get("waiting") or ""),
            cause=str(d.get("cause") or "mark"),
        )
    return out


def counts(records: Mapping[str, Record], pools: Iterable[str]) -> dict[tuple[str, State], int]:
    """Nodes per (pool, state), every pair present (a gauge that drops to 0 must say 0)."""
    found = {(pool, state): 0 for pool in pools for state in STATES}
    for name, r in records.items():
        if not name.startswith("successor:"):
            found[(r.pool, r.state)] = found.get((r.pool, r.state), 0) + 1
    return found
