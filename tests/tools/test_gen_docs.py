"""The reference pages in docs/reference/ are what tools/gen_docs.py prints from the code, and it prints
every key of the stack config and every policy of the pack."""

from __future__ import annotations

from pathlib import Path

import oke_rdma_policies
import pytest
from pydantic import BaseModel

from stack_config import model
from tools import gen_docs

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("page", sorted(gen_docs.PAGES), ids=str)
def test_the_committed_page_is_current(page: Path) -> None:
    committed = (ROOT / page).read_text() if (ROOT / page).is_file() else ""
    assert committed == gen_docs.PAGES[page](), f"{page} is stale: run `make docs` and commit it"


def _keys(cls: type[BaseModel], prefix: str = "") -> set[str]:
    keys = set()
    for name, field in cls.model_fields.items():
        key = f"{prefix}{field.alias or name}"
        keys.add(key)
        inner, suffix = gen_docs._model_of(field.annotation)
        if inner is not None:
            keys |= _keys(inner, f"{key}{suffix}.")
    return keys


def test_the_configuration_page_has_a_described_row_for_every_key() -> None:
    rows = {
        line.split("|")[1].strip().strip("`"): line.split("|")[4].strip()
        for line in gen_docs.configuration_reference().splitlines()
        if line.startswith("| `")
    }
    assert set(rows) == _keys(model.StackConfig)
    assert sorted(key for key, meaning in rows.items() if not meaning) == []


def test_the_configuration_page_prints_defaults_as_a_stack_file_writes_them() -> None:
    page = gen_docs.configuration_reference()
    assert '| `network.create.vcnCidr` | CIDR | `"10.140.0.0/16"` |' in page
    assert "| `nodePools[].count` | integer | required |" in page
    assert '| `nodePools[].rdma` | `dranet` \\| `sriov` \\| `none` | `"dranet"` |' in page
    assert (
        '`[{"key": "nvidia.com/gpu", "value": "present"}]`' in page
    )  # the default taint, effect at its default


def test_the_policy_page_has_every_policy_with_its_level_and_settings() -> None:
    page = gen_docs.policy_reference()
    for rule in oke_rdma_policies.RULES:
        section = page.split(f"\n## {rule.name}\n", 1)[1].split("\n## ", 1)[0]
        assert str(rule.policy.description) in section
        assert f"| `enforcementLevel` | `{rule.policy.enforcement_level.value}` |" in section
        for name, field in (rule.settings.model_fields if rule.settings else {}).items():
            assert f"| `{field.alias or name}` |" in section, (rule.name, name)


def test_check_names_the_stale_page_and_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for page, generate in gen_docs.PAGES.items():
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / page).write_text(generate())
    assert gen_docs.stale(tmp_path) == []
    (tmp_path / gen_docs.POLICIES).write_text("old\n")
    assert gen_docs.stale(tmp_path) == [gen_docs.POLICIES]
    monkeypatch.setattr(gen_docs, "ROOT", tmp_path)
    assert gen_docs.main(["--check"]) == 1
    assert capsys.readouterr().err == f"{gen_docs.POLICIES} is stale: run `make docs` and commit it\n"
    assert (tmp_path / gen_docs.POLICIES).read_text() == "old\n"
