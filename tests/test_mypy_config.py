"""mypy's provider overrides (pyproject.toml): fast, and the program's calls into providers still checked.

mypy analyses only the pulumi-oci and pulumi-kubernetes subpackages the overrides list; every other
subpackage is Any to it. So every subpackage the program uses must be listed (else its calls would
go unchecked without a word), and a wrong argument to a listed one must still be an error.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from preview.mock_runtime import ROOT

PROVIDERS = ("pulumi_oci", "pulumi_kubernetes")


MYPY = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]


def followed_patterns() -> set[str]:
    out: set[str] = set()
    for override in MYPY.get("overrides", []):
        if override.get("follow_imports") == "normal":
            modules = override["module"]
            out.update([modules] if isinstance(modules, str) else modules)
    return out


def used_subpackages(paths: list[Path]) -> dict[str, set[str]]:
    """`pulumi_oci.core` for every `oci.core...` (any alias, or `from pulumi_oci import core`), by file."""
    used: dict[str, set[str]] = {}
    for path in paths:
        tree = ast.parse(path.read_text(), str(path))
        aliases: dict[str, str] = {}
        found: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for name in node.names:
                    top = name.name.split(".")[0]
                    if top in PROVIDERS:
                        aliases[name.asname or top] = top
                        if "." in name.name:
                            found.add(".".join(name.name.split(".")[:2]))
            elif isinstance(node, ast.ImportFrom) and node.module:
                top = node.module.split(".")[0]
                if top in PROVIDERS:
                    if "." in node.module:
                        found.add(".".join(node.module.split(".")[:2]))
                    else:
                        found.update(f"{top}.{name.name}" for name in node.names)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
            ):
                found.add(f"{aliases[node.value.id]}.{node.attr}")
        subpackages = {name for name in found if importlib.util.find_spec(name) is not None}
        if subpackages:
            used[str(path.relative_to(ROOT))] = subpackages
    return used


def program_files() -> list[Path]:
    """What `make typecheck` checks: mypy's `files`."""
    out: list[Path] = []
    for entry in MYPY["files"]:
        path = ROOT / entry
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return out


def test_the_scan_finds_what_the_program_is_known_to_use() -> None:
    everything = set().union(*used_subpackages(program_files()).values())
    assert {"pulumi_oci.core", "pulumi_oci.containerengine", "pulumi_kubernetes.core"} <= everything


def test_every_provider_subpackage_the_program_uses_is_type_checked() -> None:
    followed = followed_patterns()
    missing = {
        file: sorted(name for name in names if f"{name}.*" not in followed and name not in followed)
        for file, names in used_subpackages(program_files()).items()
    }
    missing = {file: names for file, names in missing.items() if names}
    assert not missing, (
        "add these to the follow_imports = normal override in pyproject.toml "
        f"(otherwise mypy treats them as Any): {missing}"
    )


BAD_CALLS = """\
import pulumi
import pulumi_kubernetes as k8s
import pulumi_oci as oci

oci.containerengine.NodePool("pool", no_such_argument=1)
k8s.core.v1.Namespace("ns", metadata=42)
oci.core.Vcn("vcn", cidr_blocks=3)
oci.identity.Policy("policy", statements=[42])
k8s.helm.v3.Release("release", chart=["not", "a", "string"])
k8s.resource.v1.DeviceClass("class", spec="not a spec")
pulumi.export(1, "name first")
oci.core.Vcn("fine", cidr_blocks=["10.0.0.0/16"], compartment_id="ocid1.compartment.x")
k8s.core.v1.Namespace("fine", metadata=k8s.meta.v1.ObjectMetaArgs(name="rdma-dranet"))
"""


def test_wrong_arguments_to_the_providers_are_still_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad_provider_calls.py"
    bad.write_text(BAD_CALLS)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), str(bad)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    # By file name: mypy may name the file where a previous run (same module, same text) found it.
    lines_with_errors = {int(n) for n in re.findall(r"bad_provider_calls\.py:(\d+): error:", result.stdout)}
    assert lines_with_errors == set(range(5, 12)), result.stdout
