"""The alerts' outbox: every webhook and e-mail is a Delivery row, sent by the workers.

Each worker runs :func:`serve` as a task of its own, beside (never inside) the poll that
fires schedules, so a receiver that answers slowly or never delays no firing; and it has
at most MAX_IN_FLIGHT_PER_RECEIVER tries to one receiver of one person's in flight (and
MAX_IN_FLIGHT_PER_OWNER of theirs in all), so a receiver that never answers delays no
other alert, theirs to another receiver nor anyone else's: a claim's query leaves those
out, and reads a few of each person's due tries at most, so however many of one person's
are due (a backlog to a receiver that never answers), everyone else's are claimed as they
fall due.  A delivery
is *pending* until a try succeeds (*sent*: a 2xx answer, or the mail server took it), or
its tries run out (*failed*): the first at once, the next after each of
TABWRIGHT_ALERT_RETRY_S.  A URL that can never be sent to (a line break in it, from before
URLs were checked when saved) fails at its first try.  Every try is logged on the row with
what came back, and the last error is kept.

One try has one deadline, TABWRIGHT_ALERT_TIMEOUT_S, over the whole exchange: resolving
and connecting, sending, and reading the complete answer (``asyncio.timeout`` around an
async httpx call).  A per-read timeout would never fire on a receiver that drips one byte
at a time.  E-mail goes to the SMTP server of Django's mail settings (EMAIL_*) over aiosmtplib,
under the same kind of deadline, connection included.

A webhook's host is resolved once per try and every address is checked against the
webhook rules (dashboard.jobs.alerts.webhook_policy); the request then goes to a checked
address (the name kept for the Host header and TLS), so a name can't resolve to a public
address when checked and a private one when connected (DNS rebinding).

Workers claim a try with a conditional update, so two never send the same try; a worker
that dies between sending and recording may send it once more (at-least-once: the
X-Tabwright-Delivery id lets the receiver drop the second).  A try counts when it is
claimed, so one never recorded (its worker stopped) uses up a try too: a delivery whose
tries keep dying is given up like any other, never claimed forever.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import re
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import aiosmtplib
import httpx
from channels.db import database_sync_to_async
from django.conf import settings
from django.core.mail import EmailMessage
from django.core.mail.utils import DNS_NAME
from django.db.models import F, Q, QuerySet, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from automation.browser.url_policy import UrlPolicy, system_lookup
from automation.budget import Budget
from automation.llm.http import tls_context_made
from dashboard.jobs import alerts
from dashboard.lib.urls import UrlInvalid, plain_url
from dashboard.models import Delivery

__all__ = ["attempt", "claim_due", "kick", "retry_delays", "send_due", "serve"]

log = logging.getLogger("tabwright.outbox")

OUTBOX_POLL_S = 5.0  # how often each worker looks for due deliveries (and when kicked)
MAX_IN_FLIGHT = 32  # tries one worker has in flight at once
# Of them, the tries to one receiver of one person's (a webhook's host, or their mail): a
# receiver that answers slowly or never holds at most this many, never the tries to their
# other receivers nor anyone else's (taken in turn as they fall due) ...
MAX_IN_FLIGHT_PER_RECEIVER = 2
# ... and all of one person's tries at most this many.
MAX_IN_FLIGHT_PER_OWNER = 8
CANDIDATES = 500  # due tries looked at per claim, oldest first (a person's first few)
CLAIM_MARGIN_S = 30.0  # a claimed try is the claimer's for its deadline and this long
MAX_ANSWER_CHARS = 200  # of a refusing receiver's answer, kept in the log
MAX_LOG = 20  # tries kept in a delivery's log (the latest)
UNRECORDED = "its last try was never recorded (the worker making it stopped)"

# The outbox's own threads: a webhook's name lookups, the mail server's name for itself, a
# mail backend other than SMTP (console, file, locmem).  None waits on the loop's default
# executor (held by whatever else the process reads or parses) nor on the database's
# thread, and slow lookups of the pages' names hold none of these.
_threads = ThreadPoolExecutor(max_workers=4, thread_name_prefix="tabwright-outbox")
_wakers: set[asyncio.Event] = set()


class _Unsendable(Exception):
    """A delivery that no later try can send (its URL can't be put on the wire)."""


def retry_delays() -> list[float]:
    """Seconds before each try after the first (TABWRIGHT_ALERT_RETRY_S)."""
    return [float(s) for s in settings.TABWRIGHT["ALERT_RETRY_S"]]


def deadline_s() -> float:
    """The most one try may take, the whole exchange (TABWRIGHT_ALERT_TIMEOUT_S)."""
    return float(settings.TABWRIGHT["ALERT_TIMEOUT_S"])


def kick() -> None:
    """New deliveries are waiting: this process's outbox looks now, not at its next poll."""
    for waker in _wakers:
        waker.set()


Receiver = tuple[int, str]  # whose alert, and where it goes: a webhook's host, or "mail"


def receiver_of(owner_id: int, kind: str, to: str) -> Receiver:
    """The receiver a delivery goes to, for the limits on tries in flight."""
    if kind == Delivery.Kind.EMAIL:
        return owner_id, "mail"
    return owner_id, (urlsplit(to).hostname or to).lower()


def claim_due(
    limit: int, now: datetime | None = None, *, busy: Counter[Receiver] | None = None
) -> list[tuple[int, Receiver]]:
    """Up to ``limit`` pending deliveries whose try is due, oldest first, claimed for this
    process (a conditional update each: of two workers, one gets a try), as (delivery,
    its receiver); none to a receiver with MAX_IN_FLIGHT_PER_RECEIVER in flight here, nor
    of an owner with MAX_IN_FLIGHT_PER_OWNER (``busy``, by receiver, counting those
    claimed now).  Those are left out by the query, and of each owner's due tries it
    reads the oldest MAX_IN_FLIGHT_PER_OWNER at most, so however many of one person's
    are due, everyone else's are among those read.  Blocking."""
    now = now or timezone.now()
    busy = Counter(busy or {})
    owners = Counter(owner for owner, _where in busy.elements())
    until = now + timedelta(seconds=deadline_s() + CLAIM_MARGIN_S)
    due = Delivery.objects.filter(status=Delivery.Status.PENDING, next_attempt_at__lte=now)
    # Every try claimed and the last never recorded: given up, not claimed again.
    due.filter(attempts__gt=len(retry_delays())).update(status=Delivery.Status.FAILED,
                                                         last_error=UNRECORDED)  # fmt: skip
    claimed = []
    for delivery_id, owner_id, kind, to in _candidates(due, busy, owners):
        if len(claimed) == limit:
            break
        receiver = receiver_of(owner_id, kind, to)
        if busy[receiver] >= MAX_IN_FLIGHT_PER_RECEIVER:
            continue  # theirs wait for their own tries in flight there, not everyone's
        if owners[owner_id] >= MAX_IN_FLIGHT_PER_OWNER:
            continue
        # The try counts as it is claimed (see the module's docstring).
        if due.filter(pk=delivery_id).update(next_attempt_at=until, attempts=F("attempts") + 1):
            claimed.append((delivery_id, receiver))
            busy[receiver] += 1
            owners[owner_id] += 1
    return claimed


def _candidates(
    due: QuerySet[Delivery], busy: Counter[Receiver], owners: Counter[int]
) -> QuerySet[Delivery, tuple[int, int, str, str]]:
    """Of ``due``, up to CANDIDATES (delivery, owner, kind, to), oldest first: none of an
    owner or to a receiver already at their limit, and each owner's oldest
    MAX_IN_FLIGHT_PER_OWNER at most (no more of theirs could be claimed at once).  A
    receiver is matched by its URL's host in SQL, as :func:`receiver_of` reads it."""
    full = Q()
    for owner_id, count in owners.items():
        if count >= MAX_IN_FLIGHT_PER_OWNER:
            full |= Q(firing__schedule__owner_id=owner_id)
    for (owner_id, where), count in busy.items():
        if count >= MAX_IN_FLIGHT_PER_RECEIVER:
            theirs = Q(kind=Delivery.Kind.WEBHOOK, to__iregex=_host_pattern(where))
            if where == "mail":
                theirs |= Q(kind=Delivery.Kind.EMAIL)
            full |= Q(firing__schedule__owner_id=owner_id) & theirs
    oldest = (F("next_attempt_at").asc(), F("pk").asc())
    ranked = due.exclude(full).annotate(
        turn=Window(RowNumber(), partition_by=[F("firing__schedule__owner_id")], order_by=oldest)
    )
    return (
        ranked.filter(turn__lte=MAX_IN_FLIGHT_PER_OWNER)
        .order_by(*oldest)
        .values_list("pk", "firing__schedule__owner_id", "kind", "to")[:CANDIDATES]
    )


def _host_pattern(host: str) -> str:
    """A regular expression (read alike by SQLite's Python and PostgreSQL) matching a URL
    whose host (urlsplit's hostname) is ``host``: past the scheme and any user, up to a
    port, path, query, fragment or the end."""
    named = rf"\[{re.escape(host)}\]" if ":" in host else re.escape(host)
    return rf"^[a-z][a-z0-9+.-]*://([^/?#]*@)?{named}(:[^/?#]*)?([/?#]|$)"


async def send_due(*, policy: UrlPolicy | None = None) -> int:
    """Every due try, claimed and made at once (each within its deadline); how many
    deliveries were sent."""
    claimed = await database_sync_to_async(claim_due)(MAX_IN_FLIGHT)
    sent = await asyncio.gather(*(attempt(d, policy=policy) for d, _to in claimed))
    return sum(sent)


async def serve(*, poll_s: float = OUTBOX_POLL_S) -> None:
    """The outbox of a worker: claims due tries every ``poll_s`` (or when kicked) and
    makes each in a task of its own, up to MAX_IN_FLIGHT at once.  Runs until cancelled;
    tries in flight then are dropped unrecorded (another worker makes them again once
    their claim runs out)."""
    waker = asyncio.Event()
    _wakers.add(waker)
    in_flight: dict[asyncio.Task[bool], Receiver] = {}  # each try, and where it goes

    def done(task: asyncio.Task[bool]) -> None:
        in_flight.pop(task, None)
        waker.set()  # room for another
        if not task.cancelled() and task.exception() is not None:
            log.error("%s could not be recorded", task.get_name(), exc_info=task.exception())

    try:
        while True:
            waker.clear()
            room = MAX_IN_FLIGHT - len(in_flight)
            claimed: list[tuple[int, Receiver]] = []
            if room > 0:
                try:
                    busy = Counter(in_flight.values())
                    claimed = await database_sync_to_async(claim_due)(room, busy=busy)
                except Exception:
                    log.exception("the outbox could not read its due deliveries")
            for delivery_id, receiver in claimed:
                task = asyncio.create_task(attempt(delivery_id), name=f"delivery {delivery_id}")
                in_flight[task] = receiver
                task.add_done_callback(done)
            try:
                async with asyncio.timeout(poll_s):
                    await waker.wait()
            except TimeoutError:
                pass
    finally:
        _wakers.discard(waker)
        for task in in_flight:
            task.cancel()
        await asyncio.gather(*in_flight, return_exceptions=True)


async def attempt(delivery_id: int, *, policy: UrlPolicy | None = None) -> bool:
    """One try of a claimed delivery, within its deadline, recorded on the row (sent, to
    be tried again, or given up); whether it was sent.  ``policy``: where webhooks may go
    (the settings' webhook rules unless given)."""
    delivery = await (
        Delivery.objects.select_related("firing__schedule").filter(pk=delivery_id).afirst()
    )
    if delivery is None:  # its schedule was deleted meanwhile
        return False
    seconds = deadline_s()
    entry: dict[str, Any] = {"at": timezone.now().isoformat()}
    started = time.monotonic()
    ok = unsendable = False
    deadline = asyncio.timeout(seconds)
    try:
        async with deadline:
            if delivery.kind == Delivery.Kind.EMAIL:
                await _mail(delivery)
                ok = True
            else:
                status, answer = await _post(delivery, policy or alerts.webhook_policy(), seconds)
                entry["status_code"] = status
                ok = 200 <= status < 300
                if not ok:
                    entry["error"] = f"HTTP {status}" + (f": {answer}" if answer else "")
    except TimeoutError as exc:
        if deadline.expired():
            entry["error"] = (f"no complete answer within {seconds:g} s (connecting, sending "
                              "and reading the whole answer)")  # fmt: skip
        else:
            entry["error"] = _said(exc)
    except _Unsendable as exc:
        entry["error"], unsendable = str(exc), True
    except Exception as exc:  # whatever went wrong is this try's error, never a lost try
        entry["error"] = _said(exc)
    entry["seconds"] = round(time.monotonic() - started, 3)
    await database_sync_to_async(_record)(delivery.pk, entry, ok=ok, unsendable=unsendable)
    return ok


def _said(exc: BaseException) -> str:
    text = str(exc) or repr(exc)
    return f"{type(exc).__name__}: {text}"[:500]


def _record(delivery_id: int, entry: dict[str, Any], *, ok: bool, unsendable: bool) -> None:
    delivery = Delivery.objects.filter(pk=delivery_id).first()
    if delivery is None:
        return
    delivery.log = [*delivery.log, entry][-MAX_LOG:]
    delays = retry_delays()
    now = timezone.now()
    if ok:
        delivery.status, delivery.sent_at, delivery.last_error = Delivery.Status.SENT, now, ""
    else:
        delivery.last_error = entry.get("error", "")
        if unsendable or delivery.attempts > len(delays):
            delivery.status = Delivery.Status.FAILED
            log.warning("alert delivery %s (%s to %s) given up after %s tries: %s", delivery.pk,
                        delivery.kind, delivery.to, delivery.attempts,
                        delivery.last_error)  # fmt: skip
        else:
            delivery.next_attempt_at = now + timedelta(seconds=delays[delivery.attempts - 1])
    delivery.save(update_fields=["log", "status", "sent_at", "last_error",
                                 "next_attempt_at"])  # fmt: skip


# -- webhooks ---------------------------------------------------------------------------------


async def _post(delivery: Delivery, policy: UrlPolicy, seconds: float) -> tuple[int, str]:
    """The signed POST of ``delivery`` to an address of its host that ``policy`` allows;
    the answer's status and its first characters.  Bounded by the caller's deadline."""
    try:
        url = httpx.URL(plain_url(delivery.to))
    except (UrlInvalid, httpx.InvalidURL) as exc:
        raise _Unsendable(f"the webhook URL can't be sent to: {exc}") from None
    lookup = Budget(seconds * 1000, label=f"lookup of {url.host}")
    ask = functools.partial(system_lookup, threads=_threads)
    addresses, _port = await policy.connect_addresses(str(url), budget=lookup, lookup=ask)
    body = json.dumps(delivery.payload, ensure_ascii=False).encode()
    stamp = str(int(time.time()))
    headers = {
        "Host": url.netloc.decode("ascii"),
        "Content-Type": "application/json",
        "User-Agent": "Tabwright-Webhook/1",
        "X-Tabwright-Event": str(delivery.payload.get("event", "")),
        "X-Tabwright-Delivery": str(delivery.pk),
        "X-Tabwright-Timestamp": stamp,
        "X-Tabwright-Signature": alerts.sign(delivery.firing.schedule.webhook_secret, stamp, body),
    }
    # TLS is checked against the name (SNI), while the connection goes to the checked
    # address; no proxy from the environment, no redirect followed.
    extensions = {"sni_hostname": url.raw_host.decode("ascii")} if url.scheme == "https" else {}
    # The CA bundle, loaded once per process and in a thread (tens of ms each time).
    tls = await tls_context_made()
    # No per-read timeout: the caller's deadline bounds the whole exchange.
    async with httpx.AsyncClient(
        timeout=None, follow_redirects=False, trust_env=False, verify=tls
    ) as client:
        refused: httpx.ConnectError | None = None
        for address in addresses:
            request = client.build_request("POST", url.copy_with(host=str(address)),
                                           content=body, headers=headers,
                                           extensions=extensions)  # fmt: skip
            try:
                answer = await client.send(request, stream=True)
            except httpx.ConnectError as exc:
                refused = exc  # the next address, if the name has another
                continue
            try:
                return answer.status_code, await _answer_text(answer)
            finally:
                await answer.aclose()
        assert refused is not None
        raise refused


async def _answer_text(answer: httpx.Response) -> str:
    """The whole answer read (a try ends when its answer has), its first characters kept."""
    kept = b""
    async for chunk in answer.aiter_raw():
        if len(kept) < MAX_ANSWER_CHARS * 4:
            kept += chunk[: MAX_ANSWER_CHARS * 4 - len(kept)]
    text = kept.decode("utf-8", errors="replace")
    return " ".join(text.split())[:MAX_ANSWER_CHARS]


# -- e-mail -----------------------------------------------------------------------------------

SMTP_BACKEND = "django.core.mail.backends.smtp.EmailBackend"


async def _mail(delivery: Delivery) -> None:
    """The alert e-mail of ``delivery``.  With Django's SMTP backend (the default) it goes
    over aiosmtplib to EMAIL_HOST:EMAIL_PORT (EMAIL_USE_TLS: STARTTLS, EMAIL_USE_SSL: TLS,
    EMAIL_HOST_USER/PASSWORD: login), so the caller's deadline ends the whole exchange,
    connection included; any other backend (console, file, locmem) is Django's own, in an
    outbox thread."""
    subject, text = alerts.mail_of(delivery.payload)
    to = [address.strip() for address in delivery.to.split(",") if address.strip()]
    message = EmailMessage(subject, text, None, to)
    if settings.EMAIL_BACKEND != SMTP_BACKEND:
        await asyncio.get_running_loop().run_in_executor(_threads, message.send)
        return
    # The FQDN, looked up once.
    local_name = await asyncio.get_running_loop().run_in_executor(_threads, str, DNS_NAME)
    client = aiosmtplib.SMTP(
        hostname=settings.EMAIL_HOST, port=int(settings.EMAIL_PORT), timeout=None,  # the try's
        use_tls=bool(settings.EMAIL_USE_SSL), start_tls=bool(settings.EMAIL_USE_TLS),
        username=settings.EMAIL_HOST_USER or None, password=settings.EMAIL_HOST_PASSWORD or None,
        local_hostname=local_name,
    )  # fmt: skip
    # Not ``async with client``: leaving it cancelled (the deadline) waits for an answer
    # to QUIT with no time limit of its own, from a server that may never send one.
    try:
        await client.connect()
        await client.send_message(message.message(), sender=message.from_email,
                                  recipients=to)  # fmt: skip
        await client.quit()
    finally:
        client.close()  # at the deadline too: the connection ends with the try
