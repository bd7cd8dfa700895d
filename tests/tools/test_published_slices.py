"""tools/published_slices.py: the GB200 fixture holds the published facts and nothing the tool would drop."""

from __future__ import annotations

import yaml

from tests.fixtures import FIXTURES
from tools.published_slices import COMMIT, DIRECTORY, FILES, REPOSITORY, render

FIXTURE = FIXTURES / "resourceslices" / "gb200-v3.4-published.yaml"


def test_the_fixture_is_a_fixed_point_of_the_tool_and_cites_its_source():
    text = FIXTURE.read_text()
    items = yaml.safe_load(text)["items"]
    assert render(items) == text  # the tool keeps exactly what the fixture holds, in its order
    assert f"{REPOSITORY}@{COMMIT}" in text
    assert all(f"{DIRECTORY}/{name}" in text for name in FILES)


def test_it_keeps_the_facts_make_topology_reads_and_drops_the_rest():
    raw = yaml.safe_load(FIXTURE.read_text())["items"]
    gpu, rail = raw[0]["spec"]["devices"][0], raw[1]["spec"]["devices"][0]
    gpu["attributes"]["uuid"] = {"string": "GPU-x"}
    rail["attributes"]["dra.net/mac"] = {"string": "60:5e:65:14:0f:10"}
    kept = yaml.safe_load(render(raw))["items"]
    assert "uuid" not in kept[0]["spec"]["devices"][0]["attributes"]
    assert "dra.net/mac" not in kept[1]["spec"]["devices"][0]["attributes"]
    assert kept[1]["spec"]["devices"][0]["attributes"]["dra.net/numaNode"] == {"int": 0}
    assert kept[0]["spec"]["devices"][0]["capacity"] == {"memory": {"value": "189471Mi"}}
