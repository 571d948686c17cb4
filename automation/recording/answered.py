"""What the server answered a replay's steps, judged as a person would read it: a page or a
write it refused (HTTP 4xx/5xx) or never answered fails the step that sent it, whatever the
page then shows; and a check recorded after a form's save was redirected fails on the
server's own answer to the form at another address (a refused form comes back with its
values in its fields, and a check of them would hold there)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from automation.browser.pagelog import Refused
from automation.errors import CheckFailed, HttpStatus
from automation.limits import cut_text
from automation.recording.rebase import rebase
from automation.recording.scenario import ScenarioStep

if TYPE_CHECKING:
    from automation.recording.replay import Replay

__all__ = ["not_a_form_answered_again", "refused_by_server"]


def not_a_form_answered_again(replay: Replay, step: ScenarioStep) -> None:
    """CheckFailed when the page is the server's own answer to a form sent (not a
    redirect after it) at another address than the page the check was recorded on:
    a form the server refused comes back as it was sent, its values in its fields, and
    a check of them would hold there.  Addresses are compared by their path and query,
    numbers aside (record 17 where the recording had 12)."""
    tab = replay.tab
    if not step.url or tab.log.document_method != "POST":
        return
    recorded = rebase(step.url, replay.scenario.base_url, replay.base_url)
    if _address_shape(recorded) != _address_shape(tab.url):
        raise CheckFailed(
            f"the page is the server's answer to the form sent ({cut_text(tab.url, 200)}"
            f"), not the page it led to when recorded ({cut_text(recorded, 200)}): the "
            "server likely refused the form (the page shows why)",
            hint="see the page: a field it refused, or a message",
        )


def _address_shape(url: str) -> str:
    """A page's path and query with each run of digits as one "#"."""
    parts = urlsplit(url)
    return re.sub(r"\d+", "#", parts.path.rstrip("/") + ("?" + parts.query if parts.query else ""))


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
