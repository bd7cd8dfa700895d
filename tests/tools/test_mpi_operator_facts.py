"""tools/mpi_operator_facts.py: a release manifest in, the release's facts out (a manifest written here,
shaped as kubeflow/mpi-operator's: a Namespace, a CRD, RBAC and one Deployment)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oke_gpu_rdma.scheduling import mpi_operator
from tools import mpi_operator_facts

COMMIT = "0123456789abcdef0123456789abcdef01234567"
MANIFEST = """\
# a comment before the first document
---
apiVersion: v1
kind: Namespace
metadata: {name: mpi-operator}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: mpijobs.kubeflow.org}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: mpi-operator}
rules: [{apiGroups: [""], resources: [secrets], verbs: [create]}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: mpi-operator, namespace: mpi-operator}
spec:
  template:
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      tolerations: [{key: CriticalAddonsOnly, operator: Exists}]
      serviceAccountName: mpi-operator
      containers: [{name: mpi-operator, image: mpioperator/mpi-operator:9.9.9, args: [--lock-namespace=x]}]
"""


def test_a_release_entry_is_added_beside_the_others(tmp_path: Path) -> None:
    manifest = tmp_path / "mpi-operator.yaml"
    manifest.write_text(MANIFEST)
    out = tmp_path / "releases.json"
    out.write_text(mpi_operator.RELEASES_FILE.read_text())
    assert (
        mpi_operator_facts.main([str(manifest), "--version", "v9.9.9", "--commit", COMMIT, "--out", str(out)])
        == 0
    )
    data = json.loads(out.read_text())
    assert set(data["releases"]) == {"v0.6.0", "v9.9.9"}
    entry = data["releases"]["v9.9.9"]
    assert entry["commit"] == COMMIT
    assert [(o["kind"], o["namespace"], o["name"]) for o in entry["objects"]] == [
        ("Namespace", None, "mpi-operator"),
        ("CustomResourceDefinition", None, "mpijobs.kubeflow.org"),
        ("ClusterRole", None, "mpi-operator"),
        ("Deployment", "mpi-operator", "mpi-operator"),
    ]
    assert entry["deployment"] == {
        "namespace": "mpi-operator",
        "name": "mpi-operator",
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
        "affinity": {},
        "priorityClassName": None,
        "images": ["mpioperator/mpi-operator:9.9.9"],
        "args": [["--lock-namespace=x"]],
        "serviceAccountName": "mpi-operator",
    }
    # The operator's own role, which the stack narrows (oke_gpu_rdma/scheduling/mpi_operator.py).
    assert entry["operatorRules"] == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}]


def test_the_committed_facts_are_what_the_tool_writes() -> None:
    """The file is the tool's output format: re-serialising it changes nothing."""
    text = mpi_operator.RELEASES_FILE.read_text()
    assert json.dumps(json.loads(text), indent=2) + "\n" == text
    release = mpi_operator.release("v0.6.0")
    assert release.manifest_url == (
        "https://raw.githubusercontent.com/kubeflow/mpi-operator/"
        "c983759cfa87fd32ed5711804021ea47eb8d712c/deploy/v2beta1/mpi-operator.yaml"
    )
    assert release.placement().name == "Deployment mpi-operator/mpi-operator"
    assert release.placement().tolerations == ()


@pytest.mark.parametrize(
    ("text", "args", "message"),
    [
        (
            MANIFEST,
            ["--version", "v1", "--commit", COMMIT],
            "--version 'v1': give the release tag, such as v0.6.0",
        ),
        (
            MANIFEST,
            ["--version", "v1.0.0", "--commit", "abc"],
            "--commit 'abc': give the release's full 40-character commit",
        ),
        ("", ["--version", "v1.0.0", "--commit", COMMIT], "the manifest holds no Kubernetes object"),
        ("a: [", ["--version", "v1.0.0", "--commit", COMMIT], "cannot read it as YAML"),
        (
            "kind: Namespace\nmetadata: {name: x}\n",
            ["--version", "v1.0.0", "--commit", COMMIT],
            "the manifest holds 0 Deployments; the operator has exactly one",
        ),
        (
            MANIFEST.replace(
                "kind: ClusterRole\nmetadata: {name: mpi-operator}", "kind: ClusterRole\nmetadata: {name: y}"
            ),
            ["--version", "v1.0.0", "--commit", COMMIT],
            "the manifest holds no ClusterRole mpi-operator, the operator's own role",
        ),
    ],
)
def test_bad_input_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, args: list[str], message: str
) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text(text)
    out = tmp_path / "releases.json"
    assert mpi_operator_facts.main([str(manifest), *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mpi_operator_facts: ") and message in err and len(err.splitlines()) == 1
    assert not out.exists()
