"""The generator of the CRD schemas the preview validates with (tools/record_crd_schemas.py), on made-up git repositories;
the recorded ComputeDomain schema and the e2e CRD built from it (tests/e2e/upstream.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from oke_gpu_rdma.common import crd_schemas
from oke_gpu_rdma.drivers import compute_domains
from oke_gpu_rdma.scheduling import kueue_chart as kueue
from tests.e2e import upstream
from tools import record_crd_schemas as tool


def crd(kind: str) -> dict[str, Any]:
    schema = {
        "type": "object",
        "description": "prose",
        "properties": {
            "spec": {"type": "object", "description": "more", "properties": {"a": {"type": "string"}}}
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "spec": {
            "names": {"kind": kind},
            "versions": [
                {"name": "v1beta1", "served": True, "schema": {"openAPIV3Schema": {"type": "object"}}},
                {"name": "v1beta2", "served": True, "schema": {"openAPIV3Schema": schema}},
            ],
        },
    }


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def test_it_keeps_the_served_v1beta2_schemas_without_prose_and_with_their_source(tmp_path: Path) -> None:
    repo = tmp_path / "kueue"
    repo.mkdir()
    git(repo, "init", "-q")
    for kind in kueue.KINDS:
        path = repo / tool.SOURCES["kueue"].paths[kind]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(crd(kind)))
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "crds")
    git(repo, "tag", "v9.9.9")
    out = tmp_path / "schemas.json"
    assert (
        tool.main(
            ["--source", "kueue", "--git-dir", str(repo / ".git"), "--tag", "v9.9.9", "--out", str(out)]
        )
        == 0
    )
    data = json.loads(out.read_text())
    assert data["tag"] == "v9.9.9"
    assert data["commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert data["kinds"]["Topology"] == {
        "source": "config/components/crd/bases/kueue.x-k8s.io_topologies.yaml",
        "schema": {
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}},
        },
    }


def test_a_missing_tag_is_one_message(tmp_path: Path, capsys: Any) -> None:
    repo = tmp_path / "empty"
    repo.mkdir()
    git(repo, "init", "-q")
    assert (
        tool.main(
            [
                "--source",
                "kueue",
                "--git-dir",
                str(repo / ".git"),
                "--tag",
                "v0.0.0",
                "--out",
                str(tmp_path / "x.json"),
            ]
        )
        == 1
    )
    assert capsys.readouterr().err.startswith("crd_schemas: git rev-parse")


def test_the_monitoring_crds_come_from_the_chart_s_crds_subchart_at_its_tag(tmp_path: Path) -> None:
    repo = tmp_path / "helm-charts"
    repo.mkdir()
    git(repo, "init", "-q")
    source = tool.SOURCES["kube-prometheus-stack"]
    for kind, relative in source.paths.items():
        path = repo / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        document = crd(kind)
        document["spec"]["versions"] = [{**document["spec"]["versions"][1], "name": "v1"}]
        # As the chart's files start: the operator release they were taken from, then the document.
        path.write_text(
            "# https://raw.githubusercontent.com/prometheus-operator/...\n---\n" + yaml.safe_dump(document)
        )
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "crds")
    git(repo, "tag", source.default_tag)
    out = tmp_path / "schemas.json"
    assert (
        tool.main(["--source", "kube-prometheus-stack", "--git-dir", str(repo / ".git"), "--out", str(out)])
        == 0
    )
    data = json.loads(out.read_text())
    assert (data["repository"], data["tag"], data["apiVersion"]) == (
        "https://github.com/prometheus-community/helm-charts",
        "kube-prometheus-stack-88.5.3",
        "monitoring.coreos.com/v1",
    )
    assert (
        data["kinds"]["PodMonitor"]["source"]
        == "charts/kube-prometheus-stack/charts/crds/crds/crd-podmonitors.yaml"
    )
    assert "description" not in json.dumps(data["kinds"]["PrometheusRule"]["schema"])


def test_the_mpijob_crd_is_found_among_the_manifest_s_documents(tmp_path: Path) -> None:
    repo = tmp_path / "mpi-operator"
    repo.mkdir()
    git(repo, "init", "-q")
    source = tool.SOURCES["mpi-operator"]
    document = crd("MPIJob")
    document["spec"]["versions"] = [{**document["spec"]["versions"][1], "name": "v2beta1"}]
    path = repo / source.paths["MPIJob"]
    path.parent.mkdir(parents=True, exist_ok=True)
    # The deploy manifest: the namespace, the CRD, the operator's RBAC and Deployment, in one file.
    path.write_text(
        yaml.safe_dump_all([{"apiVersion": "v1", "kind": "Namespace"}, document, {"kind": "Deployment"}])
    )
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "manifest")
    git(repo, "tag", source.default_tag)
    out = tmp_path / "schemas.json"
    assert tool.main(["--source", "mpi-operator", "--git-dir", str(repo / ".git"), "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["kinds"]["MPIJob"]["source"] == "deploy/v2beta1/mpi-operator.yaml"
    assert data["apiVersion"] == "kubeflow.org/v2beta1"


def test_the_compute_domain_crd_is_read_at_a_commit_with_its_names(tmp_path: Path) -> None:
    """The driver's chart version has no tag: the source is pinned by commit, which --tag takes as well. The CRD's
    group, names, scope and subresources are kept beside the schema, for the e2e control plane to build it."""
    repo = tmp_path / "dra-driver-nvidia-gpu"
    repo.mkdir()
    git(repo, "init", "-q")
    source = tool.SOURCES["dra-driver-nvidia-gpu"]
    assert source.default_tag == compute_domains.SOURCE_COMMIT
    document = crd(compute_domains.KIND)
    document["spec"]["group"] = compute_domains.API_GROUP
    document["spec"]["names"] = {
        "kind": "ComputeDomain",
        "listKind": "ComputeDomainList",
        "plural": "computedomains",
        "singular": "computedomain",
    }
    document["spec"]["scope"] = "Namespaced"
    document["spec"]["versions"] = [
        {
            **document["spec"]["versions"][1],
            "name": "v1beta1",
            "storage": True,
            "subresources": {"status": {}},
        }
    ]
    path = repo / compute_domains.CRD_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    # As controller-gen writes it: a document separator first.
    path.write_text("---\n" + yaml.safe_dump(document))
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "crds")
    commit = git(repo, "rev-parse", "HEAD").strip()
    out = tmp_path / "schemas.json"
    assert (
        tool.main(
            [
                "--source",
                "dra-driver-nvidia-gpu",
                "--git-dir",
                str(repo / ".git"),
                "--tag",
                commit,
                "--out",
                str(out),
            ]
        )
        == 0
    )
    data = json.loads(out.read_text())
    assert (data["repository"], data["tag"], data["commit"], data["apiVersion"]) == (
        "https://github.com/kubernetes-sigs/dra-driver-nvidia-gpu",
        commit,
        commit,
        "resource.nvidia.com/v1beta1",
    )
    assert data["kinds"]["ComputeDomain"] == {
        "source": compute_domains.CRD_PATH,
        "group": "resource.nvidia.com",
        "names": document["spec"]["names"],
        "scope": "Namespaced",
        "subresources": {"status": {}},
        "schema": {
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}},
        },
    }


def test_the_other_sources_keep_the_schema_alone() -> None:
    assert [name for name, source in tool.SOURCES.items() if source.definition] == ["dra-driver-nvidia-gpu"]


def test_the_recorded_compute_domain_schema_is_the_pinned_commit_s() -> None:
    data = crd_schemas.COMPUTE_DOMAINS.load()
    assert (data["tag"], data["commit"], data["apiVersion"]) == (
        compute_domains.SOURCE_COMMIT,
        compute_domains.SOURCE_COMMIT,
        compute_domains.API_VERSION,
    )
    (kind,) = data["kinds"]
    assert kind == compute_domains.KIND
    assert data["kinds"][kind]["source"] == compute_domains.CRD_PATH
    assert crd_schemas.COMPUTE_DOMAINS in crd_schemas.SOURCES
    assert crd_schemas.COMPUTE_DOMAINS.provenance() == (
        "https://github.com/kubernetes-sigs/dra-driver-nvidia-gpu commit 959320466837 CRDs"
    )
    assert "description" not in json.dumps(data)


def test_the_e2e_compute_domain_crd_is_built_from_the_recorded_schema() -> None:
    """tests/e2e/upstream.py installs the CRD from the recorded file (the driver's chart and module are not served
    there); the CRD it builds names the kind as the chart's file does and carries the recorded schema unchanged."""
    (built,) = upstream.compute_domain_crds()
    recorded = crd_schemas.COMPUTE_DOMAINS.load()["kinds"]["ComputeDomain"]
    assert (built["apiVersion"], built["kind"]) == ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    assert built["metadata"] == {"name": "computedomains.resource.nvidia.com"}
    spec = built["spec"]
    assert (spec["group"], spec["scope"]) == (compute_domains.API_GROUP, "Namespaced")
    assert spec["names"] == {
        "kind": compute_domains.KIND,
        "listKind": "ComputeDomainList",
        "plural": compute_domains.PLURAL,
        "singular": "computedomain",
    }
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1beta1", True, True)
    assert version["subresources"] == {"status": {}}
    assert version["schema"] == {"openAPIV3Schema": recorded["schema"]}
    # A copy: changing the built CRD leaves the recorded schema alone.
    version["schema"]["openAPIV3Schema"]["properties"].clear()
    assert crd_schemas.COMPUTE_DOMAINS.load()["kinds"]["ComputeDomain"]["schema"]["properties"]
