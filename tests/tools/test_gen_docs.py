"""The reference pages in docs/reference/ are what tools/gen_docs.py prints from the code, no more (a page
the code no longer prints is stale too), and it prints every key of the stack config and every policy of
the pack, in tables of one-line cells with the whole text below them."""

from __future__ import annotations

import functools
from pathlib import Path

import oke_rdma_policies
import pytest
from pydantic import BaseModel

from stack_config import model
from tools import gen_docs

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def _pages() -> dict[Path, str]:
    return gen_docs.pages()


def _configuration() -> str:
    return "".join(
        text
        for page, text in _pages().items()
        if page.parts[:3] == ("docs", "reference", "configuration") or page == gen_docs.CONFIGURATION
    )


@pytest.mark.parametrize("page", sorted(gen_docs.pages()), ids=str)
def test_the_committed_page_is_current(page: Path) -> None:
    committed = (ROOT / page).read_text() if (ROOT / page).is_file() else ""
    assert committed == _pages()[page], f"{page} is stale: run `make docs` and commit it"


def test_the_generated_folders_hold_only_pages_the_code_prints() -> None:
    committed = {
        page.relative_to(ROOT) for folder in gen_docs.GENERATED_DIRS for page in (ROOT / folder).glob("*.md")
    }
    assert sorted(committed - set(_pages())) == [], (
        "stale pages: run `make docs` (it deletes them) and commit"
    )


def _keys(cls: type[BaseModel], prefix: str = "") -> set[str]:
    keys = set()
    for name, field in cls.model_fields.items():
        key = f"{prefix}{field.alias or name}"
        keys.add(key)
        inner, suffix = gen_docs._model_of(field.annotation)
        if inner is not None:
            keys |= _keys(inner, f"{key}{suffix}.")
    return keys


def test_the_configuration_pages_have_a_summarised_row_for_every_key() -> None:
    rows = {
        line.split(" | ")[0].strip("| `"): line.split(" | ")[-1].strip("| ")
        for line in _configuration().splitlines()
        if line.startswith("| `")
    }
    assert set(rows) == _keys(model.StackConfig)
    assert sorted(key for key, summary in rows.items() if not summary) == []


def test_a_row_whose_cells_say_part_of_it_has_the_whole_below_its_table() -> None:
    page = _configuration()
    assert (
        '| `nodePools[].rdma` | `dranet` \\| `sriov` \\| `none` | `"dranet"` | Where pods get the rails |'
        in page
    )
    assert "\n- `nodePools[].rdma`: Where pods get the rails: dranet (DRA claims," in page
    # An image with its digest is too long for a cell: its default is printed below.
    assert "| `health.remediation.image` | text | (below) |" in page
    assert 'Default: `"docker.io/library/python:3.12-alpine@sha256:' in page


def test_the_configuration_pages_print_defaults_as_a_stack_file_writes_them() -> None:
    page = _configuration()
    assert '| `network.create.vcnCidr` | CIDR | `"10.140.0.0/16"` |' in page
    assert "| `nodePools[].count` | integer | required |" in page
    assert '| `nodePools[].rdma` | `dranet` \\| `sriov` \\| `none` | `"dranet"` |' in page
    assert (
        '`[{"key": "nvidia.com/gpu", "value": "present"}]`' in page
    )  # the default taint, effect at its default


def test_every_block_is_on_one_page_linked_from_the_table_of_its_key() -> None:
    pages = {page: text for page, text in _pages().items() if page.parent == gen_docs.CONFIGURATION_DIR}
    headings = [line for text in pages.values() for line in text.splitlines() if line.startswith("## `")]
    blocks = [path for path, _ in gen_docs._blocks(model.StackConfig, "") if path]
    assert sorted(headings) == sorted(f"## `{path}`" for path in blocks)
    index = _pages()[gen_docs.CONFIGURATION]
    assert "| `nodePools` | list of [block](configuration/node-pools.md) | required |" in index
    assert (
        "| `nodePools[].taints` | list of [block](#nodepoolstaints) |"
        in pages[gen_docs.CONFIGURATION_DIR / "node-pools.md"]
    )


def test_the_policy_pages_have_every_policy_with_its_level_and_settings() -> None:
    index = _pages()[gen_docs.POLICIES]
    for rule in oke_rdma_policies.RULES:
        page = _pages()[gen_docs.POLICIES_DIR / f"{rule.name}.md"]
        assert f"| [`{rule.name}`](policies/{rule.name}.md) |" in index
        assert str(rule.policy.description) in page
        assert f"| `enforcementLevel` | `{rule.policy.enforcement_level.value}` |" in page
        for name, field in (rule.settings.model_fields if rule.settings else {}).items():
            assert f"| `{field.alias or name}` |" in page, (rule.name, name)


@pytest.mark.parametrize(
    ("text", "summary"),
    [
        ("Number of nodes (OKE: at most 1,000 a pool).", "Number of nodes"),
        (
            "Pod networking: FLANNEL_OVERLAY, or OCI_VCN_IP_NATIVE (pods on the pod subnet).",
            "Pod networking: FLANNEL_OVERLAY, or OCI_VCN_IP_NATIVE",
        ),
        (
            "SR-IOV settings of a pool with rdma: sriov (defaults: 2 VFs per PF).",
            "SR-IOV settings of a pool with rdma: sriov",
        ),
        (
            "Protect what is expensive: `true` (the default) or `{gpuPools: false}`.",
            "Protect what is expensive",
        ),
        ("The home region (e.g. us-ashburn-1). Required with the policy.", "The home region"),
        ("Pool name.", "Pool name"),
    ],
)
def test_a_summary_is_the_first_phrase_of_the_description(text: str, summary: str) -> None:
    assert gen_docs._summary(text) == summary


def test_a_summary_too_long_for_a_cell_ends_at_a_comma_or_a_word() -> None:
    commas = "Every image " + "and more words, " * 10 + "are pinned."
    assert gen_docs._summary(commas).endswith("and more words")
    assert len(gen_docs._summary(commas)) <= gen_docs.CELL_MAX
    words = "A " + "very " * 40 + "long `code span here` sentence."
    summary = gen_docs._summary(words)
    assert summary.endswith("…") and len(summary) <= gen_docs.CELL_MAX and summary.count("`") % 2 == 0


def test_check_names_the_stale_pages_and_the_command_and_a_run_deletes_the_old_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for page, text in _pages().items():
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / page).write_text(text)
    assert gen_docs.stale(tmp_path) == []
    changed = gen_docs.POLICIES_DIR / "gpu-rail-claims-aligned.md"
    gone = gen_docs.CONFIGURATION_DIR / "a-block-removed.md"
    (tmp_path / changed).write_text("old\n")
    (tmp_path / gone).write_text("old\n")
    assert gen_docs.stale(tmp_path) == sorted([gone, changed])
    monkeypatch.setattr(gen_docs, "ROOT", tmp_path)
    assert gen_docs.main(["--check"]) == 1
    assert capsys.readouterr().err == "".join(
        f"{page} is stale: run `make docs` and commit it\n" for page in sorted([gone, changed])
    )
    assert (tmp_path / changed).read_text() == "old\n" and (tmp_path / gone).is_file()
    assert gen_docs.main([]) == 0
    assert gen_docs.stale(tmp_path) == [] and not (tmp_path / gone).exists()
