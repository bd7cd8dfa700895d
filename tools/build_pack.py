"""Build the policy pack as a self-contained directory that `pulumi policy publish` can upload.

`policies/` alone does not install: its requirements.txt installs the domain library with `-e ..`,
a path that does not exist once the CLI has uploaded the directory and an organisation's stacks
download it. The built pack holds:

- every file of `policies/` except virtualenvs and caches (new policy modules come along);
- a copy of each domain library package (`oke_gpu_rdma/`, package data included) next to
  `oke_rdma_policies/`: the CLI runs `python -m pulumi.policy <engine> <pack dir>` with the pack
  directory as working directory, so that directory is `sys.path[0]` and the copy is what imports;
- a requirements.txt pinning what the pack installs (policies/requirements.txt without `-e ..`) and
  what the domain library needs: pyproject.toml's `[project].dependencies`, each at the version
  requirements.txt pins for the program;
- a .gitignore keeping `venv/` and bytecode out of the archive the CLI uploads;
- PulumiPolicy.yaml with the release's version: the repository's tag `vX.Y.Z` on HEAD, or `--version`.
  The CLI publishes a pack under the version in that file and refuses one already published, so the
  version of what an organisation enforces is the version of the code it came from.

    python -m tools.build_pack [--out build/policy-pack] [--version X.Y.Z]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "build" / "policy-pack"

# Never part of a pack: virtualenvs (the CLI makes its own), bytecode and tool caches.
_SKIP = shutil.ignore_patterns(
    "venv", ".venv", "__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache", ".ruff_cache", "*.egg-info"
)
# Semantic versions, as semver.org's grammar writes them (the CLI publishes a pack under one).
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$"
)
_VERSION_LINE = re.compile(r"^version:.*$", re.M)
# The pulumi CLI archives the pack minus what a .gitignore in it (or above it) ignores.
PACK_GITIGNORE = "venv/\n.venv/\n__pycache__/\n*.pyc\n"


class BuildError(Exception):
    """The pack cannot be built; the message says why and what to change."""


@dataclass(frozen=True)
class Built:
    out: Path
    packages: list[str]
    requirements: list[str]
    version: str


def _requirement_lines(path: Path) -> Iterable[tuple[int, str]]:
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            yield number, line


def _parse(path: Path, number: int, line: str) -> Requirement:
    try:
        return Requirement(line)
    except InvalidRequirement as err:
        raise BuildError(f"{path.relative_to(path.parents[1])}:{number}: {line!r}: {err}") from None


def _pins(path: Path) -> dict[str, tuple[str, Requirement]]:
    """`name==version` lines of a requirements file by canonical name (options and paths skipped)."""
    pins: dict[str, tuple[str, Requirement]] = {}
    for number, line in _requirement_lines(path):
        if line.startswith("-"):
            continue
        req = _parse(path, number, line)
        if len(req.specifier) == 1 and next(iter(req.specifier)).operator == "==":
            pins[canonicalize_name(req.name)] = (line, req)
    return pins


def _project(root: Path) -> tuple[str, list[str], list[str]]:
    """(distribution name, dependencies, top-level packages) from pyproject.toml."""
    try:
        data = tomllib.loads((root / "pyproject.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise BuildError(f"cannot read pyproject.toml: {err}") from None
    project = data.get("project", {})
    found = data.get("tool", {}).get("setuptools", {}).get("packages", {}).get("find", {})
    include = found.get("include", []) if isinstance(found, dict) else []
    packages = sorted({pattern.split(".")[0] for pattern in include if pattern.split(".")[0].isidentifier()})
    if not packages:
        raise BuildError("pyproject.toml: [tool.setuptools] packages.find.include names no package to vendor")
    return str(project.get("name", "")), list(project.get("dependencies", [])), packages


def pack_requirements(root: Path = ROOT) -> list[str]:
    """The built pack's requirements: the pack's own pins, then the domain library's dependencies pinned."""
    pack_file = root / "policies" / "requirements.txt"
    name, dependencies, _ = _project(root)
    out: list[str] = []
    seen: dict[str, str] = {}
    for number, line in _requirement_lines(pack_file):
        if line.startswith(("-e", "--editable")):
            target = re.sub(r"^(-e|--editable)[=\s]*", "", line)
            if (pack_file.parent / target).resolve() != root.resolve():
                raise BuildError(
                    f"policies/requirements.txt:{number}: {line!r}: only the domain library (-e ..) "
                    "can be vendored; publish other local packages to an index and pin them"
                )
            continue
        if line.startswith("-"):
            raise BuildError(
                f"policies/requirements.txt:{number}: {line!r}: a published pack takes pins only"
            )
        req = _parse(pack_file, number, line)
        seen[canonicalize_name(req.name)] = line
        out.append(line)
    program_pins = _pins(root / "requirements.txt")
    for dependency in dependencies:
        try:
            req = Requirement(dependency)
        except InvalidRequirement as err:
            raise BuildError(f"pyproject.toml: dependency {dependency!r}: {err}") from None
        key = canonicalize_name(req.name)
        if key not in program_pins:
            raise BuildError(
                f"requirements.txt pins no version of {req.name} ({name} needs {dependency!r} in "
                "pyproject.toml): add `name==version` there"
            )
        line, pin = program_pins[key]
        version = next(iter(pin.specifier)).version
        if req.specifier and not req.specifier.contains(version, prereleases=True):
            raise BuildError(f"requirements.txt pins {line}, outside pyproject.toml's {dependency!r}")
        pinned = f"{pin.name}=={version}" + (f"; {req.marker}" if req.marker else "")
        if key in seen:
            if Requirement(seen[key]).specifier != pin.specifier:
                raise BuildError(
                    f"policies/requirements.txt has {seen[key]} but requirements.txt pins {line}: pin one version"
                )
            continue
        seen[key] = pinned
        out.append(pinned)
    return out


def release_version(root: Path = ROOT) -> str:
    """The version of the release HEAD is tagged with (`v1.2.0` -> `1.2.0`)."""
    try:
        result = subprocess.run(
            ["git", "describe", "--tags", "--exact-match", "--match", "v[0-9]*", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as err:
        raise BuildError(f"cannot run git to read the release tag ({err}): give --version X.Y.Z") from None
    tag = result.stdout.strip()
    if result.returncode != 0 or not tag:
        raise BuildError(
            "HEAD carries no release tag vX.Y.Z, which names the pack's version: tag the release "
            "(git tag v1.2.0) or give the version (make pack PACK_VERSION=1.2.0)"
        )
    return checked_version(tag.removeprefix("v"), f"the tag {tag}")


def checked_version(version: str, where: str = "--version") -> str:
    if not _SEMVER.match(version):
        raise BuildError(
            f"{where}: {version!r} is not a semantic version X.Y.Z (semver.org), which the CLI needs"
        )
    return version


def _with_version(text: str, version: str) -> str:
    line = f"version: {version}"
    return (
        _VERSION_LINE.sub(line, text, count=1) if _VERSION_LINE.search(text) else f"{text.rstrip()}\n{line}\n"
    )


def _is_built_pack(path: Path) -> bool:
    return (path / "PulumiPolicy.yaml").is_file() and (path / "requirements.txt").is_file()


def build(out: Path = DEFAULT_OUT, root: Path = ROOT, version: str | None = None) -> Built:
    """Write the self-contained pack to `out`, replacing a pack built there before; its version is
    `version`, or the release tag on HEAD."""
    version = checked_version(version) if version is not None else release_version(root)
    source = root / "policies"
    out = out.resolve()
    _, _, packages = _project(root)
    for inside in (source, *(root / p for p in packages)):
        if out == inside.resolve() or out.is_relative_to(inside.resolve()):
            raise BuildError(f"{out} is inside {inside}: build the pack elsewhere")
        if inside != source and (source / inside.name).exists():
            raise BuildError(f"policies/{inside.name} exists: the vendored domain library would replace it")
    requirements = pack_requirements(root)
    if out.exists():
        if not out.is_dir() or (any(out.iterdir()) and not _is_built_pack(out)):
            raise BuildError(f"{out} exists and is not a built policy pack: choose another --out")
        shutil.rmtree(out)
    shutil.copytree(source, out, ignore=_SKIP)
    for package in packages:
        shutil.copytree(root / package, out / package, ignore=_SKIP)
    header = (
        "# Generated by tools/build_pack.py (make pack): the pack's pins from policies/requirements.txt,\n"
        "# then the domain library's dependencies (pyproject.toml) at the versions requirements.txt pins.\n"
    )
    (out / "requirements.txt").write_text(header + "".join(f"{line}\n" for line in requirements))
    (out / ".gitignore").write_text(PACK_GITIGNORE)
    manifest = out / "PulumiPolicy.yaml"
    manifest.write_text(_with_version(manifest.read_text(), version))
    return Built(out, packages, requirements, version)


def ignored_by_git(path: Path) -> bool:
    """Whether a .gitignore of this repository ignores `path`; the CLI would then upload nothing of it."""
    try:
        result = subprocess.run(
            ["git", "check-ignore", "-q", str(path / "PulumiPolicy.yaml")],
            cwd=ROOT,
            capture_output=True,
            check=False,
        )
    except OSError:
        return False
    return result.returncode == 0


def _shown(path: Path) -> str:
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="pack directory (default build/policy-pack)"
    )
    parser.add_argument("--version", help="the pack's version (default: the release tag vX.Y.Z on HEAD)")
    args = parser.parse_args(argv)
    try:
        built = build(args.out, version=args.version)
    except (BuildError, OSError) as err:
        print(f"error: cannot build the policy pack: {err}", file=sys.stderr)
        return 1
    where = _shown(built.out)
    vendored = ", ".join(f"{p}/" for p in built.packages)
    print(f"Built the policy pack {built.version} in {where}/ ({vendored} vendored)")
    print("requirements.txt: " + ", ".join(re.sub(r";.*", "", r) for r in built.requirements))
    if ignored_by_git(built.out):
        # The CLI archives the pack minus what any .gitignore from the pack up to / ignores.
        print(
            f"note: this repository's .gitignore ignores {where}, so `pulumi policy publish` would upload "
            "none of it: to publish, build it outside the repository (make pack PACK_OUT=<dir>)"
        )
    else:
        print(f"To publish: cd {where} && python3 -m venv venv && venv/bin/pip install -r requirements.txt")
        print("            pulumi policy publish [<org>]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
