"""Print the user's stacks (stacks/Pulumi.<name>.yaml) as a JSON list: the workflows' stack matrix.

`--deploy`: only those the deploy workflow runs `pulumi up` on (less stacks/no-deploy.txt).
Standard library only (preview.stacks is too), so a workflow runs it with a bare `python3` before
any install.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from preview.stacks import USER_STACKS, NoDeployError, deployed_stacks, stack_names


def main(argv: list[str]) -> int:
    try:
        names = deployed_stacks(USER_STACKS) if "--deploy" in argv else stack_names(USER_STACKS)
    except NoDeployError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(json.dumps(names))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
