"""The rendering a plan starts from: `rendered/<stack>/` as committed at a git ref, or a folder.

`make preview` compares with the committed rendering at HEAD (what the branch last agreed on); CI
passes the pull request's base commit. Reading goes through the `git` command (ls-tree, then one
cat-file --batch for every file), so nothing is checked out. Without git, outside a git repository, or
without the stack in the ref there is no base, and the plan says why: everything is then a create. A ref
that names no commit is an error (:class:`BaseRefError`): a typo in `BASE=` must not turn the plan into
"create everything".
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .mock_runtime import ROOT
from .rendering import RESOURCES


@dataclass(frozen=True)
class BaseFiles:
    """The files of the base rendering (relative to `rendered/<stack>/`), or None and the reason."""

    files: dict[str, str] | None
    description: str
    """Where the base comes from (`rendered/dev/ at HEAD (8cfd9db)`), or why there is none."""


class BaseRefError(Exception):
    """`--base` (`BASE=`) names no commit of the repository; the message says which ref and what to pass."""


def _no_base(reason: str) -> BaseFiles:
    return BaseFiles(None, f"no base: {reason}; everything is a create")


def from_git(stack: str, ref: str, root: Path = ROOT, folder: str = "rendered") -> BaseFiles:
    prefix = f"{folder}/{stack}/"
    if shutil.which("git") is None:
        return _no_base("git is not installed")
    if not root.is_dir():
        return _no_base(f"{root} is not a folder")
    inside = subprocess.run(
        ["git", "rev-parse", "--git-dir"], cwd=root, capture_output=True, check=False
    ).returncode
    if inside != 0:
        return _no_base(f"{root} is not a git repository")
    # `<ref>^{commit}`: the ref must resolve to a commit (a tag is peeled; a tree or blob is refused).
    resolved = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
        cwd=root,
        capture_output=True,
        check=False,
    )
    if resolved.returncode != 0 or ref.startswith("-"):
        raise BaseRefError(
            f"--base {ref} (BASE={ref}) names no commit of this repository; pass a branch, tag or commit "
            "(default HEAD; git branch -a lists them)"
        )
    listed = subprocess.run(
        ["git", "ls-tree", "-r", "-z", "--name-only", ref, "--", prefix],
        cwd=root,
        capture_output=True,
        check=False,
    )
    if listed.returncode != 0:
        error = listed.stderr.decode(errors="replace").strip().splitlines()
        return _no_base(f"git could not list {prefix} at {ref} ({error[0] if error else 'git failed'})")
    paths = [p for p in listed.stdout.decode().split("\0") if p]
    if not paths:
        return _no_base(f"{prefix} is not in {ref}")
    short = subprocess.run(
        ["git", "rev-parse", "--short", ref], cwd=root, capture_output=True, text=True, check=False
    ).stdout.strip()
    blobs = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=root,
        input="".join(f"{ref}:{p}\n" for p in paths).encode(),
        capture_output=True,
        check=True,
    ).stdout
    files: dict[str, str] = {}
    offset = 0
    for path in paths:
        header_end = blobs.index(b"\n", offset)
        size = int(blobs[offset:header_end].split()[2])
        files[path.removeprefix(prefix)] = blobs[header_end + 1 : header_end + 1 + size].decode()
        offset = header_end + 1 + size + 1  # the blob, then a newline
    described = f"{prefix} at {ref}" + (f" ({short})" if short and short != ref else "")
    return _usable_base(files, described)


def from_folder(path: Path, shown: str | None = None) -> BaseFiles:
    if not path.is_dir():
        return _no_base(f"{shown or path} does not exist")
    files = {str(p.relative_to(path)): p.read_text() for p in sorted(path.rglob("*")) if p.is_file()}
    return _usable_base(files, shown or str(path))


def _usable_base(files: dict[str, str], described: str) -> BaseFiles:
    """The base, or no base when it predates resource records (nothing to plan against)."""
    if not any(p.startswith(f"{RESOURCES}/") for p in files):
        # Renderings made before resource records held Kubernetes manifests only.
        return _no_base(f"{described} has no {RESOURCES}/ records (rendered before change plans)")
    return BaseFiles(files, described)
