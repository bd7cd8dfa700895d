"""The scheduled fabric check's controller (components/health/scripts/fabric-check.sh), run for real against a fake
kubectl on PATH (tests/components/fake_kubectl.py) that answers from a cluster state and records each call:
which nodes it takes, what it creates, and the marks it sets and lifts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from components.claims.rdma_workloads import SCRIPTS
from components.health import fabric_checks, node_remediation
from oke_gpu_rdma.health.fabric_check import (
    CLAIM_PREFIX,
    CONDITION,
    RAILS_ANNOTATION,
    RULE_NODE_LABEL,
    RUN_LABEL,
    TAINT_VALUE,
)
from oke_gpu_rdma.nodes.labels import FABRIC_CHECK_LABEL, POOL_LABEL, RAIL_UNHEALTHY_TAINT_KEY
from tests.components import fake_kubectl

POOL = "gpu-b4-a"
# The lines rail-gate.sh's rail_bandwidth prints ("<rail> <client device> -> <server ip> <Gb/s> Gb/s", with
# ": FAIL: ..." below the threshold) and the verdict, as the rail MPIJob's launcher log holds them.
RAIL_LOG_ONE_BAD = """\
rdma0 mlx5_5 -> 10.224.0.3 96.87 Gb/s
rdma1 mlx5_6 -> 10.224.0.4 48.10 Gb/s: FAIL: below the threshold 96.87 Gb/s
ib_write_bw per rail: FAIL (2 rails, threshold 96.87 Gb/s)
"""
RAIL_LOG_GOOD = """\
rdma0 mlx5_5 -> 10.224.0.3 96.87 Gb/s
rdma1 mlx5_6 -> 10.224.0.4 96.88 Gb/s
ib_write_bw per rail: PASS (2 rails, threshold 96.87 Gb/s)
"""
# nccl-busbw-check.sh's verdict lines (seed 000's figure).
NCCL_PASS = """\
NCCL all_reduce busbw at 8589934592 bytes: 190.63 GB/s out of place, 190.60 GB/s in place (threshold 190.13 GB/s)
NCCL all_reduce: PASS
"""
NCCL_FAIL = """\
NCCL all_reduce busbw at 8589934592 bytes: 120.10 GB/s out of place, 120.00 GB/s in place (threshold 190.13 GB/s)
NCCL all_reduce: FAIL: 120.10 GB/s is below the threshold 190.13 GB/s
"""
SPEC = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {}, "spec": {
    "mpiReplicaSpecs": {"Worker": {"replicas": 4, "template": {"spec": {
        "resourceClaims": [{"name": "rails", "resourceClaimTemplateName": "all-rails"}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}}}}}}  # fmt: skip


def node(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "pool": POOL, **extra}


def cluster(**overrides: Any) -> dict[str, Any]:
    state: dict[str, Any] = {
        "nodes": [node("10.0.0.11"), node("10.0.0.12")],
        "pods": [],
        "jobs": {
            "rail": {"state": "Failed", "log": RAIL_LOG_ONE_BAD},
            "nccl": {"state": "Succeeded", "log": NCCL_PASS},
        },
        "slices": [],
    }
    return state | overrides


def run(
    tmp_path: Path,
    state: dict[str, Any],
    mode: str = "node",
    wait: int = 30,
    faults: list[dict[str, Any]] | None = None,
    status: int = 0,
    env_extra: dict[str, str] | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """One run of the check against ``state`` (faults: fake_kubectl's faults.json); ``status`` is the exit
    status it must end with."""
    bin_dir = fake_kubectl.install(tmp_path / "bin").parent
    specs = tmp_path / "specs"
    specs.mkdir(exist_ok=True)
    for name in (fabric_checks.RAIL_SPEC, fabric_checks.NCCL_SPEC):
        (specs / name).write_text(json.dumps(SPEC))
    if mode == "device":
        (specs / fabric_checks.CLAIMS).write_text(
            fabric_checks.claims_manifest("rdma-dranet", {"all-rails": {}})
        )
    kube = tmp_path / "kube"
    fake_kubectl.write_state(kube, state)
    if faults:
        (kube / "faults.json").write_text(json.dumps(faults))
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "FAKE_KUBE": str(kube),
        "POOL_LABEL": POOL_LABEL,
        "POOL": POOL,
        "NAMESPACE": "rdma-dranet",
        "TAINT_MODE": mode,
        "RAIL_KEY": RAIL_UNHEALTHY_TAINT_KEY,
        "TAINT_VALUE": TAINT_VALUE,
        "CHECK_LABEL": FABRIC_CHECK_LABEL,
        "CONDITION": CONDITION,
        "RAILS_ANNOTATION": RAILS_ANNOTATION,
        "DRIVER": "dra.net",
        "RUN_LABEL": RUN_LABEL,
        "RULE_NODE_LABEL": RULE_NODE_LABEL,
        "CLAIM_PREFIX": CLAIM_PREFIX,
        "SPECS": str(specs),
        "WAIT_SECONDS": str(wait),
        "POLL_SECONDS": "1",
        **(env_extra or {}),
    }
    result = subprocess.run(
        ["bash", str(SCRIPTS / fabric_checks.SCRIPT)], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == status, result.stdout + result.stderr
    return result.stdout + result.stderr, fake_kubectl.calls(kube)


def verbs(calls: list[dict[str, Any]], verb: str) -> list[list[str]]:
    return [c["args"] for c in calls if verb in c["args"][:3]]


def created(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [json.loads(c["stdin"]) for c in calls if c["args"][:1] == ["create"]]


def test_a_rail_below_the_threshold_taints_both_nodes_and_nccl_passes_them(tmp_path: Path) -> None:
    out, calls = run(tmp_path, cluster())
    jobs = created(calls)
    assert [j["metadata"]["name"].split("-")[2] for j in jobs] == ["rail", "nccl"]
    for job in jobs:
        worker = job["spec"]["mpiReplicaSpecs"]["Worker"]
        # Two workers pinned to the idle pair by name; the rail taint tolerated, so a marked node is measured again.
        assert worker["replicas"] == 2
        assert worker["template"]["spec"]["affinity"]["nodeAffinity"] == {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                # One term per node (terms are ORed): a node field selector holds one value
                # (kubernetes pkg/apis/core/validation ValidateNodeFieldSelectorRequirement).
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["10.0.0.11"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["10.0.0.12"]}]},
                ]
            }
        }
        # One worker per node, so that a pair is measured across the fabric whatever the template's GPU count.
        name = job["metadata"]["name"]
        assert worker["template"]["metadata"]["labels"] == {"oke-gpu-rdma/fabric-check-run": name}
        assert worker["template"]["spec"]["affinity"]["podAntiAffinity"] == {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"oke-gpu-rdma/fabric-check-run": name}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
        assert worker["template"]["spec"]["tolerations"][-1] == {
            "key": RAIL_UNHEALTHY_TAINT_KEY,
            "operator": "Exists",
            "effect": "NoSchedule",
        }
        assert job["metadata"]["namespace"] == "rdma-dranet"
    taint = f"{RAIL_UNHEALTHY_TAINT_KEY}={TAINT_VALUE}:NoSchedule"
    assert verbs(calls, "taint") == [
        ["taint", "nodes", "10.0.0.11", taint, "--overwrite"],
        ["taint", "nodes", "10.0.0.12", taint, "--overwrite"],
    ]
    assert [c for c in verbs(calls, "annotate")] == [
        ["annotate", "node", n, f"{RAILS_ANNOTATION}=rdma1", "--overwrite"]
        for n in ("10.0.0.11", "10.0.0.12")
    ]
    assert verbs(calls, "label") == [
        ["label", "node", n, f"{FABRIC_CHECK_LABEL}=pass", "--overwrite"] for n in ("10.0.0.11", "10.0.0.12")
    ]
    patches = verbs(calls, "patch")
    assert [p[:6] for p in patches] == [
        ["patch", "node", n, "--subresource=status", "--type=strategic", "-p"]
        for n in ("10.0.0.11", "10.0.0.12")
    ]
    (condition,) = json.loads(patches[0][6])["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        CONDITION,
        "False",
        "NcclAboveThreshold",
    )
    assert condition["message"].startswith(
        "with 10.0.0.12: NCCL all_reduce busbw at 8589934592 bytes: 190.63"
    )
    # Each job is deleted once it ends.
    assert sum(1 for c in calls if c["args"][2:4] == ["delete", "mpijob"]) == 2
    assert (
        "10.0.0.11: tainted oke-gpu-rdma/rail-unhealthy=fabric-check:NoSchedule (rails below the threshold: rdma1)"
        in out
    )


def test_a_pair_below_the_nccl_threshold_is_labelled_fail_with_the_condition(tmp_path: Path) -> None:
    state = cluster(
        jobs={
            "rail": {"state": "Succeeded", "log": RAIL_LOG_GOOD},
            "nccl": {"state": "Failed", "log": NCCL_FAIL},
        }
    )
    _, calls = run(tmp_path, state)
    assert verbs(calls, "taint") == []  # no rail failed and no mark of this check's to lift
    assert [c[3] for c in verbs(calls, "label")] == [f"{FABRIC_CHECK_LABEL}=fail"] * 2
    (condition,) = json.loads(verbs(calls, "patch")[1][6])["status"]["conditions"]
    assert (condition["status"], condition["reason"]) == ("True", "NcclBelowThreshold")
    assert "120.10 GB/s out of place" in condition["message"]


def test_a_pending_pod_with_a_claim_stops_the_run_before_it_takes_a_node(tmp_path: Path) -> None:
    state = cluster(pods=[{"namespace": "team-a", "name": "trainer-0", "phase": "Pending", "claims": True}])
    out, calls = run(tmp_path, state)
    assert created(calls) == []
    assert out.startswith(
        "skipped: pods with claims wait for nodes (team-a/trainer-0 ); the check takes none"
    )


def test_only_idle_nodes_are_paired(tmp_path: Path) -> None:
    state = cluster(
        nodes=[node("10.0.0.11"), node("10.0.0.12"), node("10.0.0.13"), node("10.0.0.14", unschedulable=True),
               node("10.0.0.15")],
        pods=[
            {"node": "10.0.0.12", "namespace": "team-a", "name": "trainer-0", "phase": "Running", "claims": True},
            # A pod without a claim (a DaemonSet's) does not make a node busy; a finished one neither.
            {"node": "10.0.0.13", "namespace": "kube-system", "name": "dranet-x", "phase": "Running", "claims": False},
            {"node": "10.0.0.15", "namespace": "team-a", "name": "old", "phase": "Succeeded", "claims": True},
        ],
    )  # fmt: skip
    out, calls = run(tmp_path, state)
    pinned = {
        tuple(term["matchFields"][0]["values"][0] for term in j["spec"]["mpiReplicaSpecs"]["Worker"]["template"][
            "spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"])
        for j in created(calls)
    }  # fmt: skip
    assert pinned == {("10.0.0.11", "10.0.0.13")}
    assert "10.0.0.15: idle but unpaired; the next run may pair it" in out


def test_a_passing_rail_lifts_the_check_s_own_taint_and_leaves_another_writer_s(tmp_path: Path) -> None:
    state = cluster(
        nodes=[
            node("10.0.0.11", taints=[{"key": RAIL_UNHEALTHY_TAINT_KEY, "value": TAINT_VALUE, "effect": "NoSchedule"}]),
            node("10.0.0.12", taints=[{"key": RAIL_UNHEALTHY_TAINT_KEY, "value": "rdma3", "effect": "NoSchedule"}]),
        ],
        jobs={"rail": {"state": "Succeeded", "log": RAIL_LOG_GOOD}, "nccl": {"state": "Succeeded", "log": NCCL_PASS}},
    )  # fmt: skip
    out, calls = run(tmp_path, state)
    assert verbs(calls, "taint") == [
        ["taint", "nodes", "10.0.0.11", f"{RAIL_UNHEALTHY_TAINT_KEY}={TAINT_VALUE}:NoSchedule-"]
    ]
    assert verbs(calls, "annotate") == [["annotate", "node", "10.0.0.11", f"{RAILS_ANNOTATION}-"]]
    assert "10.0.0.12: keeps oke-gpu-rdma/rail-unhealthy=rdma3 (not this check's mark)" in out


def test_on_1_37_a_bad_rail_is_a_device_taint_rule_on_its_dranet_device(tmp_path: Path) -> None:
    slices = [
        {"spec": {"nodeName": n, "driver": "dra.net", "pool": {"name": n}, "devices": [
            {"name": "pci-0000-0c-00-0", "attributes": {"dra.net/ifName": {"string": "rdma0"}}},
            {"name": "pci-0000-0c-00-1", "attributes": {"dra.net/ifName": {"string": "rdma1"}}}]}}
        for n in ("10.0.0.11", "10.0.0.12")
    ]  # fmt: skip
    _, calls = run(tmp_path, cluster(slices=slices), mode="device")
    assert verbs(calls, "taint") == []
    applied = [json.loads(c["stdin"]) for c in calls if c["args"][:1] == ["apply"] and c["stdin"]]
    assert applied[0] == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {
            "name": "fabric-check-10.0.0.11-rdma1",
            "labels": {"oke-gpu-rdma/fabric-check-node": "10.0.0.11"},
            # Owned by its node: the garbage collector deletes the rule with the node.
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": "10.0.0.11", "uid": "uid-10.0.0.11"}
            ],
        },
        "spec": {
            "deviceSelector": {"driver": "dra.net", "pool": "10.0.0.11", "device": "pci-0000-0c-00-1"},
            "taint": {"key": RAIL_UNHEALTHY_TAINT_KEY, "value": TAINT_VALUE, "effect": "NoSchedule"},
        },
    }
    assert [a["metadata"]["name"] for a in applied] == [
        "fabric-check-10.0.0.11-rdma1",
        "fabric-check-10.0.0.12-rdma1",
    ]
    # The rail that passed loses a rule this check may have set before.
    assert ["delete", "devicetaintrule", "fabric-check-10.0.0.11-rdma0", "--ignore-not-found"] in verbs(
        calls, "delete"
    )


def test_on_1_37_the_jobs_claim_from_the_check_s_own_templates_for_the_run_only(tmp_path: Path) -> None:
    """A rail the check tainted stays claimable by the check (its copies tolerate its own mark), so it is
    measured again and its rule lifted when it passes; the copies live for the run only."""
    _, calls = run(tmp_path, cluster(), mode="device")
    claims = str(tmp_path / "specs" / fabric_checks.CLAIMS)
    applies = [c["args"] for c in calls if c["args"][:1] == ["apply"] and not c["stdin"]]
    assert applies == [["apply", "-f", claims]]
    # A killed run's copies go first: a template's spec cannot be updated in place.
    apply_at = next(i for i, c in enumerate(calls) if c["args"] == ["apply", "-f", claims])
    assert calls[apply_at - 1]["args"] == ["delete", "-f", claims, "--ignore-not-found"]
    first_job = next(i for i, c in enumerate(calls) if c["args"][:1] == ["create"])
    assert calls.index(next(c for c in calls if c["args"] == ["apply", "-f", claims])) < first_job
    assert calls[-1]["args"] == ["delete", "-f", claims, "--ignore-not-found"]
    for job in created(calls):
        worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
        assert worker["resourceClaims"] == [
            {"name": "rails", "resourceClaimTemplateName": "fabric-check-all-rails"}
        ]


def test_on_1_36_the_jobs_claim_from_the_declared_templates(tmp_path: Path) -> None:
    _, calls = run(tmp_path, cluster())
    assert not any(c["args"][:1] == ["apply"] for c in calls)
    for job in created(calls):
        worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
        assert worker["resourceClaims"] == [{"name": "rails", "resourceClaimTemplateName": "all-rails"}]


@pytest.mark.parametrize("kind", ["rail", "nccl"])
def test_a_job_that_does_not_finish_is_deleted_and_marks_nothing(tmp_path: Path, kind: str) -> None:
    jobs = {
        "rail": {"state": "Succeeded", "log": RAIL_LOG_ONE_BAD},
        "nccl": {"state": "Succeeded", "log": NCCL_FAIL},
    }
    jobs[kind] = {"state": "", "log": ""}
    out, calls = run(tmp_path, cluster(jobs=jobs), wait=2)
    assert f"{kind} on 10.0.0.11 10.0.0.12: skipped: not finished within 2 s" in out
    assert not any(c["args"][:1] == ["logs"] and kind in c["args"][-1] for c in calls)
    marks = verbs(calls, "taint") if kind == "rail" else verbs(calls, "label")
    assert marks == []


def test_the_fake_labels_pools_as_the_stack_does() -> None:
    assert fake_kubectl.POOL_LABEL == POOL_LABEL


def final_state(tmp_path: Path) -> dict[str, Any]:
    return fake_kubectl.read_state(tmp_path / "kube")


INTERNAL_ERROR = (
    'Error from server (InternalError): an error on the server ("") has prevented the request from succeeding'
)


def test_a_failed_pod_list_takes_no_node_and_fails_the_run(tmp_path: Path) -> None:
    """Issue 35 defect 7: a failed pod list read as "no pod holds a node", so every node was idle and the check
    took nodes busy with training."""
    busy = [{"node": n, "namespace": "team-a", "name": f"t-{n}", "phase": "Running", "claims": True}
            for n in ("10.0.0.11", "10.0.0.12")]  # fmt: skip
    faults = [{"match": ["get", "pods"], "error": INTERNAL_ERROR}]
    out, calls = run(tmp_path, cluster(pods=busy), faults=faults, status=1)
    assert created(calls) == []
    assert "skipped: could not list the pods, so no node is known to be idle; the check takes none" in out


def test_a_failed_create_says_the_pair_was_skipped_and_fails_the_run(tmp_path: Path) -> None:
    faults = [{"match": ["create"], "error": INTERNAL_ERROR}]
    out, calls = run(tmp_path, cluster(), faults=faults, status=1)
    assert "rail on 10.0.0.11 10.0.0.12: skipped: could not create its MPIJob" in out
    assert "nccl on 10.0.0.11 10.0.0.12: skipped: could not create its MPIJob" in out
    assert verbs(calls, "taint") == [] and verbs(calls, "label") == []


def test_a_taint_that_fails_is_not_reported_as_set(tmp_path: Path) -> None:
    """Issue 35 defect 7: "tainted" was printed for a node the taint never reached (deleted meanwhile)."""
    faults = [{"match": ["taint", "nodes", "10.0.0.12"], "error": 'Error from server (NotFound): nodes "10.0.0.12" not found'}]  # fmt: skip
    out, _ = run(tmp_path, cluster(), faults=faults, status=1)
    assert "10.0.0.11: tainted" in out
    assert "10.0.0.12: tainted" not in out
    assert '10.0.0.12: could not taint: Error from server (NotFound): nodes "10.0.0.12" not found' in out


def test_a_failed_label_is_not_reported_as_set(tmp_path: Path) -> None:
    faults = [{"match": ["label", "node", "10.0.0.11"], "error": INTERNAL_ERROR}]
    out, _ = run(tmp_path, cluster(), faults=faults, status=1)
    assert f"10.0.0.11: could not label {FABRIC_CHECK_LABEL}=pass: {INTERNAL_ERROR}" in out
    assert f"10.0.0.12: {FABRIC_CHECK_LABEL}=pass, condition {CONDITION}=False" in out


@pytest.mark.parametrize("mode", ["node", "device"])
def test_a_peer_that_vanishes_mid_run_leaves_the_survivor_unmarked(tmp_path: Path, mode: str) -> None:
    """Issue 35 defect 7: a peer deleted while the job ran fails every rail of the pair; the survivor's rails
    were marked for it. A result is taken only while both nodes are still there."""
    faults = [{"match": ["get", "mpijob"], "delete_node": "10.0.0.12", "times": 1}]
    out, calls = run(tmp_path, cluster(slices=SLICES), mode=mode, faults=faults)
    assert (
        "rail on 10.0.0.11 10.0.0.12: 10.0.0.12 is gone; the pair's result says nothing of 10.0.0.11: no mark"
        in out
    )
    assert verbs(calls, "taint") == []
    assert final_state(tmp_path)["devicetaintrules"] == {}
    assert verbs(calls, "label") == []


SLICES = [
    {"spec": {"nodeName": n, "driver": "dra.net", "pool": {"name": n}, "devices": [
        {"name": "pci-0000-0c-00-0", "attributes": {"dra.net/ifName": {"string": "rdma0"}}},
        {"name": "pci-0000-0c-00-1", "attributes": {"dra.net/ifName": {"string": "rdma1"}}}]}}
    for n in ("10.0.0.11", "10.0.0.12")
]  # fmt: skip


def stale_rule(name: str, node_name: str, label: str = RULE_NODE_LABEL) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
            "metadata": {"name": name, "labels": {label: node_name}},
            "spec": {"deviceSelector": {"driver": "dra.net", "pool": node_name, "device": "pci-0000-0c-00-1"},
                     "taint": {"key": RAIL_UNHEALTHY_TAINT_KEY, "value": TAINT_VALUE, "effect": "NoSchedule"}}}  # fmt: skip


def test_the_check_s_marks_on_nodes_gone_or_out_of_every_pool_are_lifted(tmp_path: Path) -> None:
    """Issue 35: a mark that outlives its cause is found: the check's DeviceTaintRules for a node that is gone
    or no longer in any pool are deleted by the next run; a pool node's rule stays until a measurement lifts
    it."""
    rules = {
        "fabric-check-10.0.0.99-rdma1": stale_rule("fabric-check-10.0.0.99-rdma1", "10.0.0.99"),  # node gone
        "fabric-check-10.0.0.50-rdma1": stale_rule(
            "fabric-check-10.0.0.50-rdma1", "10.0.0.50"
        ),  # out of pools
        "fabric-check-10.0.0.60-rdma1": stale_rule(
            "fabric-check-10.0.0.60-rdma1", "10.0.0.60"
        ),  # another pool
    }
    nodes = [
        node("10.0.0.11"),
        node("10.0.0.12"),
        {"name": "10.0.0.50"},
        {"name": "10.0.0.60", "pool": "gpu-b4-b"},
    ]
    out, _ = run(tmp_path, cluster(nodes=nodes, slices=SLICES, devicetaintrules=rules), mode="device")
    left = final_state(tmp_path)["devicetaintrules"]
    assert "fabric-check-10.0.0.60-rdma1" in left
    assert "fabric-check-10.0.0.99-rdma1" not in left and "fabric-check-10.0.0.50-rdma1" not in left
    assert "10.0.0.99: gone or in no pool: lifted DeviceTaintRule fabric-check-10.0.0.99-rdma1" in out


def test_in_node_mode_the_check_s_taint_on_a_node_out_of_every_pool_is_lifted(tmp_path: Path) -> None:
    mark = {"key": RAIL_UNHEALTHY_TAINT_KEY, "value": TAINT_VALUE, "effect": "NoSchedule"}
    theirs = {"key": RAIL_UNHEALTHY_TAINT_KEY, "value": "rail-agent", "effect": "NoSchedule"}
    nodes = [node("10.0.0.11"), node("10.0.0.12"), {"name": "10.0.0.50", "taints": [mark]},
             {"name": "10.0.0.51", "taints": [theirs]}]  # fmt: skip
    out, calls = run(tmp_path, cluster(nodes=nodes))
    assert ["taint", "nodes", "10.0.0.50", f"{RAIL_UNHEALTHY_TAINT_KEY}={TAINT_VALUE}:NoSchedule-"] in verbs(
        calls, "taint"
    )
    assert not any(c[2] == "10.0.0.51" for c in verbs(calls, "taint"))
    assert f"10.0.0.50: in no pool: lifted {RAIL_UNHEALTHY_TAINT_KEY}={TAINT_VALUE}" in out


def _pinned_nodes(job: dict[str, Any]) -> list[str]:
    terms = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    return [t["matchFields"][0]["values"][0] for t in terms]


UNSCHEDULABLE_TOLERATION = {
    "key": "node.kubernetes.io/unschedulable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


def test_one_cordoned_node_is_checked_alone_with_an_idle_peer_and_passes(tmp_path: Path) -> None:
    """Issue 37: the remediation controller checks a repaired node (cordoned) by itself: ONLY_NODE pairs it with
    one idle schedulable node of its pool, and its workers tolerate the cordon (the scheduler's NodeUnschedulable
    filter admits a pod that tolerates node.kubernetes.io/unschedulable:NoSchedule)."""
    state = cluster(
        nodes=[node("10.0.0.11"), node("10.0.0.12"), node("10.0.0.13", unschedulable=True)],
        jobs={
            "rail": {"state": "Succeeded", "log": RAIL_LOG_GOOD},
            "nccl": {"state": "Succeeded", "log": NCCL_PASS},
        },
    )
    _out, calls = run(tmp_path, state, env_extra={"ONLY_NODE": "10.0.0.13"})
    jobs = created(calls)
    assert [_pinned_nodes(j) for j in jobs] == [["10.0.0.13", "10.0.0.11"]] * 2
    for job in jobs:
        assert (
            UNSCHEDULABLE_TOLERATION
            in job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["tolerations"]
        )


def test_a_node_checked_alone_fails_the_run_on_an_nccl_fail(tmp_path: Path) -> None:
    state = cluster(
        nodes=[node("10.0.0.11"), node("10.0.0.13", unschedulable=True)],
        jobs={
            "rail": {"state": "Succeeded", "log": RAIL_LOG_GOOD},
            "nccl": {"state": "Succeeded", "log": NCCL_FAIL},
        },
    )
    out, _ = run(tmp_path, state, env_extra={"ONLY_NODE": "10.0.0.13"}, status=1)
    assert "10.0.0.13: fail" in out


def test_a_node_checked_alone_fails_the_run_on_a_bad_rail(tmp_path: Path) -> None:
    state = cluster(nodes=[node("10.0.0.11"), node("10.0.0.13", unschedulable=True)])
    out, _ = run(tmp_path, state, env_extra={"ONLY_NODE": "10.0.0.13"}, status=1)
    assert "10.0.0.13: fail" in out


def test_a_node_checked_alone_without_an_idle_peer_is_not_checked_and_says_so_by_its_status(
    tmp_path: Path,
) -> None:
    """Not a failure of the node: the status the remediation's check Job ignores (components/health/node_remediation.py
    check_job podFailurePolicy), so it runs again until a peer is idle."""
    state = cluster(nodes=[node("10.0.0.11", unschedulable=True), node("10.0.0.13", unschedulable=True)])
    env = {"ONLY_NODE": "10.0.0.13", "NOT_CHECKED_PAUSE": "0"}
    out, calls = run(tmp_path, state, env_extra=env, status=node_remediation.NOT_CHECKED_STATUS)
    assert created(calls) == []
    assert "no idle node of pool gpu-b4-a to pair it with; not checked, trying again" in out


def test_a_busy_node_checked_alone_is_not_checked_yet(tmp_path: Path) -> None:
    state = cluster(
        nodes=[node("10.0.0.11"), node("10.0.0.13", unschedulable=True)],
        pods=[
            {"node": "10.0.0.13", "namespace": "t", "name": "train-0", "phase": "Running", "claims": ["gpus"]}
        ],
    )
    env = {"ONLY_NODE": "10.0.0.13", "NOT_CHECKED_PAUSE": "0"}
    out, calls = run(tmp_path, state, env_extra=env, status=node_remediation.NOT_CHECKED_STATUS)
    assert created(calls) == [] and "10.0.0.13: not an idle node of pool gpu-b4-a" in out


def test_without_only_node_a_cordoned_node_is_not_taken(tmp_path: Path) -> None:
    state = cluster(nodes=[node("10.0.0.11"), node("10.0.0.12"), node("10.0.0.13", unschedulable=True)])
    _, calls = run(tmp_path, state)
    assert all("10.0.0.13" not in _pinned_nodes(j) for j in created(calls))
