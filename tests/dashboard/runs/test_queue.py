"""The queue: a run waits queued until a worker with room claims it (dashboard/worker.py):
past the worker's capacity runs wait, their pages told their place; two workers never run
one run twice; the people waiting take turns, so one person's burst of runs keeps no one
else's waiting behind it; a queued run can be stopped; a wake-up that was lost only delays a run; an
idle conversation's tab gives way to a run that waits, and so does a conversation paused
because its model can't be reached; a claimed run that cannot start ends failed at once."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from channels.db import database_sync_to_async

from dashboard import worker as worker_module
from dashboard.models import Run, RunEvent
from dashboard.runs import selectors, services
from dashboard.runs.doorbell import wake
from dashboard.runs.runner import MODEL_GAVE_WAY, RunManager, runner
from tests.dashboard.conftest import OpenSocket, Runs
from tests.dashboard.sockets import (
    ANSWER_S,
    connected_socket,
    load_run,
    of_type,
    receive_until,
    types,
)
from tests.net import free_port
from tests.tasks import AMBIGUOUS_TASK, FORM_TASK

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.long]

NAME_TASK = "type Ada Lovelace into Name"


@pytest.fixture
def capacity(settings: Any) -> Any:
    def set_(runs: int, idle_s: int = 0) -> None:
        settings.TABWRIGHT = {**settings.TABWRIGHT, "WORKER_RUNS": runs, "SESSION_IDLE_S": idle_s}

    return set_


@pytest.fixture
def fast_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker looks at the queue every 0.2 s (set before the worker starts)."""
    monkeypatch.setattr(worker_module, "QUEUE_POLL_S", 0.2)


async def queued(
    runs: Runs, owner: Any, url: str, count: int, task: str = FORM_TASK, planner: str = "rules"
) -> list[Run]:
    made = [await runs.create(owner=owner, task=task, start_url=url, planner=planner)
            for _ in range(count)]  # fmt: skip
    runs.started.extend(run.pk for run in made)  # ended at teardown, if still live
    return made


async def all_final(run_ids: list[int], timeout_s: float = 90) -> int:
    """Until every run ended; returns the most runs seen live here at once (counted every
    20 ms, in memory; the database is read every tenth turn, 0.2 s)."""
    loop = asyncio.get_running_loop()
    deadline, peak, turn = loop.time() + timeout_s, 0, 0
    while True:
        peak = max(peak, runner.live_count)
        if turn % 10 == 0:
            statuses = await statuses_of(run_ids)
            if all(status in Run.FINAL for status in statuses):
                return max(peak, runner.live_count)
            assert loop.time() < deadline, statuses
        turn += 1
        await asyncio.sleep(0.02)


async def statuses_of(run_ids: list[int]) -> list[str]:
    found = dict(
        await database_sync_to_async(list)(
            Run.objects.filter(pk__in=run_ids).values_list("pk", "status")
        )
    )
    return [found[pk] for pk in run_ids]


async def starts_per_run(run_ids: list[int]) -> Counter[int]:
    return Counter(
        await database_sync_to_async(list)(
            RunEvent.objects.filter(run_id__in=run_ids, type="run.started").values_list(
                "run_id", flat=True
            )
        )
    )


async def test_past_capacity_runs_wait_queued_told_their_place_and_each_runs_once(
    runs: Runs,
    dashboard_runner: RunManager,
    open_socket: OpenSocket,
    owner: Any,
    fixture_url: str,
    capacity: Any,
) -> None:
    capacity(2)
    made = await queued(runs, owner, f"{fixture_url}/demo/form.html", 6)
    last = made[-1]
    comm = await connected_socket(open_socket, last, owner)
    state = await comm.receive_json_from(timeout=ANSWER_S)
    assert (state["status"], state["queue"]) == ("queued", 6)

    worker = worker_module.start_embedded()  # a worker comes up: it claims at once
    assert worker is not None
    try:
        await _all_run_once(made, comm)
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)


async def _all_run_once(made: list[Run], comm: Any) -> None:
    await wake()
    peak = await all_final([run.pk for run in made])
    assert peak == 2  # never more than the capacity, and the capacity used
    assert await statuses_of([run.pk for run in made]) == ["succeeded"] * 6
    assert await starts_per_run([run.pk for run in made]) == {run.pk: 1 for run in made}

    messages = await receive_until(comm, of_type("run.finished"))
    places = [m["position"] for m in messages if m["type"] == "queue"]
    assert places and places == sorted(places, reverse=True) and places[-1] <= 2, places
    assert types(messages).index("run.started") > max(
        i for i, m in enumerate(messages) if m["type"] == "queue"
    )  # told its place until it started


def test_the_people_waiting_take_turns_a_burst_of_runs_waits_behind_another_s_first(
    owner: Any, stranger: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One person's 150 runs queued first (a script's burst) and one of theirs at work,
    then another person's: that one is claimed first, then theirs take turns with the
    burst's, each person's in the order they came; the pages say the same order."""

    def made(who: Any, n: int) -> list[int]:
        return [services.run_create(owner=who, task=f"t{i}", start_url="", planner="rules").pk
                for i in range(n)]  # fmt: skip

    # More than the queue looks at of one person (and in all): theirs are still seen.
    monkeypatch.setattr(selectors, "QUEUE_PER_PERSON", 20)
    monkeypatch.setattr(selectors, "QUEUE_WINDOW", 50)
    burst = made(owner, 150)
    Run.objects.filter(pk=burst[0]).update(status=Run.Status.RUNNING)  # one at work already
    theirs = made(stranger, 2)
    order = selectors.run_queue()
    assert order[:4] == [theirs[0], burst[1], theirs[1], burst[2]]
    assert dict(selectors.run_queue_positions())[theirs[0]] == 1
    assert selectors.run_queue_position(run=Run.objects.get(pk=theirs[1])) == 3
    assert services.run_claim(holder="w", lease_s=0) == theirs[0]
    assert services.run_claim(holder="w", lease_s=0) == burst[1]  # a run each at work now


async def test_two_workers_claiming_at_once_run_each_run_exactly_once(
    runs: Runs, worker: RunManager, owner: Any, fixture_url: str, capacity: Any
) -> None:
    capacity(2)
    other = RunManager()  # a second worker on the same database (and, here, browser)
    other.browsers = runner.browsers
    other.serving = True
    try:
        made = await queued(runs, owner, f"{fixture_url}/demo/form.html", 8)
        ids = [run.pk for run in made]
        first = await asyncio.gather(runner.claim(), other.claim())  # at once
        assert not set(first[0]) & set(first[1])
        await all_final(ids)
        assert await starts_per_run(ids) == {pk: 1 for pk in ids}
        assert await statuses_of(ids) == ["succeeded"] * 8
        holders = set(
            await database_sync_to_async(list)(
                Run.objects.filter(pk__in=ids).values_list("holder", flat=True)
            )
        )
        assert holders == {runner.leases.holder, other.leases.holder}  # both worked
    finally:
        other.serving = False
        for run_id in list(other._live):
            await other.end(run_id, "the test ended")


async def test_a_queued_run_stopped_before_it_starts_never_runs(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    first, second = await queued(runs, owner, f"{fixture_url}/demo/form.html", 2)
    comm = await connected_socket(open_socket, first, owner)
    other = await connected_socket(open_socket, second, owner)
    assert (await comm.receive_json_from(timeout=ANSWER_S))["queue"] == 1
    assert (await other.receive_json_from(timeout=ANSWER_S))["queue"] == 2

    await comm.send_json_to({"command": "stop"})
    finished = await receive_until(comm, of_type("run.finished"))
    assert (finished[-1]["status"], finished[-1]["reason"]) == ("stopped", services.STOPPED_QUEUED)
    assert (await load_run(first.pk)).status == Run.Status.STOPPED
    moved = await receive_until(other, of_type("queue"))
    assert moved[-1]["position"] == 1  # the one behind it moved up
    claimed = await database_sync_to_async(services.run_claim)(holder="test", lease_s=0)
    assert claimed == second.pk  # the stopped one is never claimed

    await comm.send_json_to({"command": "stop"})  # stopped already: nothing to stop
    error = await receive_until(comm, of_type("error"))
    assert error[-1]["message"] == "the run is not live any more"


async def test_a_lost_wake_up_only_delays_a_run(
    runs: Runs, fast_poll: None, worker: RunManager, owner: Any, fixture_url: str
) -> None:
    (run,) = await queued(runs, owner, f"{fixture_url}/demo/form.html", 1)  # nobody woken
    await all_final([run.pk])  # the worker's poll found it
    assert (await load_run(run.pk)).status == Run.Status.SUCCEEDED


async def test_a_full_worker_closes_the_longest_idle_tab_for_a_run_that_waits(
    runs: Runs,
    worker: RunManager,
    open_socket: OpenSocket,
    owner: Any,
    fixture_url: str,
    capacity: Any,
) -> None:
    capacity(1, idle_s=60)
    form = f"{fixture_url}/demo/form.html"
    (talk,) = await queued(runs, owner, form, 1, task=NAME_TASK)
    comm = await connected_socket(open_socket, talk, owner)
    await comm.receive_json_from(timeout=ANSWER_S)
    await wake()
    await receive_until(comm, of_type("session.idle"))
    assert runner.is_live(talk.pk)  # its tab kept: the worker is full

    (waiting,) = await queued(runs, owner, form, 1)
    await wake()
    closed = await receive_until(comm, of_type("session.closed"))
    assert "make room" in closed[-1]["reason"], closed[-1]
    await all_final([waiting.pk])
    assert (await load_run(waiting.pk)).status == Run.Status.SUCCEEDED
    assert (await load_run(talk.pk)).session == Run.Session.CLOSED


async def test_a_run_paused_on_an_unreachable_model_gives_its_slot_to_a_run_that_waits(
    runs: Runs,
    worker: RunManager,
    open_socket: OpenSocket,
    owner: Any,
    fixture_url: str,
    capacity: Any,
    llm_at: Callable[[str], None],
) -> None:
    capacity(1, idle_s=60)
    llm_at(f"http://127.0.0.1:{free_port()}/v1")  # nothing listens there
    form = f"{fixture_url}/demo/form.html"
    (talk,) = await queued(runs, owner, form, 1, task="Sign up as Ada.", planner="openai")
    comm = await connected_socket(open_socket, talk, owner)
    await comm.receive_json_from(timeout=ANSWER_S)
    await wake()
    paused = await receive_until(comm, of_type("run.paused"))
    assert paused[-1]["reason"] == "llm_error", paused[-1]
    await wake()  # nothing waits: the paused run keeps its tab and its slot
    assert runner.is_live(talk.pk)

    (waiting,) = await queued(runs, owner, form, 1)  # the rule planner needs no model
    await wake()
    finished = await receive_until(comm, of_type("run.finished"))
    assert (finished[-1]["status"], finished[-1]["reason"]) == ("failed", MODEL_GAVE_WAY)
    await all_final([waiting.pk])
    assert (await load_run(waiting.pk)).status == Run.Status.SUCCEEDED
    ended = await load_run(talk.pk)
    assert (ended.status, ended.session) == (Run.Status.FAILED, Run.Session.CLOSED)
    # Its next message restores it, in its turn: it is queued again with the message.
    event = await database_sync_to_async(services.run_requeue)(run_id=talk.pk, text="go on")
    assert event is not None and (await load_run(talk.pk)).status == Run.Status.QUEUED


async def test_a_message_to_a_closed_conversation_through_a_web_process_queues_it(
    runs: Runs,
    dashboard_runner: RunManager,
    open_socket: OpenSocket,
    owner: Any,
    fixture_url: str,
    settings: Any,
) -> None:
    # A web process (no worker here): the message is in the thread at once, the
    # conversation waits queued, and a worker restores its page and goes on with it.
    from tests.dashboard.runs.test_conversations import FINISH_SIGN_UP, say

    (talk,) = await queued(runs, owner, f"{fixture_url}/demo/form.html", 1, task=NAME_TASK)
    comm = await connected_socket(open_socket, talk, owner)
    await comm.receive_json_from(timeout=ANSWER_S)
    await runs.manager.start(talk.pk)
    await receive_until(comm, of_type("session.closed"))  # SESSION_IDLE_S=0 in the tests
    await runs.manager.wait_closed(talk.pk)

    settings.TABWRIGHT = {**settings.TABWRIGHT, "EMBEDDED_WORKER": False}
    await say(comm, FINISH_SIGN_UP)
    said = await receive_until(comm, of_type("user.message"))
    assert said[-1]["text"] == FINISH_SIGN_UP
    assert not runner.is_live(talk.pk)  # nothing runs in a web process
    assert (await load_run(talk.pk)).status == Run.Status.QUEUED
    await say(comm, "wait for Welcome")  # joins the queued message
    await receive_until(comm, of_type("user.message"))

    settings.TABWRIGHT = {**settings.TABWRIGHT, "EMBEDDED_WORKER": True}
    task = worker_module.start_embedded()  # a worker comes up
    assert task is not None
    try:
        rest = await receive_until(comm, of_type("run.finished"), timeout_s=60)
        assert "session.restored" in types(rest) and "user.message" not in types(rest)
        assert rest[-1]["status"] == "succeeded", rest[-1]
        run = await load_run(talk.pk)
        assert (run.status, run.queued_message) == (Run.Status.SUCCEEDED, "")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await runner.end(talk.pk, "the test ended")


async def test_a_conversation_not_started_yet_takes_no_message_and_runs_as_asked(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    from tests.dashboard.runs.test_conversations import say

    (run,) = await queued(runs, owner, f"{fixture_url}/demo/form.html", 1)
    comm = await connected_socket(open_socket, run, owner)
    await comm.receive_json_from(timeout=ANSWER_S)
    await say(comm, "type Grace into Name")
    refused = await receive_until(comm, of_type("error"))
    assert "waits for a worker" in refused[-1]["message"], refused[-1]
    assert (await load_run(run.pk)).status == Run.Status.QUEUED  # untouched, nothing said
    await runs.start(run)  # as a worker would claim it
    done = await receive_until(comm, of_type("run.finished"))
    assert done[-1]["status"] == "succeeded" and "user.message" not in types(done)


async def test_a_claimed_run_that_cannot_start_ends_failed_at_once_and_the_next_runs(
    runs: Runs,
    worker: RunManager,
    open_socket: OpenSocket,
    owner: Any,
    fixture_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = selectors.run_stretch_count
    calls = Counter[str]()

    def database_gone_once(*, run_id: int) -> int:  # the first start's read fails
        calls["read"] += 1
        if calls["read"] == 1:
            raise OSError("the database went away")
        return real(run_id=run_id)

    monkeypatch.setattr(selectors, "run_stretch_count", database_gone_once)
    broken, fine = await queued(runs, owner, f"{fixture_url}/demo/form.html", 2)
    comm = await connected_socket(open_socket, broken, owner)
    await wake()
    finished = await receive_until(comm, of_type("run.finished"))
    assert finished[-1]["status"] == "failed", finished[-1]
    assert finished[-1]["reason"] == "the worker could not start it: the database went away"
    run = await load_run(broken.pk)
    # Not "lost" a lease later: failed now, held by nobody, its event stored.
    assert (run.status, run.lease_until) == (Run.Status.FAILED, None)
    assert await starts_per_run([broken.pk]) == Counter()
    await all_final([fine.pk])
    assert (await load_run(fine.pk)).status == Run.Status.SUCCEEDED


async def test_a_message_to_a_closed_conversation_on_a_full_worker_waits_its_turn(
    runs: Runs,
    worker: RunManager,
    capacity: Any,
    open_socket: OpenSocket,
    owner: Any,
    fixture_url: str,
) -> None:
    from tests.dashboard.runs.test_conversations import FINISH_SIGN_UP, say

    capacity(1)
    (talk,) = await queued(runs, owner, f"{fixture_url}/demo/form.html", 1, task=NAME_TASK)
    comm = await connected_socket(open_socket, talk, owner)
    await receive_until(comm, of_type("session.closed"))  # SESSION_IDLE_S=0: closed at once
    await runs.manager.wait_closed(talk.pk)
    (busy,) = await queued(runs, owner, f"{fixture_url}/demo/list.html", 1, task=AMBIGUOUS_TASK)
    other = await connected_socket(open_socket, busy, owner)
    await wake()
    await receive_until(other, of_type("run.paused"))  # the worker's one place is taken

    # Not restored past the worker's capacity: queued, in the thread at once, told its place.
    await say(comm, FINISH_SIGN_UP)
    said = await receive_until(comm, of_type("user.message"))
    assert said[-1]["text"] == FINISH_SIGN_UP
    assert not runner.is_live(talk.pk) and runner.live_count == 1
    assert (await load_run(talk.pk)).status == Run.Status.QUEUED
    place = await receive_until(comm, of_type("queue"))
    assert place[-1]["position"] == 1

    await other.send_json_to({"command": "stop"})  # room: the conversation is restored
    rest = await receive_until(comm, of_type("run.finished"), timeout_s=60)
    assert "session.restored" in types(rest), types(rest)
    assert rest[-1]["status"] == "succeeded", rest[-1]
