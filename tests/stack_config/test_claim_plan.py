"""Claim plan per shape (issue 19 item 1): each DRANET pool shape gets templates from its own topology."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from oke_gpu_rdma.claims import aligned_claim_spec, judge_claim
from oke_gpu_rdma.shape_catalog import CATALOG
from stack_config.loading import load_stack
from stack_config.problems import ConfigError
from tests.support import EXAMPLE_REGION, raw_config

SOURCE = "stacks/Pulumi.test.yaml"
A100 = "BM.GPU.A100-v2.8"


def a100_roots() -> list[dict[str, Any]]:
    """8 roots of 1 GPU and 2 rails each: not the B4.8 layout (2 GPUs and 4 rails per root)."""
    return [
        {
            "name": f"pci0000:{i:02x}",
            "numaNode": i // 4,
            "gpus": [f"0000:{16 + i:02x}:00.0"],
            "rails": [
                {"name": f"rdma{2 * i}", "pciAddress": f"0000:{64 + i:02x}:00.0"},
                {"name": f"rdma{2 * i + 1}", "pciAddress": f"0000:{64 + i:02x}:00.1"},
            ],
        }
        for i in range(8)
    ]


def two_shapes() -> dict[str, Any]:
    raw = raw_config("dev")
    raw["nodePools"].append({**raw["nodePools"][0], "name": "gpu-a100", "shape": A100})
    raw["shapeTopologies"] = {A100: {"roots": a100_roots()}}
    return raw


def test_one_shape_keeps_todays_names_and_specs() -> None:
    stack = load_stack(raw_config("dev"), SOURCE, EXAMPLE_REGION)
    names = [t.name for t in stack.claims.templates]
    assert names == ["aligned-8gpu-16rails", "aligned-4gpu-8rails", "all-rails"]
    eight = stack.claims.aligned_template("aligned-8gpu-16rails", "BM.GPU.B4.8")
    assert eight.spec == aligned_claim_spec("BM.GPU.B4.8", 8)  # no shape selector with one shape


def test_each_shape_gets_templates_from_its_own_topology_named_by_shape() -> None:
    stack = load_stack(two_shapes(), SOURCE, EXAMPLE_REGION)
    names = [t.name for t in stack.claims.templates]
    assert names == [
        "aligned-8gpu-16rails-bm-gpu-b4-8",
        "aligned-4gpu-8rails-bm-gpu-b4-8",
        "aligned-8gpu-16rails-bm-gpu-a100-v2-8",
        "aligned-4gpu-8rails-bm-gpu-a100-v2-8",
        "all-rails-bm-gpu-b4-8",
        "all-rails-bm-gpu-a100-v2-8",
    ]
    a100 = stack.claims.aligned_template("aligned-8gpu-16rails", A100)
    requests = a100.spec["devices"]["requests"]
    # 8 pairs of 1 GPU and 2 rails: the A100 roots' layout, not the B4.8's 4 pairs of 2 GPUs and 4 rails.
    assert [r["exactly"]["count"] for r in requests] == [1, 2] * 8
    rails = requests[1]["exactly"]["selectors"]
    assert rails[-1] == {
        "cel": {
            "expression": f'has(device.attributes["oke.dra.net"].shape) && device.attributes["oke.dra.net"].shape == "{A100}"'
        }
    }
    assert [v.shape for v in a100.verdicts] == [A100] and a100.verdicts[0].kind == "aligned"
    assert stack.claims.rails_only(A100) is not None
    assert stack.claims.rails_only(A100).spec["devices"]["requests"][0]["exactly"]["count"] == 16


def test_a_template_for_one_shape_can_only_be_allocated_there() -> None:
    """The shape selector keeps the B4.8 template off the A100 nodes: unsatisfiable there, aligned at home."""
    stack = load_stack(two_shapes(), SOURCE, EXAMPLE_REGION)
    b4 = stack.claims.aligned_template("aligned-8gpu-16rails", "BM.GPU.B4.8")
    a100 = CATALOG.with_topologies({A100: {"roots": a100_roots()}}).topology(A100)
    assert judge_claim(b4.spec, "BM.GPU.B4.8").kind == "aligned"
    assert judge_claim(b4.spec, a100).kind == "unsatisfiable"


GB200_STACK = Path(__file__).resolve().parents[1] / "fixtures" / "stacks" / "Pulumi.gb200-b4.yaml"


def gb200_next_to_b4() -> dict[str, Any]:
    """tests/fixtures/stacks/Pulumi.gb200-b4.yaml's project keys."""
    config = yaml.safe_load(GB200_STACK.read_text())["config"]
    return {k.removeprefix("oke-gpu-rdma:"): v for k, v in config.items() if k.startswith("oke-gpu-rdma:")}


def test_a_gb200_pool_next_to_a_b4_pool_gets_templates_for_both_each_at_its_level() -> None:
    stack = load_stack(gb200_next_to_b4(), SOURCE, EXAMPLE_REGION)
    plan = stack.claims
    assert plan.problems == ()
    assert [(t.name, t.alignment, t.group) for t in plan.aligned] == [
        ("aligned-4gpu-8rails-bm-gpu-b4-8", "pcieRoot", ""),
        ("aligned-2gpu-4rails-bm-gpu-b4-8", "pcieRoot", ""),
        ("aligned-4gpu-8rails-bm-gpu-gb200-v3-4", "numaNode", ""),
        ("aligned-2gpu-4rails-numa0-bm-gpu-gb200-v3-4", "numaNode", "numa0"),
        ("aligned-2gpu-4rails-numa1-bm-gpu-gb200-v3-4", "numaNode", "numa1"),
    ]
    assert [t.name for t in plan.rails_only_templates] == [
        "all-rails-bm-gpu-b4-8",
        "all-rails-bm-gpu-gb200-v3-4",
    ]
    assert all(v.kind == "aligned" for t in plan.aligned for v in t.verdicts)
    # The B4.8 templates are the ones a B4.8-only stack pinned to its shape gets: GB200 changes none of them.
    b4 = plan.aligned_template("aligned-4gpu-8rails", "BM.GPU.B4.8")
    assert b4.spec == aligned_claim_spec("BM.GPU.B4.8", 4, pin_shape=True)
    # A NUMA node's template selects that node's GPUs and rails by address, nothing else.
    numa1 = plan.aligned[4].spec["devices"]
    assert "constraints" not in numa1
    gpus, rails = numa1["requests"]
    assert gpus["exactly"]["count"] == 2 and rails["exactly"]["count"] == 4
    assert '["0018:06:00.0", "0019:06:00.0"]' in gpus["exactly"]["selectors"][0]["cel"]["expression"]
    assert (
        '["0010:03:00.0", "0010:03:00.1", "0012:03:00.0", "0012:03:00.1"]'
        in rails["exactly"]["selectors"][1]["cel"]["expression"]
    )


def test_a_gpu_count_gb200_cannot_align_names_the_key_and_the_counts_it_can() -> None:
    raw = gb200_next_to_b4()
    raw["workloads"]["claimTemplates"] = [{"name": "aligned-8gpu-16rails", "gpusPerWorker": 8}]
    raw["workloads"]["acceptanceJobs"] = {"claimTemplate": "aligned-8gpu-16rails"}
    with pytest.raises(ConfigError) as err:
        load_stack(raw, SOURCE, EXAMPLE_REGION)
    assert [p.render() for p in err.value.problems] == [
        "workloads.claimTemplates[0].gpusPerWorker = 8: 8 GPUs per worker cannot be aligned on BM.GPU.GB200-v3.4: "
        "a BM.GPU.GB200-v3.4 node has only 4 GPUs; use one of 1, 2, 4"
    ]
