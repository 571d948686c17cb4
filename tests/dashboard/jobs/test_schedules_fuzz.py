"""Property-based: a cron expression or a time zone, as a person or an API client types
it, is kept (and then has times, words, and reads the same again) or refused with its
typed error, saying why; never a parser's own exception, never a search without end."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from automation.errors import ActionInvalid
from dashboard.jobs.cron import CronInvalid, check_cron, check_timezone, describe, next_times
from dashboard.jobs.schedules import ScheduleInvalid, check_schedule
from dashboard.scenarios import services
from tests.jsonfuzz import FUZZ, json_values

ATOMS = ["*", "0", "1", "5", "7", "12", "13", "23", "24", "29", "30", "31", "32", "59", "60",
         "99", "-1", "L", "W", "1W", "LW", "L-1", "5L", "#", "1#5", "5#5", "6#1", "0#6", "?",
         "H", "R", "H(0-5)", "jan", "FEB", "sun", "mon-fri", "*/0", "*/1", "*/7", "*/60",
         "*/99", "1-5", "5-1", "1-5/2", ",", "/", "-", "1,2,3", "2-31/30", "00", "007", "\u0661",
         "²", "0x1", "1.5", "\u00a0", "\u3000", "9" * 30]  # fmt: skip
numbers = st.integers(0, 32).map(str)
# A field as people write them (mostly in range), or atoms thrown together.
plain = (
    st.just("*") | numbers | st.builds("{}-{}".format, numbers, numbers)
    | st.builds("*/{}".format, numbers) | st.lists(numbers, min_size=2, max_size=3).map(",".join)
    | st.sampled_from(["L", "15W", "mon-fri", "jan,jul", "1#2", "5L", "sat,sun"])
)  # fmt: skip
fields = plain | st.lists(st.sampled_from(ATOMS), min_size=1, max_size=3).map("".join)
crons = (
    st.lists(fields, min_size=5, max_size=5).map(" ".join)
    | st.lists(fields, min_size=4, max_size=6).map("\t ".join)
    | st.text(max_size=24)
)
# Where the clocks go forward and back (and one that skipped a whole day, in 2011).
ZONES = ["UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Pacific/Apia"]
AFTER = [datetime(2026, 3, 29, tzinfo=UTC), datetime(2026, 10, 24, 23, 30, tzinfo=UTC),
         datetime(2011, 12, 29, tzinfo=UTC), datetime(2028, 2, 28, tzinfo=UTC)]  # fmt: skip


@settings(FUZZ, max_examples=600)
@given(cron=crons, zone=st.sampled_from(ZONES), after=st.sampled_from(AFTER))
@example(cron="0 0 30 2 *", zone="UTC", after=AFTER[0])  # valid fields, no date
@example(cron="0 0 29 2 *", zone="Pacific/Apia", after=AFTER[2])  # once every four years
def test_any_cron_is_kept_or_refused(cron: str, zone: str, after: datetime) -> None:
    try:
        kept = check_cron(cron)
    except CronInvalid as exc:
        assert str(exc) and exc.code == "cron_invalid"
        assert describe(cron) == ""
        return
    assert check_cron(kept) == kept and kept == " ".join(cron.split())
    assert describe(kept)
    times = next_times(kept, zone, after, 3)
    assert all(time.tzinfo is not None for time in times)
    assert after < times[0] < times[1] < times[2]


NAMES = ["UTC", " UTC ", "Europe/Paris", "../etc/passwd", "/etc/localtime", "Europe\x00Paris",
         "utc", "Etc/GMT+99", "localtime", "posixrules", "Factory", "\ud800", "Europe/Paris/..",
         "EUROPE/PARIS"]  # fmt: skip


@FUZZ
@given(name=st.text(max_size=30) | st.sampled_from(NAMES))
def test_any_time_zone_is_kept_or_refused(name: str) -> None:
    try:
        zone = check_timezone(name)
    except ActionInvalid as exc:
        assert str(exc) and exc.code == "action_invalid"
        return
    assert zone.key == name.strip()


URLS = ["", " ", "http://shop.test", "https://shop.test/a b", "ftp://shop.test", "http://",
        "http://127.0.0.1:9/", "javascript:alert(1)", "http://[::1]/", "http://x\x00y.test",
        "hooks.test/x", "https://hooks.example.com/" + "x" * 2100]  # fmt: skip
values = json_values | st.sampled_from(["", " ", "Ada", "x" * 10_001, None])
value_maps = st.dictionaries(st.sampled_from(["name", "greet", "nope", ""]), values, max_size=3)
SCENARIO = {"version": 1, "name": "Greet", "params": {"name": {}, "greet": {"default": "hi"}},
            "steps": [{"action": "navigate",
                       "args": {"url": "http://shop.test/${name}?g=${greet}"}}]}  # fmt: skip
FIELDS = {"cron", "timezone", "params", "rows", "concurrency", "base_url", "webhook_url",
          "emails"}  # fmt: skip


def mostly(usual: st.SearchStrategy[Any], other: st.SearchStrategy[Any]) -> Any:
    """``usual`` three times in four, else ``other``: most schedules tried fail on one
    field at most, so that the others are checked too."""
    return st.integers(0, 3).flatmap(lambda n: other if n == 0 else usual)


@pytest.mark.django_db
@settings(FUZZ, max_examples=200,
          suppress_health_check=[*FUZZ.suppress_health_check,
                                 HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    cron=mostly(st.sampled_from(["*/10 * * * *", "0 7 * * 1-5"]), crons),
    timezone=mostly(st.sampled_from(["UTC", "Europe/Paris"]), st.sampled_from(NAMES)),
    params=mostly(st.none() | st.fixed_dictionaries({"name": st.just("Ada")}), value_maps),
    rows=mostly(st.none(), st.lists(value_maps, max_size=3) | st.just([{"name": "Ada"}])),
    concurrency=mostly(st.just(2), st.integers(-2, 12) | st.sampled_from([True, 10**30])),
    base_url=st.just("") | st.sampled_from(URLS),
    webhook_url=st.just("") | st.sampled_from(URLS),
    emails=st.sampled_from(
        [
            "",
            "ada@example.org",
            "ada@example.org, bo@",
            "a,b",
            ",,",
            ", ".join(["x@example.org"] * 30),
        ]
    ),
)
def test_any_schedule_is_kept_or_refused_naming_the_field(owner: Any, **fields: Any) -> None:
    """As the form and the API give them: each refusal is ScheduleInvalid naming the field;
    what is kept is kept again as it is."""
    scenario = services.scenario_import(owner=owner, data=SCENARIO)
    try:
        checked = check_schedule(scenario=scenario, **fields)
    except ScheduleInvalid as exc:
        assert exc.field in FIELDS and str(exc)
        return
    again = {k: v for k, v in checked.items() if k != "rows" or v is not None}
    assert check_schedule(scenario=scenario, **again) == checked
