"""Where stack files live: the user's in `stacks/`, the examples in `examples/`.

Examples (examples/Pulumi.<name>.yaml) carry example OCIDs, so a real preview or `pulumi up` on them
would fail; the workflows deploy only the user's stacks. Standard library only, so a workflow reads
it (through tools/stack_list.py) before any install.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
USER_STACKS = ROOT / "stacks"
EXAMPLES = ROOT / "examples"


def stack_names(folder: Path) -> list[str]:
    """Names of the stack files `Pulumi.<name>.yaml` in ``folder``, sorted."""
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in folder.glob("Pulumi.*.yaml"))
