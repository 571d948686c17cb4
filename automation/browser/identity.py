"""Element identities: how a recorded step finds its element again after the site changed.

An :class:`ElementIdentity` is taken when a step is recorded (from its ref, before the step
acts): role and accessible name first, then aria-label, test ids (data-testid, data-test,
data-qa, data-cy), the name attribute, id, placeholder, type, tag, visible text, the row
(or, out of rows, the card) and section it sits in, the names of look-alike controls beside
it, alternative CSS selectors, its box, a small look fingerprint (colours, font, rounded
size), its backend node id and when it was taken.  It is plain JSON with a version;
:meth:`ElementIdentity.from_dict` refuses what it can't read.

:func:`locate` finds it in a page, trying strategies in order, each counting only when it
finds exactly one visible element that also fits the identity:

1. ``role_name``: the same role and accessible name;
2. ``aria_label``, 3. ``name_attr``, 4. ``test_id``: the same attribute value;
5. ``target``: the one link or submit leading where the recorded one led (its address,
   or its form's action and method); ``selector``: one of the stored selectors;
6. ``similarity``: a score over every attribute, row, section, position and look, taken
   only when the best candidate is clearly ahead of the next, or when among those that
   score alike one leads where the recorded element led (or all of them do, under its
   name: the same link in a sidebar and a header);
7. ``coordinates``: the element now at the recorded position, if it fits as well.

"Fits" means: the same role and a similar name (UI synonyms such as "Sign in" / "Log in"
count as the same word), unless a test id, id or name attribute proves it is the element;
not one of the look-alikes that stood beside it at recording ("Archive all read" is not
"Archive"), unless a unique attribute anchors it; and when the name was shared by several
elements at recording, the same row, or out of rows the same card and section.  When
nothing fits, or two candidates score alike, it abstains: :class:`Located` says why instead
of pointing at a guess.  When the page breaks the matcher, ``reason`` says how.  The page
side is identity.js.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from playwright.async_api import ElementHandle, Frame, Page
from playwright.async_api import Error as PlaywrightError

from automation.browser.frames import silent_note, unanswering
from automation.browser.jsparts import joined
from automation.budget import DEFAULT_HEADROOM_MS, Budget
from automation.errors import ActionFailed, ActionInvalid, BudgetExceeded
from automation.recording.roles import ROLES, check_role

__all__ = [
    "COLUMN_JS",
    "CONTROL_CHARS",
    "IDENTITY_JS",
    "IDENTITY_VERSION",
    "ElementIdentity",
    "Located",
    "capture",
    "frame_url",
    "locate",
    "page_changing",
]

# One closure, its parts put in where identity.js's "// @include <file>" lines stand.
IDENTITY_JS = joined(
    "identity.js",
    (
        "column.js",
        "identity_describe.js",
        "identity_cards.js",
        "identity_compare.js",
        "identity_locate.js",
    ),
)
IDENTITY_VERSION = 1
# The header of an element's column (column.js: a function columnOf), as identity.js reads
# it and the export's column engine too.
COLUMN_JS = joined("column.js", ())
_LOCATE_JS = f"(args) => ({IDENTITY_JS})(null, args)"
_TEXT_FIELDS = ("role", "kind", "name", "name_base", "name_own", "aria_label", "name_attr",
                "id", "placeholder", "label", "autocomplete", "type", "tag", "text", "target",
                "method", "row", "card", "section", "column", "look", "frame_url",
                "captured_at")  # fmt: skip
FRAME_MARGIN = 0.06  # found in two frames: the better must be this far ahead
MAX_VARIANTS = 5  # earlier confirmed identities an identity keeps
MAX_ROW_WORDS, MAX_ROW_WORD = 8, 80  # the words that tell its row apart, and their length
_PASSWORD_TOKENS = frozenset({"current-password", "new-password"})
_UNIQUE_KINDS = frozenset({"placeholder", "label", "autocomplete", "sole"})
# What identity.js says a control does (else its role): see kindOfEl there.
KINDS = frozenset({"press", "text", "toggle", "choice", "list"})
# Where an element's own text stands in its name (name_own): nowhere, or these.
OWN_PLACES = ("", "end", "start", "within")
TEST_ATTRS = ("data-testid", "data-test", "data-qa", "data-cy")
# Everything an identity holds was read from a page, so it is untrusted input.  A page's
# description is made safe before it is kept (``from_page``: control characters become
# spaces, a text is cut at MAX_TEXT_CHARS, what can't be kept is dropped); a stored one
# that breaks these rules is refused (``from_dict``), as only a hand-made file can.
MAX_TEXT_CHARS = 1_000  # one text of a page's description (identity.js keeps 200 or less)
MAX_URL_CHARS = 8_000  # a frame's address in a page's description
MAX_STORED_CHARS = 10_000  # one text of a stored identity
MAX_SELECTORS = 12  # identity.js makes at most 9
MAX_ALIKE = 16  # identity.js keeps 8
# Control characters and line or paragraph separators: never in a name a person reads;
# in a kept value they would break the line of a log, a listing or a terminal.
CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


@dataclass(frozen=True)
class ElementIdentity:
    role: str = ""
    # What it does, whatever its markup: press, text, toggle (a button with aria-pressed
    # too), choice, list.  Empty in identities taken before it was kept: read from role.
    kind: str = ""
    name: str = ""
    name_base: str = ""  # its name without a count badge inside it ("Active 1": "Active")
    # Where its own text stands in the name Playwright reads when its aria-labelledby
    # lists itself (a WAI-ARIA combobox, "Tier Silver"): "end", "start" or "within"; its
    # name leaves that text out ("Tier": snapshot_names.js's ownInName).  Optional.
    name_own: str = ""
    aria_label: str = ""
    test_ids: dict[str, str] = field(default_factory=dict)
    name_attr: str = ""
    id: str = ""
    placeholder: str = ""
    label: str = ""  # the text of its <label>s
    autocomplete: str = ""  # its autocomplete token ("email"), not on/off
    type: str = ""
    tag: str = ""
    text: str = ""
    # Where a link or a submit leads: the link's address, or its form's action (absolute,
    # as recorded: replay moves it to its base URL), and the form's method ("" for links).
    # Optional: identities without it read as leading nowhere known.
    target: str = ""
    method: str = ""
    row: str = ""  # the text of its table row or list item, without its own
    # Out of rows: the text of the card, tile or column it repeats in (kept apart from row,
    # which exports read as a table row or list item).
    card: str = ""
    section: str = ""  # the title of the group or the heading it sits under
    # The header of its table's column, where that is what told it from the others of its
    # name in its row (a permissions matrix's unnamed boxes: "Write"); else "".  Under
    # another header it is another element.  Optional: identities without it have none.
    column: str = ""
    selectors: tuple[str, ...] = ()  # best first; relative to its document or shadow root
    box: tuple[int, int, int, int] | None = None  # x, y, width, height in its document
    look: str = ""  # colours, font and rounded size: a small visual fingerprint
    name_count: int = 0  # elements sharing its role and name when it was taken
    # Names of controls of its kind sharing a word with its name when it was taken
    # ("Archive all read" beside "Archive"): never taken for it.  Optional: older readers
    # ignore it, and identities without it read as having none.
    alike: tuple[str, ...] = ()
    # Which of placeholder, label and autocomplete no other element had when it was taken
    # ("sole": it was the page's only text field).
    unique: tuple[str, ...] = ()
    row_peers: int = 0  # controls of its kind in its row, itself included (0: no row)
    # Words of its row that the row most like it (holding a control of its role and name)
    # lacked when it was taken: an invoice's number.  A row with none of them is another
    # row.  Optional: identities without it read as having none.
    row_words: tuple[str, ...] = ()
    # Only as a replay looks for it, never kept: each of its texts that holds a parameter
    # (``row``: "${name} Sales Leeds"), with the values given for them.  The element found
    # must show each whole there: the row for "Ann Lee" is not "Ann Leeds Sales Leeds",
    # however much else of the row matches (recording.params.fill sets it).
    shows: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The identities it was confirmed in before (an earlier release), newest first: replay
    # finds the element by any of them.  Each without variants of its own.
    variants: tuple[ElementIdentity, ...] = ()
    frame_url: str = ""  # the document it was in, when that was a frame
    backend_node_id: int | None = None
    captured_at: str = ""  # ISO 8601, UTC
    version: int = IDENTITY_VERSION

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["selectors"] = list(self.selectors)
        data["alike"] = list(self.alike)
        data["unique"] = list(self.unique)
        data["row_words"] = list(self.row_words)
        data["shows"] = {text: list(values) for text, values in self.shows.items()}
        if not self.shows:
            del data["shows"]
        data["box"] = list(self.box) if self.box else None
        data["variants"] = [v.to_dict() for v in self.variants]
        return data

    @classmethod
    def from_dict(cls, data: object) -> ElementIdentity:
        """Read a stored identity; ActionInvalid for a future version or a bad shape."""
        if not isinstance(data, dict):
            raise ActionInvalid("an element identity is a JSON object")
        version = data.get("version", 1)
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ActionInvalid(f"element identity: bad version {version!r}")
        if version > IDENTITY_VERSION:
            raise ActionInvalid(
                f"element identity version {version} is newer than this Tabwright reads "
                f"({IDENTITY_VERSION})",
                hint="upgrade Tabwright to replay this scenario",
            )
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}  # newer minor fields: ignored
        values.pop("shows", None)  # a replay's, never read back
        try:
            tests = values.get("test_ids") or {}
            if not isinstance(tests, dict):
                raise ValueError("test_ids must be an object of attributes and their values")
            values["test_ids"] = {str(k): str(v) for k, v in tests.items()}
            for name in ("selectors", "alike", "unique", "row_words"):
                if not isinstance(values.get(name) or (), list | tuple):
                    raise ValueError(f"{name} must be a list")
            values["selectors"] = tuple(str(s) for s in values.get("selectors") or ())
            values["alike"] = tuple(str(s) for s in values.get("alike") or ())
            values["unique"] = tuple(
                str(s) for s in values.get("unique") or () if s in _UNIQUE_KINDS
            )
            values["row_peers"] = _whole(values.get("row_peers") or 0, "row_peers")
            values["row_words"] = tuple(
                str(w)[:MAX_ROW_WORD] for w in (values.get("row_words") or ())[:MAX_ROW_WORDS]
            )
            variants = values.get("variants") or ()
            if not isinstance(variants, list | tuple):
                raise ValueError("variants must be a list")
            values["variants"] = tuple(
                cls.from_dict({**v, "variants": ()} if isinstance(v, dict) else v)
                for v in variants[:MAX_VARIANTS]
            )
            box = values.get("box")
            if box and (not isinstance(box, list | tuple) or len(box) != 4):
                raise ValueError("box needs x, y, width, height")
            values["box"] = tuple(_whole(v, "box") for v in box) if box else None
            for name in _TEXT_FIELDS:
                if not isinstance(values.get(name, ""), str):
                    raise ValueError(f"{name} must be text")
            values["name_count"] = _whole(values.get("name_count") or 0, "name_count")
            node = values.get("backend_node_id")
            if node is not None and (not isinstance(node, int) or isinstance(node, bool)):
                raise ValueError("backend_node_id must be a whole number")
        # OverflowError: a number of JSON's that is no whole number (1e400 reads as inf)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ActionInvalid(f"element identity: {exc}") from None
        _check_texts(values)
        return cls(**values)

    def plain(self) -> ElementIdentity:
        """This identity without its variants."""
        return replace(self, variants=()) if self.variants else self

    def every(self) -> list[ElementIdentity]:
        """This identity and each variant, as locate tries them (this one first)."""
        return [self.plain(), *self.variants]

    def confirmed_as(self, now: ElementIdentity) -> ElementIdentity:
        """The identity after replay confirmed the element as ``now``: ``now`` first, and
        what it was known as before kept as variants (newest first, without repeats), so
        a scenario replayed on one release, then another, then the first again, finds it
        on each."""
        kept: list[ElementIdentity] = []
        seen = {now.sameness()}
        for old in (*self.every(), *now.variants):
            if old.sameness() not in seen:
                seen.add(old.sameness())
                kept.append(old.plain())
        return replace(now.plain(), variants=tuple(kept[:MAX_VARIANTS]))

    def row_beside_name(self) -> list[str]:
        """The words of its row but its own name's (its badge aside), each once, in order:
        what tells the record of a row that was its list's only one ("Acme" of "Acme
        York Active" beside its "More actions")."""
        own = {w.lower() for w in re.findall(r"\w+", self.name_base or self.name)}
        return list(dict.fromkeys(w for w in re.findall(r"\w+", self.row) if w.lower() not in own))

    def holds_password(self) -> bool:
        """Whether the element is a password field: of type password, or marked as one
        (``autocomplete="current-password"``: its "show password" switch made it text)."""
        tokens = self.autocomplete.split()
        return self.type == "password" or any(t in _PASSWORD_TOKENS for t in tokens)

    def sameness(self) -> tuple[Any, ...]:
        """What makes two identities the same variant of an element (not when or where
        on the page it was seen)."""
        return (self.role, self.name, self.name_own, self.id, self.name_attr, self.aria_label,
                self.placeholder, self.label, tuple(sorted(self.test_ids.items())),
                self.selectors[:1], self.tag, self.type, self.row, self.card, self.section,
                self.column, self.frame_url)  # fmt: skip

    @classmethod
    def from_page(cls, found: dict[str, Any], **extra: Any) -> ElementIdentity:
        """An identity as a page described it: untrusted.  Its texts are made safe
        (control characters and line breaks become spaces, long texts are cut, selectors
        and test ids that can't be kept are dropped); a role or kind outside the list, or
        a shape that can't be read, refuses it with ActionFailed (a page that tampers with
        the registry, or a broken one), so nothing of it is kept."""
        data = _safe_page_data({**found, **extra})
        data.setdefault("captured_at", _now())
        try:
            return cls.from_dict(data)
        except ActionInvalid as exc:
            raise ActionFailed(
                f"the page described the element in a way that can't be kept: {exc.message}",
                hint="the page may have changed Tabwright's in-page registry",
            ) from None

    def says_all_of(self, now: ElementIdentity) -> bool:
        """Whether this stored identity already says all ``now`` does: nothing
        :meth:`changes` tells (its place and look included), and where it leads, when
        ``now`` knows that (a link an agent reached by its address), and where its own
        text stands in its name (the export's locator reads it)."""
        same = not self.changes(now) and self.name_own == now.name_own
        return same and not (now.target and now.target != self.target)

    def changes(self, now: ElementIdentity) -> list[str]:
        """What differs between this recorded identity and the element found now."""
        out = []
        for name in ("role", "name", "id", "name_attr", "aria_label", "placeholder", "tag",
                     "type", "row", "card", "section", "column"):  # fmt: skip
            before, after = getattr(self, name), getattr(now, name)
            if before != after:
                out.append(f"{name}: {before!r} -> {after!r}")
        if self.target and now.target and self.target != now.target:
            out.append(f"target: {self.target!r} -> {now.target!r}")
        if self.test_ids != now.test_ids:
            out.append(f"test_ids: {self.test_ids} -> {now.test_ids}")
        if self.selectors[:1] != now.selectors[:1]:
            before = self.selectors[0] if self.selectors else ""
            out.append(f"selector: {before!r} -> {(now.selectors or ('',))[0]!r}")
        if self.box and now.box:
            dx, dy = now.box[0] - self.box[0], now.box[1] - self.box[1]
            if abs(dx) + abs(dy) > 8:
                out.append(f"moved by ({dx}, {dy}) px")
        if self.look and now.look and self.look != now.look:
            out.append("looks different")
        return out


@dataclass(frozen=True)
class Located:
    """Where :func:`locate` found the element, or why it abstained (``element`` None)."""

    element: ElementHandle | None
    strategy: str = ""
    score: float = 0.0
    reason: str = ""  # why it abstained
    found: ElementIdentity | None = None  # the element as it is now
    changes: list[str] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)  # the best ones, when abstaining
    frame: Frame | None = None
    variant: int = 0  # which identity found it: 0 the recorded one, n its n-th variant
    parsing: bool = False  # found in a document still being parsed

    @property
    def ok(self) -> bool:
        return self.element is not None


async def capture(element: ElementHandle, *, budget: Budget) -> ElementIdentity:
    """The identity of ``element`` as it is now (call it before acting on it)."""
    try:
        found = await budget.run(element.evaluate(IDENTITY_JS, {"op": "capture"}))
        frame = await budget.run(element.owner_frame())
    except PlaywrightError as exc:
        raise ActionFailed(f"could not describe the element: {exc.message}") from None
    if not isinstance(found, dict) or "error" in found:
        raise ActionFailed(f"could not describe the element: {found}")
    return ElementIdentity.from_page(found, frame_url=frame_url(frame) if frame else "")


async def locate(
    page: Page,
    identity: ElementIdentity,
    *,
    budget: Budget,
    wait_ms: float = 0,
    longest_ms: float = 0,
    changing: Callable[[], Awaitable[bool]] | None = None,
    pressing: bool = False,
) -> Located:
    """Find ``identity`` in the page and its frames (the recorded frame first), or abstain.
    With ``wait_ms``, keep looking that long (within the budget) while it abstains: a
    client-side app may draw the element a moment after the page loaded, or after the
    last action.  Past ``wait_ms``, up to ``longest_ms``, it keeps looking as long as
    ``changing()`` says the page is still changing (loading, or new elements appearing):
    "nothing fits" is only final on a page that has stopped changing."""
    started = time.monotonic()
    deadline = started + wait_ms / 1000
    longest = started + max(wait_ms, longest_ms) / 1000
    delay_s = 0.05
    waited = False  # for a document to be parsed
    silent: set[Frame] = set()  # child frames that did not answer: not asked again
    while True:
        located = await _locate_once(
            page, identity, budget=budget, silent=silent, pressing=pressing
        )
        if located.parsing and located.frame is not None and not waited:
            # The rest of the document, and the scripts it runs as it is parsed, may
            # still change what was found, or what lies over it: looked for again once
            # it is parsed (a document that never ends: as it stands).
            waited = True
            await wait_parsed(located.frame, budget)
            continue
        now = time.monotonic()
        if located.ok or budget.remaining_ms() / 1000 - delay_s < delay_s:
            return located
        if deadline - now < delay_s:
            if longest - now < delay_s or changing is None or not await changing():
                return located
        await budget.run(asyncio.sleep(delay_s))
        delay_s = min(delay_s * 1.6, 0.4)


# How long a document found still being parsed is waited for (as a navigation's is).
PARSE_WAIT_MS = 10_000


async def still_parsing(frame: Frame, budget: Budget) -> bool:
    """Whether ``frame``'s document is still being parsed (not a frame that went away)."""
    try:
        return await budget.run(frame.evaluate('document.readyState === "loading"')) is True
    except PlaywrightError:
        return False


async def wait_parsed(frame: Frame, budget: Budget) -> None:
    """Wait for ``frame``'s document to be parsed (DOMContentLoaded), up to
    ``PARSE_WAIT_MS`` within ``budget``."""
    room_ms = budget.remaining_ms(headroom_ms=DEFAULT_HEADROOM_MS)
    if room_ms <= 0:
        return
    within = budget.child(min(PARSE_WAIT_MS, room_ms), label="the document parsed")
    loaded = frame.wait_for_load_state("domcontentloaded", timeout=within.playwright_timeout())
    try:
        await within.run(loaded)
    except (PlaywrightError, BudgetExceeded):
        budget.check()  # a frame gone or replaced, or a document that never ends


# The report of a locate, and whether its document is still being parsed.
_REPORT_JS = """(o) => o.report ? { ...o.report, parsing: document.readyState === "loading" }
  : { error: o.error }"""


# Whether the page is still changing: not yet loaded, or its document changed within the
# last CHANGE_QUIET_MS (a MutationObserver, installed on the first question).
CHANGE_QUIET_MS = 2_000
_ACTIVITY_JS = """(quietMs) => {
  const key = "__tabwrightActivity";
  if (!window[key]) {
    const seen = { last: performance.now() };
    new MutationObserver(() => { seen.last = performance.now(); }).observe(document,
      { childList: true, subtree: true, characterData: true, attributes: true });
    Object.defineProperty(window, key, { value: seen });
  }
  return document.readyState !== "complete" || performance.now() - window[key].last < quietMs;
}"""


async def page_changing(page: Page, *, budget: Budget) -> bool:
    """Whether the page's main document is still loading or has changed of late (a page
    that can't be asked is taken as changing: it may be on its way to another)."""
    try:
        return bool(await budget.run(page.evaluate(_ACTIVITY_JS, CHANGE_QUIET_MS)))
    except PlaywrightError:
        return True


async def _locate_once(
    page: Page, identity: ElementIdentity, *, budget: Budget, silent: set[Frame], pressing: bool
) -> Located:
    """One search of every frame, the recorded one first; child frames that do not
    answer (:mod:`automation.browser.frames`) are added to ``silent`` and left out."""
    frames = sorted(page.frames, key=lambda f: frame_url(f) != identity.frame_url)
    silent |= await unanswering([f for f in frames if f not in silent], budget)
    answers: list[tuple[Frame, ElementHandle | None, dict[str, Any]]] = []
    errors: list[str] = []  # why frames could not be searched
    recorded = [i.to_dict() for i in identity.every()]
    left_out = [silent_note(frame) for frame in frames if frame in silent]
    for frame in frames:
        if frame in silent:
            continue
        # An element that moved into or out of a frame must keep its row, card or section.
        crossing = bool(identity.frame_url) != (frame.parent_frame is not None)
        args = {"op": "locate", "identities": recorded, "crossing": crossing, "pressing": pressing}
        try:
            handle = await budget.run(frame.evaluate_handle(_LOCATE_JS, args))
            report = await budget.run(handle.evaluate(_REPORT_JS))
            element = (await budget.run(handle.get_property("el"))).as_element()
        except PlaywrightError as exc:
            errors.append(exc.message)  # a frame that went away, or a page that broke it
            continue
        if not isinstance(report, dict) or report.get("error"):
            errors.append(str(report.get("error") if isinstance(report, dict) else report))
            continue
        if element is not None and frame_url(frame) == identity.frame_url:
            return _located(identity, element, report, frame)
        answers.append((frame, element, report))
    hits = sorted(
        (a for a in answers if a[1] is not None), key=lambda a: -float(a[2].get("score", 0))
    )
    if len(hits) > 1 and hits[0][2]["score"] - hits[1][2]["score"] < FRAME_MARGIN:
        return Located(None, reason=f"ambiguous: found in {len(hits)} frames")
    if hits:
        frame, element, report = hits[0]
        assert element is not None
        return _located(identity, element, report, frame)
    best = max(answers, key=lambda a: a[2].get("score", 0), default=None)
    if best is None:
        return Located(None, reason=_unsearched(errors + left_out))
    report = best[2]
    reason = str(report.get("reason", "not found"))
    return Located(
        None,
        score=float(report.get("score", 0)),
        reason=f"{reason}; {left_out[0]}" if left_out else reason,
        candidates=list(report.get("candidates", [])),
    )


def _located(
    identity: ElementIdentity, element: ElementHandle, report: dict[str, Any], frame: Frame
) -> Located:
    now = ElementIdentity.from_page(report["found"], frame_url=frame_url(frame))
    variant = int(report.get("variant") or 0)
    matched = identity.every()[variant] if variant < len(identity.every()) else identity
    return Located(
        element,
        strategy=str(report["strategy"]),
        score=round(float(report["score"]), 3),
        found=now,
        changes=matched.changes(now),
        frame=frame,
        variant=variant,
        parsing=report.get("parsing") is True,
    )


def _check_texts(values: dict[str, Any]) -> None:
    """A stored identity's role, kind and texts, checked (ActionInvalid names the field)."""
    check_role(values.get("role", ""), what="element identity: role")
    kind = values.get("kind", "")
    if kind and kind not in KINDS and kind not in ROLES:
        raise ActionInvalid(f"element identity: kind {kind[:40]!r} is not a kind of control")
    if (own := values.get("name_own", "")) not in OWN_PLACES:
        raise ActionInvalid(f"element identity: name_own {own[:40]!r} is none of {OWN_PLACES}")
    texts: list[tuple[str, str]] = [(n, values.get(n, "")) for n in _TEXT_FIELDS]
    texts += [(f"test_ids[{k[:40]!r}]", f"{k}{v}") for k, v in values["test_ids"].items()]
    texts += [("selectors", s) for s in values["selectors"]]
    texts += [("alike", s) for s in values["alike"]]
    for name, text in texts:
        if len(text) > MAX_STORED_CHARS:
            raise ActionInvalid(f"element identity: {name} is longer than {MAX_STORED_CHARS}")
        if CONTROL_CHARS.search(text):
            raise ActionInvalid(
                f"element identity: {name} holds a control character or a line break"
            )
    if len(values["selectors"]) > MAX_SELECTORS or len(values["alike"]) > MAX_ALIKE:
        raise ActionInvalid(
            f"element identity: at most {MAX_SELECTORS} selectors and {MAX_ALIKE} look-alikes"
        )


def _safe_page_data(data: dict[str, Any]) -> dict[str, Any]:
    """A page's description of an element with its texts made safe to keep; what is not
    text is left for ``from_dict`` to check.  The role and kind are not touched: they are
    checked against the list as they are."""
    out = dict(data)
    for name in _TEXT_FIELDS:
        if name not in ("role", "kind") and isinstance(out.get(name), str):
            # A frame's address is not cut where a name would be: its path finds the frame.
            most = MAX_URL_CHARS if name in ("frame_url", "target") else MAX_TEXT_CHARS
            out[name] = _safe_text(out[name], most)
    tests = out.get("test_ids")
    if isinstance(tests, dict):
        out["test_ids"] = {
            k: _safe_text(v) for k, v in tests.items() if k in TEST_ATTRS and isinstance(v, str)
        }
    selectors = out.get("selectors")
    if isinstance(selectors, list | tuple):
        # A selector with a line break, or past the cap, can't be cut without changing
        # what it finds: it is dropped (the others, and the rest of the identity, remain).
        out["selectors"] = [
            s for s in selectors
            if isinstance(s, str) and len(s) <= MAX_TEXT_CHARS and not CONTROL_CHARS.search(s)
        ][:MAX_SELECTORS]  # fmt: skip
    alike = out.get("alike")
    if isinstance(alike, list | tuple):
        out["alike"] = [_safe_text(s) for s in alike if isinstance(s, str)][:MAX_ALIKE]
    row_words = out.get("row_words")
    if isinstance(row_words, list | tuple):
        out["row_words"] = [_safe_text(w, MAX_ROW_WORD) for w in row_words if isinstance(w, str)]
    out.pop("variants", None)  # earlier releases' identities are ours, never the page's
    return out


def _safe_text(text: str, most: int = MAX_TEXT_CHARS) -> str:
    return CONTROL_CHARS.sub(" ", text)[:most]


def _unsearched(errors: list[str]) -> str:
    """Why no frame answered, in the page's own words when it said something."""
    seen = list(dict.fromkeys(e.strip().splitlines()[0] for e in errors if e.strip()))
    if not seen:
        return "no document could be searched"
    return "could not search the page: " + "; ".join(e[:300] for e in seen[:3])


def frame_url(frame: Frame) -> str:
    """The frame's address, or "" for the page's own document."""
    return frame.url if frame.parent_frame is not None else ""


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _whole(value: object, name: str) -> int:
    """``value`` as a whole number (a JSON number, or text of one), or ValueError naming
    ``name``."""
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        what = "whole numbers" if name == "box" else "a whole number"
        raise ValueError(f"{name} must be {what}, not {str(value)[:40]!r}") from None
