"""What the server answered a replay's steps, judged as a person would read it: a page or a
write it refused (HTTP 4xx/5xx) or never answered fails the step that sent it, whatever the
page then shows; and a check recorded after a form's save was redirected fails on the
server's own answer to the form at another address (a refused form comes back with its
values in its fields, and a check of them would hold there); and a step whose write
(a form posted, a save its script sent) ends on another page than the one it led to when
recorded fails too (an app that shows its refusal as a page of its own, answered 200:
``/oops``, ``/error?code=3``); and so does one whose write the app answers on the same
page with an error it did not show before (a form sent back with an error list above it,
answered 200), unless a check after the step judges the page's errors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from automation.browser.address import same_page
from automation.browser.pagelog import Refused
from automation.browser.seen import FIELD_MARKED, errors_shown, find_words, fold
from automation.browser.served import address_shape, same_place
from automation.budget import Budget
from automation.errors import (
    CheckFailed,
    HttpStatus,
    LedElsewhere,
    RefusedInPlace,
    RefusedWhereItLed,
)
from automation.limits import cut_text
from automation.recording.params import fill_url
from automation.recording.rebase import rebase
from automation.recording.scenario import ScenarioStep

if TYPE_CHECKING:
    from collections.abc import Sequence

    from automation.recording.replay import Replay

__all__ = [
    "checks_after",
    "errors_before",
    "judged_in_place",
    "not_a_form_answered_again",
    "not_where_it_led",
    "refused_at_end",
    "refused_by_server",
    "refused_in_place",
    "refused_where_it_led",
]

# Steps that may send what the page holds (a form posted, a save its script sends): a
# click, a key, an option picked, a box ticked; a fill whose Enter submits it.
_SENDING = frozenset({"click", "double_click", "press", "select_option", "check"})
# How long the page's errors are read, before and after such a step.
_READ_MS = 2_000
# How many of the pages the replay read errors on are kept (refused_where_it_led).
_PLACES_KEPT = 20


def not_a_form_answered_again(replay: Replay, step: ScenarioStep) -> None:
    """CheckFailed when the page is the server's own answer to a form sent (not a
    redirect after it) at another address than the page the check was recorded on:
    a form the server refused comes back as it was sent, its values in its fields, and
    a check of them would hold there.  Addresses are compared by their path and query,
    ids aside (record 17 where the recording had 12, a UUID for another)."""
    tab = replay.tab
    if not step.url or tab.log.document_method != "POST":
        return
    recorded = _recorded(replay, step.url)
    if address_shape(recorded) != address_shape(tab.url):
        raise CheckFailed(
            f"the page is the server's answer to the form sent ({cut_text(tab.url, 200)}"
            f"), not the page it led to when recorded ({cut_text(recorded, 200)}): the "
            "server likely refused the form (the page shows why)",
            hint="see the page: a field it refused, or a message",
        )


def _recorded(replay: Replay, url: str) -> str:
    """A recorded address as this replay's would be: its parameters' values in, moved to
    the replay's base URL."""
    filled = fill_url(url, replay.values.params)
    return rebase(filled, replay.scenario.base_url, replay.base_url)


def refused_by_server(refused: list[Refused], *, what: str = "it") -> None:
    """HttpStatus when the page a step led to (a form posted, a link followed) was
    answered HTTP 4xx/5xx, or a write the page's script sent to its site (a form sent by
    fetch, a save): the server refused what it sent, whatever the page then shows (a step
    that passed there saved nothing).  One that got no answer (a dropped connection), or
    was answered in JSON saying it failed, is refused alike."""
    if refused:
        first = refused[0]
        url = cut_text(first.url, 200)
        unanswered = f"no answer ({first.failure or 'the connection failed'})"
        answer = f"answered HTTP {first.status}" if first.status else f"which got {unanswered}"
        answer += f" saying {first.said!r}" if first.said else ""
        if first.method:
            said = f"{what} sent {first.method} {url}, {answer}"
        elif first.status:
            said = f"the page {what} led to was answered HTTP {first.status} ({url})"
        else:
            said = f"the page {what} led to got {unanswered} ({url})"
        raise HttpStatus(
            said, status=first.status,
            hint="the server refused what the step sent: the page shows its answer",
        )  # fmt: skip


def not_where_it_led(replay: Replay, step: ScenarioStep, since: int) -> None:
    """LedElsewhere when the step sent a write (a form posted, a save its script sent:
    among the tab's requests after number ``since``) and the page it then settled on is
    not where it led when recorded (its ``led_to``, moved to the replay's base URL): the
    app answered it with another page (an error page answered 200).  The same place is
    the same path and the recorded query's parameters, ids aside; a parameter the app
    adds and the fragment are no other place (:func:`~automation.browser.served.
    same_place`).  Steps recorded without ``led_to`` are not judged so, nor a navigate
    (it goes where its address says, whatever the page then sends)."""
    tab = replay.tab
    if not step.judged_where_it_led or not tab.log.wrote(since):
        return
    recorded = _recorded(replay, step.led_to)
    if same_place(recorded, tab.url):
        return
    now, was = cut_text(tab.url, 200), cut_text(recorded, 200)
    raise LedElsewhere(
        f"what it sent led to {now}, not to {was} as when recorded: the app likely "
        "refused it (the page shows why)",
        now=tab.url, recorded=recorded,
        hint="see the page; if the new place is right, change the step's \"led to\" on the "
        "scenario's page (or record the step again)",
    )  # fmt: skip


def judged_in_place(steps: tuple[ScenarioStep, ...], index: int) -> bool:
    """Whether step ``index``, if it sends a write, is judged by the errors the page then
    shows: a step that may send one (:data:`_SENDING`, or a value it writes: a fill an
    app saves as it is typed, saying "Failed to save" when refused), not followed by a
    check that the page shows no error (that check judges them, read as checks are)."""
    step = steps[index]
    if step.action not in _SENDING and not step.writes_a_value():  # (a fill an app autosaves)
        return False
    return all(later.args.get("kind") != "no_error" for later in checks_after(steps, index))


def checks_after(steps: tuple[ScenarioStep, ...], index: int) -> list[ScenarioStep]:
    """The checks right after step ``index``, before the next step that acts."""
    checks = []
    for later in steps[index + 1 :]:
        if not later.is_check:
            break
        checks.append(later)
    return checks


async def errors_before(replay: Replay, index: int, budget: Budget) -> list[str] | None:
    """The errors the page shows before step ``index`` acts, named as errors (a field's
    mark, an element's class or id: not an alert saying words alone, which a toast
    "Saved" may be, unless they say it refused); None when the step is not judged so
    (:func:`judged_in_place`)."""
    if not judged_in_place(replay.scenario.steps, index):
        return None
    errors = await errors_shown(replay.tab, _reading(budget), named=True, hidden=_drawn(replay))
    replay.errors_at[:] = [*replay.errors_at[-(_PLACES_KEPT - 1) :], (replay.tab.url, errors)]
    return errors


async def refused_where_it_led(
    replay: Replay, index: int, since: int, before: tuple[str, list[str] | None], budget: Budget
) -> None:
    """RefusedWhereItLed when step ``index`` sent a write (among the tab's requests after
    number ``since``) and led where it led when recorded (:func:`not_where_it_led` held),
    away from the page it acted on (``before``: that address and the errors it showed,
    :func:`errors_before`), to a page this replay read before (the list whose Edit an
    earlier step clicked), which now shows an error it did not show then: the app sent
    the save back to it with a message saying why it refused it (a flash "Customer could
    not be updated", HTTP 200 after a redirect).  A page the replay had not read is not
    judged so (what it showed when recorded is not known), nor an error a check after the
    step expects to see."""
    url, shown = before
    tab = replay.tab
    step = replay.scenario.steps[index]
    if shown is None or not step.judged_where_it_led or tab.page.is_closed():
        return
    if not tab.log.wrote(since) or same_page(url, tab.url):  # (on its page: refused_in_place)
        return
    earlier = next((errors for at, errors in reversed(replay.errors_at)
                    if same_place(at, tab.url)), None)  # fmt: skip
    if earlier is None:
        return
    expected = _expected(replay, index)
    shown_now = await errors_shown(tab, _reading(budget), named=True)
    new = [error for error in shown_now if error not in earlier
           and not any(find_words(fold(error), fold(t)) for t in expected)]  # fmt: skip
    if new:
        now = cut_text(tab.url, 200)
        raise RefusedWhereItLed(
            f"the app answered what it sent with {now}, saying {cut_text(new[0], 200)!r}, "
            "which that page did not show before: it likely refused it",
            said=new[0], now=tab.url,
            hint="see the page: a message saying why; a check after the step that the "
            "page shows that text makes it the scenario's own",
        )  # fmt: skip


async def refused_in_place(
    replay: Replay, index: int, since: int, before: tuple[str, list[str] | None], budget: Budget
) -> None:
    """RefusedInPlace when step ``index`` sent a write (among the tab's requests after
    number ``since``) and the page, still at the address it acted on (``before``: that
    address and the errors it showed then, :func:`errors_before`), now shows an error it
    did not: the app answered the save with the form again and why it refused it, HTTP
    200, and a scenario without a check would have passed.  An error a check after the
    step expects to see (a text it shows) is the scenario's own: a test of the form's
    refusal passes.  The last step that acts is judged at the end instead
    (:func:`refused_at_end`), once what it left is read again: an edit the app put back,
    saying why, is told as that, of the edit; the errors it shows right after the step are
    kept for then (a toast saying why that hides itself a moment later)."""
    if index == replay.acting:
        then = await _new_errors(replay, index, since, before, budget)
        replay.in_place = (index, since, before, then or [])
        return
    await _refused(replay, index, since, before, budget)


async def refused_at_end(replay: Replay, budget: Budget) -> None:
    """RefusedInPlace when the last step that acts sent a write that the app answered on
    the same page with a new error, right after the step or now (as
    :func:`refused_in_place` judges a step before it)."""
    if replay.in_place is not None:
        index, since, before, then = replay.in_place
        await _refused(replay, index, since, before, budget, then)


async def _new_errors(
    replay: Replay, index: int, since: int, before: tuple[str, list[str] | None], budget: Budget
) -> list[str] | None:
    """The errors the page shows now that it did not before step ``index`` (``before``:
    its address and those errors) and no check after the step expects; None when the step
    sent no write, or the page is not where it acted (or closed)."""
    url, shown = before
    tab = replay.tab
    if shown is None or tab.page.is_closed() or not tab.log.wrote(since):
        return None  # (a popup its save closed: nothing refused there)
    if not same_page(url, tab.url):
        return None
    expected = _expected(replay, index)
    return [
        error
        for error in await errors_shown(tab, _reading(budget), named=True, hidden=_drawn(replay))
        if error not in shown and not any(find_words(fold(error), fold(t)) for t in expected)
    ]


def _drawn(replay: Replay) -> bool:
    """Whether the page is the server's answer to a form posted (not a redirect after it):
    a form it drew again, whose parts nobody sees are read for its marks too (a field it
    refused in a panel of tabs not shown)."""
    return replay.tab.log.document_method == "POST"


def _expected(replay: Replay, index: int) -> list[str]:
    """The texts the checks right after step ``index`` expect to see (a test of a form's
    refusal): errors of the scenario's own."""
    return [
        replay.values.fill({"text": later.args["text"]})["text"]
        for later in checks_after(replay.scenario.steps, index)
        if later.args.get("kind") == "text_visible" and isinstance(later.args.get("text"), str)
    ]


async def _refused(
    replay: Replay,
    index: int,
    since: int,
    before: tuple[str, list[str] | None],
    budget: Budget,
    then: Sequence[str] = (),
) -> None:
    now = await _new_errors(replay, index, since, before, budget)
    if now is None:
        return
    new = [*then, *(error for error in now if error not in then)]
    if new:
        new.sort(key=lambda error: error == FIELD_MARKED)  # what it says first
        saying = ", ".join(repr(cut_text(error, 200)) for error in new[:2])  # a note, a field's
        raise RefusedInPlace(
            f"the app answered what it sent on the same page, saying {saying}: it likely "
            "refused it",
            said=new[0],
            hint="see the page: a field it refused, or a message; a check after the step "
            "that the page shows that text makes it the scenario's own",
        )


def _reading(budget: Budget) -> Budget:
    """The time to read the page's errors in, named for it: a page too big or too busy to
    read them from in time fails the step saying so (unjudged, a refusal would pass)."""
    return budget.child(_READ_MS, label="read of the errors the page shows")
