"""Reporting: violations at the policy's level, and what could not be checked as one advisory line.

A policy calls :meth:`Reporter.violation` for each problem and :meth:`Reporter.unchecked` for each
thing it could not judge (a value unknown during preview, a claim defined outside the stack).
:meth:`Reporter.finish` then raises :class:`NotChecked`, a subclass of the SDK's
`UnknownValueError`: the SDK keeps the violations already reported and adds its usual advisory
"can't run policy ... during preview: <what>". So an unknown never hides a known problem, and it
never blocks a deployment by itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pulumi_policy import ReportViolation
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError

from .values import PropertyTypeError

T = TypeVar("T")


class NotChecked(UnknownValueError):
    """What a policy could not check, in one message (the SDK reports it as advisory)."""

    def __init__(self, items: list[str]) -> None:
        super().__init__(UNKNOWN_STRING_VALUE, [])
        self.items = list(items)
        shown = items[:10]
        more = f"; and {len(items) - len(shown)} more" if len(items) > len(shown) else ""
        self.message = "not checked: " + "; ".join(shown) + more


class Reporter:
    """Collects one policy run's findings; see the module docstring."""

    def __init__(self, report_violation: ReportViolation) -> None:
        self._report = report_violation
        self.unchecked_items: list[str] = []
        self.count = 0

    def violation(self, message: str, urn: str | None = None) -> None:
        self.count += 1
        self._report(message, urn)

    def unchecked(self, what: str) -> None:
        if what not in self.unchecked_items:
            self.unchecked_items.append(what)

    def guard(self, where: str, urn: str | None, check: Callable[[], T]) -> T | None:
        """``check()``'s result; a property of the wrong type becomes a violation naming ``where`` (and None)."""
        try:
            return check()
        except PropertyTypeError as err:
            self.violation(f"{where}: {err}; fix the value so that this policy can check it", urn)
            return None

    def finish(self) -> None:
        if self.unchecked_items:
            raise NotChecked(self.unchecked_items)
