"""When a schedule fires: a cron expression is kept only when it fires at the times it
shows and reads in words, refused naming the field and why; its times follow the time
zone through summer time, a time of day fired once the night the clocks go back."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter

from automation.errors import ActionInvalid
from dashboard.jobs.cron import CronInvalid, check_cron, check_timezone, describe, next_times


@pytest.mark.parametrize(
    ("cron", "says"),
    [
        ("", "5 fields"),
        ("* * *", "5 fields, not 3"),
        ("0 7 * * 1-5 2026", "5 fields, not 6"),
        ("61 * * * *", "not a valid cron expression"),
        ("0 25 * * *", "not a valid cron expression"),
        ("0 7 32 * *", "not a valid cron expression"),
        ("0 7 * * funday", "the day of the week field holds 'funday'"),
        ("@daily", "5 fields, not 1"),
        ("0 0 30 2 *", "never matches a date"),  # valid fields, no such day
        ("0 0 31 4,6 *", "never matches a date"),
        ("*/90 * * * *", "a step of 90 in the minute field"),  # would be hourly
        ("0 */25 * * *", "a step of 25 in the hour field"),
    ],
)
def test_a_bad_cron_expression_is_refused_saying_why(cron: str, says: str) -> None:
    with pytest.raises(CronInvalid) as refused_:
        check_cron(cron)
    assert says in refused_.value.message, refused_.value.message


def test_times_follow_the_time_zone_through_summer_time_and_read_as_words() -> None:
    assert check_cron("  0  7 * * 1-5 ") == "0 7 * * 1-5"
    assert describe("0 7 * * 1-5") == "At 07:00, Monday through Friday"
    # ("localtime": the server's own zone, another on another server; "Factory": none)
    for zone in ["", "Mars/Olympus", "../etc/passwd", "UTC+2", "localtime", "Factory"]:
        with pytest.raises(ActionInvalid):
            check_timezone(zone)
    # Paris moves its clocks at 2:00 on 29 March 2026: 7:00 stays 7:00 there, an hour
    # sooner in UTC from that day.
    before = datetime(2026, 3, 27, 12, tzinfo=UTC)
    times = next_times("0 7 * * *", "Europe/Paris", before, count=3)
    assert [t.astimezone(ZoneInfo("Europe/Paris")).hour for t in times] == [7, 7, 7]
    assert [(t.day, t.astimezone(UTC).hour) for t in times] == [(28, 6), (29, 5), (30, 5)]
    # They go back at 3:00 on 25 October: 2:30 comes twice that night, and a daily 2:30
    # replays once (two orders in the back office else); every half hour goes on through
    # the hour that repeats, as time does.
    before = datetime(2026, 10, 24, 12, tzinfo=UTC)
    times = next_times("30 2 * * *", "Europe/Paris", before, count=3)
    assert [(t.day, t.astimezone(UTC).hour) for t in times] == [(25, 0), (26, 1), (27, 1)]
    night = datetime(2026, 10, 24, 23, 50, tzinfo=UTC)  # 01:50 in Paris
    times = next_times("*/30 * * * *", "Europe/Paris", night, count=4)
    assert [t.astimezone(UTC).strftime("%H:%M") for t in times] == [
        "00:00", "00:30", "01:00", "01:30"
    ]  # fmt: skip


def test_a_cron_holds_only_cron_s_words_and_a_refusal_names_the_field() -> None:
    for cron, says in [
        ("R * * * *", "the minute field holds 'R'"),  # fired at a random minute
        ("0 R * * *", "the hour field holds 'R'"),  # cron-descriptor can't read it
        ("0 7 * * R", "the day of the week field holds 'R'"),
        ("H 7 * * *", "the minute field holds 'H'"),
        ("0 7 * mon *", "the month field holds 'mon'"),
    ]:
        with pytest.raises(CronInvalid) as refused_:
            check_cron(cron)
        assert says in refused_.value.message, refused_.value.message
    for cron, words in [
        ("0 0 L * *", "At 00:00, on the last day of the month"),
        ("0 0 15W * *", "At 00:00, on the weekday nearest day 15 of the month"),
        ("0 0 * * L5", "At 00:00, on the last Friday of the month"),
        (
            "0 12 * JAN-jun sun#3",
            "At 12:00, on the third Sunday of the month, January through June",
        ),
    ]:
        assert check_cron(cron) == cron
        assert describe(cron) == words


@pytest.mark.parametrize(
    ("cron", "words", "days"),
    [
        # 7 is Sunday as 0 is: 0-7 is every day, not "Sunday through Sunday".
        ("0 7 * * 0-7", "At 07:00", {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}),
        ("0 7 * * 1-7", "At 07:00", {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}),
        ("0 7 * * 0,7", "At 07:00, only on Sunday", {"Sun"}),  # not "Sunday and Sunday"
        ("0 7 * * 0-7/2", "At 07:00, only on Tuesday, Thursday, Saturday, and Sunday",
         {"Tue", "Thu", "Sat", "Sun"}),
        ("0 7 * * 5-7", "At 07:00, Friday through Sunday", {"Fri", "Sat", "Sun"}),
        ("0 7 * * mon-wed,7", "At 07:00, only on Monday through Wednesday and Sunday",
         {"Mon", "Tue", "Wed", "Sun"}),
        ("0 7 * * 7#2", "At 07:00, on the second Sunday of the month", {"Sun"}),
        ("0 7 * * 0-6", "At 07:00, Sunday through Saturday",
         {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}),  # as written: no 7 in it
        # A step names the days it fires on, not "every 2 days of the week".
        ("0 7 * * 1/2", "At 07:00, only on Monday, Wednesday, and Friday",
         {"Mon", "Wed", "Fri"}),
        ("0 7 * * */2", "At 07:00, only on Tuesday, Thursday, Saturday, and Sunday",
         {"Tue", "Thu", "Sat", "Sun"}),
        ("0 7 * * 2/3", "At 07:00, only on Tuesday and Friday", {"Tue", "Fri"}),
        ("0 7 * * 1-5/2,6", "At 07:00, only on Monday, Wednesday, Friday, and Saturday",
         {"Mon", "Wed", "Fri", "Sat"}),
        ("0 7 * * */1", "At 07:00", {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}),
    ],
)  # fmt: skip
def test_a_day_of_the_week_field_naming_7_or_a_step_reads_as_the_days_it_fires(
    cron: str, words: str, days: set[str]
) -> None:
    assert check_cron(cron) == cron  # kept as written
    assert describe(cron) == words
    fired = next_times(cron, "UTC", datetime(2026, 1, 1, tzinfo=UTC), count=40)
    assert {time.strftime("%a") for time in fired} == days


def test_a_range_of_days_from_7_is_refused_as_croniter_misreads_it() -> None:
    """croniter fires 7-7 every day (cron: Sundays), 7-1 on Sunday and Monday."""
    for cron in ["0 7 * * 7-7", "0 7 * * 1,7-7", "0 7 * * 07-1/2"]:
        with pytest.raises(CronInvalid, match="a range of days can't start at 7") as refused_:
            check_cron(cron)
        assert "start it at 0" in refused_.value.hint
        assert describe(cron) == ""


@pytest.mark.parametrize(
    ("cron", "words", "by_the_day", "by_the_weekday"),
    [
        ("0 7 15 * 1-5", "At 07:00, on day 15 of the month, or Monday through Friday",
         "Sun 15 Feb", "Mon 02 Feb"),
        ("0 7 15 * mon-fri", "At 07:00, on day 15 of the month, or Monday through Friday",
         "Sun 15 Feb", "Tue 03 Feb"),
        ("0 7 1,15 * 1-5", "At 07:00, on day 1 and 15 of the month, or Monday through Friday",
         "Sun 01 Feb", "Wed 04 Feb"),
        ("0 7 L * 1-5", "At 07:00, on the last day of the month, or Monday through Friday",
         "Sat 28 Feb", "Thu 05 Feb"),
        ("0 7 15 * 5-7", "At 07:00, on day 15 of the month, or Friday through Sunday",
         "Wed 15 Apr", "Fri 06 Feb"),
        ("0 7 15 * 1", "At 07:00, on day 15 of the month, or on Monday",
         "Sun 15 Feb", "Mon 02 Feb"),
    ],
)  # fmt: skip
def test_a_day_of_the_month_and_weekdays_read_as_either_as_they_fire(
    cron: str, words: str, by_the_day: str, by_the_weekday: str
) -> None:
    """Cron fires a restricted day of the month and a restricted day of the week when
    EITHER matches; the words said so for one weekday ("or on Monday") but not for a
    range, which read as the 15th when it is a weekday."""
    assert describe(cron) == words
    fired = next_times(cron, "UTC", datetime(2026, 1, 31, 12, tzinfo=UTC), count=80)
    said = [time.strftime("%a %d %b") for time in fired]
    assert by_the_day in said  # a day of the month on another weekday
    assert by_the_weekday in said  # a weekday on another day of the month


def test_a_day_of_the_month_or_every_day_of_the_week_reads_as_every_day() -> None:
    every_day = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}
    for cron in ["0 7 15 * 0-6", "0 7 15 * 0-7", "0 7 1-31 * 1"]:
        assert describe(cron) == "At 07:00"  # not "on day 15 of the month"
        fired = next_times(cron, "UTC", datetime(2026, 1, 1, tzinfo=UTC), count=14)
        assert [time.day for time in fired] == list(range(1, 15))
        assert {time.strftime("%a") for time in fired} == every_day


def test_a_day_of_the_month_with_a_hash_l_or_w_day_is_refused_as_croniter_ignores_one() -> None:
    """croniter fires neither cron's either-or nor both at once there: with a # or L
    weekday the weekday alone, refusing the expression when the two never meet."""
    croniter_s = croniter("0 7 15 * 1#1,1#3", datetime(2026, 1, 1, tzinfo=UTC))
    fired = [croniter_s.get_next(datetime).strftime("%a %d") for _ in range(3)]
    assert fired == ["Mon 05", "Mon 19", "Mon 02"]  # never Thursday the 15th
    for cron in ["0 0 15 * 1#1", "0 7 15 * 1#2", "0 7 25 * L1", "0 7 1,15 * 1#1,1#3"]:
        with pytest.raises(CronInvalid) as refused_:
            check_cron(cron)
        message = refused_.value.message
        assert "a day of the month and a # or L weekday" in message, message
        assert "not on either as cron does" in message
        assert "no month named has that day" not in refused_.value.hint
        assert "0 0 * * 1#1 for the first Monday" in refused_.value.hint
        assert describe(cron) == ""
    with pytest.raises(CronInvalid, match="a W day of the month and a day of the week"):
        check_cron("0 7 15W * 1")
    # Either one alone fires as it reads.
    assert describe("0 0 * * 1#1") == "At 00:00, on the first Monday of the month"
    fired = next_times("0 0 15W * *", "UTC", datetime(2026, 2, 1, tzinfo=UTC), count=2)
    assert [time.strftime("%a %d %b") for time in fired] == ["Mon 16 Feb", "Mon 16 Mar"]
