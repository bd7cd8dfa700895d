"""The example consumer (examples/package-consumer/Pulumi.yaml): a YAML program using the package.

No Pulumi CLI here: the program is checked against the package's schema (each resource's type is a
component the package serves, its properties are inputs of it, required ones set) and its claim
templates are the ones the component builds for those inputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.provider.experimental.component import ComponentProvider

from components.package import PACKAGE_COMPONENTS, PACKAGE_NAME, PACKAGE_NAMESPACE
from components.rdma_workloads import GpuRailClaimTemplatesArgs, planned_templates

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "examples" / "package-consumer" / "Pulumi.yaml"


@pytest.fixture(scope="module")
def program() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(PROGRAM.read_text())
    return data


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    provider = ComponentProvider(list(PACKAGE_COMPONENTS), PACKAGE_NAME, PACKAGE_NAMESPACE)
    data: dict[str, Any] = json.loads(provider.schema or "{}")
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
