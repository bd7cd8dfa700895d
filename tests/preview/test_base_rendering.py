"""Where the plan's base comes from: a git ref's committed rendering, or a folder (preview/base_rendering.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from preview import base_rendering


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def repo_with_rendering(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "rendered/dev/resources").mkdir(parents=True)
    (repo / "rendered/dev/resources/a.yaml").write_text("type: t\nname: a\nurn: u\n")
    (repo / "rendered/dev/policy-pack-config.json").write_text("{}\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "rendering")
    return repo


def test_reads_the_committed_rendering_at_a_ref(tmp_path: Path) -> None:
    repo = repo_with_rendering(tmp_path)
    # Changes in the work tree are not the base: the commit is.
    (repo / "rendered/dev/resources/a.yaml").write_text("changed\n")
    base = base_rendering.from_git("dev", "HEAD", repo)
    assert base.files == {"policy-pack-config.json": "{}\n", "resources/a.yaml": "type: t\nname: a\nurn: u\n"}
    assert base.description == f"rendered/dev/ at HEAD ({git(repo, 'rev-parse', '--short', 'HEAD')})"


def test_no_base_says_why(tmp_path: Path) -> None:
    repo = repo_with_rendering(tmp_path)
    missing = base_rendering.from_git("prod", "HEAD", repo)
    assert missing.files is None
    assert missing.description == "no base: rendered/prod/ is not in HEAD; everything is a create"
    outside = base_rendering.from_git("dev", "HEAD", tmp_path / "nowhere")
    assert outside.files is None
    plain = tmp_path / "plain"
    plain.mkdir()
    not_git = base_rendering.from_git("dev", "HEAD", plain)
    assert not_git.description == f"no base: {plain} is not a git repository; everything is a create"


@pytest.mark.parametrize("ref", ["no-such-ref", "HEAD~5", "--output=x", "HEAD^{tree}"])
def test_a_base_ref_that_names_no_commit_is_an_error(tmp_path: Path, ref: str) -> None:
    repo = repo_with_rendering(tmp_path)
    with pytest.raises(base_rendering.BaseRefError) as caught:
        base_rendering.from_git("dev", ref, repo)
    assert str(caught.value) == (
        f"--base {ref} (BASE={ref}) names no commit of this repository; pass a branch, tag or commit "
        "(default HEAD; git branch -a lists them)"
    )


def test_a_rendering_without_records_is_no_base(tmp_path: Path) -> None:
    # What rendered/ held before resource records: Kubernetes manifests only.
    old = tmp_path / "dev"
    old.mkdir()
    (old / "namespace._cluster.rdma-dranet.yaml").write_text("kind: Namespace\n")
    base = base_rendering.from_folder(old, "rendered/dev/")
    assert base.files is None
    assert base.description == (
        "no base: rendered/dev/ has no resources/ records (rendered before change plans); everything is a create"
    )
