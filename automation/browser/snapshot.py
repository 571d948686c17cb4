"""Role snapshots of a tab: an indented accessibility tree with short refs (``[e3]``).

The tree is built in the page by ``snapshot.js`` (one pass per frame over the DOM and its
open shadow roots; installed by an init script in every document).  Each frame returns
its own text and ref table; :func:`stitch` puts child frames under their ``<iframe>``
line, and :func:`truncate` applies the character budget with a marker that says what was
left out.

A line reads ``- role "name" [ref] [states] [focused] [clickable] placeholder="…" -> url:
value``, each part only where it applies: ``[focused]`` on the one element with the
keyboard focus (a delta shows the focus moving), ``[clickable]`` on an element with a role
that is clicked as a whole (a row with a click handler), a field's placeholder when it
says more than the name, a link's URL with :attr:`SnapshotOptions.link_urls`
(snapshot_lines.js).  A name read from content is the name Playwright's ``get_by_role``
reads, parts laid out apart kept apart ("#1001 Delete Archive"; snapshot_names.js).

Refs look like ``e12`` in the main frame and ``f2e7`` inside a frame (``f2`` names the
frame).  Numbers are never reused within a tab, so a ref from a page that was left is
recognisably stale rather than silently pointing at something new.  An element the page
drew again in the same place, with the same role, name, state and row, keeps its ref
from the next snapshot on (never between snapshots: until then the ref is stale); what
could be another element gets a new ref.  A delta shows what changed in the very lines
the full snapshot would show.

The page's registry also keeps each ref's context: the text of the row its element is or
sits in, or out of rows the name of the nearest named container (snapshot.js, contextOf).
A list drawn again by index puts another row's data into the same nodes; the element,
its role and its name stay, its row does not, so the ref no longer resolves (StaleRef,
saying what changed: refcheck.py) and the next snapshot gives that element a new ref.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from automation.browser.jsparts import joined
from automation.budget import Budget
from automation.errors import ActionInvalid
from automation.recording.roles import ROLES

__all__ = [
    "INTERACTIVE_ROLES",
    "REF_RE",
    "SNAPSHOT_JS",
    "FramePart",
    "RefEntry",
    "Snapshot",
    "SnapshotOptions",
    "WalkOutOfTime",
    "frame_paths",
    "full_pass_ms",
    "next_seed",
    "reduced_note",
    "reduced_pass_ms",
    "ref_entries",
    "stitch",
    "truncate",
    "walk_frames",
]

F = TypeVar("F")

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

# A page too big to walk within the snapshot's budget (200,000 elements took 9.4 s here)
# gets a reduced snapshot rather than failing the run: the full walk may use this share
# of the time left (BrowserConfig.snapshot_full_pass_ms sets it in ms instead), stops
# itself in the page when it is over, and the reduced pass, which only looks at elements
# one can act on (found by selector: 40,000 of them in about a second), gets the rest but
# a margin for moving its text out of the page.
FULL_PASS_SHARE = 0.4
REDUCED_PASS_SHARE = 0.5


# Put into snapshot.js where its "// @include <file>" line stands: one closure, files of
# one concept each.
_PARTS = (
    "snapshot_names.js", "snapshot_lines.js", "snapshot_brief.js", "snapshot_roles.js",
    "snapshot_context.js", "snapshot_reduced.js", "snapshot_changes.js", "visible.js",
)  # fmt: skip


# Installs the registry (an expression; also used as the context's init script).
SNAPSHOT_JS = joined("snapshot.js", _PARTS)
# One snapshot call; the result comes back as one JSON string, which is several times
# faster to move through Playwright than the same data as a structured value.
# The document's title comes back with the walk: one round trip to the page, not two.
CALL_JS = """(o) => {
  if (!window.__tabwright) return null;
  return JSON.stringify({...window.__tabwright.snapshot(o), title: document.title});
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
    # Each link's URL on its line ("-> /docs"): a model that must tell links apart by
    # where they go asks for it; off by default, as it costs characters on every link.
    link_urls: bool = False
    # The brief format, for a model that reads the page as a client of its own (MCP, the
    # act API's snapshot): refs only where one acts or scopes, a table row of plain cells
    # on one line ("- row [e9]: 1003 | link "Ada" [e10] | button "Edit" [e11]"), a
    # paragraph or an item with its links on one line, a closed <select>'s options on
    # its line (snapshot_brief.js).  The agent's pages keep a line per element and a
    # ref on each, the grammar its prompt describes.
    brief: bool = False

    def __post_init__(self) -> None:
        if self.max_depth < 0 or self.max_chars < 0:
            raise ActionInvalid("max_depth and max_chars must be 0 (no limit) or positive")
        if self.max_chars and self.max_chars < 200:
            raise ActionInvalid("max_chars below 200 leaves no room for a useful snapshot")
        if self.delta and self.scope:
            raise ActionInvalid("a delta covers the whole page; leave out the scope")

    def for_js(
        self, *, prefix: str, seed: int, time_ms: float = 0, reduced: bool = False
    ) -> dict[str, object]:
        """The walk's options; ``time_ms`` is how long it may take in the page (0: no
        limit), ``reduced`` asks for the reduced snapshot (see :func:`reduced_note`)."""
        return {
            "prefix": prefix,
            "seed": seed,
            "interactive": self.interactive_only,
            "maxDepth": self.max_depth,
            "compact": self.compact,
            "scope": self.scope,
            "delta": self.delta,
            "timeMs": max(0.0, time_ms),
            "reduced": reduced,
            "maxChars": self.max_chars,
            "linkUrls": self.link_urls,
            "brief": self.brief,
        }


@dataclass
class Snapshot:
    text: str
    refs: dict[str, RefEntry] = field(default_factory=dict)
    url: str = ""
    title: str = ""
    delta: bool = False  # text holds only the changes since the previous snapshot
    truncated_chars: int = 0  # characters left out to respect max_chars
    reduced: bool = False  # the page was too big to walk in time: interactive elements only

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
    elements: int = 0  # a reduced walk: the frame's elements
    late: int = 0  # a reduced walk: elements one can act on it had no time left to show
    over: int = 0  # a reduced walk: elements one can act on past max_chars, not shown
    # A delta: per <iframe> ref, its line under the lines of its ancestors, as the full
    # snapshot shows them, and the depth of the frame's own lines (see frame_paths).
    paths: dict[str, tuple[list[str], int]] = field(default_factory=dict)
    title: str = ""  # the frame's document.title when it was walked


def frame_paths(reported: object) -> dict[str, tuple[list[str], int]]:
    """The walk's ``[ref, lines, depth]`` for each <iframe>, those well formed (page data)."""
    paths: dict[str, tuple[list[str], int]] = {}
    for item in reported if isinstance(reported, list) else []:
        if not isinstance(item, list) or len(item) != 3:
            continue
        ref, lines, depth = item
        if not (isinstance(ref, str) and REF_RE.fullmatch(ref) and isinstance(lines, list)):
            continue
        if type(depth) is int and depth > 0 and all(isinstance(line, str) for line in lines):
            paths[ref] = (lines, depth)
    return paths


def stitch(parts: list[FramePart], indent: str = "  ") -> list[str]:
    """The main frame's lines with each child frame's lines under its <iframe> line,
    ``indent`` a level (the brief format's is one space).

    A frame whose <iframe> line is not shown (folded by a delta or by max depth) but that
    has something to show is appended at the end, so nothing that changed goes missing:
    in a delta under the lines that lead to its <iframe> line, as the full snapshot shows
    them (FramePart.paths), else under a line that names its host ref."""
    by_host: dict[str, FramePart] = {p.host: p for p in parts if p.host}
    owner_of: dict[str, FramePart] = {ref: p for p in parts for ref in p.paths}
    placed: set[str] = set()
    indent_of: dict[str, int] = {}  # frame prefix -> the depth its lines were given

    def render(part: FramePart, depth: int) -> list[str]:
        indent_of[part.prefix] = depth
        pad = indent * depth
        out: list[str] = []
        inserts = {line: (ref, below) for ref, (line, below) in part.slots.items()}
        for i, line in enumerate(part.lines):
            out.append(pad + line)
            if i in inserts:
                ref, below = inserts[i]
                child = by_host.get(ref)
                if child is not None:
                    placed.add(ref)
                    out.extend(render(child, depth + below))
        return out

    def anchor(part: FramePart, out: list[str]) -> int | None:
        """Adds the lines that lead to the part's <iframe> line (and to those of the frames
        around it that show nothing themselves); the indent of the part's own lines."""
        owner = owner_of.get(part.host)
        if owner is None:
            return None
        if owner.prefix not in indent_of:
            base = anchor(owner, out) if owner.host else None
            if base is None:
                return None
            indent_of[owner.prefix] = base
        path, depth = owner.paths[part.host]
        base = indent_of[owner.prefix]
        out.extend(indent * base + line for line in path)
        return base + depth

    main = next((p for p in parts if not p.host), None)
    lines = render(main, 0) if main is not None else []
    for part in parts:  # parents first
        if part.host and part.host not in placed and part.lines:
            placed.add(part.host)
            depth = anchor(part, lines)
            if depth is None:
                lines.append(f"- iframe [{part.host}] (frame {part.prefix}):")
                depth = 1
            lines.extend(render(part, depth))
    return lines


def full_pass_ms(remaining_ms: float, configured_ms: int = 0) -> float:
    """How long the full walk may take in the page, of the snapshot's ``remaining_ms``."""
    share = remaining_ms * FULL_PASS_SHARE
    return max(1.0, min(share, configured_ms) if configured_ms > 0 else share)


def reduced_pass_ms(remaining_ms: float) -> float:
    """How long the reduced walk may take in the page, of what the full walk left."""
    return max(1.0, remaining_ms * REDUCED_PASS_SHARE)


def reduced_note(parts: list[FramePart], *, budget_label: str, budget_ms: float) -> str:
    """The head of a reduced snapshot: what it is, why, and what it had to leave out."""
    elements = sum(p.elements for p in parts)
    late, over = sum(p.late for p in parts), sum(p.over for p in parts)
    note = (
        f"# reduced snapshot: the page ({elements} elements) is too big to show whole within "
        f"the {budget_label}'s {budget_ms:.0f} ms budget; only the elements one can act on "
        "are listed, without the page's structure and text"
    )
    if late or over:
        why = [f"{late} for lack of time"] if late else []
        why += [f"{over} past the {budget_label}'s character budget"] if over else []
        note += (
            f"\n# … cut: {late + over} more elements one can act on are not shown ("
            + ", ".join(why)
            + "); ask for a scope (a ref or CSS selector) to see them"
        )
    return note


class WalkOutOfTime(Exception):
    """A frame's full walk gave up in the page at its deadline (see :func:`walk_frames`)."""


def next_seed(refs: Iterable[str]) -> int:
    """The ref number after the highest of ``refs`` (1 for none)."""
    return max((int(REF_RE.match(ref)["num"]) + 1 for ref in refs), default=1)  # type: ignore[index]


def ref_entries(
    reported: object, *, frame: str, host: str, backend_ids: dict[str, int]
) -> list[RefEntry]:
    """The refs a walk reported, each as ``[ref, role, name, nth, count]``.  The walk runs
    in the page's own JavaScript world, where a page may have changed what it calls, so
    its answer is page data: a ref whose role is off the ARIA list, or whose fields are
    not what they should be, is not issued (acting on it then fails as an unknown ref)."""
    entries = []
    for item in reported if isinstance(reported, list) else []:
        if not isinstance(item, list) or len(item) != 5:
            continue
        ref, role, name, nth, count = item
        match = REF_RE.fullmatch(ref) if isinstance(ref, str) else None
        if match is None or (f"f{match['frame']}" if match["frame"] else "") != frame:
            continue  # not a ref of this frame
        if not (isinstance(role, str) and role in ROLES and isinstance(name, str)):
            continue
        if type(nth) is not int or type(count) is not int or nth < 0 or count < 1:
            continue
        entries.append(RefEntry(ref, role, name, nth, frame, count, host, backend_ids.get(ref)))
    return entries


async def walk_frames(
    frames: list[F],
    walk: Callable[[F, dict[str, RefEntry], float, bool], Awaitable[FramePart | None]],
    *,
    budget: Budget,
    full_pass_ms_setting: int = 0,
) -> tuple[list[FramePart], dict[str, RefEntry], bool]:
    """Walk every frame, parents first, within the snapshot's ``budget``: the full walk
    in its share of the time, and if a frame's walk gives up (``WalkOutOfTime``), the
    reduced walk of every frame with what is left.  ``walk(frame, refs, time_ms,
    reduced)`` fills ``refs``.  Returns the parts, the refs and whether it was reduced."""
    for reduced in (False, True):
        left_ms = budget.remaining_ms()
        pass_ms = (
            reduced_pass_ms(left_ms) if reduced else full_pass_ms(left_ms, full_pass_ms_setting)
        )
        ends = time.monotonic() + pass_ms / 1000
        parts: list[FramePart] = []
        refs: dict[str, RefEntry] = {}
        try:
            for frame in frames:
                part = await walk(frame, refs, max(1.0, (ends - time.monotonic()) * 1000), reduced)
                if part is not None:
                    parts.append(part)
        except WalkOutOfTime:
            if reduced:
                raise
            continue
        return parts, refs, reduced
    raise AssertionError("unreachable: the reduced walk cuts instead of giving up")


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
