"""One MCP client's browser work: its calls run one at a time on its tab, each recorded as
the steps of a scenario exactly as an agent's actions are (:class:`ActionSteps`), so the
session can be saved and replayed.

Each call gets the budget it asks for (``timeout_ms``, else :data:`DEFAULT_CALL_MS`) for
the whole call, the delta included.  A call while a person has paused the session (or
taken it over) is refused with :class:`PausedByPerson` until they resume; the answer,
like every event, leaves through the session's secrets.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, replace

from automation.actions import validate
from automation.agent.parser import Action
from automation.agent.steps import ActionSteps
from automation.browser.snapshot import SnapshotOptions
from automation.browser.tab import Tab
from automation.budget import Budget, timeout_ms_of
from automation.control import RunControl
from automation.errors import (
    ActionFailed,
    ActionInvalid,
    BrowserClosed,
    BudgetExceeded,
    Cancelled,
    TabwrightError,
)
from automation.events import ChecksProposed, EventSink, RunResumed
from automation.limits import cut_text
from automation.mcp.origin import ShownOrigin
from automation.mcp.tools import READ_ONLY, SCREENSHOT, offered
from automation.recording.propose import propose_checks
from automation.secrets import SecretNotGranted, Secrets, redacting

__all__ = [
    "DEFAULT_CALL_MS",
    "Answer",
    "McpSession",
    "PausedByPerson",
    "SessionEnded",
    "call_timeout_ms",
]

log = logging.getLogger("automation.mcp")

DEFAULT_CALL_MS = 30_000
# What a call may take past its deadline to record the step whose action ran out (the
# action has all but a margin of the call; a loop handed back late ate the margin).
RECORD_MS = 2_000


def call_timeout_ms(name: str, raw: object) -> float:
    """The budget of a call of tool ``name`` whose ``timeout_ms`` is ``raw`` (None: left
    out): a number of ms, whole or not, checked (ActionInvalid).  The dashboard's /mcp
    reads it here too, to wait for the call's answer as long as the call may take."""
    return DEFAULT_CALL_MS if raw is None else timeout_ms_of(raw, what=f"{name}: timeout_ms")


class PausedByPerson(TabwrightError):
    code = "paused_by_person"


class SessionEnded(TabwrightError):
    code = "session_ended"


# What an answer's text may be: at 6 bytes a character (JSON's escapes), well within the
# 1 MiB an SDK client takes in one server-sent event.
MAX_ANSWER_CHARS = 128 * 1024


@dataclass(frozen=True)
class Answer:
    """What a tool call answers: text (an error's code, message and hint when not ok), and
    a JPEG for a screenshot."""

    ok: bool
    text: str
    image: bytes | None = None


class McpSession:
    def __init__(
        self,
        tab: Tab,
        *,
        sink: EventSink,
        secrets: Secrets | None = None,
        control: RunControl | None = None,
        screenshots: bool = False,
    ) -> None:
        self.secrets = secrets or Secrets()
        self.control = control or RunControl()
        self.steps = ActionSteps(
            tab, redacting(sink, self.secrets), self.secrets,
            action_timeout_ms=DEFAULT_CALL_MS, screenshots=screenshots,
        )  # fmt: skip
        self._names = frozenset(spec.name for spec in offered(tab.config))
        self._lock = asyncio.Lock()  # one tab: the client's calls run in turn
        self.last_call = time.monotonic()  # when the latest call came (idle sessions end)
        self._shown = ShownOrigin()  # a snapshot's URL is its path on the origin just named

    @property
    def tab(self) -> Tab:
        return self.steps.tab

    @property
    def busy(self) -> bool:
        """A call is under way (or waits for the one under way)."""
        return self._lock.locked()

    async def propose_checks(self, budget: Budget) -> None:
        """Checks of what the session reached, read from its page as it ends (its client
        left, a person stopped it), for whoever saves it as a scenario, as an agent's run
        proposes them at its end (its client's verify calls are checks already, kept as
        steps).  Nothing when a call still holds the tab, or the page can't be read."""
        try:
            await self._turn("propose checks", budget)
        except BudgetExceeded:
            return
        try:
            proposals = await propose_checks(self.tab, self.steps.recorded, budget=budget)
        except (Cancelled, BrowserClosed):
            raise
        except TabwrightError as exc:
            log.info("no checks proposed: %s", exc)
            return
        finally:
            self._lock.release()
        if proposals:
            await self.steps.out.emit(ChecksProposed([p.to_dict() for p in proposals]))

    async def call(
        self, name: str, args: dict[str, object], *, within: Budget | None = None
    ) -> Answer:
        """Run one tool call (``within``: the host's budget, whose cancellation stops it);
        a failure is an answer (``ok`` false) saying why, for the client's model to read.
        Cancelled (the client gave up) propagates.  The answer's text is at most
        :data:`MAX_ANSWER_CHARS` (an argument of megabytes echoed in an error would be
        more than a client takes in one message)."""
        answer = await self._answer(name, args, within)
        text = self._shown.told(answer.text, snapshot=answer.ok and name == "snapshot")
        answer = replace(answer, text=text)
        if len(answer.text) <= MAX_ANSWER_CHARS:
            return answer
        return replace(answer, text=cut_text(answer.text, MAX_ANSWER_CHARS))

    async def _answer(self, name: str, args: dict[str, object], within: Budget | None) -> Answer:
        self.last_call = time.monotonic()
        try:
            args = dict(args)
            timeout_ms = call_timeout_ms(name, args.pop("timeout_ms", None))
            # The call's budget is the whole call's: waiting for the one under way too.
            budget = (
                within.child(timeout_ms, label=name) if within else Budget(timeout_ms, label=name)
            )
            await self._turn(name, budget)
            try:
                return await self._call(name, args, budget, timeout_ms)
            finally:
                self._lock.release()
        except (TabwrightError, SecretNotGranted) as exc:
            return _failed(self.secrets, exc.to_dict())

    async def _turn(self, name: str, budget: Budget) -> None:
        """Until the session's tab is this call's (its calls run in turn), within its
        budget (BudgetExceeded)."""
        try:
            async with asyncio.timeout(max(0.0, budget.remaining_ms()) / 1000):
                await self._lock.acquire()
        except TimeoutError:
            raise BudgetExceeded(
                f"{name}: the call before it was still running when its "
                f"{budget.timeout_ms:.0f} ms were up",
                hint="a session's calls run one at a time: call again once it has answered",
            ) from None

    async def _call(
        self, name: str, args: dict[str, object], budget: Budget, timeout_ms: int
    ) -> Answer:
        if self.control.stopped:
            raise SessionEnded("a person stopped this session", hint="start a new session")
        if self.control.paused or self.control.pause_requested:
            raise PausedByPerson(
                "paused by a person: they are looking at or working in the browser",
                hint="wait, then call again; the page may have changed, take a new snapshot",
            )
        if name != SCREENSHOT and name not in self._names:
            raise ActionInvalid(
                f"unknown tool {name!r}", hint="tools: " + ", ".join(sorted(self._names))
            )
        # An action's ``delta`` asks for what changed after it; a read's (snapshot's own
        # option) is the read's argument, passed on.
        delta = False if name in READ_ONLY else args.pop("delta", False)
        if not isinstance(delta, bool):
            raise ActionInvalid(f"{name}: delta must be true or false")
        self.control.budget = budget  # a person's stop cancels the call in flight
        if name != SCREENSHOT:
            # A bad call is refused before anything is recorded, a misnamed argument too
            # (a client reads the tool's schema, where every argument is named).
            validate(name, args, strict=True)
        note = await self._follow_closed(budget)
        if name == SCREENSHOT:
            answer = await self._screenshot(args, budget)
        else:
            answer = await self._act(name, args, budget, timeout_ms, delta=delta)
        return replace(answer, text=f"{answer.text}\n{note}") if note else answer

    async def _follow_closed(self, budget: Budget) -> str:
        """When the tab the session acted in closed since its last call (a popup closing
        itself a moment after its Save), the session goes on in the tab it fell back to,
        a step saying so (replayed as the move back to the opener): what the client is
        told of it, or ""."""
        if self.tab.alive or self.tab.crashed:
            return ""
        if not await self.steps.follow_closed(budget, by="mcp"):
            return ""
        group = self.tab.group
        where = f"tab {group.tabs.index(self.tab)}" if group and self.tab in group.tabs else ""
        said = f"(the tab it was in closed; the session goes on in {where or 'another tab'}: "
        return self.secrets.redact(f"{said}{self.tab.url})")

    async def _act(
        self, name: str, args: dict[str, object], budget: Budget, timeout_ms: float, *,
        delta: bool,
    ) -> Answer:  # fmt: skip
        """Run a tool's action as a recorded step of the session."""
        # The action gets all but a margin of what is left of the call (its wait for the
        # call before it spent some): one that runs out of time is a failed step of the
        # session (recorded, its end shown), not a vanished call.
        margin = min(1_000, timeout_ms / 10)
        self.steps.action_timeout_ms = max(1, int(budget.remaining_ms() - margin))
        # A busy machine may hand the loop back to the session after the margin too: the
        # step is recorded all the same, the answer a moment past the call's deadline.
        budget.extend(RECORD_MS)
        outcome = await self.steps.run(Action(name, args), budget, by="mcp")
        if not outcome.ok:
            error = self.steps.last_error or {"code": outcome.error_code, "message": outcome.error}
            if self.steps.last_macro is not None:  # which steps ran, and the failing one
                error = {**error, "message": outcome.error}
            return _failed(self.secrets, error)
        text = outcome.result
        if delta and name not in READ_ONLY:
            try:
                options = SnapshotOptions(delta=True, brief=True)
                snap = await self.tab.snapshot(options, budget=budget)
                text = f"{text}\n{snap.text}"
            except (BudgetExceeded, ActionFailed) as exc:  # the action was done all the same
                text = f"{text}\n(no delta: {exc.message}; take a snapshot)"
        return Answer(True, self.secrets.redact(text))

    async def hold_for_person(self, budget: Budget, detail: str = "paused by the person") -> None:
        """A person paused the session: the call in flight ends first, later calls are
        refused (PausedByPerson) until they resume, and what they do in the tab meanwhile
        (the live view) becomes steps of theirs.  Cancelled when they stop it.  A resume
        before the call in flight ended takes the pause back: nothing is held."""
        control = self.control
        # A stop cancels the pause and the call in flight, each its own budget: the pause
        # must not take the call's place as the budget a stop cancels.
        with control.cancelling(budget):
            # The call in flight ends first; the next sees the pause.
            await budget.run(self._lock.acquire())
            try:
                if not control.pause_requested:  # resumed meanwhile: the session goes on
                    return
                control.begin_pause()
                control.pause_requested = False
            finally:
                self._lock.release()
            await self.steps.wait_for_person(control, budget, "requested", detail, record=True)
        await self.steps.out.emit(RunResumed())

    async def _screenshot(self, args: dict[str, object], budget: Budget) -> Answer:
        ref, full_page = args.get("ref", ""), args.get("full_page", False)
        if not isinstance(ref, str) or not isinstance(full_page, bool):
            raise ActionInvalid("screenshot: ref is a text and full_page true or false")
        if set(args) - {"ref", "full_page"}:
            unknown = ", ".join(repr(cut_text(str(k), 40)) for k in sorted(args)[:5])
            raise ActionInvalid(
                f"screenshot takes ref and full_page, not {unknown}",
                hint="screenshot takes: full_page, ref, timeout_ms",
            )
        # Fields holding a secret or a password are covered (Tab.screenshot masks them).
        image = await self.tab.screenshot(
            ref=ref, full_page=full_page, format="jpeg", quality=70, budget=budget
        )
        return Answer(True, f"screenshot of {self.tab.url}", image)


def _failed(secrets: Secrets, error: dict[str, str]) -> Answer:
    text = f"error {error.get('code', 'error')}: {error.get('message', '')}"
    if error.get("hint"):
        text += f"\nhint: {error['hint']}"
    return Answer(False, secrets.redact(text))
