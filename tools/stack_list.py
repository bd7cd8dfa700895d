"""Print the user's stacks (stacks/Pulumi.<name>.yaml) as a JSON list: the workflows' stack matrix.

Standard library only (preview.stacks is too), so a workflow runs it with a bare `python3` before
any install.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from preview.stacks import USER_STACKS, stack_names

if __name__ == "__main__":
    print(json.dumps(stack_names(USER_STACKS)))
    sys.exit(0)
