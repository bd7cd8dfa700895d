"""Kubernetes CronJob schedules, checked as the API server checks them.

kube-apiserver validates `spec.schedule` with robfig/cron's standard parser (kubernetes
pkg/apis/batch/validation/validation.go validateScheduleFormat: `cron.ParseStandard`; a `TZ=` or `CRON_TZ=`
prefix is refused, the timeZone field takes the zone). The standard parser takes five fields (minute, hour,
day of month, month, day of week) or a descriptor (robfig/cron v3 parser.go parseDescriptor: @yearly,
@annually, @monthly, @weekly, @daily, @midnight, @hourly, @every <duration>); each field is a list of
`*` or `?`, a value, a range `a-b`, each with an optional `/step`; months and weekdays also by
their three-letter names (parser.go: minutes 0-59, hours 0-23, dom 1-31, months 1-12, dow 0-6).
"""

from __future__ import annotations

import re
from typing import Final

DESCRIPTORS: Final = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
_MONTHS: Final = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS: Final = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
# (name, low, high, names mapped to their values)
_FIELDS: Final[tuple[tuple[str, int, int, dict[str, int]], ...]] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, {name: i + 1 for i, name in enumerate(_MONTHS)}),
    ("day of week", 0, 6, {name: i for i, name in enumerate(_DAYS)}),
)
_EVERY: Final = re.compile(r"^@every (\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")


def _value(text: str, low: int, high: int, names: dict[str, int], field: str) -> int:
    number = names.get(text.lower())
    if number is None:
        if not text.isdigit():
            raise ValueError(f"{field} {text!r} is not a number")
        number = int(text)
    if not low <= number <= high:
        raise ValueError(f"{field} {number} is outside {low}-{high}")
    return number


def _field(text: str, index: int) -> None:
    field, low, high, names = _FIELDS[index]
    for part in text.split(","):
        span, _, step = part.partition("/")
        if step and (not step.isdigit() or int(step) == 0):
            raise ValueError(f"{field} step {step!r} is not a positive number")
        if span in ("*", "?"):  # robfig/cron getRange takes either as "every value" in any field
            continue
        first, dash, last = span.partition("-")
        start = _value(first, low, high, names, field)
        if dash and _value(last, low, high, names, field) < start:
            raise ValueError(f"{field} range {span!r} ends before it starts")


def problem(schedule: str) -> str | None:
    """Why the API server would refuse ``schedule`` (None: it accepts it)."""
    if schedule.startswith(("TZ=", "CRON_TZ=")):
        return "carries a time zone, which a CronJob's schedule may not; the CronJob runs in the controller's zone"
    if schedule.startswith("@"):
        if schedule in DESCRIPTORS or _EVERY.match(schedule):
            return None
        return f"is not a schedule descriptor ({', '.join(sorted(DESCRIPTORS))}, @every <duration>)"
    fields = schedule.split()
    if len(fields) != len(_FIELDS):
        return (
            "needs five fields: minute hour day-of-month month day-of-week (e.g. '0 3 * * *', daily at 03:00)"
        )
    try:
        for index, text in enumerate(fields):
            _field(text, index)
    except ValueError as err:
        return f"is not a cron schedule: {err}"
    return None
