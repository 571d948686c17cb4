"""Role snapshots of a tab: an indented accessibility tree with short refs (``[e3]``).

The tree comes from Playwright's ``aria_snapshot(mode="ai")`` (one in-page pass, refs it
can resolve again with the ``aria-ref=`` locator).  We parse it once into :class:`RefEntry`
records — role, name, nth among equal role+name pairs, frame — and render a shorter text
for the model: ``[ref=e5]`` becomes ``[e5]``, cursor hints are dropped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

__all__ = ["RefEntry", "Snapshot", "parse_aria_snapshot"]

# Roles a person can act on; the rule planner and the prompt care about these first.
INTERACTIVE_ROLES = frozenset(
    {
        "button", "checkbox", "combobox", "link", "listbox", "menuitem", "menuitemcheckbox",
        "menuitemradio", "option", "radio", "searchbox", "slider", "spinbutton", "switch",
        "tab", "textbox", "treeitem",
    }
)  # fmt: skip

_REF_RE = re.compile(r"\s*\[ref=((?:f\d+)?e\d+)\]")
_CURSOR_RE = re.compile(r"\s*\[cursor=\w+\]")
_ITEM_RE = re.compile(r"^(?P<indent>\s*)- (?P<body>.*)$")


@dataclass(frozen=True)
class RefEntry:
    ref: str
    role: str
    name: str
    nth: int  # index among elements of the same frame with this role and name
    frame: str  # "" for the main frame, else the frame's ref prefix ("f1")
    epoch: int  # the tab's navigation count when the ref was issued
    count: int = 1  # how many elements shared role+name in that frame at snapshot time
    host: str = ""  # for a ref inside a frame: the ref of the <iframe> that holds the frame

    @property
    def interactive(self) -> bool:
        return self.role in INTERACTIVE_ROLES


@dataclass
class Snapshot:
    text: str
    refs: dict[str, RefEntry] = field(default_factory=dict)
    url: str = ""
    title: str = ""

    def find(self, name: str, *, roles: frozenset[str] | None = None) -> list[RefEntry]:
        """Refs whose name matches ``name``: exact (case-insensitive) matches if there are
        any, else substring matches; elements one can act on come before the rest."""
        wanted = name.strip().casefold()
        if not wanted:
            return []
        pool = [r for r in self.refs.values() if roles is None or r.role in roles]
        found = [r for r in pool if r.name.casefold() == wanted]
        if not found:
            found = [r for r in pool if wanted in r.name.casefold()]
        return sorted(found, key=lambda r: not r.interactive)  # stable: page order kept


def _unquote_yaml(body: str) -> str:
    """A list item may be a YAML single-quoted scalar ('...' with '' for a quote)."""
    if body.startswith("'"):
        end = body.rfind("'")
        if end > 0:
            return body[1:end].replace("''", "'") + body[end + 1 :]
    return body


def _split_role_name(key: str) -> tuple[str, str]:
    """``button "Save" [x]`` -> ("button", "Save");  names are JSON strings."""
    role, _, rest = key.partition(" ")
    rest = rest.lstrip()
    if rest.startswith('"'):
        decoder = json.JSONDecoder()
        try:
            name, _ = decoder.raw_decode(rest)
            return role, str(name)
        except json.JSONDecodeError:
            return role, ""
    return role, ""


def parse_aria_snapshot(raw: str, *, epoch: int) -> tuple[str, dict[str, RefEntry]]:
    """Turn Playwright's AI snapshot into (text for the model, ref table)."""
    lines: list[str] = []
    found: list[tuple[str, str, str, str, str]] = []  # ref, role, name, frame, host
    ancestors: list[tuple[int, str, str]] = []  # (indent, ref, frame) of open list items
    for line in raw.splitlines():
        m = _ITEM_RE.match(line)
        if not m:
            lines.append(line)
            continue
        indent, body = m.group("indent"), _unquote_yaml(m.group("body"))
        ref_m = _REF_RE.search(body)
        while ancestors and ancestors[-1][0] >= len(indent):
            ancestors.pop()
        if ref_m:
            ref = ref_m.group(1)
            role, name = _split_role_name(body[: ref_m.start()])
            # Playwright prefixes refs by frame ("f2e7"), and after a navigation even the
            # main frame's refs carry one: a ref is in a child frame only if an ancestor
            # line belongs to another frame (that ancestor is the <iframe> holding it).
            prefix = ref[: ref.index("e")]
            host = _frame_host(ancestors, prefix)
            found.append((ref, role, name, prefix if host else "", host))
            ancestors.append((len(indent), ref, prefix))
            body = body[: ref_m.start()] + f" [{ref}]" + body[ref_m.end() :]
        body = _CURSOR_RE.sub("", body)
        lines.append(f"{indent}- {body}")

    counts: dict[tuple[str, str, str], int] = {}
    for _, role, name, frame, _host in found:
        counts[(frame, role, name)] = counts.get((frame, role, name), 0) + 1
    seen: dict[tuple[str, str, str], int] = {}
    refs: dict[str, RefEntry] = {}
    for ref, role, name, frame, host in found:
        key = (frame, role, name)
        nth = seen.get(key, 0)
        seen[key] = nth + 1
        refs[ref] = RefEntry(ref, role, name, nth, frame, epoch, counts[key], host)
    return "\n".join(lines), refs


def _frame_host(ancestors: list[tuple[int, str, str]], prefix: str) -> str:
    """The nearest enclosing ref that lives in another frame is the <iframe> holding ours."""
    for _indent, ref, ancestor_prefix in reversed(ancestors):
        if ancestor_prefix != prefix:
            return ref
    return ""
