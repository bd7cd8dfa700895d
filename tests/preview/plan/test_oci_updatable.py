"""Update or replace for OCI inputs, derived from the installed pulumi-oci SDK (preview/plan/oci_updatable.py)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import pytest

from oke_gpu_rdma.common import resource_types
from preview.mock_runtime import pulumi_config_map, run_program
from preview.plan import oci_updatable
from tests.support import stack_document

# What the provider documents for properties this program sets (pulumi-oci docstrings, Oracle docs).
DOCUMENTED = [
    (resource_types.NODE_POOL, ("name",), True),
    (resource_types.NODE_POOL, ("nodeShape",), True),
    (resource_types.NODE_POOL, ("kubernetesVersion",), True),
    (resource_types.NODE_POOL, ("clusterId",), False),
    (resource_types.NODE_POOL, ("compartmentId",), False),
    (resource_types.NODE_POOL, ("nodeConfigDetails", "size"), True),
    (resource_types.NODE_POOL, ("nodeConfigDetails", "computeClusterId"), False),
    (resource_types.NODE_POOL, ("nodeConfigDetails", "placementConfigs", 0, "availabilityDomain"), True),
    (resource_types.NODE_POOL, ("nodeSourceDetails", "imageId"), True),
    (resource_types.NODE_POOL, ("nodeMetadata", "user_data"), True),
    (resource_types.NODE_POOL, ("initialNodeLabels", 1, "value"), True),
    (resource_types.COMPUTE_CLUSTER, ("availabilityDomain",), False),
    (resource_types.COMPUTE_CLUSTER, ("displayName",), True),
    (resource_types.CLUSTER, ("kubernetesVersion",), True),
    (resource_types.CLUSTER, ("options", "kubernetesNetworkConfig", "podsCidr"), False),
    (resource_types.CLUSTER, ("endpointConfig", "subnetId"), False),
    (resource_types.VCN, ("cidrBlocks",), True),
    (resource_types.VCN, ("dnsLabel",), False),
    (resource_types.SUBNET, ("cidrBlock",), True),
    (resource_types.IAM_POLICY, ("statements",), True),
    (resource_types.IAM_POLICY, ("name",), False),
]


@pytest.mark.parametrize(("token", "path", "updatable"), DOCUMENTED)
def test_documented_behaviour(token: str, path: tuple[str | int, ...], updatable: bool) -> None:
    verdict = oci_updatable.verdict(token, path)
    assert verdict.documented and verdict.updatable is updatable, verdict


def test_the_deciding_property_is_named() -> None:
    # The block is (Updatable), the field inside is not: the field decides.
    verdict = oci_updatable.verdict(resource_types.NODE_POOL, ("nodeConfigDetails", "computeClusterId"))
    assert verdict.decided_by == "nodeConfigDetails.computeClusterId"
    # Below a map the map's own mark decides.
    assert (
        oci_updatable.verdict(resource_types.NODE_POOL, ("nodeMetadata", "user_data")).decided_by
        == "nodeMetadata"
    )


def test_unknown_types_and_properties_are_not_guessed() -> None:
    assert not oci_updatable.verdict("oci:Nope/nope:Nope", ("x",)).documented
    assert not oci_updatable.verdict(resource_types.NODE_POOL, ("noSuchInput",)).documented


def _paths(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*path, i))
    else:
        yield path


@functools.cache
def _declared() -> list[tuple[str, tuple[str | int, ...]]]:
    found = []
    for stack in ("dev", "full"):
        run = run_program(stack, pulumi_config_map(stack_document(stack)))
        for r in run.resources:
            if r.type.startswith("oci:"):
                found += [(r.type, p) for p in _paths(r.inputs)]
    return sorted(set(found), key=str)


def test_every_input_the_program_declares_is_documented() -> None:
    # The table covers what this program sends: no OCI input is classified by a fallback.
    missing = [(t, p) for t, p in _declared() if not oci_updatable.verdict(t, p).documented]
    assert missing == []


def test_the_table_is_cheap() -> None:
    # Parsed from the package files a class at a time: no cache needed (see bench_change_plan.py).
    table = oci_updatable.table(resource_types.NODE_POOL)
    assert table["nodeConfigDetails.size"] and not table["nodeConfigDetails.computeClusterId"]
