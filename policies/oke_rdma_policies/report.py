"""Reporting: violations at the policy's level, what could not be checked as one advisory line, and
failures kept inside the policy that had them.

A policy calls :meth:`Reporter.violation` for each problem and :meth:`Reporter.unchecked` for each
thing it could not judge (a value unknown during preview, a claim defined outside the stack).
:meth:`Reporter.finish` then raises :class:`NotChecked`, a subclass of the SDK's
`UnknownValueError`: the SDK keeps the violations already reported and adds its usual advisory
"can't run policy ... during preview: <what>". So an unknown never hides a known problem, and it
never blocks a deployment by itself.

Every policy's ``validate`` is built by :func:`guarded`: an exception inside one policy becomes one
violation of that policy naming the resource (and the property path, for a property of the wrong
type), and the policy's other findings stand. Without it the SDK's `AnalyzeStack` lets the
exception out (it catches only `UnknownValueError`), the CLI gets an error, and every policy's
findings are lost.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pulumi_policy import ReportViolation, ResourceValidationArgs
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError

from .values import PropertyTypeError

T = TypeVar("T")
A = TypeVar("A")

_PACK_DIR = Path(__file__).resolve().parent


class NotChecked(UnknownValueError):
    """What a policy could not check, in one message (the SDK reports it as advisory)."""

    def __init__(self, items: list[str]) -> None:
        super().__init__(UNKNOWN_STRING_VALUE, [])
        self.items = list(items)
        shown = items[:10]
        more = f"; and {len(items) - len(shown)} more" if len(items) > len(shown) else ""
        self.message = "not checked: " + "; ".join(shown) + more


def _where_in_pack(err: BaseException) -> str:
    """`module.py:line` of the innermost frame of the pack or the domain library, for a bug report."""
    found = ""
    for frame in traceback.extract_tb(err.__traceback__):
        path = Path(frame.filename)
        if path.is_relative_to(_PACK_DIR) or path.parent.name == "oke_gpu_rdma":
            found = f"{path.parent.name}/{path.name}:{frame.lineno}"
    return found


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

    def failed(self, where: str, urn: str | None, err: BaseException) -> None:
        """One violation for an exception inside the policy; the run goes on with the next item."""
        if isinstance(err, PropertyTypeError):
            self.violation(f"{where}: {err}; fix the value so that this policy can check it", urn)
            return
        if isinstance(err, UnknownValueError):
            self.unchecked(f"{where}: {err.message}")
            return
        at = _where_in_pack(err)
        self.violation(
            f"{where}: this policy failed while checking it ({type(err).__name__}: {err}"
            f"{f' at {at}' if at else ''}), so it is not checked; the policy's other findings stand. "
            "Fix: check the resource's properties against the Kubernetes or OCI schema; if they are "
            "right, report this message as a bug of the oke-gpu-rdma policy pack",
            urn,
        )

    def guard(self, where: str, urn: str | None, check: Callable[[], T]) -> T | None:
        """``check()``'s result; any exception becomes a violation naming ``where`` (and None).

        A property of the wrong type (:class:`PropertyTypeError`) names its path.
        """
        try:
            return check()
        except NotChecked:
            raise
        except Exception as err:
            self.failed(where, urn, err)
            return None

    def finish(self) -> None:
        if self.unchecked_items:
            raise NotChecked(self.unchecked_items)


def guarded(
    check: Callable[[A, Reporter], None], where: Callable[[A], tuple[str, str | None]]
) -> Callable[[A, ReportViolation], None]:
    """A policy's ``validate``: runs ``check(args, reporter)``; whatever escapes it becomes one violation
    at ``where(args)`` (label, urn), and the reporter's findings and unknowns are reported as usual."""

    def validate(args: A, report_violation: ReportViolation) -> None:
        reporter = Reporter(report_violation)
        try:
            check(args, reporter)
        except NotChecked as err:
            for item in err.items:
                reporter.unchecked(item)
        except Exception as err:
            label, urn = where(args)
            reporter.failed(label, urn, err)
        reporter.finish()

    return validate


def stack_where(_args: Any) -> tuple[str, str | None]:
    return "the stack", None


def resource_where(args: ResourceValidationArgs) -> tuple[str, str | None]:
    """Where a resource policy's escaped error is reported: the resource's kind and name, and its URN."""
    return f"{args.resource_type.rsplit(':', 1)[-1]} {args.name}", args.urn
