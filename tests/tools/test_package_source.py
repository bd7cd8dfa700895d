"""tools/package_source.py (`make package-source`): the `pulumi package add` command for this repository at
its release tag, in the git-source grammar the CLI parses, or why it cannot be given."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tools.package_source import SourceError, command, source_command

GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"]


@pytest.mark.parametrize(
    "remote",
    [
        "git@github.com:acme/oke-gpu-rdma.git",
        "https://github.com/acme/oke-gpu-rdma",
        "https://github.com/acme/oke-gpu-rdma.git/",
        "https://user:token@github.com/acme/oke-gpu-rdma.git",
        "ssh://git@github.com:22/acme/oke-gpu-rdma.git",
    ],
)
def test_any_clone_url_gives_the_https_source_with_the_plugin_folder(remote: str) -> None:
    # `<host>/<path>.git/<folder>@<version>`: '.git' ends the repository and the folder follows (pulumi/pulumi
    # pkg/cmd/pulumi/packagecmd/package_add.go); no credentials, which the CLI drops anyway.
    assert command(remote, "1.2.3") == "pulumi package add github.com/acme/oke-gpu-rdma.git/provider@1.2.3"


@pytest.mark.parametrize("remote", ["/srv/git/oke-gpu-rdma.git", "file:///srv/git/oke-gpu-rdma.git"])
def test_a_local_origin_is_refused(remote: str) -> None:
    with pytest.raises(SourceError, match="not a repository URL"):
        command(remote, "1.2.3")


def _checkout(tmp_path: Path, version: str) -> Path:
    root = tmp_path / "checkout"
    root.mkdir()
    (root / "pyproject.toml").write_text(f'[project]\nname = "oke-gpu-rdma"\nversion = "{version}"\n')
    for args in (["init", "-q"], ["add", "pyproject.toml"], ["commit", "-q", "-m", "release"]):
        subprocess.run([*GIT, *args], cwd=root, check=True)
    return root


def test_the_command_names_the_origin_at_the_release_tag(tmp_path: Path) -> None:
    root = _checkout(tmp_path, "1.2.3")
    with pytest.raises(SourceError, match="no origin remote"):
        source_command("1.2.3", root)
    subprocess.run(
        [*GIT, "remote", "add", "origin", "git@github.com:acme/oke-gpu-rdma.git"], cwd=root, check=True
    )
    with pytest.raises(SourceError, match=r"no tag v1\.2\.3, which the CLI checks out for @1\.2\.3"):
        source_command("1.2.3", root)
    subprocess.run([*GIT, "tag", "v1.2.3"], cwd=root, check=True)
    assert (
        source_command("1.2.3", root) == "pulumi package add github.com/acme/oke-gpu-rdma.git/provider@1.2.3"
    )
    with pytest.raises(SourceError, match=r"no tag v1\.3\.0"):
        source_command("1.3.0", root)


def test_a_tag_at_another_version_is_refused(tmp_path: Path) -> None:
    root = _checkout(tmp_path, "1.2.2")
    subprocess.run(
        [*GIT, "remote", "add", "origin", "https://github.com/acme/oke-gpu-rdma"], cwd=root, check=True
    )
    subprocess.run([*GIT, "tag", "v1.2.3"], cwd=root, check=True)
    with pytest.raises(SourceError, match=re.escape("holds pyproject.toml at version 1.2.2, not 1.2.3")):
        source_command("1.2.3", root)
