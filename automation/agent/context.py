"""The prompt of each round, kept within a bound however long the run goes.

- The page: a full snapshot on the first round, after a navigation or a pause, and at
  least every ``recent_rounds`` rounds; in between, only what changed (a delta snapshot).
  The last full snapshot and the deltas after it stay in the prompt, so the model always
  has the whole page.
- The newest observation (results, notes, the snapshot) is cut to ``round_chars``.
- The last ``recent_rounds`` rounds are kept whole, their parts capped; older rounds are
  one line each (what was done and how it went), and past ``summary_rounds`` only counted.

So the prompt never exceeds :meth:`Context.bound`, which depends on the limits and the
task, not on the number of rounds.
"""

from __future__ import annotations

from dataclasses import dataclass

from automation.agent.parser import Action
from automation.llm.base import ActionOutcome, ChatMessage

__all__ = ["Context", "ContextLimits"]

_CUT = "\n… ({} more characters left out)"


@dataclass(frozen=True)
class ContextLimits:
    round_chars: int = 16_000  # the newest observation, its snapshot included
    notes_chars: int = 4_000  # results, errors and notes of one round
    delta_chars: int = 4_000  # a delta kept in the history (a bigger one asks for a full)
    reply_chars: int = 2_000  # a past reply of the model
    recent_rounds: int = 6  # rounds kept whole
    summary_rounds: int = 40  # older rounds kept as one line
    line_chars: int = 200  # one such line
    requests_kept: int = 5  # the person's latest requests after a done, kept whole
    request_chars: int = 2_000  # one of them
    max_requests: int = 40  # requests in all shown (older ones: only counted)


@dataclass
class _Round:
    number: int
    notes: str  # results, errors, notes the model read this round
    snapshot: str  # the page as sent this round
    full: bool  # a full snapshot (else a delta)
    reply: str
    line: str = ""  # one line of what came of it, once known


class Context:
    def __init__(self, system: str, task: str, limits: ContextLimits | None = None) -> None:
        self.system = system
        self.task = task
        self.limits = limits or ContextLimits()
        self._rounds: list[_Round] = []
        self._requests: list[str] = []  # what the person asked after each done, in order
        self._since_full: int | None = None  # rounds since the last full snapshot
        self._overflow = False  # the last delta did not fit: the next one is full

    # -- the page ------------------------------------------------------------------------

    def wants_full(self, *, navigated: bool) -> bool:
        """Whether this round's snapshot must be a full one."""
        return (
            navigated
            or self._overflow
            or self._since_full is None
            or self._since_full >= self.limits.recent_rounds - 1
        )

    def notes_text(self, outcomes: list[ActionOutcome], notes: list[str]) -> str:
        parts = [
            f"OK {o.action}: {o.result}"
            if o.ok
            else f"ERROR {o.action} [{o.error_code}]: {o.error}"
            for o in outcomes
        ]
        parts.extend(notes)
        return _cut("\n".join(parts), self.limits.notes_chars)

    def snapshot_room(self, notes: str) -> int:
        """How many characters this round's snapshot may take."""
        return max(200, self.limits.round_chars - len(notes) - 200)

    @staticmethod
    def observation(notes: str, page: str) -> str:
        return f"{notes}\n{page}" if notes else page

    # -- the conversation ------------------------------------------------------------------

    def add_request(self, text: str) -> None:
        """What the person asks after the work so far ended: it follows the task in every
        prompt from now on (the last ``requests_kept`` whole, older ones cut to a line)."""
        self._requests.append(text)

    def task_text(self) -> str:
        """The task, and what the person asked since, the newest last."""
        if not self._requests:
            return self.task
        lim = self.limits
        shown = self._requests[-lim.max_requests :]
        older, recent = shown[: -lim.requests_kept], shown[-lim.requests_kept :]
        lines = [_cut(r, lim.line_chars, marker="…") for r in older]
        lines += [_cut(r, lim.request_chars) for r in recent]
        gone = len(self._requests) - len(shown)
        asked = (f"({gone} earlier requests left out)\n" if gone else "") + "\n".join(
            f"- {line}" for line in lines
        )
        return (
            f"{self.task}\n\nThat task was done. Then the person asked, in order (the "
            f"last is what to do now):\n{asked}"
        )

    def messages(self, current: str) -> list[ChatMessage]:
        """The whole prompt of this round, ``current`` (its observation) last."""
        messages = [ChatMessage("system", self.system), ChatMessage("user", self.task_text())]
        recent_from = max(0, len(self._rounds) - self.limits.recent_rounds)
        older = self._rounds[:recent_from]
        if older:
            shown = older[-self.limits.summary_rounds :]
            lines = [r.line or f"round {r.number}: (no action)" for r in shown]
            if len(older) > len(shown):
                lines.insert(0, f"({len(older) - len(shown)} earlier rounds left out)")
            messages.append(ChatMessage("user", "Earlier rounds, in short:\n" + "\n".join(lines)))
        last_full = max((i for i, r in enumerate(self._rounds) if r.full), default=-1)
        for i, past in enumerate(self._rounds[recent_from:], start=recent_from):
            text = past.notes
            if i >= last_full >= 0 and past.snapshot:
                text = self.observation(text, past.snapshot)
            if text:
                messages.append(ChatMessage("user", text))
            messages.append(ChatMessage("assistant", _cut(past.reply, self.limits.reply_chars)))
        messages.append(ChatMessage("user", current))
        return messages

    def add(self, number: int, *, notes: str, page: str, full: bool, reply: str) -> None:
        """Keep a round that got a reply."""
        if full:
            self._since_full = 0
            self._overflow = False
        else:
            self._since_full = (self._since_full or 0) + 1
            if len(page) > self.limits.delta_chars:
                self._overflow = True
                page = _cut(page, self.limits.delta_chars)
        self._rounds.append(_Round(number, notes, page, full, reply))

    def settle(self, actions: list[Action], outcomes: list[ActionOutcome], note: str = "") -> None:
        """What came of the last round, as the one line it shrinks to later."""
        if not self._rounds:
            return
        done = [
            f"{o.action} {_brief_args(o.args)} -> " + ("ok" if o.ok else f"ERROR {o.error_code}")
            for o in outcomes
        ]
        if not done and actions:
            done = [f"{a.name} (not run)" for a in actions]
        text = "; ".join(done) or note or "no action"
        line = f"round {self._rounds[-1].number}: {text}"
        self._rounds[-1].line = _cut(line, self.limits.line_chars, marker="…")

    def bound(self) -> int:
        """The most characters :meth:`messages` can give, whatever the number of rounds."""
        lim = self.limits
        marker = len(_CUT.format(10**9))
        page = max(lim.round_chars, lim.delta_chars) + marker
        past = (lim.notes_chars + marker + 1 + page) + (lim.reply_chars + marker)
        summary = 40 + lim.summary_rounds * (lim.line_chars + 1) + 40
        marker_line = 40
        asked = (
            120
            + marker_line
            + (lim.max_requests - lim.requests_kept) * (lim.line_chars + 3)
            + lim.requests_kept * (lim.request_chars + marker + 3)
        )
        task = len(self.task) + asked
        return len(self.system) + task + summary + lim.recent_rounds * past + page


def _cut(text: str, limit: int, *, marker: str = "") -> str:
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(marker))] + (marker or _CUT.format(len(text) - limit))


def _brief_args(args: dict[str, object]) -> str:
    shown = ", ".join(f"{k}={v!r}" for k, v in args.items() if k != "steps")
    if "steps" in args and isinstance(args["steps"], list):
        shown += f"{', ' if shown else ''}{len(args['steps'])} steps"
    return f"({shown})"
