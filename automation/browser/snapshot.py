"""Role snapshots of a tab: an indented accessibility tree with short refs (``[e3]``).

The tree is built in the page by ``snapshot.js`` (one pass per frame over the DOM and its
open shadow roots; installed by an init script in every document).  Each frame returns
its own text and ref table; :func:`stitch` puts child frames under their ``<iframe>``
line, and :func:`truncate` applies the character budget with a marker that says what was
left out.

Refs look like ``e12`` in the main frame and ``f2e7`` inside a frame (``f2`` names the
frame).  Numbers are never reused within a tab, so a ref from a page that was left is
recognisably stale rather than silently pointing at something new.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from automation.errors import ActionInvalid

__all__ = [
    "INTERACTIVE_ROLES",
    "REF_RE",
    "SNAPSHOT_JS",
    "FramePart",
    "RefEntry",
    "Snapshot",
    "SnapshotOptions",
    "stitch",
    "truncate",
]

# Roles a person can act on; the rule planner and the prompt care about these first.
INTERACTIVE_ROLES = frozenset(
    {
        "button", "checkbox", "combobox", "link", "listbox", "menuitem", "menuitemcheckbox",
        "menuitemradio", "option", "radio", "searchbox", "slider", "spinbutton", "switch",
        "tab", "textbox", "treeitem",
        "clickable",  # no role, but a click handler or a pointer cursor of its own
    }
)  # fmt: skip

REF_RE = re.compile(r"^(?:f(?P<frame>\d+))?e(?P<num>\d+)$")

# Installs the registry (an expression; also used as the context's init script).
SNAPSHOT_JS = (Path(__file__).with_name("snapshot.js")).read_text(encoding="utf-8")
# One snapshot call; the result comes back as one JSON string, which is several times
# faster to move through Playwright than the same data as a structured value.
CALL_JS = """(o) => {
  if (!window.__tabwright) return null;
  return JSON.stringify(window.__tabwright.snapshot(o));
}"""


@dataclass(frozen=True)
class RefEntry:
    ref: str
    role: str
    name: str
    nth: int  # index among elements of the same frame with this role and name
    frame: str  # "" for the main frame, else the frame's ref prefix ("f1")
    count: int = 1  # how many elements shared role+name in that frame at snapshot time
    host: str = ""  # for a ref inside a frame: the ref of the <iframe> that holds the frame
    backend_node_id: int | None = None  # CDP's id of the element, once asked for

    @property
    def interactive(self) -> bool:
        return self.role in INTERACTIVE_ROLES

    def describe(self) -> str:
        return (
            f"{self.ref} ({self.role} {self.name!r})" if self.name else f"{self.ref} ({self.role})"
        )


@dataclass(frozen=True)
class SnapshotOptions:
    """What a snapshot shows.  The ref table always covers the whole page (or scope)."""

    interactive_only: bool = False  # one line per element one can act on, no structure
    max_depth: int = 0  # 0: no limit; deeper subtrees are folded into "… (N refs below)"
    compact: bool = True  # leave out structural elements that carry no role
    scope: str = ""  # a ref or a CSS selector: only that element and what is inside
    max_chars: int = 0  # 0: no limit; else cut with a marker saying how much was left out
    delta: bool = False  # only what changed since the last snapshot of this tab

    def __post_init__(self) -> None:
        if self.max_depth < 0 or self.max_chars < 0:
            raise ActionInvalid("max_depth and max_chars must be 0 (no limit) or positive")
        if self.max_chars and self.max_chars < 200:
            raise ActionInvalid("max_chars below 200 leaves no room for a useful snapshot")
        if self.delta and self.scope:
            raise ActionInvalid("a delta covers the whole page; leave out the scope")

    def for_js(self, *, prefix: str, seed: int) -> dict[str, object]:
        return {
            "prefix": prefix,
            "seed": seed,
            "interactive": self.interactive_only,
            "maxDepth": self.max_depth,
            "compact": self.compact,
            "scope": self.scope,
            "delta": self.delta,
        }


@dataclass
class Snapshot:
    text: str
    refs: dict[str, RefEntry] = field(default_factory=dict)
    url: str = ""
    title: str = ""
    delta: bool = False  # text holds only the changes since the previous snapshot
    truncated_chars: int = 0  # characters left out to respect max_chars

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


@dataclass
class FramePart:
    """One frame's walk: its text, where its own <iframe> lines are, and its host."""

    prefix: str  # "" for the main frame
    lines: list[str]
    slots: dict[str, tuple[int, int]]  # iframe ref -> (line index, depth of its children)
    host: str = ""  # ref of the <iframe> element in the parent frame
    removed: list[tuple[str, str]] = field(default_factory=list)


def stitch(parts: list[FramePart]) -> list[str]:
    """The main frame's lines with each child frame's lines under its <iframe> line.

    A frame whose <iframe> line is not shown (folded by a delta or by max depth) but that
    has something to show is appended at the end under its host ref, so nothing that
    changed goes missing."""
    by_host: dict[str, FramePart] = {p.host: p for p in parts if p.host}
    placed: set[str] = set()

    def render(part: FramePart, indent: int) -> list[str]:
        pad = "  " * indent
        out: list[str] = []
        inserts = {line: (ref, depth) for ref, (line, depth) in part.slots.items()}
        for i, line in enumerate(part.lines):
            out.append(pad + line)
            if i in inserts:
                ref, depth = inserts[i]
                child = by_host.get(ref)
                if child is not None:
                    placed.add(ref)
                    out.extend(render(child, indent + depth))
        return out

    main = next((p for p in parts if not p.host), None)
    lines = render(main, 0) if main is not None else []
    for part in parts:
        if part.host and part.host not in placed and part.lines:
            placed.add(part.host)
            lines.append(f"- iframe [{part.host}] (frame {part.prefix}):")
            lines.extend(render(part, 1))
    return lines


def truncate(lines: list[str], max_chars: int) -> tuple[str, int]:
    """Cut at a line boundary to fit ``max_chars``; the marker says what was left out."""
    text = "\n".join(lines)
    if not max_chars or len(text) <= max_chars:
        return text, 0
    room = max_chars - 160  # the marker's own length
    kept: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > room:
            break
        kept.append(line)
        used += len(line) + 1
    rest = lines[len(kept) :]
    left_out = len(text) - used
    hidden_refs = sum(len(re.findall(r"\[(?:f\d+)?e\d+\]", line)) for line in rest)
    kept.append(
        f"[… truncated: {left_out} more characters, {len(rest)} lines, {hidden_refs} refs "
        "not shown; ask for a scope (a ref or CSS selector) or interactive_only]"
    )
    return "\n".join(kept), left_out
