"""The rule planner: runs explicit commands from the task, no language model needed.

The task is a list of commands, one per line (blank lines and ``#`` comments ignored)::

    go to /demo/form.html
    type "Ada Lovelace" into Name
    click Sign up
    wait for Welcome

Each round the planner answers ONE command as an ``<action>`` tag, so every command is
resolved against a fresh snapshot.  It never guesses: a name that matches several
elements, no element, a line it cannot read or an action that failed all become a
``NEED_HELP:`` answer, and the person's reply ("retry", "skip" or corrected commands)
decides what happens next.  Every problem is an answer, never an exception: the agent
loop pauses on ``NEED_HELP`` and the person sees why.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from automation.browser.snapshot import INTERACTIVE_ROLES, RefEntry, Snapshot
from automation.budget import Budget
from automation.llm.base import OnToken, PlannerReply, PlannerRequest

__all__ = ["COMMAND_HELP", "Command", "RulePlanner", "parse_command"]

COMMAND_HELP = "go to URL, click NAME, type TEXT into NAME, press KEY, wait for TEXT"

# Roles worth typing into; other roles are only a fallback (a contenteditable div, say).
_TYPE_ROLES = frozenset({"textbox", "searchbox", "combobox", "spinbutton"})

# How many candidates a NEED_HELP answer lists before it says "and N more".
_MAX_CANDIDATES = 8

# The done summary is shown in the run list; keep it to a line or two.
_MAX_SUMMARY_CHARS = 300

_Q = r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'"  # a double- or single-quoted value
_QUOTED_TARGET = rf"(?:{_Q})(?:\s*#\d+)?"  # a quoted element name, maybe with an ordinal
_F = re.IGNORECASE | re.DOTALL

_NAVIGATE_RE = re.compile(r"(?:go\s+to|goto|open|navigate\s+to)\s+(?P<url>.+)", _F)
_CLICK_RE = re.compile(r"click\s+(?P<target>.+)", _F)
_PRESS_RE = re.compile(r"press\s+(?P<key>.+)", _F)
_WAIT_RE = re.compile(r"wait\s+for\s+(?P<text>.+)", _F)
# Tried in order: a quoted value settles where it ends; only when nothing is quoted do we
# have to pick a separator, and then the one least likely to sit inside the free text.
# A free text before a separator's spaces ends in a non-space (``.*?\S``, not ``.+?``):
# where either could take a space, a line of 20,000 spaces was split at each place in
# turn, each split trying each length of the run after it (seconds of the event loop).
_TYPE_RES = (
    re.compile(rf"type\s+(?P<text>{_Q})\s+into\s+(?P<target>.+)", _F),
    re.compile(rf"type\s+(?P<text>.*?\S)\s+into\s+(?P<target>{_QUOTED_TARGET})", _F),
    re.compile(r"type\s+(?P<text>.*\S)\s+into\s+(?P<target>.+)", _F),  # the last " into "
)
_FILL_RES = (
    re.compile(rf"fill\s+(?P<target>{_QUOTED_TARGET})\s+with\s+(?P<text>.+)", _F),
    re.compile(rf"fill\s+(?P<target>.*?\S)\s+with\s+(?P<text>{_Q})", _F),
    re.compile(r"fill\s+(?P<target>.*?\S)\s+with\s+(?P<text>.+)", _F),  # the first " with "
)
_QUOTED_ORDINAL_RE = re.compile(rf"(?P<name>{_Q})\s*(?:#(?P<nth>\d+))?", _F)
_PLAIN_ORDINAL_RE = re.compile(r"(?P<name>.*?\S)\s+#(?P<nth>\d+)", _F)
# People paste numbered or bulleted steps; the marker is not part of the command.
_LIST_MARKER_RE = re.compile(r"^(?:\d+[.)]|[-*\u2022])\s+")
_ESCAPE_RE = re.compile(r"\\(.)")
# Schemes that carry no "//" but are still absolute (urljoin would keep them anyway, but
# "localhost:8000/x" must not count as a scheme, so only "//" or these mark a full URL).
_OPAQUE_SCHEMES = frozenset({"about", "data", "javascript", "mailto", "blob", "tel"})
# Schemes a relative URL can be resolved against.
_BASE_SCHEMES = frozenset({"http", "https", "file"})
_TAG_RE = re.compile(r"<(?=\s*/?\s*action)", re.IGNORECASE)
_REPLY_RETRY = frozenset({"retry", "try again", "again"})
_REPLY_SKIP = frozenset({"skip", "skip it"})


@dataclass(frozen=True)
class Command:
    """One parsed command line.  ``value`` is the URL, key or text; ``target`` the name."""

    kind: str  # "navigate" | "click" | "type" | "press" | "wait_for"
    line: str
    verb: str = ""  # the keyword as the grammar knows it: "click", "type", "fill", ...
    value: str = ""
    target: str = ""
    nth: int | None = None  # 1-based ordinal from "#2"
    target_src: str = ""  # the name as written (quotes kept), to echo in suggestions
    value_src: str = ""
    # For an unquoted "Order #1003": the whole text, tried as a name when the "#N" reading
    # finds nothing, so a name that happens to end in "#digits" still works unquoted.
    literal_target: str = ""

    def with_ordinal(self, nth: int, *, target_src: str = "") -> str:
        """This command rewritten to pick match ``nth``: what a NEED_HELP suggests."""
        target = target_src or self.target_src
        if self.verb == "fill":
            return f"fill {target} #{nth} with {self.value_src}"
        if self.verb == "type":
            return f"type {self.value_src} into {target} #{nth}"
        return f"click {target} #{nth}"


def _unquote(value: str) -> str:
    """Strip one pair of matching outer quotes and undo backslash escapes inside them."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return _ESCAPE_RE.sub(r"\1", value[1:-1])
    return value


def _element_command(verb: str, line: str, text_src: str, target_src: str) -> Command:
    """Split ``"Save" #2`` / ``Save #2`` / ``Order #1003`` into name, ordinal and source."""
    src = target_src.strip()
    name, nth, literal = src, None, ""
    m = _QUOTED_ORDINAL_RE.fullmatch(src)
    if m:
        name, src = _unquote(m.group("name")), m.group("name")
        nth = int(m.group("nth")) if m.group("nth") else None
    else:
        m = _PLAIN_ORDINAL_RE.fullmatch(src)
        if m:
            literal = src
            name = src = m.group("name").strip()
            nth = int(m.group("nth"))
    return Command(
        kind="click" if verb == "click" else "type",
        line=line,
        verb=verb,
        value=_unquote(text_src) if text_src else "",
        target=name,
        nth=nth,
        target_src=src,
        value_src=text_src.strip(),
        literal_target=literal,
    )


def parse_command(line: str) -> Command | None:
    """One command line -> :class:`Command`, or None when the line is not a command."""
    text = _LIST_MARKER_RE.sub("", line.strip())
    if not text:
        return None
    m = _NAVIGATE_RE.fullmatch(text)
    if m:
        url = _unquote(m.group("url"))
        return Command("navigate", line.strip(), "navigate", value=url) if url else None
    for pattern in _TYPE_RES:
        m = pattern.fullmatch(text)
        if m:
            return _element_command("type", line.strip(), m.group("text"), m.group("target"))
    for pattern in _FILL_RES:
        m = pattern.fullmatch(text)
        if m:
            return _element_command("fill", line.strip(), m.group("text"), m.group("target"))
    m = _CLICK_RE.fullmatch(text)
    if m:
        command = _element_command("click", line.strip(), "", m.group("target"))
        return command if command.target else None
    m = _PRESS_RE.fullmatch(text)
    if m:
        key = _unquote(m.group("key"))
        return Command("press", line.strip(), "press", value=key) if key else None
    m = _WAIT_RE.fullmatch(text)
    if m:
        wanted = _unquote(m.group("text"))
        return Command("wait_for", line.strip(), "wait for", value=wanted) if wanted else None
    return None


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _command_lines(text: str) -> list[str]:
    return [
        line.strip()
        for line in str(text or "").splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def _is_absolute(url: str) -> bool:
    parts = urlsplit(url)
    if not parts.scheme:
        return False
    return url[len(parts.scheme) + 1 :].startswith("//") or parts.scheme in _OPAQUE_SCHEMES


def _describe(entry: RefEntry) -> str:
    return f"{entry.ref} {entry.role} {json.dumps(entry.name, ensure_ascii=False)}"


def _candidates(entries: list[RefEntry]) -> str:
    shown = ", ".join(_describe(e) for e in entries[:_MAX_CANDIDATES])
    extra = len(entries) - _MAX_CANDIDATES
    return f"{shown}, and {extra} more" if extra > 0 else shown


def _defang(text: str) -> str:
    """Echoed user text must never read as an action tag to the loop's parser."""
    return _TAG_RE.sub("\u2039", text)


def _with_action(sentence: str, action: dict[str, Any]) -> str:
    # "<" as \u003c is still the same JSON string, but can never close the tag early.
    payload = json.dumps(action, ensure_ascii=False).replace("<", "\\u003c")
    return f"{_defang(sentence)}\n<action>{payload}</action>"


class _NeedHelp(Exception):
    """Internal: the current command cannot become an action; the message says why."""


class RulePlanner:
    """Runs the explicit commands of ``request.task``, one per round.  One instance per run
    (a conversation's next message brings its own commands, run the same way).

    State between rounds: a queue of pending command lines (the head is the current one),
    whether the head's action is out (its outcome arrives next round) and whether the head
    is blocked on a NEED_HELP (so a reply may retry, skip or replace it).
    """

    name = "rules"

    def __init__(self) -> None:
        self._parsed = False  # the task is read on the first round, not at construction
        self._task = ""  # the commands' text: a new one (a conversation's next) starts anew
        self._queue: list[str] = []
        self._awaiting = False
        self._blocked = False
        self._finished: list[str] = []  # lines that ran successfully, for the summary
        self._skipped = 0

    async def plan(
        self, request: PlannerRequest, *, budget: Budget, on_token: OnToken | None = None
    ) -> PlannerReply:
        try:
            text = self._answer(request)
        except Exception as exc:
            # A bug here must pause the run with a readable reason, not crash the loop.
            self._awaiting = False
            self._blocked = True
            text = _defang(
                f"NEED_HELP: the rule planner hit an internal error "
                f"({type(exc).__name__}: {exc}). Reply with a corrected command, "
                f'"retry" or "skip".'
            )
        if on_token is not None:
            await on_token(text)
        return PlannerReply(text, usage={})

    @property
    def _step_number(self) -> int:
        return len(self._finished) + self._skipped + 1

    def _need_help(self, message: str) -> str:
        self._blocked = True
        return _defang(f"NEED_HELP: {message}")

    def _answer(self, request: PlannerRequest) -> str:
        if not self._parsed or request.task != self._task:
            # The first round, or the person's next message in the same conversation: its
            # commands, from the top.
            self._queue = _command_lines(request.task)
            self._task, self._parsed = request.task, True
            self._finished, self._skipped = [], 0
            self._awaiting = self._blocked = False
        replies = [str(r) for r in (request.replies or [])]

        if self._awaiting:
            self._awaiting = False
            outcomes = list(request.last_outcomes or [])
            failed = next((o for o in outcomes if not o.ok), None)
            if failed is not None:
                self._blocked = True
                if not replies:
                    return self._need_help(
                        f'step {self._step_number} "{self._queue[0]}" failed: '
                        f"{failed.error_code or 'error'}: {failed.error or failed.result}. "
                        f'Reply with a corrected command, "retry" or "skip".'
                    )
            elif outcomes and self._queue:
                self._finished.append(self._queue.pop(0))
            # No outcomes at all: the action never ran (the loop stopped first), so the
            # head stays and is answered again below rather than counted as done.

        self._apply_replies(replies)
        # Whatever still blocks the head is retried: a NEED_HELP followed by a plain
        # resume means "look again" (the page may have changed meanwhile).
        self._blocked = False

        if not self._queue:
            if not self._finished and not self._skipped:
                return self._need_help(
                    f"the task has no commands I can run; I know: {COMMAND_HELP}. "
                    f"Reply with one command per line."
                )
            return self._done()

        line = self._queue[0]
        try:
            sentence, action = self._act(line, request)
        except _NeedHelp as problem:
            return self._need_help(str(problem))
        self._awaiting = True
        total = len(self._finished) + self._skipped + len(self._queue)
        return _with_action(f"Step {self._step_number} of {total}: {sentence}", action)

    def _apply_replies(self, replies: list[str]) -> None:
        """Fold the person's replies into the queue: retry, skip or new command lines.

        Against a blocked head, "retry" keeps it, "skip" drops it and commands replace
        it.  With nothing blocked, commands run next (before the rest of the task) and
        "skip" drops the next pending command.
        """
        insert_at = 0
        for reply in replies:
            for line in _command_lines(reply):
                word = line.casefold().rstrip(".!")
                if word in _REPLY_RETRY:
                    self._blocked = False
                elif word in _REPLY_SKIP:
                    if insert_at < len(self._queue):
                        self._queue.pop(insert_at)
                        self._skipped += 1
                    self._blocked = False
                else:
                    if self._blocked and self._queue:
                        self._queue.pop(0)
                    self._blocked = False
                    self._queue.insert(insert_at, line)
                    insert_at += 1

    def _done(self) -> str:
        count = len(self._finished)
        sentence = f"All {count} step{'s' if count != 1 else ''} done"
        if self._skipped:
            sentence += f" ({self._skipped} skipped)"
        summary = "; ".join(self._finished) or "nothing ran"
        if len(summary) > _MAX_SUMMARY_CHARS:
            summary = summary[: _MAX_SUMMARY_CHARS - 1] + "\u2026"
        return _with_action(f"{sentence}.", {"action": "done", "summary": f"Ran: {summary}"})

    def _act(self, line: str, request: PlannerRequest) -> tuple[str, dict[str, Any]]:
        command = parse_command(line)
        if command is None:
            raise _NeedHelp(
                f'I don\'t understand "{line}"; I know: {COMMAND_HELP} '
                f'(add "#2" to a name for its 2nd match, quote values with spaces).'
            )
        if command.kind == "navigate":
            url = self._resolve_url(command.value, request)
            return f"Going to {url}.", {"action": "navigate", "url": url}
        if command.kind == "press":
            if any(ch.isspace() for ch in command.value):
                # Key names never contain spaces; "press Sign up" almost surely meant a click.
                raise _NeedHelp(
                    f'"{line}": a key name has no spaces (Enter, Tab, Control+A); '
                    f"to click a button write click NAME."
                )
            return f"Pressing {command.value}.", {"action": "press", "key": command.value}
        if command.kind == "wait_for":
            return (
                f"Waiting for {_quote(command.value)}.",
                {"action": "wait_for", "text": command.value},
            )
        entry = self._pick(command, request.snapshot)
        label = f"{entry.role} {_quote(entry.name)}"
        if command.kind == "click":
            return f"Clicking {label}.", {"action": "click", "ref": entry.ref}
        return (
            f"Typing {_quote(command.value)} into {label}.",
            {"action": "type", "ref": entry.ref, "text": command.value},
        )

    @staticmethod
    def _resolve_url(url: str, request: PlannerRequest) -> str:
        if _is_absolute(url):
            return url
        # The current page first (links are relative to it), else where the run started;
        # about:blank, chrome-error:// and the like are no base for a relative link.
        current = request.snapshot.url if request.snapshot is not None else ""
        for base in (current, request.start_url or ""):
            if urlsplit(base).scheme in _BASE_SCHEMES:
                return urljoin(base, url)
        raise _NeedHelp(
            f"{_quote(url)} is a relative URL and there is no page or start URL to "
            f"resolve it against; reply with a full URL, e.g. go to http://host/path."
        )

    def _pick(self, command: Command, snapshot: Snapshot | None) -> RefEntry:
        if snapshot is None or not snapshot.refs:
            raise _NeedHelp(
                f"there is no page snapshot to find {_quote(command.target)} in; "
                f'start with "go to URL" or reply "retry" once a page is open.'
            )
        preferred = INTERACTIVE_ROLES if command.kind == "click" else _TYPE_ROLES
        matches = self._find(snapshot, command.target, preferred)
        nth, target_src = command.nth, command.target_src
        if command.literal_target and (not matches or (nth or 0) > len(matches)):
            # Unquoted "Order #1003" with no 1003rd "Order": the "#" was part of the name.
            literal = self._find(snapshot, command.literal_target, preferred)
            if literal:
                matches, nth = literal, None
                target_src = _quote(command.literal_target)
        if not matches:
            raise _NeedHelp(
                f"no element named {_quote(command.target)} on the page; "
                f"{self._nearby(snapshot)}Reply with a corrected command, "
                f'"retry" (e.g. after it appears) or "skip".'
            )
        count = len(matches)
        if nth is not None:
            if not 1 <= nth <= count:
                raise _NeedHelp(
                    f'"{command.line}" asks for match #{nth} but {count} '
                    f"element{'s' if count != 1 else ''} match ({_candidates(matches)}); "
                    f'reply with e.g. "{command.with_ordinal(1, target_src=target_src)}".'
                )
            return matches[nth - 1]
        if count > 1:
            raise _NeedHelp(
                f'"{command.line}" matches {count} elements ({_candidates(matches)}); '
                f'reply with e.g. "{command.with_ordinal(2, target_src=target_src)}".'
            )
        return matches[0]

    @staticmethod
    def _find(snapshot: Snapshot, name: str, preferred: frozenset[str]) -> list[RefEntry]:
        if not name.strip():
            return []
        return snapshot.find(name, roles=preferred) or snapshot.find(name)

    @staticmethod
    def _nearby(snapshot: Snapshot) -> str:
        """A hint of what IS there, so the person can correct the name without looking."""
        named = [e for e in snapshot.refs.values() if e.interactive and e.name]
        if not named:
            return ""
        return f"interactive elements: {_candidates(named)}. "
