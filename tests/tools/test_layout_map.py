"""tools/layout_map.py: the module map of docs/contributing/layout/ is the tree as it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import layout_map


def test_the_committed_maps_are_current() -> None:
    # A module added, moved or redescribed without `python -m tools.layout_map` leaves a stale map.
    assert layout_map.main(["--check"]) == 0


def test_every_capability_has_its_page_and_every_module_a_line() -> None:
    pages = layout_map.pages()
    assert sorted(p.stem for p in pages) == sorted([*layout_map.CAPABILITIES, "plan"])
    text = "\n".join(pages.values())
    for layer, _ in layout_map.LAYERS:
        for module in (layout_map.ROOT / layer).glob("*/*.py"):
            if module.name != "__init__.py":
                assert f"\n{module.name} " in text or f" {module.name} " in text, module


def test_a_summary_is_the_docstrings_first_sentence_on_one_line(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""Where pods go:\nby label.  Then more text.\n\nAnd a paragraph."""\n')
    assert layout_map.summary(module) == "Where pods go: by label."
    module.write_text('"""' + "word " * 40 + '"""\n')
    shown = layout_map.summary(module)
    assert len(shown) <= layout_map.SUMMARY_LIMIT and shown.endswith("...")


def test_check_names_a_stale_page_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "layout"
    out.mkdir()
    (out / "gone.md").write_text("an old capability\n")
    monkeypatch.setattr(layout_map, "OUT", out)
    assert layout_map.main(["--check"]) == 1
    assert (out / "gone.md").exists() and not (out / "claims.md").exists()
    err = capsys.readouterr().err
    assert "is stale: run python -m tools.layout_map" in err
    assert layout_map.main([]) == 0
    assert not (out / "gone.md").exists() and (out / "claims.md").exists()
