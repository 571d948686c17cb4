"""The alerts' outbox: a webhook or e-mail receiver that drips its answer ends its try at
the deadline (recorded, tried again later) while schedules go on firing; a URL with a line
break is refused when saved; alerts link to the dashboard as people reach it; where the
agent may browse and where alerts may go are two sets of rules, each keeping private
addresses out unless a rule names the host, checked again at connect time; a schedule
turned off still sends its firings' alerts and says how many are pending, a deleted one
sends none after."""

from __future__ import annotations

import asyncio
import json
import re
import select
import socketserver
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.test import Client
from django.utils import timezone

from automation.browser.url_policy import UrlPolicy
from dashboard import checks
from dashboard.engineconf import url_policy
from dashboard.jobs import alerts, outbox, schedules
from dashboard.models import Delivery, Run, Scenario, Schedule, ScheduleFiring
from dashboard.scenarios import services
from tests.dashboard.api.test_api import refused, token_of
from tests.dashboard.jobs.conftest import Receiver, make
from tests.dashboard.signup import sign_up
from tests.waiting import eventually

pytestmark = pytest.mark.django_db


# -- a receiver that drips ------------------------------------------------------------------


class Dripping(socketserver.ThreadingTCPServer):
    """A receiver on 127.0.0.1 that takes the request (HTTP), or speaks first (SMTP), then
    answers one byte every DRIP_S and never finishes; it notes when a client reached it
    and when the client hung up."""

    daemon_threads = True
    allow_reuse_address = True
    DRIP_S = 0.2

    def __init__(self, *, http: bool) -> None:
        super().__init__(("127.0.0.1", 0), _Drip)
        self.http = http
        self.reached = threading.Event()
        self.hung_up = threading.Event()
        self.stopping = threading.Event()

    @property
    def port(self) -> int:
        return int(self.server_address[1])


class _Drip(socketserver.BaseRequestHandler):
    server: Dripping

    def handle(self) -> None:
        sock = self.request
        if self.server.http:
            data = b""
            while b"\r\n\r\n" not in data:
                data += sock.recv(4096)
            head, _, body = data.partition(b"\r\n\r\n")
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))  # fmt: skip
            while len(body) < length:
                body += sock.recv(4096)
            answer = b"HTTP/1.1 200 OK\r\nX-Drip: "
        else:
            answer = b"220 "
        self.server.reached.set()
        sent = 0
        while True:
            try:
                sock.sendall(answer[sent : sent + 1] or b"a")
            except OSError:
                break
            sent += 1
            if self.server.stopping.wait(Dripping.DRIP_S):
                return
            readable, _, _ = select.select([sock], [], [], 0)
            try:
                if readable and not sock.recv(1024):
                    break
            except OSError:  # a reset: the client closed with our bytes unread
                break
        self.server.hung_up.set()


class _Mute(_Drip):
    """A mail server that greets, then never answers again."""

    def handle(self) -> None:
        sock = self.request
        sock.sendall(b"220 mute.test ESMTP\r\n")
        self.server.reached.set()
        while not self.server.stopping.wait(Dripping.DRIP_S):
            readable, _, _ = select.select([sock], [], [], 0)
            try:
                if readable and not sock.recv(1024):
                    break
            except OSError:  # a reset: the client closed with our bytes unread
                break
        self.server.hung_up.set()


def _dripping(http: bool, handler: type[_Drip] = _Drip) -> Iterator[Dripping]:
    server = Dripping(http=http)
    server.RequestHandlerClass = handler
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.stopping.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def dripping_hook() -> Iterator[Dripping]:
    yield from _dripping(http=True)


@pytest.fixture
def dripping_smtp(settings: Any) -> Iterator[Dripping]:
    for server in _dripping(http=False):
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
        yield server


@pytest.fixture
def mute_smtp(settings: Any) -> Iterator[Dripping]:
    for server in _dripping(http=False, handler=_Mute):
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
        yield server


def _failed_firing(schedule: Schedule) -> ScheduleFiring:
    return ScheduleFiring.objects.create(
        schedule=schedule, due_at=timezone.now(), outcome="failed", error="no greeting"
    )


def _told(schedule: Schedule) -> list[Delivery]:
    """A failed firing of ``schedule``, judged and told: its alerts in the outbox."""
    firing = _failed_firing(schedule)
    assert [f.pk for f in schedules.judge_all()] == [firing.pk]
    return list(Delivery.objects.filter(firing=firing))


@pytest.mark.django_db(transaction=True)
async def test_a_receiver_that_drips_its_answer_ends_at_the_deadline_and_firings_go_on(
    scenario: Scenario, dripping_hook: Dripping, settings: Any
) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ALERT_TIMEOUT_S": 5.0, "ALERT_RETRY_S": (3600,)}
    slow = await sync_to_async(make)(
        scenario, webhook_url=f"http://127.0.0.1:{dripping_hook.port}/hook"
    )
    await sync_to_async(_failed_firing)(slow)
    sending = asyncio.create_task(outbox.serve())  # the worker's outbox
    try:
        async with asyncio.timeout(120):
            await schedules.judge_outcomes()  # the scheduler's tick: the alert is queued
            await eventually(sync_to_async(dripping_hook.reached.is_set), 120)
            # While the receiver drips, a schedule due now fires on time, not missed.
            due = await sync_to_async(make)(scenario)
            await Schedule.objects.filter(pk=due.pk).aupdate(next_fire_at=timezone.now())
            fired = await schedules.fire_due()
            assert [(f.schedule_id, f.missed, f.outcome) for f in fired] == [(due.pk, 0, "")]
            assert await Run.objects.filter(pk=fired[0].run_id).aexists()
            in_flight = await Delivery.objects.aget()
            # Its try counts from its claim; nothing of it is logged before it ends.
            assert (in_flight.status, in_flight.attempts, in_flight.log) == ("pending", 1, [])
            # The try ends at its deadline, though a byte came every DRIP_S, and hangs up.
            await eventually(sync_to_async(lambda: len(Delivery.objects.get().log) == 1), 120)
            await eventually(sync_to_async(dripping_hook.hung_up.is_set), 120)
    finally:
        sending.cancel()
        await asyncio.gather(sending, return_exceptions=True)
    delivery = await Delivery.objects.aget()
    assert (delivery.status, delivery.attempts) == ("pending", 1)  # tried again later
    assert delivery.last_error.startswith("no complete answer within 5 s")
    assert delivery.log[0]["error"] == delivery.last_error
    assert delivery.next_attempt_at > timezone.now() + timedelta(minutes=30)


@pytest.mark.django_db(transaction=True)
async def test_a_webhook_is_sent_while_the_default_executor_is_held(
    scenario: Scenario, receiver: str, settings: Any
) -> None:
    """Every thread of the event loop's default executor held (slow reads, a big page's
    parse, lookups of a page's names the resolver answers slowly): the try's lookup and
    its TLS context waited behind them all, and the alert was not sent within its
    deadline.  The outbox has threads of its own."""
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ALERT_TIMEOUT_S": 30.0, "ALERT_RETRY_S": (3600,)}
    hook = receiver.replace("127.0.0.1", "localhost")  # a name to look up
    await sync_to_async(_told)(await sync_to_async(make)(scenario, webhook_url=hook))
    loop = asyncio.get_running_loop()
    release = threading.Event()
    held = [loop.run_in_executor(None, release.wait) for _ in range(64)]  # past its threads
    try:
        async with asyncio.timeout(120):
            sent = await outbox.send_due()
    finally:
        release.set()
        await asyncio.gather(*held)
    delivery = await Delivery.objects.aget()
    assert (sent, delivery.status) == (1, "sent"), delivery.last_error
    assert len(Receiver.got) == 1


@pytest.mark.django_db(transaction=True)
async def test_a_mail_server_that_drips_its_greeting_ends_at_the_deadline(
    scenario: Scenario, dripping_smtp: Dripping, settings: Any
) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ALERT_TIMEOUT_S": 2.0, "ALERT_RETRY_S": (0,)}
    schedule = await sync_to_async(make)(scenario, emails="ops@example.org")
    async with asyncio.timeout(120):
        await sync_to_async(_told)(schedule)  # the alert is queued, not sent here
        assert await outbox.send_due() == 0
        # the connection ended with the try
        await eventually(sync_to_async(dripping_smtp.hung_up.is_set), 120)
        assert await outbox.send_due() == 0  # the last try: given up
    delivery = await Delivery.objects.aget()
    assert (delivery.kind, delivery.status, delivery.attempts) == ("email", "failed", 2)
    assert delivery.last_error.startswith("no complete answer within 2 s")


@pytest.mark.django_db(transaction=True)
async def test_a_mail_server_that_greets_then_falls_silent_ends_at_the_deadline(
    scenario: Scenario, mute_smtp: Dripping, settings: Any
) -> None:
    """Cut off mid-exchange, a try ends at its deadline: it does not wait, unbounded, for
    an answer to a goodbye (QUIT) from a server that answers nothing."""
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ALERT_TIMEOUT_S": 2.0, "ALERT_RETRY_S": (0,)}
    schedule = await sync_to_async(make)(scenario, emails="ops@example.org")
    async with asyncio.timeout(120):
        await sync_to_async(_told)(schedule)
        assert await outbox.send_due() == 0
        # the connection ended with the try
        await eventually(sync_to_async(mute_smtp.hung_up.is_set), 120)
        assert await outbox.send_due() == 0
    delivery = await Delivery.objects.aget()
    assert (delivery.kind, delivery.status, delivery.attempts) == ("email", "failed", 2)
    assert delivery.last_error.startswith("no complete answer within 2 s")


def test_one_person_s_alerts_hold_two_tries_at_most_and_another_s_are_claimed_beside(
    scenario: Scenario, stranger: Any
) -> None:
    """Twelve of one person's alerts due before another person's one: a claim takes two of
    theirs (their tries in flight: one receiver that never answers holds no more) and the
    other person's, oldest first as they fall due."""
    mine = [_told(make(scenario, webhook_url=f"https://slow.example.com/{i}"))[0]
            for i in range(12)]  # fmt: skip
    theirs_scenario = services.scenario_import(owner=stranger, data=sign_up("http://x.test"))
    [theirs] = _told(make(theirs_scenario, webhook_url="https://fast.example.com/tw"))
    later = timezone.now()
    slow, fast = (scenario.owner_id, "slow.example.com"), (stranger.pk, "fast.example.com")
    claimed = outbox.claim_due(8, now=later)
    assert claimed == [(mine[0].pk, slow), (mine[1].pk, slow), (theirs.pk, fast)]
    # With one of theirs already in flight here, one more of mine at most.
    again = outbox.claim_due(8, now=later, busy=Counter({slow: 1}))
    assert again == [(mine[2].pk, slow)]


def test_a_receiver_that_never_answers_holds_none_of_the_same_person_s_other_alerts(
    scenario: Scenario,
) -> None:
    """Two of one person's schedules alert a webhook that hangs; a third alerts another
    host and by mail: those are claimed beside the two tries that hang, at once, not
    after their deadline.  All of one person's tries in flight are capped too."""
    hanging = [_told(make(scenario, webhook_url=f"https://hangs.example.com/{i}"))[0]
               for i in range(6)]  # fmt: skip
    other = _told(make(scenario, webhook_url="https://ok.example.org/hook",
                       emails="ops@example.org"))  # fmt: skip
    later = timezone.now()
    claimed = outbox.claim_due(8, now=later)
    owner = scenario.owner_id
    hangs = (owner, "hangs.example.com")
    assert claimed[:2] == [(hanging[0].pk, hangs), (hanging[1].pk, hangs)]
    assert set(claimed[2:]) == {
        (d.pk, (owner, "ok.example.org" if d.kind == "webhook" else "mail")) for d in other
    }
    full = Counter({(owner, f"host{i}.example.com"): 1 for i in range(8)})
    assert outbox.claim_due(8, now=later, busy=full) == []  # eight of theirs in flight


def _backlog(schedule: Schedule, n: int, *, to: str, due: Any) -> list[int]:
    """``n`` tries of one failed firing of ``schedule`` to ``to``, due a second apart from
    ``due`` on: a backlog of alerts to a receiver that never answers."""
    firing = ScheduleFiring.objects.create(schedule=schedule, due_at=due, outcome="failed",
                                           error="no greeting", alerted_at=due)  # fmt: skip
    made = Delivery.objects.bulk_create(
        Delivery(firing=firing, kind="webhook", to=to, payload={"event": "firing.failed"},
                 next_attempt_at=due + timedelta(seconds=i))
        for i in range(n)
    )  # fmt: skip
    return [d.pk for d in made]


def test_one_person_s_backlog_to_a_receiver_that_hangs_holds_up_no_one_else_s_alerts(
    scenario: Scenario, stranger: Any
) -> None:
    """600 of one person's tries are due to a host with two of theirs in flight (it never
    answers), more than a claim once read: the other person's alert due after them, and
    the same person's to another host, are claimed, none to the host that hangs."""
    hangs = make(scenario, webhook_url="https://hangs.example.com/tw")
    _backlog(hangs, 600, to=hangs.webhook_url, due=timezone.now() - timedelta(hours=1))
    [mine] = _told(make(scenario, webhook_url="https://ok.example.org/tw"))
    theirs_scenario = services.scenario_import(owner=stranger, data=sign_up("http://x.test"))
    [theirs] = _told(make(theirs_scenario, webhook_url="https://hangs.example.com/tw"))
    owner = scenario.owner_id
    busy = Counter({(owner, "hangs.example.com"): 2})
    claimed = outbox.claim_due(32, busy=busy)
    assert claimed == [(mine.pk, (owner, "ok.example.org")),
                       (theirs.pk, (stranger.pk, "hangs.example.com"))]  # fmt: skip
    # With all of the person's tries in flight, the other person's are still claimed.
    Delivery.objects.filter(pk__in=[mine.pk, theirs.pk]).update(next_attempt_at=timezone.now())
    full = Counter(
        {(owner, "hangs.example.com"): 2, **{(owner, f"h{i}.test"): 1 for i in range(6)}}
    )
    assert outbox.claim_due(32, busy=full) == [(theirs.pk, (stranger.pk, "hangs.example.com"))]


@pytest.mark.parametrize(
    ("hanging", "other"),
    [
        ("https://Hangs.Example.com:8443/tw?x=1", "https://hangs.example.com.evil.test/tw"),
        ("https://ops:pw@hangs.example.com/tw", "https://hangs.example.com@other.test/tw"),
        ("http://hangs.example.com#tw", "http://xhangs.example.com/tw"),
        ("http://[2001:db8::1]:8080/tw", "http://[2001:db8::10]/tw"),
    ],
)
def test_the_receiver_left_out_of_a_claim_is_the_url_s_host_exactly(
    scenario: Scenario, hanging: str, other: str
) -> None:
    """A backlog to a host with tries in flight is left out by the query, whatever the
    URL's form (a port, a user, upper case, an IPv6 address); a host it only looks like
    is not."""
    schedule = make(scenario, webhook_url=hanging)
    _backlog(schedule, 600, to=hanging, due=timezone.now() - timedelta(hours=1))
    [beside] = _told(make(scenario, webhook_url=other))
    busy = Counter({outbox.receiver_of(scenario.owner_id, "webhook", hanging): 2})
    receiver = outbox.receiver_of(scenario.owner_id, "webhook", other)
    assert receiver not in busy
    assert outbox.claim_due(32, busy=busy) == [(beside.pk, receiver)]


@pytest.mark.django_db(transaction=True)
async def test_a_backlog_to_a_receiver_that_never_answers_delays_no_one_else_s_alert(
    scenario: Scenario, stranger: Any, dripping_hook: Dripping, receiver: str, settings: Any
) -> None:
    """A worker's outbox, 600 of one person's tries due to a receiver that never
    finishes answering: another person's alert, due after them all, reaches its receiver
    while two of the first person's tries hang."""
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ALERT_TIMEOUT_S": 600.0}
    hanging = f"http://127.0.0.1:{dripping_hook.port}/hook"
    schedule = await sync_to_async(make)(scenario, webhook_url=hanging)
    await sync_to_async(_backlog)(schedule, 600, to=hanging,
                                  due=timezone.now() - timedelta(hours=1))  # fmt: skip
    theirs_scenario = await sync_to_async(services.scenario_import)(
        owner=stranger, data=sign_up("http://x.test")
    )
    theirs = await sync_to_async(make)(theirs_scenario, webhook_url=receiver)
    [alert] = await sync_to_async(_told)(theirs)
    sending = asyncio.create_task(outbox.serve())  # the worker's outbox
    try:
        async with asyncio.timeout(120):
            sent = sync_to_async(lambda: Delivery.objects.get(pk=alert.pk).status == "sent")
            await eventually(sent, 120)
            await eventually(sync_to_async(dripping_hook.reached.is_set), 120)
    finally:
        sending.cancel()
        await asyncio.gather(sending, return_exceptions=True)
    assert [json.loads(body)["event"] for _headers, body in Receiver.got] == ["firing.failed"]
    tried = Delivery.objects.filter(firing__schedule=schedule, attempts__gt=0)
    assert await tried.acount() == 2  # the receiver that hangs holds two of them, no more


# -- URLs checked when saved ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("https://hooks.example.com/a\r\nX-Injected: 1", "carriage return (CR) at character 28"),
        ("https://hooks.example.com/a\nb", "line feed (LF) at character 28"),
        ("https://hooks.example.com/a b", "a space at character 28"),
        ("https://hooks.example.com/\x00", "NUL character, U+0000 (in 'webhook_url')"),
        ("https://hooks.example.com/\u202ex", "invisible format character (U+202E)"),
        ("ftp://hooks.example.com/", "ftp: is not allowed"),
        ("hooks.example.com/x", "no scheme is not allowed"),
        ("https:///x", "no host"),
        ("https://hooks.example.com:99999/", "can't be read"),
    ],
)
def test_a_webhook_url_that_is_not_one_plain_url_is_refused_over_the_api(
    owner: Any, scenario: Scenario, url: str, says: str
) -> None:
    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    answer = client.post(f"/api/scenarios/{scenario.pk}/schedules",
                         {"cron": "0 7 * * 1", "params": {"name": "A", "greet": "A"},
                          "webhook_url": url}, content_type="application/json")  # fmt: skip
    if "\x00" in url:  # no body of the API holds a NUL: refused as the body is read
        assert says in refused(answer, 400, "invalid")["fields"]["body"]
    else:
        error = refused(answer, 400, "schedule_invalid")
        assert says in error["fields"]["webhook_url"], error
    assert not Schedule.objects.exists()


def test_a_line_break_in_a_url_is_refused_by_the_form_and_by_a_change(
    owner: Any, scenario: Scenario
) -> None:
    page = Client()
    page.force_login(owner)
    form = {"cron": "0 7 * * 1-5", "timezone": "UTC", "concurrency": 2, "param_name": "Ada",
            "param_greet": "Ada"}  # fmt: skip
    bad = page.post(f"/scenarios/{scenario.pk}/schedules",
                    {**form, "webhook_url": "https://hooks.example.com/a\r\nb"})  # fmt: skip
    assert bad.status_code == 400
    assert "the URL holds a carriage return (CR) at character 28" in bad.content.decode()
    bad = page.post(f"/scenarios/{scenario.pk}/schedules",
                    {**form, "base_url": "https://shop.example.com/\tx"})  # fmt: skip
    assert bad.status_code == 400 and "a tab at character 26" in bad.content.decode()
    assert not Schedule.objects.exists()
    # Surrounding whitespace, as a pasted value has it, is trimmed.
    made = page.post(f"/scenarios/{scenario.pk}/schedules",
                     {**form, "webhook_url": "  https://hooks.example.com/tw\r\n"})  # fmt: skip
    assert made.status_code == 302
    schedule = Schedule.objects.get()
    assert schedule.webhook_url == "https://hooks.example.com/tw"

    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    answer = client.patch(f"/api/schedules/{schedule.pk}",
                          {"webhook_url": "https://hooks.example.com/tw\r\nHost: x"},
                          content_type="application/json")  # fmt: skip
    assert "carriage return" in refused(answer, 400, "schedule_invalid")["fields"]["webhook_url"]
    schedule.refresh_from_db()
    assert schedule.webhook_url == "https://hooks.example.com/tw"


def test_a_url_kept_from_before_that_can_t_be_sent_to_fails_at_once(
    scenario: Scenario, settings: Any
) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ALERT_RETRY_S": (0, 0, 0)}
    schedule = make(scenario, webhook_url="http://127.0.0.1:9/hook")
    Schedule.objects.filter(pk=schedule.pk).update(webhook_url="http://127.0.0.1:9/a\r\nb")
    schedule.refresh_from_db()
    _told(schedule)
    assert async_to_sync(outbox.send_due)() == 0
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("failed", 1)  # not tried forever
    assert delivery.last_error.startswith("the webhook URL can't be sent to: the URL holds a "
                                          "carriage return (CR)")  # fmt: skip
    Schedule.objects.filter(pk=schedule.pk).update(enabled=False)
    assert async_to_sync(outbox.send_due)() == 0
    assert Delivery.objects.get().attempts == 1


def test_a_try_never_recorded_still_counts_so_none_is_claimed_forever(
    scenario: Scenario, settings: Any
) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ALERT_RETRY_S": (60,)}  # two tries
    [delivery] = _told(make(scenario, webhook_url="https://hooks.example.com/tw"))
    later = timezone.now()
    for _ in range(2):  # each claimed by a worker that stops before recording its try
        receiver = (scenario.owner_id, "hooks.example.com")
        assert outbox.claim_due(8, now=later) == [(delivery.pk, receiver)]
        later += timedelta(seconds=outbox.deadline_s() + outbox.CLAIM_MARGIN_S + 1)
    assert outbox.claim_due(8, now=later) == []
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", 2)
    assert delivery.last_error == outbox.UNRECORDED


# -- links ----------------------------------------------------------------------------------


def test_alert_links_use_the_dashboard_s_origin(
    owner: Any, scenario: Scenario, settings: Any
) -> None:
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    body = {"cron": "0 7 * * 1", "params": {"name": "A", "greet": "A"}, "emails": "o@example.org"}
    made = client.post(f"/api/scenarios/{scenario.pk}/schedules", body,
                       content_type="application/json", HTTP_HOST="localhost:8123")  # fmt: skip
    assert made.status_code == 201, made.content
    schedule = Schedule.objects.get()
    assert schedule.origin == "http://localhost:8123"
    run = Run.objects.create(owner=owner, scenario=scenario, kind=Run.Kind.REPLAY, task="r",
                             status="failed")  # fmt: skip
    firing = ScheduleFiring.objects.create(schedule=schedule, due_at=timezone.now(), run=run,
                                           outcome="failed")  # fmt: skip
    payload = alerts.payload_of(ScheduleFiring.objects.get(pk=firing.pk))
    assert payload["run"]["url"] == f"http://localhost:8123/runs/{run.pk}/"
    assert payload["schedule"]["url"] == f"http://localhost:8123/scenarios/{scenario.pk}/#schedules"
    _subject, text = alerts.mail_of(payload)
    assert f"The run: http://localhost:8123/runs/{run.pk}/" in text

    # Changed through a TLS proxy: the scheme it says.
    client.patch(f"/api/schedules/{schedule.pk}", {"cron": "0 8 * * 1"},
                 content_type="application/json", HTTP_HOST="localhost:8443",
                 HTTP_X_FORWARDED_PROTO="https")  # fmt: skip
    schedule.refresh_from_db()
    assert alerts.links_origin(schedule) == "https://localhost:8443"
    # The operator's public address wins (a proxy that rewrites Host).
    settings.TABWRIGHT = {**settings.TABWRIGHT, "PUBLIC_URL": "https://tabwright.example.com/"}
    payload = alerts.payload_of(ScheduleFiring.objects.get(pk=firing.pk))
    assert payload["run"]["url"] == f"https://tabwright.example.com/runs/{run.pk}/"

    settings.TABWRIGHT = {**settings.TABWRIGHT, "PUBLIC_URL": "tabwright.example.com"}
    (error,) = checks.engine_settings()  # no scheme: said when any command starts
    assert "TABWRIGHT_PUBLIC_URL 'tabwright.example.com'" in error.msg
    assert alerts.links_origin(schedule) == "https://localhost:8443"  # the alert still goes

    page = Client(HTTP_HOST="localhost:9000")
    page.force_login(owner)
    page.post(f"/scenarios/{scenario.pk}/schedules",
              {"cron": "0 7 * * 1-5", "timezone": "UTC", "concurrency": 2, "param_name": "Ada",
               "param_greet": "Ada"})  # fmt: skip
    assert Schedule.objects.latest("pk").origin == "http://localhost:9000"


# -- where alerts may go, apart from where runs may go -------------------------------------


def test_a_browsing_allow_list_does_not_limit_webhooks(
    owner: Any, scenario: Scenario, receiver: str, settings: Any
) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ALLOWED_DOMAINS": ("shop.example.com",)}
    with pytest.raises(Exception, match="not on the allowed list"):
        url_policy().check(receiver)  # the agent may not go there…
    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    made = client.post(f"/api/scenarios/{scenario.pk}/schedules",
                       {"cron": "0 7 * * 1", "params": {"name": "A", "greet": "A"},
                        "base_url": "https://shop.example.com/", "webhook_url": receiver},
                       content_type="application/json")  # fmt: skip
    assert made.status_code == 201, made.content  # …and its alerts may
    _told(Schedule.objects.get())
    assert async_to_sync(outbox.send_due)() == 1
    assert Delivery.objects.get().status == "sent" and len(Receiver.got) == 1


def test_a_webhook_allow_list_does_not_limit_browsing(
    owner: Any, scenario: Scenario, receiver: str, settings: Any
) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "WEBHOOK_ALLOWED_DOMAINS": ("hooks.example.com",)}
    assert url_policy().check(receiver) == receiver  # the agent may go there
    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    url = f"/api/scenarios/{scenario.pk}/schedules"
    body = {"cron": "0 7 * * 1", "params": {"name": "A", "greet": "A"}, "base_url": receiver}
    answer = client.post(url, {**body, "webhook_url": receiver}, content_type="application/json")
    refusal = refused(answer, 400, "schedule_invalid")
    assert "not on the allowed list" in refusal["fields"]["webhook_url"]
    made = client.post(url, {**body, "webhook_url": "https://hooks.example.com/tw"},
                       content_type="application/json")  # fmt: skip
    assert made.status_code == 201, made.content
    # A delivery to a host the rules no longer allow is refused when it would connect.
    schedule = Schedule.objects.get()
    Schedule.objects.filter(pk=schedule.pk).update(webhook_url=receiver)
    schedule.refresh_from_db()
    _told(schedule)
    assert async_to_sync(outbox.send_due)() == 0
    assert "not on the allowed list" in Delivery.objects.get().last_error and not Receiver.got


def test_private_webhook_addresses_are_refused_unless_named_checked_at_connect(
    owner: Any, scenario: Scenario, receiver: str, settings: Any
) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "WEBHOOK_BLOCK_PRIVATE_ADDRESSES": True}
    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    body = {"cron": "0 7 * * 1", "params": {"name": "A", "greet": "A"}, "webhook_url": receiver}
    answer = client.post(f"/api/scenarios/{scenario.pk}/schedules", body,
                         content_type="application/json")  # fmt: skip
    refusal = refused(answer, 400, "schedule_invalid")
    assert "127.0.0.1 is a loopback address" in refusal["fields"]["webhook_url"]

    # A name is checked when a delivery connects, by every address it resolves to
    # (host_map answers for the name, as DNS would).
    port = receiver.split(":")[2].split("/")[0]
    schedule = make(scenario, webhook_url=f"http://hook.test:{port}/hook")
    _told(schedule)
    resolves_private = UrlPolicy(host_map=(("hook.test", "127.0.0.1"),))
    assert async_to_sync(outbox.send_due)(policy=resolves_private) == 0
    delivery = Delivery.objects.get()
    assert "hook.test resolves to 127.0.0.1, a loopback address" in delivery.last_error
    assert not Receiver.got
    # Named by a rule, it goes to the address that was checked, the name in its Host.
    Delivery.objects.update(next_attempt_at=timezone.now())
    named = UrlPolicy(allowed_domains=("hook.test",), host_map=(("hook.test", "127.0.0.1"),))
    assert async_to_sync(outbox.send_due)(policy=named) == 1
    headers, body_sent = Receiver.got[0]
    assert headers["host"] == f"hook.test:{port}"
    assert json.loads(body_sent)["event"] == "firing.failed"


# -- where deliveries are seen ---------------------------------------------------------------


def test_deliveries_show_on_the_schedule_s_page_and_in_the_api(
    owner: Any, scenario: Scenario, settings: Any
) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ALERT_RETRY_S": (60,)}
    schedule = make(scenario, webhook_url="http://127.0.0.1:9/hook\r\n", emails="o@example.org")
    Schedule.objects.filter(pk=schedule.pk).update(webhook_url="http://127.0.0.1:9/a b")
    schedule.refresh_from_db()
    _told(schedule)
    async_to_sync(outbox.send_due)()
    page = Client()
    page.force_login(owner)
    shown = page.get(f"/scenarios/{scenario.pk}/").content.decode()
    assert "Webhook <code>http://127.0.0.1:9/a b</code>" in shown
    assert "badge failed" in shown and "last error: the webhook URL can&#x27;t be sent" in shown
    assert "E-mail to o@example.org" in shown and "badge sent" in shown

    api = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    firing = api.get(f"/api/schedules/{schedule.pk}").json()["firings"][0]
    by_kind = {d["kind"]: d for d in firing["deliveries"]}
    assert by_kind["webhook"]["status"] == "failed" and by_kind["webhook"]["attempts"] == 1
    assert by_kind["webhook"]["last_error"].startswith("the webhook URL can't be sent to")
    assert by_kind["webhook"]["next_attempt_at"] is None
    assert (by_kind["email"]["status"], by_kind["email"]["to"]) == ("sent", "o@example.org")
    assert by_kind["email"]["sent_at"] is not None

    # Turned off, the alerts of a firing that happened still go, and until they have the
    # page and the API say so, also once newer firings push that firing off their lists.
    schedule.enabled = False
    schedules.save(schedule)
    _told(schedule)
    for minutes in range(1, 21):
        later = timezone.now() + timedelta(minutes=minutes)
        ScheduleFiring.objects.create(schedule=schedule, outcome="ok", due_at=later)
    shown = page.get(f"/scenarios/{scenario.pk}/").content.decode()
    said = re.search(r'data-testid="pending-alerts">([^<]*)<', shown)
    assert said is not None and said[1].startswith(
        "2 alerts of its firings still to send (turned off, it still sends those of firings "
        "before), next try "
    )
    out = api.get(f"/api/schedules/{schedule.pk}").json()
    assert out["pending_alerts"]["count"] == 2 and out["pending_alerts"]["next_attempt_at"]
    assert not any(d["status"] == "pending" for f in out["firings"] for d in f["deliveries"])
    async_to_sync(outbox.send_due)()  # the e-mail goes; the webhook can't, and fails at once
    assert sorted(Delivery.objects.values_list("status", flat=True)) == [
        "failed",
        "failed",
        "sent",
        "sent",
    ]
    assert "pending-alerts" not in page.get(f"/scenarios/{scenario.pk}/").content.decode()
    assert api.get(f"/api/schedules/{schedule.pk}").json()["pending_alerts"] == {
        "count": 0,
        "next_attempt_at": None,
    }

    # Its webhook and addresses changed: the alerts still to send go to the new ones;
    # removed, none goes where the person no longer wants them.
    schedules.save(schedule, webhook_url="http://127.0.0.1:9/hook")
    _told(schedule)
    changed = api.patch(
        f"/api/schedules/{schedule.pk}",
        {"webhook_url": "http://127.0.0.1:9/new", "emails": "ops@example.org"},
        content_type="application/json",
    )
    assert changed.status_code == 200, changed.content
    pending = Delivery.objects.filter(status="pending")
    assert sorted(pending.values_list("kind", "to")) == [
        ("email", "ops@example.org"), ("webhook", "http://127.0.0.1:9/new")]  # fmt: skip
    removed = api.patch(f"/api/schedules/{schedule.pk}", {"emails": "", "webhook_url": ""},
                        content_type="application/json")  # fmt: skip
    assert removed.status_code == 200, removed.content
    assert not pending.exists() and async_to_sync(outbox.send_due)() == 0
    gone = Delivery.objects.filter(last_error__contains="removed before this alert was sent")
    assert sorted(gone.values_list("kind", "status")) == [
        ("email", "failed"), ("webhook", "failed")]  # fmt: skip
    schedules.save(schedule, webhook_url="http://127.0.0.1:9/hook", emails="o@example.org")

    # Deleted, its alerts not sent yet go with it: none is sent after.
    _told(schedule)
    assert Delivery.objects.filter(status="pending").count() == 2
    assert api.delete(f"/api/schedules/{schedule.pk}").status_code == 204
    assert not Delivery.objects.exists()
    assert async_to_sync(outbox.send_due)() == 0
