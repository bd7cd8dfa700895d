"""The scheduled fabric check's controller (components/scripts/fabric-check.sh), run for real against a fake
kubectl on PATH (tests/components/fake_kubectl.py) that answers from a cluster state and records each call:
which nodes it takes, what it creates, and the marks it sets and lifts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from components import fabric_checks
from components.rdma_workloads import SCRIPTS
from oke_gpu_rdma.fabric_check import (
    CLAIM_PREFIX,
    CONDITION,
    RAILS_ANNOTATION,
    RULE_NODE_LABEL,
    RUN_LABEL,
    TAINT_VALUE,
)
from oke_gpu_rdma.labels import FABRIC_CHECK_LABEL, POOL_LABEL, RAIL_UNHEALTHY_TAINT_KEY
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
    tmp_path: Path, state: dict[str, Any], mode: str = "node", wait: int = 30
) -> tuple[str, list[dict[str, Any]]]:
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
    }
    result = subprocess.run(
        ["bash", str(SCRIPTS / fabric_checks.SCRIPT)], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
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
