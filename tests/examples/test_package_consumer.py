"""The example consumers (examples/package-consumer/): a YAML program using the package, and the same
program in TypeScript (typescript/) and Python (python/).

No Pulumi CLI here: the YAML program is checked against the package's schema (each resource's type is a
component the package serves, its properties are inputs of it, required ones set; read refusing a key given
twice, as the CLI does) and its claim templates are the ones the component builds for those inputs. The
TypeScript and Python programs are type-checked by `make consumers` (tsc, mypy) against the SDKs Pulumi's
code generators make from the schema; here, that they declare the YAML program's components and pin what
those SDKs are generated with.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from components.claims.rdma_workloads import GpuRailClaimTemplatesArgs, planned_templates
from components.package import PACKAGE_NAME, PACKAGE_NAMESPACE, package_provider
from tests.strict_yaml import load_file

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "examples" / "package-consumer" / "Pulumi.yaml"


@pytest.fixture(scope="module")
def program() -> dict[str, Any]:
    data: dict[str, Any] = load_file(PROGRAM)
    return data


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(package_provider().schema or "{}")
    return data


def test_it_uses_the_package_from_this_repository(program: dict[str, Any]) -> None:
    assert program["runtime"] == "yaml"
    source = program["packages"][PACKAGE_NAME]
    assert (PROGRAM.parent / source / "PulumiPlugin.yaml").is_file()


def test_every_component_it_declares_is_the_packages_with_known_inputs(
    program: dict[str, Any], schema: dict[str, Any]
) -> None:
    declared = {
        name: r for name, r in program["resources"].items() if r["type"].startswith(f"{PACKAGE_NAME}:")
    }
    # The program has its VCN, and an existing cluster somewhere to run CoreDNS: every component but the
    # network and the system pool.
    used = {r["type"] for r in declared.values()}
    # Nor the ComputeDomain pair: its pool is a BM.GPU.B4.8, which has no NVLink between nodes
    # (docs/compute-domains.md); tests/provider/test_main.py constructs both through the protocol.
    unused = {
        f"{PACKAGE_NAME}:index:{name}"
        for name in ("Network", "SystemNodePool", "NvidiaComputeDomainDriver", "JobComputeDomain")
    }
    assert used == set(schema["resources"]) - unused
    for name, resource in declared.items():
        spec = schema["resources"][resource["type"]]
        given = set(resource.get("properties", {}))
        assert given <= set(spec["inputProperties"]), f"{name}: {given - set(spec['inputProperties'])}"
        assert set(spec.get("requiredInputs", [])) <= given, name
    # The Kubernetes components reach the cluster through the providers option.
    oci = {f"{PACKAGE_NAME}:index:{name}" for name in ("OkeCluster", "RdmaGpuNodePool")}
    kubernetes = [r for r in declared.values() if r["type"] not in oci]
    assert kubernetes and all(r["options"]["providers"] == ["${oke.provider}"] for r in kubernetes)


def test_its_claim_templates_are_judged_aligned(program: dict[str, Any]) -> None:
    properties = program["resources"]["claim-templates"]["properties"]
    args = GpuRailClaimTemplatesArgs(
        shapes=properties["shapes"],
        namespace=properties["namespace"],
        claim_templates=[
            {"name": t["name"], "gpus_per_worker": t["gpusPerWorker"]} for t in properties["claimTemplates"]
        ],
        rails_only_template=properties["railsOnlyTemplate"],
    )
    templates = planned_templates("claim-templates", args)
    assert [t.name for t in templates] == ["aligned-8gpu-16rails", "aligned-4gpu-8rails", "all-rails"]
    assert all(v.allocatable for t in templates for v in t.verdicts)


# --- the TypeScript and Python consumers (make consumers type-checks them against the generated SDKs) ----

CONSUMERS = {"typescript": ("nodejs", "index.ts"), "python": ("python", "__main__.py")}
# How each program names its components: `new rdma.Dranet("dranet", ...)`, `rdma.Dranet("dranet", ...)`.
DECLARED = {
    "typescript": re.compile(r'new rdma\.(\w+)\(\s*"([^"]+)"'),
    "python": re.compile(r'\brdma\.(\w+)\(\s*"([^"]+)"'),
}


def _pins(path: Path) -> dict[str, str]:
    found = re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", path.read_text(), re.M)
    return {name.lower(): version for name, version in found}


@pytest.mark.parametrize("folder", sorted(CONSUMERS))
def test_each_language_declares_the_yaml_programs_components(folder: str, program: dict[str, Any]) -> None:
    # The same components under the same names, so each language's program has the YAML one's URNs.
    runtime, main = CONSUMERS[folder]
    project = load_file(PROGRAM.parent / folder / "Pulumi.yaml")
    assert project["runtime"]["name"] == runtime
    assert (PROGRAM.parent / folder / project["packages"][PACKAGE_NAME] / "PulumiPlugin.yaml").is_file()
    declared = set(DECLARED[folder].findall((PROGRAM.parent / folder / main).read_text()))
    expected = {
        (resource["type"].rsplit(":", 1)[1], name)
        for name, resource in program["resources"].items()
        if resource["type"].startswith(f"{PACKAGE_NAME}:")
    }
    assert declared == expected


def test_each_language_imports_the_sdk_the_cli_generates() -> None:
    # `pulumi package add` names the SDK's folder <namespace>-<name> (pulumi/pulumi
    # pkg/cmd/pulumi/packages/packages.go InstallPackage), its npm package @<namespace>/<name> and its Python
    # package <namespace>_<name> (codegen/python PyPack); the checks (tools/consumers/) map those names to it.
    sdk = f"{PACKAGE_NAMESPACE}-{PACKAGE_NAME}"
    module = sdk.replace("-", "_")
    typescript = (PROGRAM.parent / "typescript" / "index.ts").read_text()
    assert f'import * as rdma from "@{PACKAGE_NAMESPACE}/{PACKAGE_NAME}";' in typescript
    assert f"import {module} as rdma" in (PROGRAM.parent / "python" / "__main__.py").read_text()
    tsconfig = (ROOT / "tools" / "consumers" / "tsconfig.json").read_text()
    assert f'"@{PACKAGE_NAMESPACE}/{PACKAGE_NAME}": ["../../build/sdks/nodejs/{sdk}/index.ts"]' in tsconfig
    assert f"[mypy-{module},{module}.*]" in (ROOT / "tools" / "consumers" / "mypy.ini").read_text()
    assert f"MYPYPATH=build/sdks/python/{sdk}" in (ROOT / "Makefile").read_text()


def test_the_typescript_consumer_pins_what_the_sdk_is_generated_with() -> None:
    manifest = json.loads((PROGRAM.parent / "typescript" / "package.json").read_text())
    lock = json.loads((PROGRAM.parent / "typescript" / "package-lock.json").read_text())
    wanted = {**manifest["dependencies"], **manifest["devDependencies"]}
    # Exact versions, each the one the lock holds (npm ci refuses a lock that disagrees with package.json).
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in wanted.values()), wanted
    assert all(lock["packages"][f"node_modules/{name}"]["version"] == v for name, v in wanted.items())
    # @pulumi/pulumi at the code generator's version (tools/sdkgen/go.mod), @pulumi/kubernetes at the
    # package's dependency: the program's pulumi-kubernetes pin.
    go_mod = (ROOT / "tools" / "sdkgen" / "go.mod").read_text()
    assert f"github.com/pulumi/pulumi/pkg/v3 v{wanted['@pulumi/pulumi']}\n" in go_mod
    assert wanted["@pulumi/kubernetes"] == _pins(ROOT / "requirements.txt")["pulumi-kubernetes"]


def test_the_python_consumer_pins_the_programs_sdks() -> None:
    pins = _pins(PROGRAM.parent / "python" / "requirements.txt")
    assert pins and pins.items() <= _pins(ROOT / "requirements.txt").items()
