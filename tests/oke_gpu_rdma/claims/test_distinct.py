"""The distinctAttribute search: the matcher's answers where no distinct constraint applies, and its budget."""

from __future__ import annotations

import pytest

from oke_gpu_rdma.claims.candidates import ClaimToAllocate
from oke_gpu_rdma.claims.distinct import DistinctMatcher, SearchBudgetExceeded
from oke_gpu_rdma.claims.inventory import shape_inventory
from oke_gpu_rdma.claims.matching import Matcher
from oke_gpu_rdma.claims.spec import parse_claim
from oke_gpu_rdma.common import release_registry as registry
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from tests.fixtures import seed000

B4 = CATALOG.topology("BM.GPU.B4.8")


def prepared(claim):
    return ClaimToAllocate(parse_claim(claim), shape_inventory(B4).devices(), registry.DEVICE_CLASS_SELECTORS)


@pytest.mark.parametrize(
    "name", ["pair-check", "aligned-4gpu-8rails-a", "rails-8-a", "shape-root", "shape-any", "all-rails"]
)
def test_same_existence_answers_as_the_matcher_without_distinct_constraints(name):
    claim = prepared(seed000(name))
    flows, search = Matcher(claim), DistinctMatcher(claim, ())
    assert (flows.find() is None) == (search.find() is None)
    for value in {d.root for d in claim.devices if d.root}:
        gpus = [p for p, d in enumerate(claim.devices) if d.kind == "gpu" and d.root == value]
        rails = [p for p, d in enumerate(claim.devices) if d.kind == "rail" and d.root == value]
        for excluded, required in ((rails, gpus), (gpus, rails)):
            if not required:
                continue
            a = flows.find(excluded=excluded, required=required)
            b = search.find(excluded=excluded, required=required)
            assert (a is None) == (b is None), (name, value)


def test_a_search_beyond_its_budget_has_no_answer():
    claim = prepared(seed000("shape-root"))  # no allocation: the search has to try everything
    with pytest.raises(SearchBudgetExceeded):
        DistinctMatcher(claim, (), budget=10).find()
