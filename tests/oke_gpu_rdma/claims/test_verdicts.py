"""Verdicts on the seed claims, and their independence from device order."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oke_gpu_rdma.claims import UnsatisfiableCause, VerdictKind, judge_claim
from oke_gpu_rdma.claims.inventory import node_inventory
from oke_gpu_rdma.claims.spec import parse_claim
from oke_gpu_rdma.drivers import attributes as attr
from oke_gpu_rdma.drivers import dranet
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from tests.fixtures import seed000
from tests.oke_gpu_rdma.claims.claim_strategies import claims
from tests.oke_gpu_rdma.claims.reference_allocator import Allocator

B4 = CATALOG.topology("BM.GPU.B4.8")
INV = node_inventory(B4)


def test_pair_check_is_aligned_with_its_rails_on_the_gpus_root() -> None:
    v = judge_claim(seed000("pair-check"), "BM.GPU.B4.8")
    assert v.kind == "aligned" and v.allocatable
    assert v.roots == ("pci0000:3e",)
    assert [d.label for d in v.devices if d.kind == "rail"] == ["rdma4", "rdma5", "rdma6", "rdma7"]
    assert {d.root for d in v.devices} == {"pci0000:3e"}
    assert "pair-check is aligned on BM.GPU.B4.8" in v.message


def test_aligned_8gpu_16rails_is_aligned_on_all_four_roots() -> None:
    v = judge_claim(seed000("aligned-8gpu-16rails"), B4)
    assert v.kind == "aligned"
    assert v.roots == B4.root_names
    assert len(v.devices) == 24


def test_aligned_4gpu_8rails_is_aligned() -> None:
    v = judge_claim(seed000("aligned-4gpu-8rails-a"), B4)
    assert v.kind == "aligned"
    assert len(v.roots) == 2


def test_shape_root_is_unsatisfiable_no_root_has_4_gpus_and_16_rails() -> None:
    v = judge_claim(seed000("shape-root"), B4)
    assert v.kind == "unsatisfiable" and not v.allocatable
    assert "no PCIe root has 4 GPUs and 16 rails" in v.message
    assert "each root of BM.GPU.B4.8 has 2 GPUs and 4 rails" in v.message
    assert "stay Pending" in v.message
    assert v.requests == ("gpus", "rails")
    assert v.cause == UnsatisfiableCause.ROOT_CAPACITY
    assert v.group is not None and (v.group.gpus, v.group.rails) == (4, 16)
    assert v.nodes_visited <= 2  # refuted by the first flow computations, no search


def test_shape_any_is_unaligned_with_a_counterexample_and_a_fix() -> None:
    v = judge_claim(seed000("shape-any"), B4)
    assert v.kind == "unaligned"
    assert len(v.devices) == 20
    assert v.misplaced and all(d in v.devices for d in v.misplaced)
    for d in v.misplaced:
        own = {x.root for x in v.devices if x.kind != d.kind}
        assert d.root not in own
    assert v.fix is not None and "4 per-root pairs" in v.fix and attr.PCIE_ROOT in v.fix
    assert "Fix:" in v.message


def test_two_request_claim_without_constraint_gets_the_add_a_constraint_fix() -> None:
    claim = {"devices": {"requests": seed000("pair-check")["spec"]["devices"]["requests"]}}
    v = judge_claim(claim, B4, name="pair-loose")
    assert v.kind == "unaligned"
    assert v.fix == f"add a constraint {{requests: [gpus, rails], matchAttribute: {attr.PCIE_ROOT}}}"


def test_rails_only_claims_are_not_applicable_and_allocatable() -> None:
    for claim in (seed000("all-rails"), seed000("rails-8-a")):
        v = judge_claim(claim, B4)
        assert v.kind == "not applicable"
        assert v.allocatable is True
        assert "asks only for rails" in v.message
    assert len(judge_claim(seed000("all-rails"), B4).devices) == 16


def test_gpus_only_claim_is_not_applicable() -> None:
    v = judge_claim(
        {
            "devices": {
                "requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 8}}]
            }
        },
        B4,
    )
    assert v.kind == "not applicable" and "only for GPUs" in v.message


def test_invalid_claim_verdict_lists_problems() -> None:
    v = judge_claim(
        {
            "devices": {
                "requests": [{"name": "Rails", "exactly": {"deviceClassName": "dra.net", "count": -1}}]
            }
        },
        B4,
    )
    assert v.kind == "invalid"
    assert len(v.problems) == 2
    assert v.message.startswith("claim claim would be rejected by the API server")


def test_cel_error_makes_the_claim_unsatisfiable_and_quotes_the_expression() -> None:
    expr = 'device.attributes["gpu.nvidia.com"].type == "gpu"'
    claim = {
        "devices": {
            "requests": [
                {
                    "name": "nics",
                    "exactly": {"deviceClassName": "dra.net", "selectors": [{"cel": {"expression": expr}}]},
                }
            ]
        }
    }
    v = judge_claim(claim, B4)
    assert v.kind == "unsatisfiable"
    assert expr in v.message and "runtime error" in v.message


def test_careless_nic_request_is_unaligned_and_a_root_constraint_keeps_non_rails_out() -> None:
    requests = [
        {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}},
        {"name": "nics", "exactly": {"deviceClassName": "dra.net", "count": 4}},
    ]
    v = judge_claim({"devices": {"requests": requests}}, B4)
    assert v.kind == "unaligned"
    # A pcieRoot constraint keeps devices without that attribute (eth1, virtual interfaces) out.
    constrained = judge_claim(
        {"devices": {"requests": requests, "constraints": [{"matchAttribute": attr.PCIE_ROOT}]}}, B4
    )
    assert constrained.kind == "aligned"
    assert {d.kind for d in constrained.devices} == {"gpu", "rail"}


def test_unverified_shape_needs_a_topology() -> None:
    import pytest

    from oke_gpu_rdma.common.errors import UnverifiedTopologyError

    with pytest.raises(UnverifiedTopologyError):
        judge_claim(seed000("pair-check"), "BM.GPU.H100.8")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(seed000.claims())),
    st.permutations(list(range(8))),
    st.permutations(list(range(19))),
    st.booleans(),
)
def test_verdict_is_invariant_under_slice_and_device_order(
    name: str, gpu_order: list[int], dranet_order: list[int], flip: bool
) -> None:
    shuffled = INV.reordered(
        slice_order=[1, 0] if flip else [0, 1], device_orders={0: gpu_order, 1: dranet_order}
    )
    claim: dict[str, Any] = seed000(name)
    assert judge_claim(claim, B4, inventory=shuffled).kind == judge_claim(claim, B4).kind


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(claims(), st.permutations(list(range(8))), st.permutations(list(range(19))), st.booleans())
def test_random_claims_verdict_is_order_free_and_sound(
    claim: dict[str, Any], gpu_order: list[int], dranet_order: list[int], flip: bool
) -> None:
    shuffled = INV.reordered(
        slice_order=[1, 0] if flip else [0, 1], device_orders={0: gpu_order, 1: dranet_order}
    )
    verdict = judge_claim(claim, B4)
    assert judge_claim(claim, B4, inventory=shuffled).kind == verdict.kind
    first_fit = Allocator(shuffled).allocate(parse_claim(claim))
    if verdict.kind == "aligned":
        # Whatever order the scheduler sees, its first fit is aligned.
        assert first_fit.devices is not None
        gpu_roots = {a.device.root for a in first_fit.devices if a.device.kind == "gpu"}
        rail_roots = {a.device.root for a in first_fit.devices if a.device.kind == "rail"}
        assert gpu_roots == rail_roots
    if verdict.kind == "unaligned":
        assert verdict.misplaced
    if verdict.kind == "unsatisfiable":
        assert first_fit.devices is None


# -- issue 11 item 2: allocationMode All under a constraint shared with an earlier request ---------

ROOT_3E_RAILS = 'device.attributes["resource.kubernetes.io"].?pcieRoot.orValue("") == "pci0000:3e"'


def _all_after(first: dict[str, Any], all_selector: str, all_first: bool = False) -> dict[str, Any]:
    every = {
        "name": "rails",
        "exactly": {
            "deviceClassName": "dra.net",
            "allocationMode": "All",
            "selectors": [{"cel": {"expression": all_selector}}],
        },
    }
    requests = [every, first] if all_first else [first, every]
    return {
        "devices": {
            "requests": requests,
            "constraints": [{"requests": ["gpus", "rails"], "matchAttribute": attr.PCIE_ROOT}],
        }
    }


GPU_1 = {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}}


def test_all_mode_after_a_request_that_can_pick_another_root_is_order_dependent() -> None:
    """allocator_stable.go allocateOne/allocateDevice(must=true): the All devices are added after the
    earlier request's devices; if gpus took a GPU on another root, constraint.add fails and the claim
    aborts ("cannot add device ... because a claim constraint would not be satisfied") without trying
    other GPUs. Success depends on device order."""
    v = judge_claim(_all_after(GPU_1, ROOT_3E_RAILS), B4)
    assert v.kind == VerdictKind.ORDER_DEPENDENT and v.kind.blocks_deploy
    assert v.allocatable is True
    assert "because a claim constraint would not be satisfied" in v.message
    assert v.fix is not None and "list request rails before gpus" in v.fix


def test_all_mode_listed_first_fixes_the_value_and_is_aligned() -> None:
    """Passing variant: with the All request first its devices fix pcieRoot, and gpus only considers
    GPUs on that root (constraint.add rejects the others, no error for a non-All request)."""
    v = judge_claim(_all_after(GPU_1, ROOT_3E_RAILS, all_first=True), B4)
    assert v.kind == VerdictKind.ALIGNED
    assert {d.root for d in v.devices} == {"pci0000:3e"}


def test_all_mode_whose_devices_differ_in_the_attribute_never_allocates() -> None:
    """All takes every rail (four roots): the second root's rail fails the constraint, always."""
    v = judge_claim(_all_after(GPU_1, dranet.RAIL_SELECTOR), B4)
    assert v.kind == VerdictKind.UNSATISFIABLE
    assert v.cause == UnsatisfiableCause.ALL_MODE_CONSTRAINT
    assert v.fix is not None and "allocationMode All takes every matching device" in v.fix


def test_all_mode_after_a_request_pinned_to_the_same_root_is_not_order_dependent() -> None:
    """Passing variant: the earlier request can only take GPUs on pci0000:3e, so the All rails always fit."""
    pinned = {
        "name": "gpus",
        "exactly": {
            "deviceClassName": "gpu.nvidia.com",
            "selectors": [{"cel": {"expression": ROOT_3E_RAILS}}],
        },
    }
    assert judge_claim(_all_after(pinned, ROOT_3E_RAILS), B4).kind == VerdictKind.ALIGNED


# -- issue 13: decisions as data ------------------------------------------------------------------


def test_verdict_kinds_are_str_enums_that_say_whether_they_block() -> None:
    assert VerdictKind.UNALIGNED == "unaligned" and isinstance(VerdictKind.ALIGNED, str)
    blocking = {k.value for k in VerdictKind if k.blocks_deploy}
    assert blocking == {"invalid", "unsatisfiable", "order-dependent", "unaligned"}
    assert not VerdictKind.NOT_CHECKED.blocks_deploy


def test_not_checked_is_advisory_for_a_valid_claim_using_an_unevaluated_kubernetes_library() -> None:
    """base.go enables the Lists library (isSorted) for DRA selectors: the claim is valid, the model
    cannot evaluate it, so the verdict is 'not checked', never a rejection."""
    claim = {
        "devices": {
            "requests": [
                {
                    "name": "rails",
                    "exactly": {
                        "deviceClassName": "dra.net",
                        "selectors": [{"cel": {"expression": "[1, 2].isSorted()"}}],
                    },
                }
            ]
        }
    }
    v = judge_claim(claim, B4)
    assert v.kind == VerdictKind.NOT_CHECKED and not v.kind.blocks_deploy
    assert "isSorted" in v.message


def test_semver_and_quantity_selectors_are_evaluated() -> None:
    """semverlib.go / quantity.go: version attributes are Semver, capacity is Quantity."""
    sel = (
        'device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("500.0.0")) && '
        'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40G")) >= 0'
    )
    claim = {
        "devices": {
            "requests": [
                {
                    "name": "g",
                    "exactly": {
                        "deviceClassName": "gpu.nvidia.com",
                        "count": 8,
                        "selectors": [{"cel": {"expression": sel}}],
                    },
                }
            ]
        }
    }
    assert judge_claim(claim, B4).kind == VerdictKind.NOT_APPLICABLE
    too_new = sel.replace('semver("500.0.0")', 'semver("600.0.0")')
    claim["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": too_new}}]
    v = judge_claim(claim, B4)
    assert v.kind == VerdictKind.UNSATISFIABLE and "8 device(s), 0 match" in v.message


def test_capitalised_match_attribute_domain_is_valid_but_names_no_attribute() -> None:
    """The API server lower-cases the domain only to validate it (kubernetes validation.go,
    ValidateCSIDriverName); the allocator looks attributes up as written, so no device has
    `Resource.kubernetes.io/pcieRoot`: unsatisfiable, not invalid."""
    claim = seed000("pair-check")
    claim["spec"]["devices"]["constraints"] = [
        {**c, "matchAttribute": "Resource.kubernetes.io/pcieRoot"}
        for c in claim["spec"]["devices"]["constraints"]
    ]
    v = judge_claim(claim, "BM.GPU.B4.8")
    assert v.kind == "unsatisfiable", v.message
    assert not v.allocatable and v.problems == ()
    assert v.cause is UnsatisfiableCause.NO_ALLOCATION


# -- distinctAttribute (DRAConsumableCapacity, on from v1.36): allocated, as upstream's allocator does ------


def _distinct_claim(gpus: int, rails: int, distinct: dict, match: list | None = None) -> dict:
    requests = [
        {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": gpus}},
        {
            "name": "rails",
            "exactly": {
                "deviceClassName": "dra.net",
                "count": rails,
                "selectors": [{"cel": {"expression": 'device.attributes["dra.net"].rdma'}}],
            },
        },
    ]
    return {"devices": {"requests": requests, "constraints": [distinct, *(match or [])]}}


def test_distinct_attribute_claims_get_real_verdicts_on_v1_36() -> None:
    from oke_gpu_rdma.claims import judge_claim

    root = "resource.kubernetes.io/pcieRoot"
    # GPUs and rails on pairwise different roots: no GPU shares a root with a rail.
    spread = _distinct_claim(2, 2, {"requests": ["gpus", "rails"], "distinctAttribute": root})
    verdict = judge_claim(spread, "BM.GPU.B4.8", name="spread", kubernetes_version="v1.36.4")
    assert verdict.kind == "unaligned", verdict.message
    # Distinct rails by name with a pcieRoot match: aligned (the distinct constraint only restricts).
    paired = _distinct_claim(
        2,
        4,
        {"requests": ["rails"], "distinctAttribute": "dra.net/ifName"},
        [{"requests": ["gpus", "rails"], "matchAttribute": root}],
    )
    verdict = judge_claim(paired, "BM.GPU.B4.8", name="paired", kubernetes_version="v1.36.4")
    assert verdict.kind == "aligned", verdict.message
    # Eight rails on eight different roots: BM.GPU.B4.8 has four.
    wide = _distinct_claim(1, 8, {"requests": ["rails"], "distinctAttribute": root})
    verdict = judge_claim(wide, "BM.GPU.B4.8", name="wide", kubernetes_version="v1.36.4")
    assert verdict.kind == "unsatisfiable", verdict.message
    # On v1.35 the API server drops distinctAttribute: the constraint has no attribute left, invalid.
    verdict = judge_claim(spread, "BM.GPU.B4.8", name="spread", kubernetes_version="v1.35.2")
    assert verdict.kind == "invalid" and "DRAConsumableCapacity is alpha and off at v1.35" in verdict.message
