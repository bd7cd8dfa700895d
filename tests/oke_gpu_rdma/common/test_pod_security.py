"""oke_gpu_rdma/common/pod_security.py: the Pod Security Standards' checks, and every pod the stack renders against
the level of the namespace it runs in."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from oke_gpu_rdma.common import pod_security
from oke_gpu_rdma.common.pod_security import namespace_labels, strictest, violations
from stack_config.sriov.sriov_settings import SRIOV_JOBS_NAMESPACE
from tests.support import Run, raw_config

RESTRICTED_CONTAINER = {
    "name": "c",
    "image": "i",
    "securityContext": {
        "allowPrivilegeEscalation": False,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    },
}


def test_labels_enforce_warn_and_audit_one_level() -> None:
    assert namespace_labels("baseline") == {
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/warn": "baseline",
        "pod-security.kubernetes.io/audit": "baseline",
    }


@pytest.mark.parametrize(
    ("change", "level", "said"),
    [
        ({"hostNetwork": True}, "privileged", "hostNetwork: true"),
        (
            {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]},
            "privileged",
            "volume h is a hostPath volume",
        ),
        (
            {"containers": [{"name": "c", "securityContext": {"privileged": True}}]},
            "privileged",
            "container c is privileged",
        ),
        (
            {"containers": [{"name": "c", "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}}]},
            "privileged",
            "container c adds capabilities IPC_LOCK",
        ),
        (
            {"containers": [{"name": "c", "ports": [{"hostPort": 22}]}]},
            "privileged",
            "container c uses hostPort 22",
        ),
        (
            {"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}},
            "privileged",
            "sysctl kernel.msgmax",
        ),
        (
            {"containers": [{"name": "c"}]},
            "baseline",
            "container c does not set allowPrivilegeEscalation: false",
        ),
        (
            {"volumes": [{"name": "n", "nfs": {"server": "x"}}], "containers": [RESTRICTED_CONTAINER]},
            "baseline",
            "volume n is a nfs volume",
        ),
    ],
)
def test_each_check_names_what_fails(change: dict[str, Any], level: str, said: str) -> None:
    spec = {"containers": [{"name": "c"}], **change}
    assert strictest(spec) == level
    stricter = pod_security.LEVELS[pod_security.LEVELS.index(level) + 1]  # type: ignore[arg-type]
    assert any(said in v for v in violations(spec, stricter))


def test_a_pod_with_the_restricted_context_passes_restricted() -> None:
    spec = {"containers": [RESTRICTED_CONTAINER], "volumes": [{"name": "cm", "configMap": {"name": "x"}}]}
    assert violations(spec, "restricted") == [] and strictest(spec) == "restricted"
    # Pod-level runAsNonRoot and seccomp count for every container.
    container = {
        "name": "c",
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }
    pod = {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
    }
    assert violations(pod, "restricted") == []
    assert any(
        "runs as user 0" in v
        for v in violations(
            {**pod, "securityContext": {**pod["securityContext"], "runAsUser": 0}}, "restricted"
        )
    )


def _pods(obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(replica, pod template) of an MPIJob's inputs."""
    for role, replica in obj["spec"]["mpiReplicaSpecs"].items():
        yield role, replica["template"]


@pytest.mark.parametrize(
    "jobs",
    [{"enabled": True}, {"enabled": True, "nccl": False, "railBandwidth": True}],
)
@pytest.mark.parametrize("stack", ["dev", "sriov"])
def test_every_rendered_pod_passes_the_level_of_its_namespace(
    run_stack: Callable[..., Run], stack: str, jobs: dict[str, Any]
) -> None:
    raw = raw_config(stack)
    raw.setdefault("workloads", {})["acceptanceJobs"] = jobs
    if stack == "dev":
        raw["workloads"]["railsOnlyTemplate"] = "all-rails"
    run = run_stack(stack, raw)
    levels = {
        ns.inputs["metadata"]["name"]: ns.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
        for ns in run.of_type("kubernetes:core/v1:Namespace")
    }
    jobs_found = run.of_type("kubernetes:kubeflow.org/v2beta1:MPIJob")
    assert jobs_found
    for job in jobs_found:
        namespace = job.inputs["metadata"]["namespace"]
        assert namespace != "default"
        level = levels[namespace]
        assert level == pod_security.WORKLOADS_LEVEL
        for role, template in _pods(job.inputs):
            assert (
                violations(template["spec"], level, template.get("metadata", {}).get("annotations")) == []
            ), role
    if stack == "sriov":
        assert levels[SRIOV_JOBS_NAMESPACE] == "baseline"
    # Every namespace the stack creates enforces a level (none is left to the cluster's default).
    assert all(level in pod_security.LEVELS for level in levels.values())
