"""The generator of oke_gpu_rdma/kueue_crd_schemas.json (tools/kueue_crd_schemas.py), on a made-up git repository."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from oke_gpu_rdma.releases import kueue
from tools import kueue_crd_schemas as tool


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
        path = repo / tool.crd_path(kind)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(crd(kind)))
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "crds")
    git(repo, "tag", "v9.9.9")
    out = tmp_path / "schemas.json"
    assert tool.main(["--git-dir", str(repo / ".git"), "--tag", "v9.9.9", "--out", str(out)]) == 0
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
        tool.main(["--git-dir", str(repo / ".git"), "--tag", "v0.0.0", "--out", str(tmp_path / "x.json")])
        == 1
    )
    assert capsys.readouterr().err.startswith("kueue_crd_schemas: git rev-parse")
