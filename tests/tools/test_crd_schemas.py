"""The generator of the CRD schemas the preview validates with (tools/crd_schemas.py), on made-up git repositories."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from oke_gpu_rdma.releases import kueue
from tools import crd_schemas as tool


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
