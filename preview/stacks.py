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


# Stacks the deploy workflow leaves alone (previewed on pull requests, never `pulumi up` by CI): their
# names, one a line, `#` comments. A list beside the stack files rather than a key in them: the Pulumi
# CLI owns a stack file's top-level keys, and every `oke-gpu-rdma:` key is a setting of the program.
NO_DEPLOY_FILE = "no-deploy.txt"


class NoDeployError(ValueError):
    """A name in stacks/no-deploy.txt that no stack file has (a typo would deploy the stack meant)."""


def no_deploy(folder: Path) -> list[str]:
    """The stacks of ``folder`` listed in its no-deploy.txt; NoDeployError names one that does not exist."""
    path = folder / NO_DEPLOY_FILE
    if not path.is_file():
        return []
    names = [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()]
    listed = [n for n in names if n]
    known = stack_names(folder)
    unknown = [n for n in listed if n not in known]
    if unknown:
        raise NoDeployError(
            f"{folder.name}/{NO_DEPLOY_FILE}: {', '.join(unknown)} "
            f"{'is' if len(unknown) == 1 else 'are'} no stack file {folder.name}/Pulumi.<name>.yaml "
            f"(stacks: {', '.join(known) or 'none'}); fix the name or remove the line"
        )
    return listed


def deployed_stacks(folder: Path) -> list[str]:
    """The stacks the deploy workflow runs `pulumi up` on: every stack file, less no-deploy.txt."""
    skipped = set(no_deploy(folder))
    return [n for n in stack_names(folder) if n not in skipped]
