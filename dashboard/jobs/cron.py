"""When a schedule fires: cron expressions read by croniter (times) and cron-descriptor
(words), in IANA time zones (zoneinfo).  An expression is kept only when it fires at the
times it shows and reads in words (no croniter R or H, no step past its field's values,
a date that exists); a time of day is fired once the night the clocks go back.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from cron_descriptor import (
    CasingTypeEnum,
    ExpressionDescriptor,
    FormatException,
    MissingFieldException,
    Options,
    WrongArgumentException,
)
from croniter import CroniterBadDateError, croniter

from automation.errors import ActionInvalid

__all__ = ["CronInvalid", "check_cron", "check_timezone", "describe", "next_times",
           "times_after", "timezone_choices"]  # fmt: skip


class CronInvalid(ActionInvalid):
    code = "cron_invalid"


# Each field of a cron expression: its name, and how many values it has.
_FIELDS = (("minute", 60), ("hour", 24), ("day of the month", 31), ("month", 12),
           ("day of the week", 7))  # fmt: skip
_MONTHS = {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
_DAYS = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
# The words each field may hold: L (last), W (weekday nearest), month and day names.
# croniter reads more (R: a random time, H: a hashed one) that fire at times other than
# those shown and that cron-descriptor can't say.
_WORDS = (set(), set(), {"l", "w"}, _MONTHS, _DAYS | {"l"})
_CANT_DESCRIBE = (FormatException, MissingFieldException, WrongArgumentException)


def check_cron(expression: str) -> str:
    """``expression`` as stored (fields separated by one space); CronInvalid saying why."""
    return _checked(expression)[0]


def _checked(expression: str) -> tuple[str, str]:
    """``expression`` as stored, and in words; CronInvalid saying why it can't be kept."""
    fields = expression.split()
    if len(fields) != 5:
        raise CronInvalid(
            f"a cron expression has 5 fields, not {len(fields)}: minute hour day month weekday",
            hint="e.g. 0 7 * * 1-5 for 7:00 on weekdays",
        )
    normal = " ".join(fields)
    for field, (name, _size), words in zip(fields, _FIELDS, _WORDS, strict=True):
        for word in re.findall(r"[^\W\d_]+", field):
            if word.lower() not in words:
                raise CronInvalid(
                    f"the {name} field holds {word!r}, which is not a cron value here",
                    hint="numbers, *, - , / and, where they belong, month and day names, "
                    "L, W and #",
                )
    if not croniter.is_valid(normal):
        raise CronInvalid(f"{normal!r} is not a valid cron expression",
                          hint="e.g. 0 7 * * 1-5 for 7:00 on weekdays")  # fmt: skip
    for field, (name, size) in zip(fields, _FIELDS, strict=True):
        for part in field.split(","):
            step = part.partition("/")[2]
            if step.isdigit() and int(step) > size:  # */90 minutes: hourly, said "every 90"
                raise CronInvalid(f"a step of {step} in the {name} field is more than its "
                                  f"{size} values", hint=f"at most */{size}")  # fmt: skip
    for part in fields[4].split(","):
        if re.match(r"0*7-", part):  # croniter fires 7-7 every day, 7-1 on Sunday and Monday
            raise CronInvalid(f"the day of the week field holds {part!r}: a range of days "
                              "can't start at 7 (Sunday, which is 0 too)",
                              hint="start it at 0, e.g. 0-1 for Sunday and Monday")  # fmt: skip
    _check_either(normal)
    try:
        croniter(normal).get_next(datetime)
    except CroniterBadDateError:  # 30 February: valid fields, no date
        raise CronInvalid(
            f"{normal!r} never matches a date", hint="no month named has that day"
        ) from None
    try:
        words = _words(normal)
    except _CANT_DESCRIBE as exc:
        raise CronInvalid(f"{normal!r} can't be read: {exc}",
                          hint="e.g. 0 7 * * 1-5 for 7:00 on weekdays") from None  # fmt: skip
    return normal, words


def _restricted(cron: croniter, field: int) -> bool:
    """Whether croniter reads the day of the month (2) or of the week (4) field as
    restricted: both restricted, a date fires when EITHER matches, as in cron."""
    return cron.expanded[field][0] != "*"


def _check_either(normal: str) -> None:
    """CronInvalid for a day of the month together with a weekday where croniter can't fire
    cron's either-or: with a ``#`` or ``L`` weekday (the first Monday, the last Friday)
    it fires on that weekday alone, ignoring the day of the month, and refuses the
    expression when the two never fall on the same date (``0 0 15 * 1#1``: a first Monday
    is the 1st to the 7th); with ``W`` (the weekday nearest the 15th) it fires on that
    day alone, ignoring the day of the week."""
    cron = croniter(normal)
    if not (_restricted(cron, 2) and _restricted(cron, 4)):
        return
    if cron.nth_weekday_of_month:
        raise CronInvalid(
            f"{normal!r} names a day of the month and a # or L weekday: croniter would fire "
            "on that weekday alone, not on either as cron does, and not at all when the "
            "two never fall on the same date",
            hint="put * in one of them: 0 0 * * 1#1 for the first Monday, 0 0 15 * * for "
            "the 15th; a plain weekday (0 0 15 * 1) fires on the 15th and every Monday",
        )
    if cron.nearest_weekday:
        raise CronInvalid(
            f"{normal!r} names a W day of the month and a day of the week: croniter would "
            "fire on the weekday nearest that day alone, not on either as cron does",
            hint="put * in one of them: 0 0 15W * * for the weekday nearest the 15th",
        )


# Names the system's time zone files have that are no place's zone: the server's own
# (a link to /etc/localtime: another zone on another server), and tzdata's placeholders.
_NO_PLACE = frozenset({"localtime", "Factory", "posixrules"})


def check_timezone(name: str) -> ZoneInfo:
    name = name.strip()
    if not name or name not in available_timezones() or name in _NO_PLACE:
        raise ActionInvalid(f"{name!r} is not a time zone",
                            hint="an IANA name, e.g. Europe/Paris or America/New_York")  # fmt: skip
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ActionInvalid(f"{name!r} is not a time zone") from None


def next_times(cron: str, zone: str, after: datetime, count: int = 1) -> list[datetime]:
    """The next ``count`` times of ``cron`` in ``zone`` after ``after`` (aware, in the zone)."""
    times = times_after(cron, zone, after)
    return [next(times) for _ in range(count)]


def times_after(cron: str, zone: str, after: datetime) -> Iterator[datetime]:
    """The times of ``cron`` in ``zone`` after ``after``.  The night clocks go back, a time
    of day the hours field names (02:30 daily) is fired once, at its first occurrence, as
    cron does; steps through every hour (``*`` or ``*/2`` hours) go on through the hour
    that repeats, as time does."""
    where = ZoneInfo(zone)
    it = croniter(cron, after.astimezone(where))
    once_a_day = not cron.split()[1].startswith("*")
    while True:
        time = it.get_next(datetime)
        first = time.replace(tzinfo=None).replace(tzinfo=where, fold=0)
        if once_a_day and first.utcoffset() != time.utcoffset():
            continue  # the same wall-clock time again, an hour later
        yield time


def describe(cron: str) -> str:
    """``cron`` in words: "At 07:00, Monday through Friday"; "" for one kept before such
    were refused (croniter's random R), which the pages show without words."""
    try:
        return _checked(cron)[1]
    except CronInvalid:
        return ""


def _words(cron: str) -> str:
    options = Options()
    options.use_24hour_time_format = True
    options.casing_type = CasingTypeEnum.Sentence
    minute, hour, days, months, weekdays = cron.split()
    fired = croniter(cron)
    either = _restricted(fired, 2) and _restricted(fired, 4)
    if either and (len(fired.expanded[2]) == 31 or len(fired.expanded[4]) == 7):
        days = weekdays = "*"  # either side is every day: 0 7 15 * 0-6 fires daily
        either = False
    said = " ".join([minute, hour, days, months, _weekdays_said(weekdays)])
    return str(_Descriptor(said, options, either=either).get_description())


class _Descriptor(ExpressionDescriptor):
    """cron-descriptor saying cron's "or" whenever both the day of the month and the day
    of the week are restricted (the 15th or any weekday).  It says it for one weekday
    or a list ("or on Monday") but not for a range: ``0 7 15 * 1-5`` was "on day 15 of
    the month, Monday through Friday", which reads as the 15th when it is a weekday."""

    def __init__(self, expression: str, options: Options, *, either: bool) -> None:
        super().__init__(expression, options)
        self._either = either

    def get_day_of_week_description(self) -> str:
        said = str(super().get_day_of_week_description())
        if not self._either or said.startswith(", or "):
            return said
        return ", or " + re.sub(r"^, (only )?", "", said)


def _weekdays_said(field: str) -> str:
    """The day-of-week ``field`` written as the days it fires on, for the words, when it
    names a 7 or steps.  Cron reads 7 as Sunday, as 0 is, and cron-descriptor reads the
    days as written: ``0-7`` (every day) was "Sunday through Sunday", ``0,7`` "Sunday and
    Sunday", ``0-7/2`` (Sun, Tue, Thu, Sat) "every 2 days of the week, Sunday through
    Sunday"; and a step says no day: ``1/2`` (Mon, Wed, Fri) was "every 2 days of the
    week", ``2/3`` (Tue, Fri) "every 3 days of the week, Tuesday through Saturday".  Every
    day is ``*``; other days run Monday (1) to Sunday (7), a run of three or more as a
    range (``5-7``: "Friday through Sunday").  A field with ``#`` or ``L`` (the second
    Sunday, the last Friday) reads well as written."""
    values = [part.partition("/")[0] for part in field.split(",")]
    if "#" in field or "l" in field.lower():
        return field
    if "/" not in field and "7" not in re.findall(r"\d+", " ".join(values)):
        return field
    days = croniter(f"* * * * {field}").expanded[4]
    if days == ["*"]:
        return "*"
    week = sorted({7 if day == 0 else int(day) for day in days})
    runs: list[list[int]] = []
    for day in week:
        if runs and runs[-1][-1] == day - 1:
            runs[-1].append(day)
        else:
            runs.append([day])
    return ",".join(f"{run[0]}-{run[-1]}" if len(run) >= 3 else ",".join(map(str, run))
                    for run in runs)  # fmt: skip


def timezone_choices() -> list[str]:
    return sorted(available_timezones())
