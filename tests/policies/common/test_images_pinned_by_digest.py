"""images-pinned-by-digest: every image a workload, a chart value or a NicClusterPolicy of the stack names is
pinned by digest, or allowed unpinned by name in the pack config (issue 36, finding 8)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from oke_gpu_rdma.common import images, resource_types
from oke_gpu_rdma.common.pod_specs import POD_TEMPLATES_LABEL
from tests.policies.policy_helpers import (
    K8S_PROVIDER,
    analyze,
    dranet_release,
    k8s,
    notes,
    resource,
    violations,
)

POLICY = "images-pinned-by-digest"
ROOT = Path(__file__).resolve().parents[3]
TAGGED = "registry.k8s.io/kubectl:v1.36.3"
DIGEST = "sha256:6e4fce3c83651edb91b74bc67701c5cd263dd8aa3cd4254b1798d6425a5ab789"
PINNED = f"{TAGGED}@{DIGEST}"


def pod_spec(image: Any, init: Any = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": image}]}
    if init is not None:
        spec["initContainers"] = [{"name": "setup", "image": init}]
    return spec


def template(image: Any) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "a"}}, "spec": pod_spec(image)}


WORKLOADS = {
    "Pod": lambda i: {"apiVersion": "v1", "kind": "Pod", "spec": pod_spec(i)},
    "Deployment": lambda i: {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "spec": {"template": template(i)},
    },
    "DaemonSet": lambda i: {"apiVersion": "apps/v1", "kind": "DaemonSet", "spec": {"template": template(i)}},
    "StatefulSet": lambda i: {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "spec": {"template": template(i)},
    },
    "ReplicaSet": lambda i: {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "spec": {"template": template(i)},
    },
    "Job": lambda i: {"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": template(i)}},
    "CronJob": lambda i: {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": template(i)}}},
    },
    "MPIJob": lambda i: {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 2, "template": template(i)}}},
    },
}


def workload(kind: str, image: Any, name: str = "w") -> Any:
    obj = WORKLOADS[kind](image)
    obj["metadata"] = {"name": name, "namespace": "rdma-dranet"}
    return k8s(obj)


@pytest.mark.parametrize("kind", list(WORKLOADS))
def test_a_workload_image_by_tag_is_refused_naming_the_resource_the_image_and_the_fix(kind: str) -> None:
    (found,) = violations(analyze([workload(kind, TAGGED)]), POLICY)
    assert found.level == "mandatory"
    assert found.message.startswith(f"{kind} rdma-dranet/w ")
    assert f"container main: image '{TAGGED}' is not pinned by digest" in found.message
    assert f"Fix: write it as {TAGGED}@sha256:<digest>" in found.message
    assert f"list '{TAGGED}' in the pack config's images-pinned-by-digest.allowUnpinned" in found.message
    assert violations(analyze([workload(kind, PINNED)]), POLICY) == []


def test_init_containers_count_and_a_digest_without_a_tag_is_pinned() -> None:
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec(PINNED, TAGGED)}
    (found,) = violations(analyze([k8s(obj)]), POLICY)
    assert "initContainer setup" in found.message
    untagged = {**obj, "spec": pod_spec(f"registry.k8s.io/kubectl@{DIGEST}")}
    assert violations(analyze([k8s(untagged)]), POLICY) == []


def test_an_image_unknown_during_preview_is_a_note() -> None:
    from tests.policies.policy_helpers import UNKNOWN

    assert violations(analyze([workload("Deployment", UNKNOWN)]), POLICY) == []
    assert notes(analyze([workload("Deployment", UNKNOWN)]), POLICY)


def test_an_image_the_pack_config_allows_passes_and_only_that_one() -> None:
    config = {POLICY: {"allowUnpinned": [TAGGED]}}
    assert violations(analyze([workload("Job", TAGGED)], config), POLICY) == []
    (found,) = violations(analyze([workload("Job", "registry.k8s.io/kubectl:v1.36.4")], config), POLICY)
    assert "'registry.k8s.io/kubectl:v1.36.4' is not pinned" in found.message


def test_the_fabric_checks_job_templates_count() -> None:
    job = WORKLOADS["MPIJob"](TAGGED)
    job["metadata"] = {"name": "nccl"}
    config_map = k8s(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "fabric-check",
                "namespace": "rdma-dranet",
                "labels": {POD_TEMPLATES_LABEL: "true"},
            },
            "data": {"nccl.json": json.dumps(job), "run.sh": "echo not json"},
        }
    )
    (found,) = violations(analyze([config_map]), POLICY)
    assert found.message.startswith("ConfigMap rdma-dranet/fabric-check data nccl.json (MPIJob) ")
    assert f"'{TAGGED}' is not pinned" in found.message


def test_a_chart_image_value_must_carry_the_digest() -> None:
    (found,) = violations(analyze([dranet_release()]), POLICY)
    assert found.message.startswith("Release dranet (chart dranet) values image.tag: image ")
    assert f"'{images.DRANET_IMAGE}' is not pinned by digest" in found.message
    pinned = dranet_release()
    values = copy.deepcopy(pinned.inputs["values"])
    values["image"]["tag"] = f"v1.5.0@{DIGEST}"
    pinned = dranet_release()
    pinned = resource(pinned.type, pinned.name, {**pinned.inputs, "values": values}, provider=K8S_PROVIDER)
    assert violations(analyze([pinned]), POLICY) == []


def test_a_charts_own_image_is_the_charts_and_a_repository_alone_is_unpinned() -> None:
    plugin = {"chart": "nvidia-device-plugin", "version": "0.19.3", "values": {"migStrategy": "none"}}
    release = resource(resource_types.HELM_RELEASE, "plugin", plugin, provider=K8S_PROVIDER)
    assert violations(analyze([release]), POLICY) == []
    moved = {**plugin, "values": {"image": {"repository": "example.com/mirror/k8s-device-plugin"}}}
    (found,) = violations(
        analyze([resource(resource_types.HELM_RELEASE, "plugin", moved, provider=K8S_PROVIDER)]), POLICY
    )
    assert found.message == (
        "Release plugin (chart nvidia-device-plugin) values image.repository: sets the image's repository "
        "'example.com/mirror/k8s-device-plugin' but leaves its tag to the chart, so the image is not pinned by "
        "digest. Fix: set image.tag to <tag>@sha256:<digest> as well"
    )


def nic_cluster_policy(version: str) -> Any:
    spec = {"repository": "nvcr.io/nvidia/mellanox", "image": "nvidia-k8s-ipam", "version": version}
    return k8s(
        {
            "apiVersion": "mellanox.com/v1alpha1",
            "kind": "NicClusterPolicy",
            "metadata": {"name": "nic-cluster-policy"},
            "spec": {"nvIpam": {**spec, "enableWebhook": False}},
        }
    )


def test_a_nic_cluster_policy_image_is_pinned_by_a_sha256_version() -> None:
    (found,) = violations(analyze([nic_cluster_policy("network-operator-v26.7.1")]), POLICY)
    assert found.message.startswith("NicClusterPolicy default/nic-cluster-policy spec.nvIpam: image ")
    assert "'nvcr.io/nvidia/mellanox/nvidia-k8s-ipam:network-operator-v26.7.1'" in found.message
    assert "set its version to sha256:<digest>" in found.message
    assert violations(analyze([nic_cluster_policy(DIGEST)]), POLICY) == []


def test_a_bad_pack_config_is_refused_naming_the_key() -> None:
    """As the CLI refuses it against the schema: the preview stops before any policy runs."""
    from preview.policy_check import PackConfigError

    with pytest.raises(PackConfigError) as err:
        analyze([workload("Pod", PINNED)], {POLICY: {"allowUnpinned": [PINNED]}})
    assert (
        f"images-pinned-by-digest.allowUnpinned: {PINNED!r} is not an image by tag (repo:tag): list the tag "
        "the stack writes"
    ) in str(err.value)


@pytest.mark.parametrize(
    ("stack", "gaps"),
    [
        ("dev", {images.DRANET_IMAGE}),
        ("sriov", {images.NCCL_TESTS_IMAGE, *images.NETWORK_OPERATOR_IMAGES}),
        ("fleet", {images.DRANET_IMAGE}),
    ],
)
def test_the_example_stacks_write_nothing_unpinned_but_their_known_gaps(stack: str, gaps: set[str]) -> None:
    """Without the allowance the pack refuses exactly the known gaps; with the section the project's stacks
    need (:func:`oke_gpu_rdma.common.images.allowance_for`) the preview passes."""
    from preview.cli import load_stack
    from preview.mock_runtime import run_program
    from preview.policy_check import analyze_run
    from preview.stacks import EXAMPLES

    run = run_program(stack, load_stack(stack, [EXAMPLES]))
    config = json.loads((ROOT / "rendered" / stack / "policy-pack-config.json").read_text())
    written = config.pop(POLICY)  # the program's own section (stack_config/pack_config.py written_images)
    found = violations(analyze_run(run, config), POLICY)
    assert {f.message.split("'")[1] for f in found} == gaps
    # Every gap the pack finds, and only known gaps (the MPI operator's image is in its manifest, applied unseen).
    assert gaps <= set(written["allowUnpinned"]) <= set(images.KNOWN_GAPS)
    assert violations(analyze_run(run, {**config, POLICY: written}), POLICY) == []
