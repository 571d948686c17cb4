"""The write a step sent when recorded, which its replay must send again.

A person clicked Save and the page sent ``POST /api/profile``; the recording keeps that
as the step's ``sent``.  Another day the page's script returned before sending (a check
of its own that says so in grey, or a new build whose handler throws): the click found
its button, the page barely changed, and replay said succeeded with nothing saved.  Now
a click or a key that sent a write when recorded and sends none at replay (what it left
for later run first: a save it debounces) fails, unless every value the steps before it
on that page wrote was there already (an app that sends nothing when nothing changed is
right to).

A write here is one of the page's own: a form it posted, or a fetch or XHR its script
sent to its site, begun within :data:`SENT_WITHIN_MS` of the step.  A recording does not
keep one the page also sent away from every step (a poll that writes, a keep-alive):
the step did not send it (:func:`polled`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from playwright.async_api import ElementHandle
from playwright.async_api import Error as PlaywrightError

from automation.browser.effect import TOGGLE_STATE_JS
from automation.browser.pagelog import PageLog, RequestEntry
from automation.browser.served import WRITES, same_site
from automation.budget import Budget
from automation.errors import NothingSent
from automation.limits import cut_text
from automation.recording.expect import VALUE_JS
from automation.recording.scenario import SENDING_ACTIONS, ScenarioStep

if TYPE_CHECKING:
    from automation.recording.replay import Replay

__all__ = [
    "SENT_WITHIN_MS",
    "first_write",
    "polled",
    "sent_again",
    "state_of",
    "watched",
    "written_before",
]

# A write begun this long after the step is its own (a save sent after a short animation).
SENT_WITHIN_MS = 1_500
_TYPES = ("document", "fetch", "xhr")


def first_write(
    log: PageLog, since: int, page_url: str, *, from_s: float = 0.0, to_s: float = float("inf")
) -> str:
    """The first write of the page's own among its requests after number ``since``,
    begun from ``from_s`` to ``to_s`` (wall clock seconds), as ``"POST /path"``; "" when
    there is none.  A form posted (its document), or a script's fetch or XHR to the
    site of ``page_url``."""
    for entry in log.requests(limit=500):
        if entry.number <= since or not from_s <= entry.time <= to_s:
            continue
        if entry.method not in WRITES or entry.resource_type not in _TYPES:
            continue
        if entry.resource_type == "document" or same_site(entry.url, page_url):
            return _as_sent(entry)
    return ""


def _as_sent(entry: RequestEntry) -> str:
    """The request ``entry`` as a step's ``sent``: its method and its address's path."""
    return f"{entry.method} {urlsplit(entry.url).path or '/'}"[:300]


def polled(log: PageLog, sent: str, page_url: str, steps_s: list[float]) -> bool:
    """Whether the page sent the write ``sent`` (a method and a path) away from every
    step, each begun at one of ``steps_s`` (wall clock seconds): on its own, as a poll or
    a keep-alive does, so not a step's."""
    for entry in log.requests(limit=500):
        if entry.method not in WRITES or entry.resource_type not in _TYPES:
            continue
        if _as_sent(entry) != sent:
            continue
        if not same_site(entry.url, page_url) and entry.resource_type != "document":
            continue
        if not any(at <= entry.time <= at + SENT_WITHIN_MS / 1000 for at in steps_s):
            return True
    return False


def watched(steps: tuple[ScenarioStep, ...], index: int) -> bool:
    """Whether step ``index`` writes a value (types, picks, ticks) that a later step on
    the same page sends (one with a ``sent``): whether it changed anything is read."""
    step = steps[index]
    if step.action not in ("fill", "type", "select_option", "check") or step.target() is None:
        return False
    for later in steps[index + 1 :]:
        if later.sent and later.action in SENDING_ACTIONS:
            return True
        if later.leaves_the_page:
            return False
    return False


async def state_of(step: ScenarioStep, element: ElementHandle, budget: Budget) -> object:
    """What the field ``element`` of ``step`` holds (its value, or whether it is ticked);
    None when it can't be read."""
    script = TOGGLE_STATE_JS if step.action == "check" else VALUE_JS
    try:
        return await budget.run(element.evaluate(script))
    except PlaywrightError:
        return None


async def sent_again(replay: Replay, index: int, step: ScenarioStep, since: int,
                     budget: Budget) -> None:  # fmt: skip
    """NothingSent when step ``index`` sent a write when recorded (its ``sent``) and has
    sent none since request number ``since``, once what it left for later ran (a save
    it debounces); not when the values the steps before it on the page wrote were all
    there already (``replay.unchanged``): nothing to save."""
    if not step.sent or step.action not in SENDING_ACTIONS:
        return
    tab = replay.tab
    if first_write(tab.log, since, tab.url):
        return
    await tab.settler.hold(budget.child(label="what it sends"))
    if first_write(tab.log, since, tab.url) or _nothing_changed(replay, index):
        return
    threw = [e.message for e in tab.log.errors() if e.time >= replay.step_began]
    said = f" (the page's script failed: {cut_text(threw[0], 200)})" if threw else ""
    raise NothingSent(
        f"it sent nothing, where it sent {step.sent} when recorded: the page did not "
        f"take it{said}",
        recorded=step.sent,
        hint="see the page: it may say what it wants first; if the app no longer sends "
        "one there, empty the step's \"sent\" on the scenario's page",
    )  # fmt: skip


def written_before(steps: tuple[ScenarioStep, ...], index: int) -> list[int]:
    """The steps before ``index`` on its page that wrote a value (:func:`watched`), since
    the page was reached or a step sent a write (one with a ``sent``)."""
    written = []
    for earlier in range(index - 1, -1, -1):
        step = steps[earlier]
        if (
            step.leaves_the_page
            or step.action == "call"
            or (step.sent and step.action in SENDING_ACTIONS)
        ):
            break
        if watched(steps, earlier):
            written.append(earlier)
    return written


def _nothing_changed(replay: Replay, index: int) -> bool:
    """Whether steps before ``index`` on its page wrote values (:func:`written_before`),
    each one that was there already."""
    written = written_before(replay.scenario.steps, index)
    return bool(written) and all(replay.unchanged.get(i) is True for i in written)
