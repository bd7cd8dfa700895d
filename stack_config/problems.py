"""What is wrong with a stack config: one problem per key, rendered as one line each."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ConfigProblem:
    """One thing wrong with the stack config: where, the value found, and what to do."""

    path: str
    value: object
    message: str
    suggests: str | None = None
    """The key the user probably meant (a misspelt key's closest valid one): that key's own "is missing" is
    the same mistake said twice, so it is not reported."""

    def render(self) -> str:
        if self.value is None:
            joiner = " " if self.message.startswith("is ") else ": "
            return f"{self.path}{joiner}{self.message}"
        return f"{self.path} = {_show(self.value)}: {self.message}"


def _show(value: object) -> str:
    try:
        text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    except (ValueError, RecursionError):
        # A number too long to print, or a value nested deeper than json recurses: name its kind only.
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


class ConfigError(Exception):
    """The stack config is invalid; `str()` is the full message, one line per problem."""

    def __init__(self, source: str, problems: Sequence[ConfigProblem]) -> None:
        self.source = source
        self.problems = list(problems)
        # A problem of several lines (a reason and the pods it applies to) keeps them under its first.
        lines = [f"{source}: {p.render()}".replace("\n", "\n    ") for p in self.problems]
        super().__init__("invalid stack config:\n  " + "\n  ".join(lines))
