"""Print the user's stacks (stacks/Pulumi.<name>.yaml) as a JSON list: the workflows' stack matrix.

Examples (examples/Pulumi.<name>.yaml) are not listed: they carry example OCIDs, so a real preview or
`pulumi up` on them would fail. Standard library only, so a workflow runs it before any install.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
USER_STACKS = ROOT / "stacks"
EXAMPLES = ROOT / "examples"


def stack_names(folder: Path) -> list[str]:
    """Names of the stack files `Pulumi.<name>.yaml` in ``folder``, sorted."""
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in folder.glob("Pulumi.*.yaml"))


if __name__ == "__main__":
    print(json.dumps(stack_names(USER_STACKS)))
    sys.exit(0)
