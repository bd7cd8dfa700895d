"""tests/fixtures/: every seed document says which seed it comes from, and the loader reads it whole."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.fixtures import FIXTURES, seed000, seed001

FILES = sorted(FIXTURES.glob("seed*/*.yaml"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_fixture_cites_its_seed_first(path):
    first = path.read_text().splitlines()[0]
    number = path.parent.name.removeprefix("seed")
    assert re.match(rf"# Seed {number} \(.+\): .+, verbatim", first), f"{path.name} starts with {first!r}"


def test_the_loader_returns_every_document_and_a_fresh_copy_each_time():
    assert len(seed001.all("sriov-node-policies-per-rail")) == 16
    assert seed001.all("vf-pods") == [
        d for d in yaml.safe_load_all(FIXTURES.joinpath("seed001/vf-pods.yaml").read_text()) if d
    ]
    changed = seed000("pair-check")
    changed["metadata"]["name"] = "changed"
    assert seed000("pair-check")["metadata"]["name"] == "pair-check"


def test_seed_000_claims_are_its_seven_claims():
    assert sorted(seed000.claims()) == [
        "aligned-4gpu-8rails-a",
        "aligned-8gpu-16rails",
        "all-rails",
        "pair-check",
        "rails-8-a",
        "shape-any",
        "shape-root",
    ]
