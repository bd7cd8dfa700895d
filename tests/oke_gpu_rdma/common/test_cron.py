"""CronJob schedules as the API server (robfig/cron's standard parser) takes them."""

from __future__ import annotations

import pytest

from oke_gpu_rdma.common.cron import problem


@pytest.mark.parametrize(
    "schedule",
    [
        "0 3 * * *",
        "*/15 * * * mon-fri",
        "0 0 1 jan *",
        "0 3 ? * sun",
        "5,35 1-5/2 * * *",
        "@hourly",
        "@every 1h30m",
    ],
)
def test_accepted(schedule: str) -> None:
    assert problem(schedule) is None


@pytest.mark.parametrize(
    ("schedule", "why"),
    [
        ("0 24 * * *", "is not a cron schedule: hour 24 is outside 0-23"),
        ("60 * * * *", "is not a cron schedule: minute 60 is outside 0-59"),
        ("0 0 0 * *", "is not a cron schedule: day of month 0 is outside 1-31"),
        ("0 0 * * 7", "is not a cron schedule: day of week 7 is outside 0-6"),
        ("5-1 * * * *", "is not a cron schedule: minute range '5-1' ends before it starts"),
        ("*/0 * * * *", "is not a cron schedule: minute step '0' is not a positive number"),
        ("0 3 * *", "needs five fields: minute hour day-of-month month day-of-week (e.g. '0 3 * * *', daily at 03:00)"),
        ("@often", "is not a schedule descriptor (@annually, @daily, @hourly, @midnight, @monthly, @weekly, "
         "@yearly, @every <duration>)"),
    ],
)  # fmt: skip
def test_refused(schedule: str, why: str) -> None:
    assert problem(schedule) == why
