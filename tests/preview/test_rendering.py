"""rendered/<stack>/: a record per declared resource, manifests apart (preview/rendering.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import yaml

from oke_gpu_rdma.common import resource_types
from preview import rendering
from preview.mock_runtime import pulumi_config_map, run_program
from tests.support import Run, stack_document


@pytest.fixture(scope="module")
def dev_files() -> dict[str, str]:
    run = run_program("dev", pulumi_config_map(stack_document("dev")))
    return rendering.render_files(run.resources, {"all": "mandatory"})


def record(files: dict[str, str], name: str) -> dict[str, object]:
    (path,) = [p for p in files if p.startswith("resources/") and p.endswith(f".{name}.yaml")]
    document: dict[str, object] = yaml.safe_load(files[path])
    return document


def test_every_declared_resource_has_a_record(run_stack: Callable[..., Run]) -> None:
    run = run_stack("dev")
    files = rendering.render_files(run.resources, {})
    records = [yaml.safe_load(text) for path, text in files.items() if path.startswith("resources/")]
    assert sorted(r["urn"] for r in records) == sorted(r.urn for r in run.resources)
    # Rendering is a function of the run: the same bytes twice.
    assert rendering.render_files(run.resources, {}) == files


def test_manifests_hold_only_kubernetes_api_objects(dev_files: dict[str, str]) -> None:
    kinds = {
        yaml.safe_load(text)["kind"] for path, text in dev_files.items() if path.startswith("manifests/")
    }
    assert kinds == {"ConfigMap", "DeviceClass", "Namespace", "ResourceClaimTemplate"}
    release = record(dev_files, "dranet-release")
    assert release["type"] == resource_types.HELM_RELEASE and "manifest" not in release
    template = record(dev_files, "claim-templates-rdma-dranet-all-rails")
    assert template["manifest"] == "manifests/resourceclaimtemplate.rdma-dranet.all-rails.yaml"
    assert template["options"] == {
        "deleteBeforeReplace": True,
        "replaceOnChanges": ["spec"],
        "aliases": [
            f"type=kubernetes:resource.k8s.io/{v}:ResourceClaimTemplate"
            for v in ("v1alpha1", "v1alpha2", "v1alpha3", "v1beta1", "v1beta2")
        ],
    }


def test_node_pool_record_shows_cloud_init_as_text_and_references_by_name(dev_files: dict[str, str]) -> None:
    pool = record(dev_files, "gpu-b4-nodes")
    assert pool["parent"] == "gpu-b4" and pool["options"] == {
        "protect": True,
        "deleteBeforeReplace": True,
        "customTimeouts": {"create": "120m", "update": "120m", "delete": "120m"},
    }
    assert pool["dependsOn"] == ["gpu-b4-compute-cluster"]
    assert pool["decodedFromBase64"] == ["nodeMetadata.user_data"]
    inputs = pool["inputs"]
    assert isinstance(inputs, dict)
    assert inputs["nodeMetadata"]["user_data"].startswith("#cloud-config\n")
    # The stack's own OCIDs stay as given; a created resource's id is named by the resource.
    assert inputs["clusterId"] == "ocid1.cluster.oc1.iad.aaaaaaaaexampleclustergpurdma"
    assert inputs["nodeConfigDetails"]["computeClusterId"] == "${gpu-b4-compute-cluster.id}"


def test_secrets_stay_masked(dev_files: dict[str, str]) -> None:
    provider = record(dev_files, "oke-k8s")
    assert provider["inputs"] == {"kubeconfig": "[secret]"}


@pytest.mark.parametrize(
    ("token", "slug"),
    [
        ("oci:ContainerEngine/nodePool:NodePool", "oci-containerengine-nodepool"),
        ("kubernetes:helm.sh/v3:Release", "kubernetes-helm.sh-v3-release"),
        ("pulumi:providers:kubernetes", "pulumi-providers-kubernetes"),
        ("oke-gpu-rdma:index:RdmaGpuNodePool", "oke-gpu-rdma-index-rdmagpunodepool"),
    ],
)
def test_type_slugs_are_readable(token: str, slug: str) -> None:
    assert rendering.type_slug(token) == slug


@pytest.mark.parametrize("stack", ["dev", "full", "sriov"])
def test_the_documents_a_rendering_hands_the_plan_are_what_its_files_load_to(stack: str) -> None:
    # The change plan takes these instead of loading the new rendering's files (preview/cli.py).
    run = run_program(stack, pulumi_config_map(stack_document(stack)))
    documents: dict[str, object] = {}
    files = rendering.render_files(run.resources, {}, documents)
    yaml_files = {p: t for p, t in files.items() if p.endswith(".yaml")}
    assert set(documents) == set(yaml_files.values())
    for text in yaml_files.values():
        assert documents[text] == yaml.safe_load(text)
    assert rendering.render_files(run.resources, {}) == files
