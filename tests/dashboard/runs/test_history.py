"""The run history on the run list: its filters, who sees what, pages, bad filter values,
and the columns (kind, reason, duration, tokens, owner)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client

from dashboard.models import Run, Scenario
from dashboard.runs import selectors, services
from dashboard.runs.views import RUNS_PER_PAGE, duration_label

pytestmark = pytest.mark.django_db

DAY = datetime(2024, 3, 10, 12, 0, tzinfo=UTC)


def make_run(
    owner: Any,
    task: str,
    *,
    status: str = "succeeded",
    created_at: datetime = DAY,
    scenario: Scenario | None = None,
    **fields: Any,
) -> Run:
    run = services.run_create(owner=owner, task=task, start_url="", planner="rules")
    kind = fields.pop("kind", Run.Kind.REPLAY if scenario else Run.Kind.AGENT)
    # auto_now_add ignores a value given at create time: set the time afterwards.
    Run.objects.filter(pk=run.pk).update(
        status=status, created_at=created_at, kind=kind, scenario=scenario, **fields
    )
    run.refresh_from_db()
    return run


def logged_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def listed(client: Client, query: str = "") -> list[str]:
    response = client.get(f"/?{query}")
    assert response.status_code == 200, response.content.decode()[:500]
    return [run.task for run in response.context["runs"]]


@pytest.fixture
def history(owner: Any, stranger: Any) -> dict[str, Any]:
    scenario = Scenario.objects.create(owner=owner, name="checkout")
    theirs = Scenario.objects.create(owner=stranger, name="their checkout")
    return {
        "scenario": scenario,
        "their_scenario": theirs,
        "agent": make_run(owner, "agent ok", created_at=DAY - timedelta(days=2)),
        "failed": make_run(owner, "agent failed", status="failed", created_at=DAY),
        "replay": make_run(
            owner, "replay ok", created_at=DAY + timedelta(days=1, hours=11), scenario=scenario
        ),
        "other": make_run(stranger, "sam's run", created_at=DAY, scenario=theirs),
    }


# -- each filter --------------------------------------------------------------------------


def test_without_filters_a_person_sees_their_own_runs_newest_first(
    owner: Any, history: dict[str, Any]
) -> None:
    assert listed(logged_in(owner)) == ["replay ok", "agent failed", "agent ok"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status=failed", ["agent failed"]),
        ("status=succeeded", ["replay ok", "agent ok"]),
        ("status=paused", []),
        ("kind=replay", ["replay ok"]),
        ("kind=agent", ["agent failed", "agent ok"]),
        ("created_from=2024-03-10", ["replay ok", "agent failed"]),
        ("created_to=2024-03-10", ["agent failed", "agent ok"]),
        # Both ends are whole days, included.
        ("created_from=2024-03-10&created_to=2024-03-10", ["agent failed"]),
        ("created_from=2024-03-11&created_to=2024-03-11", ["replay ok"]),
        ("created_from=2024-04-01", []),
        ("kind=agent&status=succeeded", ["agent ok"]),
        ("status=&kind=&created_from=&created_to=&scenario=", ["replay ok", "agent failed",
                                                              "agent ok"]),
    ],
)  # fmt: skip
def test_each_filter_narrows_the_list(
    owner: Any, history: dict[str, Any], query: str, expected: list[str]
) -> None:
    assert listed(logged_in(owner), query) == expected


def test_the_scenario_filter_offers_and_applies_only_visible_scenarios(
    owner: Any, history: dict[str, Any]
) -> None:
    client = logged_in(owner)
    assert listed(client, f"scenario={history['scenario'].pk}") == ["replay ok"]
    page = client.get("/").content.decode()
    assert ">checkout</option>" in page and "their checkout" not in page


def test_the_owner_filter_is_for_staff_only(
    owner: Any, stranger: Any, staff: Any, history: dict[str, Any]
) -> None:
    staff_client = logged_in(staff)
    # Same time: the later run first.
    assert listed(staff_client) == ["replay ok", "sam's run", "agent failed", "agent ok"]
    assert listed(staff_client, f"owner={stranger.pk}") == ["sam's run"]
    assert listed(staff_client, f"owner={owner.pk}&kind=replay") == ["replay ok"]
    page = staff_client.get("/").content.decode()
    assert 'name="owner"' in page and "<th>Owner</th>" in page
    # Only people who have runs are offered.
    assert f'<option value="{stranger.pk}">sam</option>' in page
    assert f'<option value="{staff.pk}">' not in page

    # Another person's own list has no owner field, and an owner in the URL changes nothing.
    person = logged_in(owner)
    page = person.get("/").content.decode()
    assert 'name="owner"' not in page and "<th>Owner</th>" not in page
    assert listed(person, f"owner={stranger.pk}") == ["replay ok", "agent failed", "agent ok"]


def test_staff_may_filter_by_anyones_scenario(staff: Any, history: dict[str, Any]) -> None:
    assert listed(logged_in(staff), f"scenario={history['their_scenario'].pk}") == ["sam's run"]


# -- bad values ---------------------------------------------------------------------------


ALL_MINE = ["replay ok", "agent failed", "agent ok"]


@pytest.mark.parametrize(
    ("query", "field", "expected"),
    [
        ("status=exploded&kind=agent", "status", ["agent failed", "agent ok"]),
        ("kind=robot&status=failed", "kind", ["agent failed"]),
        ("created_from=yesterday", "created_from", ALL_MINE),
        ("created_to=2024-02-30&kind=replay", "created_to", ["replay ok"]),
        ("scenario=abc", "scenario", ALL_MINE),
        ("scenario=999999", "scenario", ALL_MINE),
        ("status=succeeded&status=<script>", "status", ALL_MINE),
        # The end before the start: the end is refused, the start still applies.
        ("created_from=2024-03-10&created_to=2024-03-01", "created_to", ALL_MINE[:2]),
    ],
)
def test_a_bad_filter_value_is_a_form_error_not_a_failure(
    owner: Any, history: dict[str, Any], query: str, field: str, expected: list[str]
) -> None:
    response = logged_in(owner).get(f"/?{query}")
    assert response.status_code == 200
    assert field in response.context["filters"].errors
    assert 'class="errorlist' in response.content.decode()
    assert [r.task for r in response.context["runs"]] == expected  # the valid filters apply


def test_another_persons_scenario_is_not_a_valid_choice(
    owner: Any, history: dict[str, Any]
) -> None:
    response = logged_in(owner).get(f"/?scenario={history['their_scenario'].pk}")
    assert response.status_code == 200
    assert "scenario" in response.context["filters"].errors
    assert "sam's run" not in [r.task for r in response.context["runs"]]


@pytest.mark.parametrize("page", ["0", "-1", "abc", "99999", "1.5", ""])
def test_a_bad_page_number_shows_a_page(owner: Any, history: dict[str, Any], page: str) -> None:
    assert len(listed(logged_in(owner), f"page={page}")) == 3


# -- pages --------------------------------------------------------------------------------


def test_pages_keep_the_filters(owner: Any, stranger: Any) -> None:
    total = RUNS_PER_PAGE + 7
    for i in range(total):
        make_run(owner, f"failed {i:03d}", status="failed", created_at=DAY + timedelta(minutes=i))
    make_run(owner, "the one that succeeded", created_at=DAY + timedelta(days=1))
    make_run(stranger, "not mine", status="failed", created_at=DAY)
    client = logged_in(owner)

    response = client.get("/?status=failed")
    first = [r.task for r in response.context["runs"]]
    assert len(first) == RUNS_PER_PAGE
    assert first[0] == f"failed {total - 1:03d}"
    html = response.content.decode()
    assert f"{total} runs · page 1 of 2" in html
    assert 'href="/?status=failed&amp;page=2" rel="next"' in html

    second = client.get("/?status=failed&page=2")
    rest = [r.task for r in second.context["runs"]]
    assert rest == [f"failed {i:03d}" for i in range(6, -1, -1)]
    assert 'href="/?status=failed&amp;page=1" rel="prev"' in second.content.decode()


def test_pages_of_twenty_five_have_a_link_each_and_keep_the_kind(owner: Any) -> None:
    assert RUNS_PER_PAGE == 25
    for i in range(3 * RUNS_PER_PAGE + 1):  # four pages of conversations
        make_run(owner, f"talk {i:03d}", created_at=DAY + timedelta(minutes=i))
    scenario = Scenario.objects.create(owner=owner, name="checkout")
    for i in range(5):  # newer than all of them: on page 1 unless the kind is chosen
        make_run(owner, f"replay {i}", created_at=DAY + timedelta(days=2), scenario=scenario)
    client = logged_in(owner)

    html = client.get("/?kind=agent").content.decode()
    assert "76 runs · page 1 of 4" in html
    pager = html[html.index('data-testid="pager"') :]
    pager = pager[: pager.index("</nav>")]
    assert '<span class="page-current" aria-current="page">1</span>' in pager
    for number in (2, 3, 4):
        assert f'href="/?kind=agent&amp;page={number}" aria-label="Page {number}"' in pager

    third = client.get("/?kind=agent&page=3")
    assert [r.task for r in third.context["runs"]] == [
        f"talk {i:03d}" for i in range(25, 0, -1)
    ]  # fmt: skip
    pager = third.content.decode()
    assert 'href="/?kind=agent&amp;page=2" rel="prev"' in pager
    assert 'href="/?kind=agent&amp;page=4" rel="next"' in pager
    assert '<span class="page-current" aria-current="page">3</span>' in pager

    # Pages far away are elided, the first and last kept.
    for i in range(300):
        make_run(owner, f"more {i}", created_at=DAY - timedelta(minutes=i + 1))
    html = client.get("/?kind=agent&page=8").content.decode()
    assert "page 8 of 16" in html and "…" in html
    assert 'aria-label="Page 1"' in html and 'aria-label="Page 16"' in html
    assert 'aria-label="Page 3"' not in html and 'aria-label="Page 12"' not in html


def mcp_session(owner: Any, task: str, *, status: str = "failed", steps: int = 0) -> Run:
    run = make_run(owner, task, status=status, kind=Run.Kind.MCP)
    for index in range(steps):
        services.step_record(run_id=run.pk, data={"index": index, "action": "click"})
    return run


def test_mcp_sessions_that_ended_with_no_step_are_hidden_until_asked_for(
    owner: Any, history: dict[str, Any]
) -> None:
    for i in range(3):
        mcp_session(owner, f"MCP session: gone {i}")
    mcp_session(owner, "MCP session: worked", status="succeeded", steps=2)
    mcp_session(owner, "MCP session: just connected", status="running")
    client = logged_in(owner)

    shown = listed(client)
    assert "MCP session: worked" in shown and "MCP session: just connected" in shown
    assert not [task for task in shown if "gone" in task]
    assert len(shown) == 5  # with the three of the history
    html = client.get("/").content.decode()
    assert "3 MCP sessions that ended with no step are not shown" in html
    assert '<a href="/?empty_mcp=on">show them</a>' in html
    assert 'name="empty_mcp"' in html and "Empty MCP sessions" in html

    everything = listed(client, "empty_mcp=on")
    assert len(everything) == 8 and "MCP session: gone 0" in everything
    assert 'data-testid="hidden-mcp"' not in client.get("/?empty_mcp=on").content.decode()
    # Choosing the kind still leaves them out, and says so with the kind kept.
    assert listed(client, "kind=mcp") == ["MCP session: just connected", "MCP session: worked"]
    html = client.get("/?kind=mcp&page=1").content.decode()
    assert '<a href="/?kind=mcp&amp;empty_mcp=on">show them</a>' in html
    assert len(listed(client, "kind=mcp&empty_mcp=on")) == 5


def test_the_api_lists_every_mcp_session(owner: Any) -> None:
    mcp_session(owner, "MCP session: gone")
    assert [r.task for r in selectors.run_list(user=owner)] == ["MCP session: gone"]


def test_a_form_error_on_new_run_keeps_the_history_links_on_the_list(owner: Any) -> None:
    for i in range(RUNS_PER_PAGE + 1):
        make_run(owner, f"run {i}")
    response = logged_in(owner).post("/runs/new", {"task": "", "planner": "rules"})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'action="/" class="filters"' in html
    assert 'href="/?page=2" rel="next"' in html  # not /runs/new?page=2, which is POST only


# -- columns ------------------------------------------------------------------------------


def test_the_columns_show_kind_reason_duration_and_tokens(
    owner: Any, history: dict[str, Any]
) -> None:
    make_run(
        owner,
        "long one",
        status="failed",
        status_reason="the element Pay was not found",
        finished_at=DAY + timedelta(minutes=3, seconds=5),
        prompt_tokens=1200,
        completion_tokens=34,
    )
    html = logged_in(owner).get("/?kind=agent").content.decode()
    row = html[html.index("long one") :]
    row = row[: row.index("</tr>")]
    assert 'title="the element Pay was not found"' in row
    assert '<span class="reason">the element Pay was not found</span>' in row
    assert "<td>conversation</td>" in row
    assert "<td>3 min 05 s</td>" in row
    assert "<td>1234</td>" in row

    replay = logged_in(owner).get("/?kind=replay").content.decode()
    assert f'replay · <a href="/scenarios/{history["scenario"].pk}/">' in replay


def test_the_selector_computes_duration_and_tokens(owner: Any) -> None:
    make_run(owner, "done", finished_at=DAY + timedelta(seconds=42), prompt_tokens=5)
    make_run(owner, "going", status="running")
    done, going = sorted(selectors.run_list(user=owner), key=lambda r: r.task)
    assert (done.duration, done.total_tokens, done.step_count) == (timedelta(seconds=42), 5, 0)
    assert going.duration is None


@pytest.mark.parametrize(
    ("seconds", "label"),
    [
        (None, ""),
        (0.25, "250 ms"),
        (1, "1 s"),
        (59.9, "59 s"),
        (60, "1 min 00 s"),
        (3599, "59 min 59 s"),
        (3600 * 2 + 7 * 60, "2 h 07 min"),
    ],
)
def test_duration_labels(seconds: float | None, label: str) -> None:
    value = None if seconds is None else timedelta(seconds=seconds)
    assert duration_label(value) == label


def test_an_empty_filtered_list_says_so(owner: Any, history: dict[str, Any]) -> None:
    html = logged_in(owner).get("/?status=paused").content.decode()
    assert "Nothing matches these filters." in html
    fresh = logged_in(Run.objects.get(task="sam's run").owner)
    Run.objects.filter(owner__username="sam").delete()
    assert "No conversations yet" in fresh.get("/").content.decode()
