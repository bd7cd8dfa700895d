"""The `pulumi package add` command that adds this repository's component package at its release, for a
program elsewhere (`make package-source`):

    pulumi package add example.com/team/oke-gpu-rdma.git/provider@0.1.0

The repository is this checkout's `origin` remote (no URL is written in the repository itself), the folder
provider/, the version pyproject.toml's (components/package.py PACKAGE_VERSION). The CLI takes a git source as
`<host>/<path>.git/<folder>[@<version>]` ('.git' ends the repository, the folder follows), clones it and checks
out the tag `v<version>` (pulumi/pulumi pkg/cmd/pulumi/packagecmd/package_add.go; sdk/go/common/workspace
plugins.go parsePluginSpecFromURL and gitSource.Download, refs/tags/v + version). So the command refuses to
print a version whose tag this checkout lacks or holds at another version, and an origin that is no URL.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from components.package import PACKAGE_VERSION

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_FOLDER = "provider"

# scp-like `git@host:path` and `ssh://[user@]host[:port]/path`, `https://[user@]host/path` (git-scm.com/docs/
# git-clone, GIT URLS).
_SCP = re.compile(r"^[^@/:]+@(?P<host>[^:/]+):(?P<path>[^/].*)$")
_URL = re.compile(r"^(?:https?|ssh|git)://(?:[^@/]+@)?(?P<host>[^/:]+)(?::\d+)?/(?P<path>.+)$")


class SourceError(Exception):
    """Why the command cannot be given, and what to do."""


def git_source(remote: str) -> str:
    """``remote`` (a clone URL) as the CLI's git source `<host>/<path>.git`, without credentials: the CLI
    clones it over HTTPS (parsePluginSpecFromURL sets the https scheme)."""
    match = _SCP.match(remote) or _URL.match(remote)
    if match is None:
        raise SourceError(
            f"origin is {remote!r}, not a repository URL (https://host/owner/repo or git@host:owner/repo): "
            "pulumi package add clones the repository from the URL it is published at"
        )
    path = match["path"].rstrip("/").removesuffix(".git")
    return f"{match['host']}/{path}.git"


def command(remote: str, version: str) -> str:
    return f"pulumi package add {git_source(remote)}/{PLUGIN_FOLDER}@{version}"


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)


def checked_tag(version: str, root: Path = ROOT) -> None:
    """The tag v<version> in the checkout at ``root``, holding pyproject.toml at ``version``."""
    tag = f"v{version}"
    shown = _git(root, "show", f"refs/tags/{tag}:pyproject.toml")
    if shown.returncode != 0:
        raise SourceError(
            f"this checkout has no tag {tag}, which the CLI checks out for @{version}: tag the release "
            f"(git tag {tag} && git push origin {tag})"
        )
    tagged = tomllib.loads(shown.stdout)["project"]["version"]
    if tagged != version:
        raise SourceError(
            f"the tag {tag} holds pyproject.toml at version {tagged}, not {version}: fix the tag"
        )


def source_command(version: str = PACKAGE_VERSION, root: Path = ROOT) -> str:
    """The command for the checkout at ``root``: its origin, the release ``version`` it is tagged with."""
    remote = _git(root, "remote", "get-url", "origin")
    if remote.returncode != 0:
        raise SourceError(
            "this checkout has no origin remote, so the repository's URL is unknown: add it "
            "(git remote add origin <url>), or add the package from a path (pulumi package add <checkout>/provider)"
        )
    checked_tag(version, root)
    return command(remote.stdout.strip(), version)


def main() -> int:
    try:
        print(source_command())
    except SourceError as err:
        print(f"make package-source: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
