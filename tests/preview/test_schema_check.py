"""Rendered manifests against the Kubernetes OpenAPI schemas (preview/schema_check.py)."""

from __future__ import annotations

import copy
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import yaml

from preview import schema_check

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = version("kubernetes-validate")


def manifests(stack: str) -> list[dict[str, Any]]:
    return [
        doc
        for path in sorted(ROOT.glob(f"rendered/{stack}/manifests/*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
    ]


def test_the_schema_version_is_the_newest_shipped_not_newer_than_the_stack() -> None:
    assert schema_check.schema_version("v1.36.4") == "1.36.0"
    assert schema_check.schema_version("v1.35.0") == "1.35.0"
    assert schema_check.schema_version("v1.99.1") == "1.37.0"
    with pytest.raises(schema_check.SchemaVersionError) as refused:
        schema_check.schema_version("v1.20.3")
    assert str(refused.value) == (
        f"cluster kubernetesVersion v1.20.3: kubernetes-validate {SHIPPED} ships schemas from v1.25.0 on; "
        "pin an older kubernetes-validate in requirements-preview.txt"
    )


# full adds, beyond dev: the GPU Operator's namespace, Kueue's (baseline), the NCCL job's ConfigMap, the MPI
# operator's Roles and RoleBindings (in its own and the jobs' namespace), the rail health agent's namespace,
# ServiceAccount, ClusterRole, ClusterRoleBinding, ConfigMap, DaemonSet and its own-node ValidatingAdmissionPolicy
# with its binding (health.rails), the scheduled fabric check (CronJob, its RBAC and ConfigMap) and the
# monitoring namespace and objects, whose custom resources no shipped schema covers; Kueue's are checked against its CRDs.
@pytest.mark.parametrize(("stack", "validated", "unvalidated"), [("dev", 8, {}), ("full", 70, {})])
def test_the_examples_manifests_are_valid(stack: str, validated: int, unvalidated: dict[str, int]) -> None:
    report = schema_check.check(manifests(stack), "v1.36.4")
    assert (report.validated, report.errors) == (validated, [])
    # Every custom resource of these two has its CRD's schema (Kueue, Prometheus Operator, MPI operator).
    assert report.unvalidated == unvalidated
    assert sum(report.crd_validated.values()) == (10 if stack == "full" else 0)


def test_custom_resources_are_named_as_not_validated() -> None:
    report = schema_check.check(manifests("sriov"), "v1.36.4")
    # The sriov stack's own objects are custom resources but for its namespaces and the MPI operator's
    # Roles and RoleBindings (the operator's other objects come from its manifest at apply time, unseen here).
    assert (report.validated, report.errors) == (6, [])
    assert report.unvalidated == {
        "mellanox.com/v1alpha1/NicClusterPolicy": 1,
        "nv-ipam.nvidia.com/v1alpha1/IPPool": 1,
        "sriovnetwork.openshift.io/v1/SriovNetwork": 16,
        "sriovnetwork.openshift.io/v1/SriovNetworkNodePolicy": 16,
        "sriovnetwork.openshift.io/v1/SriovNetworkPoolConfig": 1,
    }
    assert report.lines()[-1] == (
        "  not validated (custom resources, no schema shipped): "
        "mellanox.com/v1alpha1/NicClusterPolicy (1), nv-ipam.nvidia.com/v1alpha1/IPPool (1), "
        "sriovnetwork.openshift.io/v1/SriovNetwork (16), sriovnetwork.openshift.io/v1/SriovNetworkNodePolicy (16), "
        "sriovnetwork.openshift.io/v1/SriovNetworkPoolConfig (1)"
    )


def test_a_misplaced_field_fails_strict_validation() -> None:
    (template,) = [m for m in manifests("dev") if m["metadata"]["name"] == "all-rails"]
    bad = copy.deepcopy(template)
    bad["spec"]["spec"]["devices"]["requests"][0]["count"] = 16  # belongs under `exactly`
    report = schema_check.check([bad], "v1.36.4")
    assert report.validated == 0
    assert report.errors == [
        "resource.k8s.io/v1/ResourceClaimTemplate rdma-dranet/all-rails: .spec.spec.devices.requests[0]: "
        "Additional properties are not allowed ('count' was unexpected)"
    ]
    assert report.lines()[0].startswith("Schemas: 1 manifest(s) invalid against the Kubernetes v1.36.0")
