"""The remediation state machine (oke_gpu_rdma/health/remediation/machine.py) driven through every transition, with
the faults of issue 37: a repair that fails, a node that disappears, two faults in one block, a controller
restart mid-drain, and the budgets."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from oke_gpu_rdma.health.remediation import machine
from oke_gpu_rdma.health.remediation.machine import Action, NodeView, Record, Settings, step

S = Settings(after_seconds=300, grace_seconds=600, drain_seconds=900, replace_seconds=3600, max_per_pool=2)
MARK = ("rail eth2: rail-agent",)


def pool(*names: str, block: str = "b1", **changes: object) -> list[NodeView]:
    return [NodeView(n, "gpu", block, created=0, ready=True, unschedulable=False) for n in names]


def four() -> list[NodeView]:
    """A pool of four nodes, two local blocks."""
    return [
        NodeView("n1", "gpu", "b1", 0, True, False),
        NodeView("n2", "gpu", "b1", 0, True, False),
        NodeView("n3", "gpu", "b2", 0, True, False),
        NodeView("n4", "gpu", "b2", 0, True, False),
    ]


def with_(nodes: list[NodeView], name: str, **changes: object) -> list[NodeView]:
    return [replace(n, **changes) if n.name == name else n for n in nodes]  # type: ignore[arg-type]


def kinds(result: machine.Step) -> list[tuple[str, str, str]]:
    return [(a.kind, a.node, a.target) for a in result.actions]


def reasons(result: machine.Step) -> list[str]:
    return [e.reason for e in result.events]


def test_a_mark_is_watched_and_the_node_cordoned_only_once_it_lasted_the_threshold() -> None:
    nodes = with_(four(), "n1", marks=MARK)
    first = step(1000, nodes, {}, S)
    assert first.records["n1"].state == "watching" and first.records["n1"].since == 1000
    assert first.actions == [] and reasons(first) == ["MarkSeen"]
    early = step(1299, nodes, first.records, S)
    assert early.records == first.records and early.actions == []
    late = step(1300, nodes, first.records, S)
    assert late.records["n1"].state == "cordoned"
    assert kinds(late) == [("cordon", "n1", "")]
    assert reasons(late) == ["Cordoned"]


def test_a_mark_lifted_before_the_threshold_drops_the_record() -> None:
    first = step(0, with_(four(), "n1", marks=MARK), {}, S)
    cleared = step(100, four(), first.records, S)
    assert cleared.records == {} and reasons(cleared) == ["MarkCleared"] and cleared.actions == []


def test_a_cordoned_nodes_jobs_get_their_grace_then_kueue_evicts_and_requeues_them() -> None:
    records = {"n1": Record("cordoned", 0, "gpu", "b1", "x")}
    busy = with_(
        four(), "n1", unschedulable=True, marks=MARK, workloads=("train/job-a",), pods=("train/job-a-0",)
    )
    during = step(599, busy, records, S)
    assert during.records == records and during.actions == []
    evict = step(600, busy, records, S)
    assert evict.records["n1"].state == "evicting"
    assert evict.records["n1"].deactivated == ("train/job-a",)
    assert kinds(evict) == [("deactivate", "n1", "train/job-a")]
    # Still there: asked again, never reactivated while its pods hold the node.
    again = step(610, busy, evict.records, S)
    assert kinds(again) == [("deactivate", "n1", "train/job-a")] and again.records["n1"].state == "evicting"
    # Its pods left: reactivated (Kueue requeues it) and the node drained.
    left = with_(busy, "n1", workloads=(), pods=())
    done = step(620, left, again.records, S)
    assert kinds(done) == [("reactivate", "n1", "train/job-a")]
    assert done.records["n1"].state == "draining" and done.records["n1"].deactivated == ()


def test_a_cordoned_node_without_jobs_is_drained_at_once() -> None:
    records = {"n1": Record("cordoned", 0, "gpu", "b1")}
    result = step(1, with_(four(), "n1", unschedulable=True, marks=MARK), records, S)
    assert result.records["n1"].state == "evicting"
    result = step(2, with_(four(), "n1", unschedulable=True, marks=MARK), result.records, S)
    assert result.records["n1"].state == "draining"


def test_a_cordon_undone_by_someone_is_set_again() -> None:
    records = {"n1": Record("cordoned", 0, "gpu", "b1")}
    busy = with_(four(), "n1", marks=MARK, workloads=("t/w",))
    assert ("cordon", "n1", "") in kinds(step(1, busy, records, S))


def test_a_workload_that_never_leaves_is_given_back_and_the_node_drained_at_the_drain_timeout() -> None:
    records = {"n1": Record("evicting", 0, "gpu", "b1", deactivated=("t/stuck",))}
    stuck = with_(four(), "n1", unschedulable=True, workloads=("t/stuck",), pods=("t/stuck-0",))
    result = step(900, stuck, records, S)
    assert result.records["n1"].state == "draining"
    assert ("reactivate", "n1", "t/stuck") in kinds(result)
    assert "EvictionTimedOut" in reasons(result)


def test_draining_evicts_every_pod_left_and_starts_the_repair_once_none_is() -> None:
    records = {"n1": Record("draining", 0, "gpu", "b1")}
    pods = with_(four(), "n1", unschedulable=True, pods=("a/p1", "b/p2"))
    result = step(10, pods, records, S)
    assert kinds(result) == [("evict", "n1", "a/p1"), ("evict", "n1", "b/p2")]
    assert result.records["n1"].state == "draining"
    empty = step(20, with_(pods, "n1", pods=()), result.records, S)
    assert kinds(empty) == [("start-repair", "n1", "")]
    assert empty.records["n1"].state == "repairing" and reasons(empty) == ["RepairStarted"]


def test_a_controller_restarted_mid_drain_goes_on_from_its_record() -> None:
    """The records are all the controller keeps (a ConfigMap): a new controller given them, and the same
    cluster, asks for exactly the evictions still to do and nothing that is done."""
    records = {"n1": Record("draining", 0, "gpu", "b1", attempts=1)}
    nodes = with_(four(), "n1", unschedulable=True, pods=("a/p2",))
    restored = machine.from_json(machine.to_json(records))
    assert restored == records
    result = step(30, nodes, restored, S)
    assert kinds(result) == [("evict", "n1", "a/p2")]
    assert result.records["n1"] == records["n1"]


def test_a_controller_restarted_mid_eviction_still_reactivates_what_it_deactivated() -> None:
    records = {"n1": Record("evicting", 0, "gpu", "b1", deactivated=("t/a", "t/b"))}
    restored = machine.from_json(machine.to_json(records))
    nodes = with_(four(), "n1", unschedulable=True, workloads=("t/b",))
    result = step(5, nodes, restored, S)
    assert kinds(result) == [("reactivate", "n1", "t/a"), ("deactivate", "n1", "t/b")]
    assert result.records["n1"].deactivated == ("t/b",)


def test_a_repair_that_succeeds_waits_for_the_replacement_which_is_checked_before_it_serves() -> None:
    records = {"n1": Record("repairing", 0, "gpu", "b1", attempts=0)}
    accepted = step(10, with_(four(), "n1", unschedulable=True, repair="succeeded"), records, S)
    assert accepted.records["n1"].state == "replacing" and reasons(accepted) == ["RepairAccepted"]
    # OKE deletes the old node: the record waits for the pool's next new node.
    gone = [n for n in four() if n.name != "n1"]
    waiting = step(100, gone, accepted.records, S)
    assert "n1" not in waiting.records
    assert waiting.records[machine.successor_key("gpu")].state == "replacing"
    assert reasons(waiting) == ["NodeReplaced"]
    # An old node that was there before does not take it over; the new one does, cordoned.
    arrived = [*gone, NodeView("n5", "gpu", "b1", created=150, ready=False, unschedulable=False)]
    taken = step(200, arrived, waiting.records, S)
    assert taken.records["n5"].state == "verifying"
    assert machine.successor_key("gpu") not in taken.records
    assert kinds(taken) == [("cordon", "n5", "")]
    # Not Ready yet: no check. Ready: the check starts; a pass uncordons and ends the record.
    ready = with_(arrived, "n5", unschedulable=True, ready=True)
    started = step(210, ready, taken.records, S)
    assert kinds(started) == [("start-check", "n5", "")]
    passed = step(300, with_(ready, "n5", check="succeeded"), started.records, S)
    assert "n5" not in passed.records
    assert kinds(passed) == [("uncordon", "n5", ""), ("delete-jobs", "n5", "")]
    assert reasons(passed) == ["Returned"]


def test_a_repair_that_fails_is_tried_again_then_the_node_is_held_and_left_cordoned() -> None:
    records = {"n1": Record("repairing", 0, "gpu", "b1")}
    failed = with_(four(), "n1", unschedulable=True, repair="failed")
    retry = step(10, failed, records, S)
    assert retry.records["n1"].state == "draining" and retry.records["n1"].attempts == 1
    assert kinds(retry) == [("delete-jobs", "n1", "")] and reasons(retry) == ["RemediationRetry"]
    again = replace(retry.records["n1"], state="repairing")
    held = step(20, failed, {"n1": again}, S)
    assert held.records["n1"].state == "held" and held.records["n1"].attempts == 2
    assert [e.warning for e in held.events] == [True] and reasons(held) == ["RemediationHeld"]
    # Held: nothing more is done to it, it stays cordoned (no uncordon), and it counts against the budget.
    later = step(9999, with_(failed, "n1", repair=None), held.records, S)
    assert later.actions == [] and later.records == held.records


def test_a_failed_check_counts_a_try_and_a_second_holds_the_node() -> None:
    records = {"n1": Record("verifying", 0, "gpu", "b1")}
    nodes = with_(four(), "n1", unschedulable=True, check="failed")
    first = step(10, nodes, records, S)
    assert first.records["n1"].state == "draining" and first.records["n1"].attempts == 1
    second = step(20, nodes, {"n1": replace(first.records["n1"], state="verifying")}, S)
    assert second.records["n1"].state == "held"


def test_a_check_that_passes_while_the_node_is_still_marked_does_not_return_it() -> None:
    records = {"n1": Record("verifying", 0, "gpu", "b1")}
    nodes = with_(
        four(), "n1", unschedulable=True, check="succeeded", marks=("gpu 3: gpu.nvidia.com/xid=79",)
    )
    result = step(10, nodes, records, S)
    assert ("uncordon", "n1", "") not in kinds(result)
    assert result.records["n1"].state == "draining" and result.records["n1"].attempts == 1


def test_a_node_still_there_long_after_its_replacement_counts_a_failed_try() -> None:
    records = {"n1": Record("replacing", 0, "gpu", "b1")}
    result = step(3600, with_(four(), "n1", unschedulable=True), records, S)
    assert result.records["n1"].state == "draining" and result.records["n1"].attempts == 1


def test_a_node_that_disappears_mid_eviction_hands_its_workloads_back() -> None:
    records = {"n1": Record("evicting", 0, "gpu", "b1", deactivated=("t/a",))}
    gone = [n for n in four() if n.name != "n1"]
    result = step(10, gone, records, S)
    assert result.records == {}
    assert kinds(result) == [("reactivate", "n1", "t/a")]
    assert reasons(result) == ["NodeGone"] and result.events[0].warning


def test_a_watched_node_that_disappears_is_forgotten_quietly() -> None:
    result = step(10, four()[1:], {"n1": Record("watching", 0, "gpu", "b1")}, S)
    assert result.records == {} and result.events == []


def test_a_replacement_that_never_comes_is_said() -> None:
    records = {machine.successor_key("gpu"): Record("replacing", 0, "gpu", "b1")}
    result = step(3600, four()[1:], records, S)
    assert result.records == {} and reasons(result) == ["ReplacementMissing"]


def test_two_faults_in_one_block_are_remediated_one_after_the_other() -> None:
    nodes = with_(with_(four(), "n1", marks=MARK), "n2", marks=MARK)
    seen = step(0, nodes, {}, S)
    result = step(300, nodes, seen.records, S)
    assert kinds(result) == [("cordon", "n1", "")]
    assert result.records["n2"].state == "watching"
    assert "same local block b1" in result.records["n2"].waiting
    assert reasons(result) == ["Cordoned", "RemediationWaiting"]
    # Said once while it waits.
    nodes = with_(nodes, "n1", unschedulable=True)
    assert "RemediationWaiting" not in reasons(step(400, nodes, result.records, S))
    # n1 returns: n2 goes.
    back = {k: v for k, v in result.records.items() if k != "n1"}
    after = step(500, with_(nodes, "n1", unschedulable=False, marks=()), back, S)
    assert ("cordon", "n2", "") in kinds(after)


def test_faults_in_two_blocks_go_together_up_to_the_pools_budget() -> None:
    nodes = [NodeView(f"n{i}", "gpu", f"b{i}", 0, True, False, marks=MARK) for i in range(1, 7)]
    seen = step(0, nodes, {}, S)
    result = step(300, nodes, seen.records, S)
    assert [a.node for a in result.actions] == ["n1", "n2"]
    assert "already in remediation (at most 2)" in result.records["n3"].waiting


def test_the_last_healthy_pair_of_a_pool_is_never_taken() -> None:
    nodes = with_(with_(pool("n1", "n2", "n3"), "n1", marks=MARK), "n3", unschedulable=True)
    nodes = [replace(n, block=n.name) for n in nodes]
    seen = step(0, nodes, {}, S)
    result = step(300, nodes, seen.records, S)
    assert result.actions == []
    assert "would keep 1 schedulable node(s), fewer than 2" in result.records["n1"].waiting


def test_a_held_node_counts_against_the_pools_budget() -> None:
    nodes = with_(four(), "n3", marks=MARK)
    records = {
        "n1": Record("held", 0, "gpu", "b1"),
        "n2": Record("held", 0, "gpu", "b1"),
        "n3": Record("watching", 0, "gpu", "b2"),
    }
    result = step(300, with_(with_(nodes, "n1", unschedulable=True), "n2", unschedulable=True), records, S)
    assert result.actions == [] and "at most 2" in result.records["n3"].waiting


def rolling() -> list[NodeView]:
    """Four outdated nodes in two local blocks, the block names in the other order than the node names."""
    return [
        NodeView("n1", "gpu", "b2", 0, True, False, outdated=True),
        NodeView("n2", "gpu", "b2", 0, True, False, outdated=True),
        NodeView("n3", "gpu", "b1", 0, True, False, outdated=True),
        NodeView("n4", "gpu", "b1", 0, True, False, outdated=True),
    ]


def test_a_rollout_takes_the_first_block_by_name_and_cordons_at_once() -> None:
    result = step(0, rolling(), {}, S)
    # maxNodesPerPool 2: both nodes of block b1, none of b2, and no threshold to wait for.
    assert kinds(result) == [("cordon", "n3", ""), ("cordon", "n4", "")]
    assert {n: r.cause for n, r in result.records.items()} == {"n3": "rollout", "n4": "rollout"}
    assert result.records["n3"].state == "cordoned"


def test_a_rollout_gives_a_nodes_jobs_their_window_then_goes_the_remediation_way() -> None:
    records = {"n3": Record("cordoned", 0, "gpu", "b1", cause="rollout")}
    busy = [n for n in with_(rolling(), "n3", unschedulable=True, workloads=("t/w",)) if n.name != "n4"]
    assert kinds(step(599, busy, records, S)) == []
    assert kinds(step(600, busy, records, S)) == [("deactivate", "n3", "t/w")]


def test_the_next_block_waits_until_the_one_before_passed_its_check() -> None:
    # b1's nodes are replaced: their successors are current and verifying; b2 waits for their checks.
    nodes = [n for n in rolling() if n.block == "b2"] + [
        NodeView("n5", "gpu", "b1", 10, True, True),
        NodeView("n6", "gpu", "b1", 10, True, True),
    ]
    records = {"n5": Record("verifying", 5, "gpu", "b1"), "n6": Record("verifying", 5, "gpu", "b1")}
    waiting = step(20, nodes, records, S)
    assert [a for a in waiting.actions if a.kind == "cordon" and a.node in ("n1", "n2")] == []
    passed = [replace(n, check="succeeded") if n.name in ("n5", "n6") else n for n in nodes]
    returned = step(30, passed, waiting.records, S)
    assert ("uncordon", "n5", "") in kinds(returned) and ("uncordon", "n6", "") in kinds(returned)
    # The round after: b1 serves again, so b2 starts.
    served = [replace(n, unschedulable=False, check=None) if n.block == "b1" else n for n in passed]
    started = step(40, served, returned.records, S)
    assert [a.node for a in started.actions if a.kind == "cordon"] == ["n1", "n2"]


def test_a_rollout_never_leaves_its_pool_without_a_schedulable_node_but_may_go_below_keep_schedulable() -> (
    None
):
    two = [
        NodeView("n1", "gpu", "b1", 0, True, False, outdated=True),
        NodeView("n2", "gpu", "b2", 0, True, False, outdated=True),
    ]
    first = step(0, two, {}, S)
    assert kinds(first) == [("cordon", "n1", "")]  # keepSchedulable 2 binds a fault, not a rollout
    one = [NodeView("n1", "gpu", "b1", 0, True, False, outdated=True)]
    assert step(0, one, {}, S).actions == []


def test_a_marked_outdated_node_goes_the_marks_way() -> None:
    nodes = with_(rolling(), "n3", marks=MARK)
    result = step(0, nodes, {}, S)
    assert result.records["n3"].state == "watching" and result.records["n3"].cause == "mark"


def test_every_state_is_reached_by_some_test_of_this_module() -> None:
    """A state the machine can enter but no test drives would be untested: every one is named here."""
    source = Path(__file__).read_text()
    assert all(f'"{state}"' in source for state in machine.STATES)


def test_counts_say_zero_for_every_state_of_every_pool() -> None:
    counts = machine.counts({"n1": Record("held", 0, "gpu", "b1")}, ["gpu", "cpu"])
    assert counts[("gpu", "held")] == 1 and counts[("cpu", "held")] == 0
    assert len(counts) == 2 * len(machine.STATES)


def test_records_survive_a_json_round_trip_and_unknown_states_are_dropped() -> None:
    records = {"n1": Record("evicting", 1.5, "gpu", "b1", "why", 1, ("t/a",), "budget", "rollout")}
    assert machine.from_json(machine.to_json(records)) == records
    assert machine.from_json({"x": {"state": "bogus", "since": 0, "pool": "p"}}) == {}


def test_an_action_names_its_target() -> None:
    assert Action("evict", "n1", "a/p") == Action("evict", "n1", "a/p")
