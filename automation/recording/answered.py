"""What the server answered a replay's steps, judged as a person would read it: a page or a
write it refused (HTTP 4xx/5xx) or never answered fails the step that sent it, whatever the
page then shows; and a check recorded after a form's save was redirected fails on the
server's own answer to the form at another address (a refused form comes back with its
values in its fields, and a check of them would hold there); and a step whose write
(a form posted, a save its script sent) ends on another page than the one it led to when
recorded fails too (an app that shows its refusal as a page of its own, answered 200:
``/oops``, ``/error?code=3``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from automation.browser.pagelog import Refused
from automation.browser.served import address_shape, same_place
from automation.errors import CheckFailed, HttpStatus, LedElsewhere
from automation.limits import cut_text
from automation.recording.params import fill_url
from automation.recording.rebase import rebase
from automation.recording.scenario import ScenarioStep

if TYPE_CHECKING:
    from automation.recording.replay import Replay

__all__ = ["not_a_form_answered_again", "not_where_it_led", "refused_by_server"]


def not_a_form_answered_again(replay: Replay, step: ScenarioStep) -> None:
    """CheckFailed when the page is the server's own answer to a form sent (not a
    redirect after it) at another address than the page the check was recorded on:
    a form the server refused comes back as it was sent, its values in its fields, and
    a check of them would hold there.  Addresses are compared by their path and query,
    numbers aside (record 17 where the recording had 12)."""
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
    that passed there saved nothing).  One that got no answer (a dropped connection) is
    refused alike."""
    if refused:
        first = refused[0]
        url = cut_text(first.url, 200)
        unanswered = f"no answer ({first.failure or 'the connection failed'})"
        if first.method:
            answer = f"answered HTTP {first.status}" if first.status else f"which got {unanswered}"
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
    the same path and the recorded query's parameters, numbers aside; a parameter the app
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
