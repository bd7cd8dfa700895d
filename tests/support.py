"""Test helpers: stack configs from the example stacks and lookups in an offline run."""

from __future__ import annotations

import copy
import json
from typing import Any

from oke_gpu_rdma.nodes.topology import Topology
from preview.cli import stack_file
from preview.mock_runtime import PROJECT, ProgramRun, RecordedResource
from preview.stacks import EXAMPLES
from tests.strict_yaml import load_file

# The region of the example stacks (their oci:region).
EXAMPLE_REGION = "us-ashburn-1"


def stack_document(stack: str) -> dict[str, Any]:
    """The YAML of the example stack examples/Pulumi.<stack>.yaml (what the tests assert against)."""
    document: dict[str, Any] = load_file(stack_file(stack, [EXAMPLES]))
    return document


def without_remediation(raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` without health.remediation: for a test that takes away what remediation needs (the scheduled
    fabric check on its pool, the pool itself), whose own finding would otherwise be one of two."""
    raw.get("health", {}).pop("remediation", None)
    return raw


def raw_config(stack: str) -> dict[str, Any]:
    """The stack's `oke-gpu-rdma:` values without the prefix, as plain data to modify in tests."""
    prefix = f"{PROJECT}:"
    return {
        k.removeprefix(prefix): copy.deepcopy(v)
        for k, v in stack_document(stack)["config"].items()
        if k.startswith(prefix)
    }


def as_stack_file(raw: dict[str, Any], region: str | None = EXAMPLE_REGION) -> dict[str, Any]:
    """A stack file with `raw` as its project keys, in `region` (None: no oci:region)."""
    config: dict[str, Any] = {f"{PROJECT}:{k}": v for k, v in raw.items()}
    if region is not None:
        config["oci:region"] = region
    return {"config": config}


class Run:
    """A finished offline run with lookups by type and name."""

    def __init__(self, run: ProgramRun) -> None:
        self.run = run
        self.resources = run.resources

    def of_type(self, type_: str) -> list[RecordedResource]:
        return [r for r in self.resources if r.type == type_]

    def one(self, type_: str, name: str | None = None) -> RecordedResource:
        found = [r for r in self.of_type(type_) if name is None or r.name == name]
        assert len(found) == 1, f"expected one {type_} {name or ''}, found {[r.name for r in found]}"
        return found[0]

    def by_urn(self, urn: str) -> RecordedResource:
        return next(r for r in self.resources if r.urn == urn)


def meta_plugins(network: dict[str, Any]) -> list[Any]:
    """The plugin list the SR-IOV operator renders from a SriovNetwork's metaPlugins text."""
    plugins: list[Any] = json.loads("[" + network["spec"]["metaPlugins"] + "]")
    return plugins


def topology_to_dict(topology: Topology) -> dict[str, Any]:
    """The dict form of ``topology`` (what a user writes under shapeTopologies), for tests."""
    roots = []
    for r in topology.roots:
        rails = []
        for x in r.rails:
            rail: dict[str, Any] = {"name": x.name, "pciAddress": x.pci_address}
            if x.rdma_device:
                rail["rdmaDevice"] = x.rdma_device
            rails.append(rail)
        roots.append(
            {"name": r.name, "numaNode": r.numa_node, "gpus": [g.pci_bus_id for g in r.gpus], "rails": rails}
        )
    return {
        "shape": topology.shape,
        "gpuProduct": topology.gpu_product,
        "gpuMemoryBytes": topology.gpu_memory_bytes,
        "roots": roots,
        "gpuDriverOrder": [g.pci_bus_id for g in topology.gpus_in_driver_order],
        "frontEndInterfaces": list(topology.front_end_interfaces),
        "virtualInterfaces": list(topology.virtual_interfaces),
    }
