"""Claim plan per shape (issue 19 item 1): each DRANET pool shape gets templates from its own topology."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oke_gpu_rdma.claims import aligned_claim_spec, judge_claim, rails_only_claim_spec
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from stack_config.claims.claim_plan import shape_lines
from stack_config.claims.template_requests import acceptance_template
from stack_config.loading import load_stack
from stack_config.problems import ConfigError
from tests.strict_yaml import load_file
from tests.support import EXAMPLE_REGION, raw_config

SOURCE = "stacks/Pulumi.test.yaml"
GB200 = "BM.GPU.GB200-v3.4"
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
        # The first shape keeps the one-shape names too (stable_names).
        "aligned-8gpu-16rails",
        "aligned-4gpu-8rails",
        "all-rails-bm-gpu-b4-8",
        "all-rails-bm-gpu-a100-v2-8",
        "all-rails",
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


GB200_STACK = Path(__file__).resolve().parents[2] / "fixtures" / "stacks" / "Pulumi.gb200-b4.yaml"


def gb200_next_to_b4() -> dict[str, Any]:
    """tests/fixtures/stacks/Pulumi.gb200-b4.yaml's project keys."""
    config = load_file(GB200_STACK)["config"]
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
        # The first pool's shape keeps the shape-free names too (issue 23 item 4: no name disappears).
        ("aligned-4gpu-8rails", "pcieRoot", ""),
        ("aligned-2gpu-4rails", "pcieRoot", ""),
    ]
    assert [t.name for t in plan.rails_only_templates] == [
        "all-rails-bm-gpu-b4-8",
        "all-rails-bm-gpu-gb200-v3-4",
        "all-rails",
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


def test_a_gpu_count_gb200_cannot_align_is_made_for_b4_only_and_refused_where_named_for_gb200() -> None:
    raw = gb200_next_to_b4()
    raw["workloads"]["claimTemplates"] = [{"name": "aligned-8gpu-16rails", "gpusPerWorker": 8}]
    raw["workloads"]["acceptanceJobs"] = {"claimTemplate": "aligned-8gpu-16rails"}
    stack = load_stack(raw, SOURCE, EXAMPLE_REGION)
    assert {t.shape for t in stack.claims.aligned} == {"BM.GPU.B4.8"}
    assert (
        "aligned-8gpu-16rails: not made for BM.GPU.GB200-v3.4 (a node has 4 GPUs and aligns 1, 2, 4 per worker)"
        in (shape_lines(stack.config, stack.claims))
    )
    raw["workloads"]["claimTemplates"][0]["shapes"] = ["BM.GPU.B4.8", "BM.GPU.GB200-v3.4"]
    assert problems(raw) == [
        f"{SOURCE}: workloads.claimTemplates[0].shapes[1] = 'BM.GPU.GB200-v3.4': 8 GPUs per worker cannot be "
        "aligned on BM.GPU.GB200-v3.4: a BM.GPU.GB200-v3.4 node has only 4 GPUs; use one of 1, 2, 4; or leave "
        "BM.GPU.GB200-v3.4 out of the template's shapes"
    ]


def dev_with_gb200() -> dict[str, Any]:
    """The dev example as a new user grows it: a BM.GPU.GB200-v3.4 pool added, nothing else written."""
    raw = raw_config("dev")
    raw["nodePools"].append({**raw["nodePools"][0], "name": "gpu-gb200", "shape": GB200})
    return raw


def test_adding_a_gb200_pool_to_dev_keeps_b4s_templates_and_gives_gb200_its_own_per_numa_node() -> None:
    stack = load_stack(dev_with_gb200(), SOURCE, EXAMPLE_REGION)
    by_shape: dict[str, list[tuple[str, str, int]]] = {}
    for t in stack.claims.aligned:
        by_shape.setdefault(t.shape, []).append((t.name, t.alignment, t.gpus_per_worker))
    # B4.8 keeps its whole-node 8-GPU template under the name dev had, and its half node.
    assert by_shape["BM.GPU.B4.8"] == [
        ("aligned-8gpu-16rails-bm-gpu-b4-8", "pcieRoot", 8),
        ("aligned-4gpu-8rails-bm-gpu-b4-8", "pcieRoot", 4),
        ("aligned-8gpu-16rails", "pcieRoot", 8),
        ("aligned-4gpu-8rails", "pcieRoot", 4),
    ]
    # GB200 gets its whole node (4 GPUs, 8 rails) and one NUMA node (2 GPUs, 4 rails), each aligned per NUMA
    # node; its 2-GPU template is GB200's alone, so its shape-free names are GB200's.
    assert by_shape[GB200] == [
        ("aligned-4gpu-8rails-bm-gpu-gb200-v3-4", "numaNode", 4),
        ("aligned-2gpu-4rails-numa0-bm-gpu-gb200-v3-4", "numaNode", 2),
        ("aligned-2gpu-4rails-numa1-bm-gpu-gb200-v3-4", "numaNode", 2),
        ("aligned-2gpu-4rails-numa0", "numaNode", 2),
        ("aligned-2gpu-4rails-numa1", "numaNode", 2),
    ]
    catalog = CATALOG
    for t in stack.claims.aligned:
        assert judge_claim(t.spec, catalog.topology(t.shape)).kind == "aligned", t.name
    assert shape_lines(stack.config, stack.claims)[2:] == [
        "aligned-8gpu-16rails: not made for BM.GPU.GB200-v3.4 (a default template of another shape; each "
        "shape's defaults are its whole and half node)",
        "aligned-2gpu-4rails: not made for BM.GPU.B4.8 (a default template of another shape; each shape's "
        "defaults are its whole and half node)",
    ]


@pytest.mark.parametrize("shape", sorted(s for s in CATALOG.names if CATALOG.is_verified(s)))
def test_every_verified_shape_alone_gets_default_templates_that_align(shape: str) -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["shape"] = shape
    stack = load_stack(raw, SOURCE, EXAMPLE_REGION)
    topology = CATALOG.topology(shape)
    assert stack.claims.aligned, f"{shape} got no aligned template"
    assert max(t.gpus_per_worker for t in stack.claims.aligned) == len(topology.gpus)
    for t in stack.claims.aligned:
        assert judge_claim(t.spec, topology).kind == "aligned", t.name


def test_a_template_no_shape_can_hold_is_refused_naming_each_shape_and_its_gpus() -> None:
    raw = dev_with_gb200()
    raw["workloads"] = {"claimTemplates": [{"name": "three", "gpusPerWorker": 3}]}
    assert problems(raw) == [
        f"{SOURCE}: workloads.claimTemplates[0].gpusPerWorker = 3: no shape of the stack's rdma: dranet pools can "
        "hold a worker with 3 aligned GPUs (BM.GPU.B4.8: 8 GPUs a node, aligns 1, 2, 4, 6, 8; BM.GPU.GB200-v3.4: "
        "4 GPUs a node, aligns 1, 2, 4); use a count one of them aligns"
    ]


def test_a_template_for_a_shape_the_stack_has_no_pool_of_is_refused() -> None:
    raw = raw_config("dev")
    raw["workloads"] = {"claimTemplates": [{"name": "two", "gpusPerWorker": 2, "shapes": [GB200]}]}
    assert problems(raw) == [
        f"{SOURCE}: workloads.claimTemplates[0].shapes[0] = '{GB200}': no rdma: dranet pool of the stack that "
        f"gets claim templates has this shape (theirs: BM.GPU.B4.8); name one of those, or add a pool of {GB200}"
    ]


def test_a_template_named_for_one_shape_is_made_there_only() -> None:
    raw = dev_with_gb200()
    raw["workloads"] = {"claimTemplates": [{"name": "two", "gpusPerWorker": 2, "shapes": ["BM.GPU.B4.8"]}]}
    stack = load_stack(raw, SOURCE, EXAMPLE_REGION)
    assert [(t.name, t.shape) for t in stack.claims.aligned] == [
        ("two-bm-gpu-b4-8", "BM.GPU.B4.8"),
        ("two", "BM.GPU.B4.8"),
    ]
    assert "two: not made for BM.GPU.GB200-v3.4 (its shapes are BM.GPU.B4.8)" in shape_lines(
        stack.config, stack.claims
    )


def test_a_shape_listed_twice_is_refused() -> None:
    raw = raw_config("dev")
    raw["workloads"] = {
        "claimTemplates": [{"name": "two", "gpusPerWorker": 2, "shapes": ["BM.GPU.B4.8", "BM.GPU.B4.8"]}]
    }
    (line,) = problems(raw)
    assert line.startswith(f"{SOURCE}: workloads.claimTemplates[0].shapes = ")
    assert "names a shape twice (BM.GPU.B4.8); list each once" in line


def test_the_nccl_job_on_a_gb200_pool_takes_its_whole_node_template_by_default() -> None:
    raw = dev_with_gb200()
    raw["workloads"] = {"acceptanceJobs": {"enabled": True, "nodePool": "gpu-gb200", "ncclBusbwGBs": 300}}
    stack = load_stack(raw, SOURCE, EXAMPLE_REGION)
    assert acceptance_template(stack.config) == "aligned-4gpu-8rails"
    assert (
        stack.claims.aligned_template("aligned-4gpu-8rails", GB200).name
        == "aligned-4gpu-8rails-bm-gpu-gb200-v3-4"
    )
    raw["workloads"]["acceptanceJobs"]["claimTemplate"] = "aligned-8gpu-16rails"
    assert problems(raw) == [
        f"{SOURCE}: workloads.acceptanceJobs.claimTemplate = 'aligned-8gpu-16rails': the NCCL job runs on pool "
        f"gpu-gb200 ({GB200}), and template aligned-8gpu-16rails is not made for {GB200}; name one made for it "
        "(aligned-4gpu-8rails, aligned-2gpu-4rails), or another nodePool"
    ]


def test_the_first_shape_keeps_the_one_shape_names_pinned_to_it() -> None:
    """A second shape joining a one-shape stack removes no name a workload uses: the shape-free names stay with
    the first pool's shape, with that shape's per-shape spec (pinned, so never allocated on the A100s)."""
    stack = load_stack(two_shapes(), SOURCE, EXAMPLE_REGION)
    by_name = {t.name: t for t in stack.claims.templates}
    for plain in ("aligned-8gpu-16rails", "aligned-4gpu-8rails", "all-rails"):
        stable, per_shape = by_name[plain], by_name[f"{plain}-bm-gpu-b4-8"]
        assert (stable.shape, stable.spec, stable.namespace) == ("BM.GPU.B4.8", per_shape.spec, "rdma-dranet")
    assert by_name["aligned-8gpu-16rails"].spec == aligned_claim_spec("BM.GPU.B4.8", 8, pin_shape=True)
    assert by_name["all-rails"].spec == rails_only_claim_spec("BM.GPU.B4.8", pin_shape=True)
    # What looks a template up by name and shape (the acceptance jobs) still gets the per-shape one.
    eight = stack.claims.aligned_template("aligned-8gpu-16rails", "BM.GPU.B4.8")
    assert eight.name == "aligned-8gpu-16rails-bm-gpu-b4-8"
    rails = stack.claims.rails_only("BM.GPU.B4.8")
    assert rails is not None and rails.name == "all-rails-bm-gpu-b4-8"


# --- onboarding a shape (issue 23 item 1) --------------------------------------------------------------

H100 = "BM.GPU.H100.8"


def with_h100(**pool: Any) -> dict[str, Any]:
    """The dev stack (2 x BM.GPU.B4.8) with a BM.GPU.H100.8 pool, which has no topology."""
    raw = raw_config("dev")
    raw["nodePools"].append({**raw["nodePools"][0], "name": "gpu-h100", "shape": H100, **pool})
    return raw


def problems(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_stack(raw, SOURCE, EXAMPLE_REGION)
    return [line.strip() for line in str(caught.value).splitlines()[1:]]


def test_a_shape_without_topology_is_refused_with_the_onboarding_path() -> None:
    assert problems(with_h100()) == [
        f"{SOURCE}: nodePools[1].shape = 'BM.GPU.H100.8': BM.GPU.H100.8 has no GPU/NIC topology to build and "
        "judge claim templates on (the catalog lists it unverified: 16 x 200 Gb/s rails (8 dual-port ConnectX-7), a GPU and a NIC per PCIe switch, 2 NUMA nodes; PCIe roots not published); onboard it: set nodePools[1].onboarding: true (DRANET "
        "and the GPU DRA driver run on the pool, its shape gets no claim templates, the other pools keep theirs) "
        "and pulumi up; then `kubectl get resourceslices -o yaml > slices.yaml`, `kubectl get nodes -o yaml > "
        "nodes.yaml`, `make topology SLICES=slices.yaml NODES=nodes.yaml SHAPE=BM.GPU.H100.8`, paste the entry "
        "it prints (shapeTopologies.BM.GPU.H100.8) under oke-gpu-rdma:shapeTopologies and remove "
        "nodePools[1].onboarding (docs/onboarding-a-shape.md)"
    ]


def test_an_onboarding_pool_gets_no_templates_and_the_others_keep_theirs() -> None:
    before = load_stack(raw_config("dev"), SOURCE, EXAMPLE_REGION).claims
    after = load_stack(with_h100(onboarding=True), SOURCE, EXAMPLE_REGION)
    assert [p.name for p in after.config.dra_pools] == ["gpu-b4", "gpu-h100"]
    assert [p.name for p in after.config.templated_pools] == ["gpu-b4"]
    assert after.claims.shapes == ("BM.GPU.B4.8",)
    assert [(t.name, t.namespace, t.spec) for t in after.claims.templates] == [
        (t.name, t.namespace, t.spec) for t in before.templates
    ]
    assert all(t.shape == "BM.GPU.B4.8" for t in after.claims.templates)


def test_the_onboarding_shape_reaches_the_pack() -> None:
    from stack_config.pack_config import policy_pack_config

    onboarding = load_stack(with_h100(onboarding=True), SOURCE, EXAMPLE_REGION).config
    claims = policy_pack_config(onboarding).to_dict()["gpu-rail-claims-aligned"]
    assert claims["onboardingShapes"] == [H100]
    # A stack that onboards nothing keeps its pack config as it was: no key.
    plain = load_stack(raw_config("dev"), SOURCE, EXAMPLE_REGION).config
    assert "onboardingShapes" not in policy_pack_config(plain).to_dict()["gpu-rail-claims-aligned"]


def test_onboarding_is_for_dranet_pools() -> None:
    (line,) = problems(with_h100(onboarding=True, rdma="none"))
    assert line == (
        f"{SOURCE}: nodePools[1]: onboarding is set but rdma is none: onboarding runs DRANET and the GPU DRA driver "
        "on the pool so that `make topology` can read its shape from their ResourceSlices; set rdma: dranet, or "
        "remove onboarding"
    )


def test_onboarding_needs_both_drivers() -> None:
    raw = with_h100(onboarding=True)
    raw["gpuDriver"] = {"enabled": False}
    raw["workloads"] = {"claimTemplates": []}
    assert problems(raw) == [
        f"{SOURCE}: nodePools[1].onboarding = true: needs gpuDriver.enabled: `make topology` reads the shape from "
        "the ResourceSlices of DRANET and the GPU DRA driver on the pool's nodes; turn them on, or remove onboarding"
    ]


def test_onboarding_a_shape_that_has_its_topology_is_refused() -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["onboarding"] = True
    assert problems(raw) == [
        f"{SOURCE}: nodePools[0].onboarding = true: BM.GPU.B4.8 has its topology (the catalog's verified "
        "oke_gpu_rdma/nodes/shapes/BM.GPU.B4.8.yaml), so the pool can have its claim templates; remove onboarding"
    ]
    supplied = two_shapes()
    supplied["nodePools"][1]["onboarding"] = True
    assert problems(supplied) == [
        f"{SOURCE}: nodePools[1].onboarding = true: {A100} has its topology (shapeTopologies.{A100}), so the pool "
        "can have its claim templates; remove onboarding"
    ]


def test_every_pool_of_a_shape_onboards_or_none() -> None:
    raw = with_h100(onboarding=True)
    raw["nodePools"].append({**raw["nodePools"][1], "name": "gpu-h100-b", "onboarding": False})
    # One message for the one mistake (the templated pool's missing topology is the same mistake).
    assert problems(raw) == [
        f"{SOURCE}: nodePools[1].onboarding = true: pool gpu-h100 onboards BM.GPU.H100.8 but pool gpu-h100-b of "
        "that shape gets its claim templates, which are per shape and would be allocated on both pools' nodes; "
        "set onboarding on every pool of the shape, or on none"
    ]
    raw["nodePools"][2]["onboarding"] = True
    templated = load_stack(raw, SOURCE, EXAMPLE_REGION).config.templated_pools
    assert [p.name for p in templated] == ["gpu-b4"]


def test_acceptance_jobs_run_on_a_pool_with_templates() -> None:
    from stack_config.nodes.capacity import acceptance_pool

    raw = with_h100(onboarding=True)
    raw["nodePools"] = [raw["nodePools"][1], raw["nodePools"][0]]  # the onboarding pool first
    raw["workloads"] = {"acceptanceJobs": {"enabled": True}}
    stack = load_stack(raw, SOURCE, EXAMPLE_REGION)
    pool = acceptance_pool(stack.config)
    assert pool is not None and pool.name == "gpu-b4"
    raw["workloads"]["acceptanceJobs"]["nodePool"] = "gpu-h100"
    assert problems(raw) == [
        f"{SOURCE}: workloads.acceptanceJobs.nodePool = 'gpu-h100': is an onboarding pool: its shape has no claim "
        "templates for the jobs yet; name a pool that has them (gpu-b4)"
    ]


def test_acceptance_jobs_need_a_pool_that_is_not_onboarding() -> None:
    raw = raw_config("dev")
    raw["nodePools"][0] |= {"shape": H100, "onboarding": True}
    raw["workloads"] = {"acceptanceJobs": {"enabled": True}}
    assert problems(raw) == [
        f"{SOURCE}: workloads.acceptanceJobs.enabled = true: every rdma: dranet pool is onboarding, so no claim "
        "template exists for the jobs; turn them on once a pool's shape has its topology and the pool its templates"
    ]
    del raw["workloads"]
    stack = load_stack(raw, SOURCE, EXAMPLE_REGION)
    assert stack.claims.shapes == () and stack.claims.templates == ()
