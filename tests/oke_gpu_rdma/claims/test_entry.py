"""The judge's seams: one documented entry for the product, one allocation engine in it.

Read with `ast` from the product's source, so they check what ships.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from pathlib import Path

from oke_gpu_rdma.claims import judge_claim
from oke_gpu_rdma.common import release_registry as registry
from tests.fixtures import seed000

ROOT = Path(__file__).resolve().parents[3]
PRODUCT = [
    "__main__.py",
    "components",
    "stack_config",
    "oke_gpu_rdma",
    "policies/oke_rdma_policies",
    "preview",
]
CLAIMS = ROOT / "oke_gpu_rdma" / "claims"
# What code outside the judge may import: the entry, and the API's versions and conversion.
OPEN = {"oke_gpu_rdma.claims", "oke_gpu_rdma.claims.spec"}


def _product_files() -> Iterator[Path]:
    for entry in PRODUCT:
        path = ROOT / entry
        if path.is_file():
            yield path
        elif path.is_dir():
            yield from sorted(path.rglob("*.py"))


def _imports(path: Path) -> Iterator[tuple[str, str | None]]:
    """(module, imported name or None) for every import of the module."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield from ((node.module, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from ((alias.name, None) for alias in node.names)


def test_the_product_reaches_the_judge_through_its_entry() -> None:
    callers = []
    for path in _product_files():
        if path.is_relative_to(CLAIMS):
            continue
        for module, name in _imports(path):
            if module.startswith("oke_gpu_rdma.claims"):
                assert module in OPEN, f"{path.relative_to(ROOT)} imports {module}; use oke_gpu_rdma.claims"
            if (module, name) == ("oke_gpu_rdma.claims", "judge_claim"):
                callers.append(path.relative_to(ROOT).as_posix())
    assert sorted(callers) == [
        "policies/oke_rdma_policies/claim_landing.py",
        "policies/oke_rdma_policies/rules/scheduling/kueue_flavor_shapes.py",
        "stack_config/claims/claim_plan.py",
    ]


def test_the_product_holds_one_allocation_engine() -> None:
    """The depth-first allocator is the tests' reference (reference_allocator.py), not a product module."""
    assert importlib.util.find_spec("oke_gpu_rdma.claims.allocator") is None
    for path in _product_files():
        modules = {module for module, _ in _imports(path)}
        assert not {m for m in modules if m == "tests" or m.startswith("tests.")}, path.relative_to(ROOT)


def test_judge_claim_takes_device_classes_and_the_api_version() -> None:
    """The policy pack judges with the stack's DeviceClasses and the version a claim is written in."""
    v1beta1 = {**seed000("pair-check"), "apiVersion": "resource.k8s.io/v1beta1"}
    assert judge_claim(v1beta1, "BM.GPU.B4.8").kind == "invalid"  # v1beta1 has no `exactly`
    assert judge_claim(seed000("pair-check"), "BM.GPU.B4.8", api_version="resource.k8s.io/v1beta2").kind == (
        "aligned"
    )
    no_rails = {**registry.DEVICE_CLASS_SELECTORS, "dra.net": ('device.driver == "none"',)}
    verdict = judge_claim(seed000("pair-check"), "BM.GPU.B4.8", device_classes=no_rails)
    assert verdict.kind == "unsatisfiable"
    assert "request rails needs 4 device(s), 0 match its class and selectors" in verdict.message
