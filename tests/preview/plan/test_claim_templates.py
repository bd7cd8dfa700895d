"""The plan's claim-template lines (preview/plan/claim_templates.py, issue 23 item 4): a change from a
one-shape stack to a two-shape one and back, planned from one rendering to the other."""

from __future__ import annotations

import copy
from typing import Any

from preview import cli
from preview.plan import change_plan, claim_templates
from tests.preview.plan.test_change_plan import render
from tests.stack_config.claims.test_claim_plan import A100, two_shapes
from tests.support import raw_config

Raw = dict[str, Any]
TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
ONE_SHAPE = ("aligned-8gpu-16rails", "aligned-4gpu-8rails", "all-rails")


def plan_between(before: Raw, after: Raw) -> change_plan.Plan:
    return change_plan.build(
        change_plan.parse(render("dev", before)), change_plan.parse(render("dev", after)), "the base"
    )


def templates(plan: change_plan.Plan, op: str) -> list[str]:
    return [
        s.record.inputs["metadata"]["name"] for s in plan.steps if s.op == op and s.record.type == TEMPLATE
    ]


def moved(name: str, after: str, before: str) -> str:
    return (
        f"claim template rdma-dranet/{name} is replaced and its claims are allocated on {after} (was: {before}); "
        "workloads that name it and run elsewhere stay Pending"
    )


ANYWHERE = "any node where its devices exist"


def test_a_second_shape_joining_removes_no_name_and_pins_the_first_shapes() -> None:
    """dev (one B4.8 pool) plus an A100 pool with its topology: the one-shape names stay, pinned to B4.8 (a
    replacement each, said in words), and every shape gets its per-shape names."""
    plan = plan_between(raw_config("dev"), two_shapes())
    assert templates(plan, "delete") == []
    assert templates(plan, "replace") == sorted(ONE_SHAPE)  # in the tree's order
    assert sorted(templates(plan, "create")) == sorted(
        f"{t}-{s}" for t in ONE_SHAPE for s in ("bm-gpu-b4-8", "bm-gpu-a100-v2-8")
    )
    assert claim_templates.template_lines(plan) == [
        moved(name, "BM.GPU.B4.8 nodes only", ANYWHERE) for name in sorted(ONE_SHAPE)
    ]


def test_a_shape_leaving_says_which_names_disappear() -> None:
    """Back from two shapes to one: the per-shape names disappear, and the plan says workloads naming them
    lose their template; the one-shape names stay, unpinned again."""
    plan = plan_between(two_shapes(), raw_config("dev"))
    removed = sorted(f"{t}-{s}" for t in ONE_SHAPE for s in ("bm-gpu-b4-8", "bm-gpu-a100-v2-8"))
    assert sorted(templates(plan, "delete")) == removed
    lines = claim_templates.template_lines(plan)
    assert sorted(lines[:6]) == [
        f"claim template rdma-dranet/{name} is removed and no template of that name remains: workloads that "
        "name it (resourceClaimTemplateName) lose their template: their new pods get no ResourceClaim and stay "
        "Pending (running pods keep theirs) until they name a template the stack has"
        for name in removed
    ]
    assert lines[6:] == [moved(name, ANYWHERE, "BM.GPU.B4.8 nodes only") for name in sorted(ONE_SHAPE)]


def test_a_renamed_config_template_names_its_successor() -> None:
    before = raw_config("dev")
    after = copy.deepcopy(before)
    after["workloads"] = {"railsOnlyTemplate": "all-rails-x"}
    plan = plan_between(before, after)
    assert claim_templates.template_lines(plan) == [
        "claim template rdma-dranet/all-rails is removed and no template of that name remains; the change adds "
        "all-rails-x in its place: workloads that name it (resourceClaimTemplateName) lose their template: "
        "their new pods get no ResourceClaim and stay Pending (running pods keep theirs) until they name a "
        "template the stack has"
    ]


def test_an_unchanged_template_and_a_spec_change_say_nothing() -> None:
    before = raw_config("dev")
    assert claim_templates.template_lines(plan_between(before, before)) == []
    fewer = copy.deepcopy(before)
    fewer["workloads"] = {
        "claimTemplates": [
            {"name": "aligned-8gpu-16rails", "gpusPerWorker": 8},
            {"name": "aligned-4gpu-8rails", "gpusPerWorker": 2},
        ]
    }
    plan = plan_between(before, fewer)
    assert templates(plan, "replace") == ["aligned-4gpu-8rails"]
    assert claim_templates.template_lines(plan) == []


def test_the_ci_summary_says_it_with_the_gpu_lines() -> None:
    plan = plan_between(two_shapes(), raw_config("dev"))
    summary = cli.summary_markdown("dev", plan)
    assert (
        f"! claim template rdma-dranet/aligned-8gpu-16rails-{A100.lower().replace('.', '-')} is removed"
        in summary
    )
