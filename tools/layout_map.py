"""The module map of docs/contributing/layout/: one page per capability, printed from the tree itself.

The product is laid out by capability inside each layer (docs/contributing/architecture.md): a capability
is one folder name, `claims/`, `drivers/`, ..., found under every layer that has code for it. This prints,
for each capability, its folder in each layer with every module and the first sentence of its docstring,
so the map cannot drift from the territory (tests/tools/test_layout_map.py fails on a stale page).

    python -m tools.layout_map [--check]
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
OUT: Final = ROOT / "docs" / "contributing" / "layout"

# The capabilities, in the order the architecture page tells them; each one's folder name in every layer.
CAPABILITIES: Final = ("claims", "drivers", "nodes", "sriov", "scheduling", "health", "monitoring", "common")
# The layers a capability folder sits in, outermost first: what the folder's modules may import differs
# (docs/contributing/architecture.md, "Layers").
LAYERS: Final = (
    ("stack_config", "settings and plans (pydantic, no Pulumi)"),
    ("oke_gpu_rdma", "domain facts (no Pulumi; shipped in the policy pack too)"),
    ("components", "Pulumi components"),
    ("policies/oke_rdma_policies/rules", "policies of the CrossGuard pack"),
)
# Modules at a layer's root: they serve every capability of the layer (the rule tests/test_layout.py states).
LAYER_ROOTS: Final = (
    "__main__.py",
    "stack_config",
    "components",
    "policies/oke_rdma_policies",
    "preview",
    "tools",
)
# Longest summary a line of the map shows; the module's docstring has the rest.
SUMMARY_LIMIT: Final = 100


def summary(path: Path) -> str:
    """The first sentence of a module's docstring, on one line, at most SUMMARY_LIMIT characters."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    text = " ".join(doc.split())
    end = text.find(". ")
    sentence = text if end < 0 else text[: end + 1]
    sentence = sentence.rstrip(":")
    if len(sentence) > SUMMARY_LIMIT:
        sentence = sentence[: SUMMARY_LIMIT - 3].rsplit(" ", 1)[0] + "..."
    return sentence


def _entries(folder: Path, indent: str = "  ") -> Iterator[str]:
    for path in sorted(folder.iterdir()):
        if path.name in ("__pycache__", "__init__.py") or path.name.endswith(".pyc"):
            continue
        if path.is_dir():
            package = path / "__init__.py"
            text = summary(package) if package.exists() else _data_summary(path)
            yield f"{indent}{path.name}/".ljust(34) + "  " + text
            if package.exists():
                yield from _entries(path, indent + "  ")
        elif path.suffix == ".py":
            yield f"{indent}{path.name}".ljust(34) + "  " + summary(path)


def _data_summary(folder: Path) -> str:
    kinds = sorted({p.suffix or p.name for p in folder.iterdir() if p.is_file()})
    return "data: " + ", ".join(f"*{k}" for k in kinds)


def capability_page(name: str) -> str:
    """The page of one capability: its folder in each layer, every module with its summary."""
    domain = ROOT / "oke_gpu_rdma" / name / "__init__.py"
    lines = [
        f"# `{name}/`",
        "",
        f"{summary(domain)} Printed by `python -m tools.layout_map` from the tree and the modules' docstrings;",
        "[the rule and the other capabilities](../architecture.md).",
        "",
    ]
    for layer, role in LAYERS:
        folder = ROOT / layer / name
        if not folder.is_dir():
            lines += [f"- {role}: no `{name}` folder in `{layer}`", ""]
            continue
        lines += [f"`{layer}/{name}/`: {role}", "", "```", *_entries(folder, ""), "```", ""]
    tests = [
        f"`tests/{_test_layer(layer)}/{name}/`"
        for layer, _ in LAYERS
        if (ROOT / "tests" / _test_layer(layer) / name).is_dir()
    ]
    lines += [f"Tests: {', '.join(tests)}.", ""]
    return "\n".join(lines)


def _test_layer(layer: str) -> str:
    return "policies" if layer.startswith("policies/") else layer


def plan_page() -> str:
    """The plan's page: `preview/`, one capability in a folder of its own that reads all the others."""
    return "\n".join(
        [
            "# `preview/`: the plan",
            "",
            f"{summary(ROOT / 'preview' / '__init__.py')} Printed by `python -m tools.layout_map`;",
            "[the rule and the capabilities](../architecture.md).",
            "",
            "```",
            *_entries(ROOT / "preview", ""),
            "```",
            "",
            "Tests: `tests/preview/`.",
            "",
        ]
    )


def pages() -> dict[Path, str]:
    """Every page of the map by path."""
    return {
        **{OUT / f"{name}.md": capability_page(name) for name in CAPABILITIES},
        OUT / "plan.md": plan_page(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a page is stale, write nothing")
    args = parser.parse_args(argv)
    wanted = pages()
    stale = sorted(p for p, text in wanted.items() if not p.exists() or p.read_text() != text)
    extra = sorted(p for p in OUT.glob("*.md") if p not in wanted) if OUT.is_dir() else []
    if args.check:
        for path in stale + extra:
            print(f"{_shown(path)} is stale: run python -m tools.layout_map", file=sys.stderr)
        return 1 if stale or extra else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for path, text in wanted.items():
        path.write_text(text)
    for path in extra:
        path.unlink()
    return 0


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


if __name__ == "__main__":
    sys.exit(main())
