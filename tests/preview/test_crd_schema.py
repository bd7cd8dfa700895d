"""Custom resources against their CRD schemas at the pinned tags (preview/crd_schema.py, oke_gpu_rdma/common/crd_schemas.py):
Kueue's objects, and the monitoring PodMonitor and PrometheusRule."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from components.monitoring.monitoring_stack import dranet_pod_monitor
from oke_gpu_rdma.common import crd_schemas
from oke_gpu_rdma.common.crd_schemas import KUEUE as kueue_schemas
from oke_gpu_rdma.common.crd_schemas import MPI_OPERATOR, PROMETHEUS_OPERATOR
from oke_gpu_rdma.monitoring import kube_prometheus_stack as kps
from oke_gpu_rdma.monitoring.rules import rule_groups
from oke_gpu_rdma.scheduling import kueue_chart as kueue
from oke_gpu_rdma.scheduling import mpi_operator
from preview import crd_schema, schema_check
from stack_config.loading import load_stack
from stack_config.monitoring.monitoring_plan import rule_settings
from stack_config.scheduling.scheduling_plan import objects
from tests.support import EXAMPLE_REGION, Run, raw_config


def manifest(kind: str, spec: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "x"} | ({"namespace": namespace} if namespace else {})
    return {"apiVersion": kueue.API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}


def errors(m: dict[str, Any]) -> list[str]:
    schema = kueue_schemas.schema(m["apiVersion"], m["kind"])
    assert schema is not None
    return crd_schema.check(m, schema).errors


def test_the_schemas_are_the_pinned_tags() -> None:
    data = kueue_schemas.load()
    assert (data["tag"], data["apiVersion"]) == (f"v{kueue.DEFAULT_VERSION}", kueue.API_VERSION)
    assert data["commit"] == "8eab68778fc1b52affe165fdf5af29d1e9b4f3cb"
    assert set(data["kinds"]) == set(kueue.KINDS)
    assert kueue_schemas.schema("kueue.x-k8s.io/v1beta1", "Topology") is None


def test_the_stacks_objects_are_valid() -> None:
    raw = raw_config("full")
    stack = load_stack(raw, "full", EXAMPLE_REGION)
    assert stack.scheduling is not None
    rendered = objects(stack.scheduling)
    assert {m["kind"] for m in rendered} == set(kueue.KINDS)
    for m in rendered:
        assert errors(m) == [], m


@pytest.mark.parametrize(
    ("kind", "spec", "expected"),
    [
        # A misspelt field: the API server with fieldValidation=Strict refuses it.
        ("ResourceFlavor", {"nodeLabel": {"a": "b"}}, ".spec: Additional properties are not allowed"),
        # CEL rules of the CRD (resourceflavor_types.go l. 48, l. 102).
        (
            "ResourceFlavor",
            {"topologyName": "t", "nodeLabels": {}},
            ".spec: at least one nodeLabel is required when topology is set",
        ),
        (
            "ResourceFlavor",
            {"nodeLabels": {"a": "b"}, "tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]},
            ".spec.tolerations: a value must be empty when 'operator' is 'Exists'",
        ),
        (
            "Topology",
            {"levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "a/b"}]},
            ".spec.levels: the kubernetes.io/hostname label can only be used at the lowest level of topology",
        ),
        (
            "ClusterQueue",
            {
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "1"}]}],
                    }
                ]
            },
            ".spec.resourceGroups[0]: flavors must have the same number of resources as the coveredResources",
        ),
        # The structural schema: a quota must be a quantity.
        (
            "ClusterQueue",
            {
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "lots"}]}],
                    }
                ]
            },
            ".spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        ),
    ],
)
def test_what_the_api_server_refuses_is_refused(kind: str, spec: dict[str, Any], expected: str) -> None:
    found = errors(manifest(kind, spec))
    assert any(e.startswith(expected) for e in found), found


def test_the_preview_report_names_the_crd_validation() -> None:
    stack = load_stack(raw_config("full"), "full", EXAMPLE_REGION)
    assert stack.scheduling is not None
    bad = manifest("Topology", {"levels": []})
    report = schema_check.check([*objects(stack.scheduling), bad], "v1.36.4")
    assert sum(report.crd_validated.values()) == 6
    assert report.errors and report.errors[0].startswith("kueue.x-k8s.io/v1beta2/Topology x: .spec.levels")
    assert report.unvalidated == {}
    assert any(
        "valid against https://github.com/kubernetes-sigs/kueue v0.19.2" in line for line in report.lines()
    )


def test_the_monitoring_objects_are_valid_against_the_chart_s_own_crds() -> None:
    """The PodMonitor and PrometheusRule against the Prometheus Operator CRDs kube-prometheus-stack 88.5.3
    installs (its crds subchart, operator 0.93.1): a misspelt field fails the preview."""
    data = PROMETHEUS_OPERATOR.load()
    assert (data["tag"], data["apiVersion"]) == (
        f"kube-prometheus-stack-{kps.DEFAULT_VERSION}",
        kps.MONITORING_API,
    )
    assert set(data["kinds"]) == {"PodMonitor", "PrometheusRule"}
    config = load_stack(raw_config("full"), "full", EXAMPLE_REGION).config
    monitor = {
        "apiVersion": kps.MONITORING_API,
        "kind": "PodMonitor",
        "metadata": {"name": "dranet", "namespace": "monitoring"},
        "spec": dranet_pod_monitor(),
    }
    rule = {
        "apiVersion": kps.MONITORING_API,
        "kind": "PrometheusRule",
        "metadata": {"name": "oke-gpu-rdma", "namespace": "monitoring"},
        "spec": {"groups": rule_groups(rule_settings(config))},
    }
    for manifest in (monitor, rule):
        found = crd_schemas.find(manifest["apiVersion"], manifest["kind"])
        assert found is not None and found[0] is PROMETHEUS_OPERATOR
        assert crd_schema.check(manifest, found[1]).errors == []
    misspelt = {**monitor, "spec": {**monitor["spec"], "podMetricEndpoints": []}}
    (error,) = crd_schema.check(
        misspelt, PROMETHEUS_OPERATOR.schema(kps.MONITORING_API, "PodMonitor") or {}
    ).errors
    assert "podMetricEndpoints" in error
    # A `for` that is no Prometheus duration is refused by the CRD's pattern.
    bad_for = json.loads(json.dumps(rule))
    bad_for["spec"]["groups"][0]["rules"][0]["for"] = "ten minutes"
    assert crd_schema.check(
        bad_for, PROMETHEUS_OPERATOR.schema(kps.MONITORING_API, "PrometheusRule") or {}
    ).errors


def test_mpijobs_are_checked_against_the_crd_the_stack_applies(run_stack: Callable[..., Run]) -> None:
    """The MPI operator's CRD at the pinned release is what the API server prunes an MPIJob with: a pod template
    field it lacks would vanish from the workers. The apply-time gate and the scheduled check's stored spec both
    pass it strictly; a misplaced field does not."""
    data = MPI_OPERATOR.load()
    assert (data["tag"], data["commit"]) == ("v0.6.0", "c983759cfa87fd32ed5711804021ea47eb8d712c")
    schema = MPI_OPERATOR.schema(mpi_operator.MPIJOB_API_VERSION, mpi_operator.MPIJOB_KIND)
    assert schema is not None
    run = run_stack("full")
    (gate,) = run.of_type("kubernetes:kubeflow.org/v2beta1:MPIJob")
    stored = run.one("kubernetes:core/v1:ConfigMap", "acceptance-fabric-check-specs").inputs["data"][
        "nccl.json"
    ]
    for job in (
        {"apiVersion": mpi_operator.MPIJOB_API_VERSION, "kind": "MPIJob", **gate.inputs},
        {**json.loads(stored), "metadata": {"name": "fabric-check-nccl-x", "namespace": "rdma-dranet"}},
    ):
        assert crd_schema.check(job, schema).errors == [], job["metadata"]
    worker = json.loads(stored)
    worker["metadata"] = {"name": "x"}
    worker["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["resources"] = {"limits": {"cpu": "1"}}
    (error,) = crd_schema.check(worker, schema).errors
    assert "resources" in error
