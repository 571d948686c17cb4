"""Reading the page: ``snapshot`` with its options, in the brief format
(``SnapshotOptions.brief``: refs where one acts, a table row or a paragraph on one line);
and looking things up without reading the whole page: ``find`` searches a fresh snapshot for
a text or a pattern and answers only the matching lines (with the row they sit in), and
``network_request`` gives one logged request's headers and bodies.

A ``pattern`` is matched with RE2 (``google-re2``), in time linear in the page's text: a
pattern that would backtrack for minutes in Python's ``re`` (``(a+)+$``) holds neither the
call past its budget nor the server's event loop.  RE2 has no backreferences and no
lookaround; such a pattern is refused saying so.

Both answer in a few hundred characters what would otherwise take a full snapshot or a
script; a model on a large page asks for what it needs.
"""

from __future__ import annotations

import json
import re
from typing import Any

import re2
from playwright.async_api import Error as PlaywrightError

from automation.actionspec import ActionSpec, Param, optional
from automation.browser.snapshot import SnapshotOptions
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import ActionInvalid

__all__ = ["LOOKUP_ACTIONS", "find_lines", "page_line"]

MAX_FIND = 50
MAX_PATTERN_CHARS = 200
MAX_TEXT_CHARS = 1_000
_RE2 = re2.Options()
_RE2.case_sensitive = False
_RE2.log_errors = False  # a refused pattern is the caller's error, not a log line
MAX_BODY_CHARS = 4_000
# A header a page sends to prove who it is: shown by name only.
_SECRET_HEADERS = frozenset(
    {"authorization", "cookie", "set-cookie", "proxy-authorization", "x-api-key", "x-csrf-token"}
)
# Containers a match is told apart by: the row (or item) it sits in.
_CONTEXT_ROLES = ("row", "listitem", "option", "treeitem", "article", "dialog", "group", "region")
_LINE_RE = re.compile(r"^(?P<indent> *)- (?P<role>[a-z]+)")
# A line's words: its quoted name, or the text after "text:".
_WORDS_RE = re.compile(r'"((?:[^"\\]|\\.)*)"|- text: (.*)$')
_ROW_LABEL_CHARS = 80
_TEXTUAL = ("text/", "json", "xml", "javascript", "x-www-form-urlencoded")


def find_lines(text: str, match: Any, limit: int) -> tuple[list[str], int]:
    """The snapshot lines ``match`` finds, each after the row or item it sits in
    (``listitem "Alpha 3 Delete" > button "Delete" [e12]``; a table row on one line is
    its own context), and how many more there were.  A
    line that matches only through a match inside it (a row named after its cells) is
    left out: the innermost element is the one to act on."""
    lines = text.splitlines()
    found: dict[int, tuple[int, int]] = {}  # line number -> that of its row (-1: none)
    parents: list[tuple[int, int, str]] = []  # (indent, number, role) of the open lines above
    for number, line in enumerate(lines):
        head = _LINE_RE.match(line)
        indent = len(head.group("indent")) if head else len(line) - len(line.lstrip())
        while parents and parents[-1][0] >= indent:
            parents.pop()
        if match.search(line):
            for _indent, above, _role in parents:
                found.pop(above, None)
            rows = [n for _i, n, role in parents if role in _CONTEXT_ROLES]
            found[number] = (number, rows[-1] if rows else -1)
        if head:
            parents.append((indent, number, head.group("role")))
    shown = [
        f"{_row_label(lines, row)} > {_bare(lines[at])}" if row >= 0 else _bare(lines[at])
        for at, row in found.values()
    ]
    return shown[:limit], max(0, len(shown) - limit)


def _bare(line: str) -> str:
    return line.strip().removeprefix("- ").rstrip(":")


def _row_label(lines: list[str], at: int) -> str:
    """The row's line; a row whose line leaves out its name (its cells say it) is told by
    the words of the lines under it."""
    line = _bare(lines[at])
    if '"' in line.split("[", 1)[0]:
        return line
    indent = len(lines[at]) - len(lines[at].lstrip())
    words: list[str] = []
    for below in lines[at + 1 :]:
        if len(below) - len(below.lstrip()) <= indent:
            break
        words += _WORDS_RE.findall(below)
    said = " ".join(w[0] or w[1] for w in words)
    if len(said) > _ROW_LABEL_CHARS:
        said = said[: _ROW_LABEL_CHARS - 1] + "…"
    role, _, rest = line.partition(" ")
    return f"{role} {json.dumps(said, ensure_ascii=False)} {rest}" if said else line


def _pattern(args: dict[str, Any]) -> Any:
    """What ``find`` looks for, as an RE2 pattern (any case)."""
    text, pattern = args.get("text"), args.get("pattern")
    if (text is None) == (pattern is None):
        raise ActionInvalid("find takes text or pattern (one of them)")
    if text is not None:
        if not text.strip():
            raise ActionInvalid("find: text is empty")
        if len(text) > MAX_TEXT_CHARS:
            raise ActionInvalid(f"find: text is longer than {MAX_TEXT_CHARS} characters")
        return re2.compile(re.escape(text.strip()), _RE2)
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ActionInvalid(f"find: pattern is longer than {MAX_PATTERN_CHARS} characters")
    try:
        return re2.compile(pattern, _RE2)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "not RE2 syntax"
        reason = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
        raise ActionInvalid(
            f"find: pattern is not a regular expression RE2 takes: {reason}",
            hint="RE2 syntax: no backreferences, no lookahead or lookbehind",
        ) from None


def _check_find(args: dict[str, Any]) -> None:
    _pattern(args)
    limit = args.get("limit", 20)
    if not 1 <= limit <= MAX_FIND:
        raise ActionInvalid(f"find: limit must be 1 to {MAX_FIND}")


async def _find(tab: Tab, args: dict[str, Any], budget: Budget) -> str:
    match = _pattern(args)
    options = SnapshotOptions(interactive_only=bool(args.get("interactive", False)), brief=True)
    snap = await tab.snapshot(options, budget=budget)
    found, more = find_lines(snap.text, match, args.get("limit", 20))
    if not found:
        return f"nothing on the page matches {match.pattern!r}"
    tail = f"\n… {more} more; narrow the search" if more else ""
    return "\n".join(found) + tail


async def _network_request(tab: Tab, args: dict[str, Any], budget: Budget) -> str:
    request = tab.log.request(args["number"])
    lines = [f"#{args['number']} {request.method} {request.url}", f"type: {request.resource_type}"]
    try:
        response = await budget.run(request.response())
        lines += ["request headers:", *_headers(await budget.run(request.all_headers()))]
        body = request.post_data
        if body:
            lines.append(f"request body: {_cut(body)}")
        if response is None:
            lines.append(f"no response: {request.failure or 'none yet'}")
            return "\n".join(lines)
        lines.append(f"status: {response.status} {response.status_text}")
        headers = await budget.run(response.all_headers())
        lines += ["response headers:", *_headers(headers)]
        kind = headers.get("content-type", "")
        if any(mark in kind for mark in _TEXTUAL):
            lines.append(f"response body: {_cut(await budget.run(response.text()))}")
        elif kind:
            lines.append(f"response body: ({kind}, not shown)")
    except PlaywrightError as exc:
        lines.append(f"(the rest is gone with its page: {str(exc).splitlines()[0]})")
    return "\n".join(lines)


def _headers(headers: dict[str, str]) -> list[str]:
    return [
        f"  {name}: {'(hidden)' if name.lower() in _SECRET_HEADERS else _cut(value, 300)}"
        for name, value in sorted(headers.items())
    ]


def _cut(text: str, limit: int = MAX_BODY_CHARS) -> str:
    text = text.replace("\r", "")
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} more characters)"


async def _snapshot(tab: Tab, args: dict[str, Any], budget: Budget) -> str:
    options = SnapshotOptions(
        interactive_only=args.get("interactive", False),
        scope=args.get("scope", ""),
        max_chars=args.get("max_chars", 0),
        delta=args.get("delta", False),
        link_urls=args.get("link_urls", False),
        brief=True,
    )
    snap = await tab.snapshot(options, budget=budget)
    return f"{page_line(snap.title, snap.url, snap.text)}\n{snap.text}"


def page_line(title: str, url: str, text: str) -> str:
    """A brief snapshot's first line: ``Page: 'title' url``, without the title when it is
    empty or a heading of the snapshot says it (the model reads it there)."""
    heading = re.escape("- heading " + json.dumps(title, ensure_ascii=False))
    if not title or re.search(rf"^ *{heading}(?: \[|:|$)", text, re.MULTILINE):
        return f"Page: {url}"
    return f"Page: {title!r} {url}"


LOOKUP_ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec(
        "snapshot",
        "the page as a role tree with refs (new refs each time)",
        (
            optional("interactive", bool, "only elements one can act on, one line each"),
            optional("scope", str, "a ref or CSS selector: only that part"),
            optional("max_chars", int, "cut the answer at this many characters (200+)"),
            optional("delta", bool, "only what changed since the last snapshot"),
            optional("link_urls", bool, "each link's URL on its line (-> /path)"),
        ),
        _snapshot,
        for_agent=False,  # the agent gets the page every round
    ),
    ActionSpec(
        "find",
        "search the page for a text (or a regex pattern): the matching snapshot lines "
        "with their refs, each after the row it sits in",
        (
            optional("text", str, "text to look for, any case"),
            optional("pattern", str, "or a regular expression"),
            optional("interactive", bool, "only elements one can act on"),
            optional("limit", int, f"at most this many lines (default 20, up to {MAX_FIND})"),
        ),
        _find,
        check=_check_find,
        for_agent=False,  # the agent reads the whole page every round
    ),
    ActionSpec(
        "network_request",
        "one request of page_log kind=requests by its #number: headers, bodies, status",
        (Param("number", int, "the request's #number"),),
        _network_request,
        for_agent=False,  # debugging a page, not a step of a task: MCP clients'
    ),
)
