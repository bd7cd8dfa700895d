"""The claim judge's public entry: judge a claim, build aligned claim specs.

:func:`judge_claim` is the one way to judge a claim (the policy pack and the stack config's claim plan
call it); :func:`devices_exist` says on which shapes of a mixed fleet a claim can land, and
:func:`claim_spec_to_v1` reads a claim written in an older API version. ``shape`` arguments take a shape
name (a verified shape of :data:`oke_gpu_rdma.nodes.shape_catalog.CATALOG`), a :class:`~oke_gpu_rdma.nodes.topology.Topology` or a topology dict (see
:func:`oke_gpu_rdma.nodes.topology.topology_from_dict`). Claims are Kubernetes JSON dicts: a
ResourceClaimSpec, a ResourceClaim or a ResourceClaimTemplate. Errors a caller can cause are
``ValueError`` subclasses from :mod:`oke_gpu_rdma.common.errors` with one-line messages.

Inside: :mod:`~.spec` (API validation; versions in :mod:`~.api_versions`, gated fields in
:mod:`~.gated_fields`, the parsed types in :mod:`~.spec_types`), :mod:`~.device_cel` (selectors; Kubernetes'
libraries in :mod:`~.cel_libraries`), :mod:`~.inventory` (what the drivers publish), :mod:`~.candidates`
(each request's devices), :mod:`~.matching` (which allocations exist; its flows in :mod:`~.bipartite_flow`),
:mod:`~.judging` (the verdict), :mod:`~.messages` (its words), :mod:`~.verdicts` (the model),
:mod:`~.pairing` (aligned layouts), :mod:`~.landing` (mixed fleets); README.md beside this file says
why each is a unit of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from oke_gpu_rdma.claims import pairing
from oke_gpu_rdma.claims.inventory import AttributeValue, Device, NodeInventory, Version, shape_inventory
from oke_gpu_rdma.claims.judging import judge
from oke_gpu_rdma.claims.landing import (
    claim_lands,
    class_driver,
    devices_exist,
    drivers_on_pools,
    excluded_on_shape,
    parse_taint,
    pinned_elsewhere,
    plugin_drivers,
)
from oke_gpu_rdma.claims.pairing import AlignedSpec, Pair, shape_selector
from oke_gpu_rdma.claims.spec import claim_spec_to_v1
from oke_gpu_rdma.claims.verdicts import DeviceRef, UnsatisfiableCause, Verdict, VerdictKind
from oke_gpu_rdma.common import release_registry as registry
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from oke_gpu_rdma.nodes.topology import Topology

ShapeArg = str | Topology | Mapping[str, Any]

__all__ = [
    "AlignedSpec",
    "AttributeValue",
    "Device",
    "DeviceRef",
    "Pair",
    "UnsatisfiableCause",
    "Verdict",
    "VerdictKind",
    "Version",
    "aligned_claim_spec",
    "aligned_claim_specs",
    "aligned_pairs",
    "claim_lands",
    "claim_spec_to_v1",
    "class_driver",
    "devices_exist",
    "drivers_on_pools",
    "excluded_on_shape",
    "judge_claim",
    "parse_taint",
    "pinned_elsewhere",
    "plugin_drivers",
    "rails_only_claim_spec",
    "shape_selector",
    "valid_gpu_counts",
]


def judge_claim(
    claim: Mapping[str, Any],
    shape: ShapeArg,
    inventory: NodeInventory | None = None,
    name: str | None = None,
    device_classes: Mapping[str, Sequence[str]] = registry.DEVICE_CLASS_SELECTORS,
    api_version: str | None = None,
    kubernetes_version: str | None = None,
    child_range: str | None = None,
) -> Verdict:
    """Verdict of one claim on an empty node of one shape: invalid, not checked, unsatisfiable,
    order-dependent, not applicable, unaligned or aligned (:mod:`oke_gpu_rdma.claims.verdicts`).

    ``inventory`` replaces the modelled node's devices (default: what the drivers publish on the shape);
    ``name`` names a bare spec; ``device_classes`` maps DeviceClass names to their CEL selectors (default:
    the classes DRANET and the NVIDIA DRA driver install); ``api_version`` is the version the claim is
    written in (default: its ``apiVersion``, else resource.k8s.io/v1); ``kubernetes_version`` the release
    whose API server and feature gates judge it (default: :data:`~.feature_gates.DEFAULT_KUBERNETES_VERSION`);
    ``child_range`` the DRANET child range the rails publish as ``oke.dra.net/rdmaChildIpv4Cidr`` (default:
    DRANET's default range).
    """
    topology = CATALOG.resolve(shape)
    if inventory is None and child_range is not None:
        inventory = shape_inventory(topology, child_range)
    return judge(
        claim,
        topology,
        inventory=inventory,
        device_classes=device_classes,
        name=name,
        api_version=api_version,
        kubernetes_version=kubernetes_version,
    )


def aligned_pairs(shape: ShapeArg, gpus_per_worker: int) -> list[Pair]:
    """Pairs (GPUs, rails) per PCIe root for a worker; PairingError for counts that cannot align."""
    return pairing.aligned_pairs(CATALOG.resolve(shape), gpus_per_worker)


def valid_gpu_counts(shape: ShapeArg) -> list[int]:
    """GPU counts per worker that align on the shape; PairingError when its groups cannot be paired at all."""
    return pairing.valid_gpu_counts(CATALOG.resolve(shape))


def aligned_claim_spec(shape: ShapeArg, gpus_per_worker: int, pin_shape: bool = False) -> dict[str, Any]:
    """ResourceClaimSpec with gpus-i/rails-i requests and one pcieRoot constraint per pair; ``pin_shape``
    keeps it to nodes of the shape (``oke.dra.net/shape``), for stacks with pools of several shapes."""
    return pairing.aligned_claim_spec(CATALOG.resolve(shape), gpus_per_worker, pin_shape)


def aligned_claim_specs(shape: ShapeArg, gpus_per_worker: int, pin_shape: bool = False) -> list[AlignedSpec]:
    """Every aligned ResourceClaimSpec a worker can be given, with the level it aligns at: one on a shape
    aligned at the PCIe root; on one aligned at the NUMA node (BM.GPU.GB200-v3.4) one spanning every
    NUMA node, or one per node for part of a node's GPUs (:mod:`oke_gpu_rdma.claims.pairing`)."""
    return pairing.aligned_claim_specs(CATALOG.resolve(shape), gpus_per_worker, pin_shape)


def rails_only_claim_spec(shape: ShapeArg, pin_shape: bool = False) -> dict[str, Any]:
    """ResourceClaimSpec asking for every rail of a node (seed all-rails); ``pin_shape`` as above."""
    return pairing.rails_only_claim_spec(CATALOG.resolve(shape), pin_shape)
