"""The judge at the NUMA node (BM.GPU.GB200-v3.4): templates that keep each GPU with its NUMA node's
rails are aligned, on the modelled node and on the node's published slices; claims that cross NUMA nodes
are unaligned, naming both nodes."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from oke_gpu_rdma.claims import UnsatisfiableCause, aligned_claim_specs, judge_claim
from oke_gpu_rdma.claims.inventory import shape_inventory
from oke_gpu_rdma.claims.pairing import Pair, groups_claim_spec
from oke_gpu_rdma.claims.spec import parse_claim
from oke_gpu_rdma.drivers import dranet
from oke_gpu_rdma.drivers.resource_slices import Version
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from tests.fixtures import published_inventory
from tests.oke_gpu_rdma.claims.reference_allocator import Allocator

GB200 = "BM.GPU.GB200-v3.4"
TOPOLOGY = CATALOG.topology(GB200)
PUBLISHED = published_inventory()
# The GPUs' NUMA nodes as the published example's README lists them (kubernetes-sigs/dranet
# examples/oci_oke_examples/BM.GPU.GB200-v3.4/README.md, "DRA device attributes"): stated there, not
# published in a slice, so the check below does not rest on the topology's own inference.
GPU_NUMA = {"0008:06:00.0": 0, "0009:06:00.0": 0, "0018:06:00.0": 1, "0019:06:00.0": 1}


def templates() -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{gpus}gpu{'-' + s.group if s.group else ''}", s.spec)
        for gpus in (1, 2, 4)
        for s in aligned_claim_specs(GB200, gpus)
    ]


def numa_of(device: Any) -> int:
    bus = device.attribute("resource.kubernetes.io/pciBusID")
    return GPU_NUMA[bus] if device.kind == "gpu" else int(device.attribute(dranet.NUMA_NODE))


@pytest.mark.parametrize(("name", "spec"), templates(), ids=[n for n, _ in templates()])
def test_every_template_is_aligned_on_the_model_and_on_the_published_node(name: str, spec: dict) -> None:
    modelled = judge_claim(spec, GB200, name=name)
    published = judge_claim(spec, GB200, name=name, inventory=PUBLISHED)
    assert (modelled.kind, published.kind) == ("aligned", "aligned"), published.message
    assert "at the NUMA node" in published.message


def first_fit_allocations(name: str, spec: dict[str, Any]) -> list[list[Any]]:
    """Every allocation the scheduler's first fit makes on the published node when any set of its
    devices is taken by other claims, with the slices in either order."""
    claim = parse_claim(spec, name)
    devices = PUBLISHED.devices()
    found = []
    for inventory in (PUBLISHED, PUBLISHED.reordered(slice_order=[1, 0])):
        for k in range(len(devices) + 1):
            for taken in itertools.combinations(devices, k):
                result = Allocator(inventory, in_use=[d.id for d in taken]).allocate(claim)
                if result.ok:
                    found.append([a.device for a in result.devices or ()])
    return found


def crosses(devices: list[Any]) -> bool:
    return {numa_of(d) for d in devices if d.kind == "gpu"} != {
        numa_of(d) for d in devices if d.kind == "rail"
    }


@pytest.mark.parametrize(("name", "spec"), templates(), ids=[n for n, _ in templates()])
def test_every_first_fit_allocation_on_the_published_node_keeps_gpus_with_their_numa_rails(
    name: str, spec: dict
) -> None:
    allocations = first_fit_allocations(name, spec)
    assert len(allocations) > 1
    assert [[d.name for d in a] for a in allocations if crosses(a)] == []


def crossing() -> dict[str, Any]:
    """One GPU of NUMA node 0 with two rails of NUMA node 1."""
    numa0, numa1 = TOPOLOGY.groups
    spec = groups_claim_spec([(numa0, Pair(1, 2))])
    spec["devices"]["requests"][1] = groups_claim_spec([(numa1, Pair(1, 2))])["devices"]["requests"][1]
    return spec


def test_a_claim_crossing_numa_nodes_is_unaligned_naming_both_and_the_fix() -> None:
    verdict = judge_claim(crossing(), GB200, name="cross", inventory=PUBLISHED)
    assert verdict.kind == "unaligned"
    assert verdict.message.startswith(
        "claim cross is unaligned on BM.GPU.GB200-v3.4: the scheduler could pick gpu-0 on NUMA node 0; "
        "rdma4, rdma5 on NUMA node 1; GPUs without a claimed rail in their NUMA node: gpu-0 on NUMA node 0; "
        "rails without a claimed GPU in their NUMA node: rdma4, rdma5 on NUMA node 1. Fix: "
    )
    assert verdict.fix == (
        "BM.GPU.GB200-v3.4 shares no attribute between GPUs and rails (no PCIe root holds both, the GPU "
        "driver publishes no NUMA node), so select each NUMA node's GPUs by resource.kubernetes.io/pciBusID "
        "and its rails by dra.net/pciAddress in the same claim (NUMA node 0: GPUs 0008:06:00.0, 0009:06:00.0 "
        "with rails rdma0, rdma1, rdma2, rdma3; NUMA node 1: GPUs 0018:06:00.0, 0019:06:00.0 with rails "
        "rdma4, rdma5, rdma6, rdma7; see oke_gpu_rdma.claims.aligned_claim_specs)"
    )
    assert [d.domain for d in verdict.misplaced] == ["NUMA node 0", "NUMA node 1", "NUMA node 1"]
    assert all(crosses(a) for a in first_fit_allocations("cross", crossing()))  # what the check catches


def _gpu0_with_rails_of(numa: int, count: int = 1) -> dict[str, Any]:
    """gpu-0 by bus ID and rails by DRANET's own NUMA attribute, as the published example selects them."""
    rail = f'device.attributes["dra.net"].rdma == true && device.attributes["dra.net"].numaNode == {numa}'
    return {
        "devices": {
            "requests": [
                {
                    "name": "gpu",
                    "exactly": {
                        "deviceClassName": "gpu.nvidia.com",
                        "count": 1,
                        "selectors": [
                            {
                                "cel": {
                                    "expression": 'device.attributes["resource.kubernetes.io"].pciBusID == "0008:06:00.0"'
                                }
                            }
                        ],
                    },
                },
                {
                    "name": "nic",
                    "exactly": {
                        "deviceClassName": "dra.net",
                        "count": count,
                        "selectors": [{"cel": {"expression": rail}}],
                    },
                },
            ]
        }
    }


def test_rails_selected_by_dranets_numa_attribute_are_judged_by_the_gpu_they_sit_with() -> None:
    assert judge_claim(_gpu0_with_rails_of(0, 2), GB200, inventory=PUBLISHED).kind == "aligned"
    assert judge_claim(_gpu0_with_rails_of(1), GB200, inventory=PUBLISHED).kind == "unaligned"


def test_any_gpus_with_any_rails_is_unaligned_and_a_pcie_root_constraint_never_allocates() -> None:
    loose = {
        "devices": {
            "requests": [
                {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}},
                {
                    "name": "rails",
                    "exactly": {
                        "deviceClassName": "dra.net",
                        "count": 4,
                        "selectors": [{"cel": {"expression": dranet.RAIL_SELECTOR}}],
                    },
                },
            ]
        }
    }
    assert judge_claim(loose, GB200).kind == "unaligned"
    rooted = {
        **loose,
        "devices": {
            **loose["devices"],
            "constraints": [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}],
        },
    }
    verdict = judge_claim(rooted, GB200, inventory=PUBLISHED)
    assert (verdict.kind, verdict.allocatable) == ("unsatisfiable", False)
    # The fix is the NUMA node's, not per-root pairs (no root of GB200 holds a GPU and a rail).
    assert verdict.fix is not None and verdict.fix.startswith(
        "no PCIe root of BM.GPU.GB200-v3.4 holds both a GPU and a rail, so no resource.kubernetes.io/pcieRoot "
        "constraint between them can hold; select each NUMA node's GPUs by resource.kubernetes.io/pciBusID"
    )


def test_a_b4_template_pinned_to_its_shape_skips_the_published_gb200_node_without_a_cel_error() -> None:
    """That node's DRANET publishes no oke.dra.net/shape: the guarded pin is false there, not an error
    that would abort the scheduler's Filter."""
    pinned = aligned_claim_specs("BM.GPU.B4.8", 2, pin_shape=True)[0].spec
    verdict = judge_claim(pinned, GB200, inventory=PUBLISHED)
    assert verdict.kind == "unsatisfiable"
    assert verdict.cause is not UnsatisfiableCause.CEL_ERROR, verdict.message  # (no root holds GPU and rail)
    assert judge_claim(pinned, "BM.GPU.B4.8").kind == "aligned"


@pytest.mark.parametrize(("name", "spec"), templates(), ids=[n for n, _ in templates()])
def test_gb200_templates_find_no_device_on_a_b4_node_and_raise_no_cel_error_there(
    name: str, spec: dict
) -> None:
    """In a fleet with both shapes the scheduler evaluates them on B4.8 nodes too: guarded selectors are
    false there (B4.8 GPUs and rails have other addresses), not a runtime error aborting the Filter."""
    verdict = judge_claim(spec, "BM.GPU.B4.8", name=name)
    assert verdict.kind == "unsatisfiable"
    assert verdict.cause is UnsatisfiableCause.NO_ALLOCATION, verdict.message


def test_first_available_per_numa_node_is_unaligned_which_is_why_each_node_gets_its_own_template() -> None:
    """GPUs and rails each with a subrequest per NUMA node: each request picks its subrequest on its own,
    so the GPUs can come from NUMA node 0 and the rails from NUMA node 1 (oke_gpu_rdma/claims/pairing.py)."""
    per_node = [s.spec["devices"]["requests"] for s in aligned_claim_specs(GB200, 2)]

    def alternatives(kind: int) -> list[dict[str, Any]]:
        return [{"name": f"numa{i}", **requests[kind]["exactly"]} for i, requests in enumerate(per_node)]

    spec = {
        "devices": {
            "requests": [
                {"name": "gpus", "firstAvailable": alternatives(0)},
                {"name": "rails", "firstAvailable": alternatives(1)},
            ]
        }
    }
    verdict = judge_claim(
        spec, GB200, name="first-available", inventory=PUBLISHED, kubernetes_version="v1.36.4"
    )
    assert verdict.kind == "unaligned", verdict.message
    assert {d.domain for d in verdict.devices if d.kind == "gpu"} != {
        d.domain for d in verdict.devices if d.kind == "rail"
    }


def test_the_modelled_gb200_gpus_publish_what_the_published_ones_do() -> None:
    """The judge's model of the node (oke_gpu_rdma/drivers/nvidia_gpu.py from the topology) against the
    published slice: the attributes the fixture keeps and the ones the driver derives from the product."""
    modelled = [d for d in shape_inventory(TOPOLOGY).devices() if d.kind == "gpu"]
    published = [d for d in PUBLISHED.devices() if d.kind == "gpu"]
    for ours, theirs in zip(modelled, published, strict=True):
        assert ours.name == theirs.name
        assert {k: ours.attributes[k] for k in theirs.attributes} == dict(theirs.attributes)
        assert ours.capacity == theirs.capacity
        assert (ours.attribute("architecture"), ours.attribute("cudaComputeCapability")) == (
            "Blackwell",
            Version("10.0.0"),
        )


def test_the_modelled_gb200_rails_publish_what_the_published_ones_do() -> None:
    """DRANET v1.5.0's modelled rails carry every published attribute with its value (and oke.dra.net/shape,
    which the published node's later DRANET release leaves out)."""
    modelled = {d.name: d for d in shape_inventory(TOPOLOGY).devices() if d.kind == "rail"}
    published = [d for d in PUBLISHED.devices() if d.kind == "rail"]
    assert sorted(modelled) == sorted(d.name for d in published)
    for theirs in published:
        ours = modelled[theirs.name]
        assert {k: ours.attributes[k] for k in theirs.attributes} == dict(theirs.attributes)
