"""A tab: its page, its refs, and the one path every action on it takes.

Refs are issued by :meth:`Tab.snapshot` and resolved fail-closed by :meth:`Tab.resolve`:
a ref acts only on the very element it was issued for, and only while that element still
has the role and name it had then and sits in a row (or named container) that reads as
it did.  The check runs in the page (the ``tabwright=`` selector engine asks the
document's registry), so a re-rendered, renamed or removed element, one a list drawn
again by index now shows in another row, or a page that was left, gives ``StaleRef``
(saying what changed: :mod:`automation.browser.refcheck`) and nothing is touched.

The actions themselves live in :mod:`automation.browser.interact` (elements) and
:mod:`automation.browser.pageops` (the page as a whole); this module holds what they
share: budgets, error translation, refs, frames.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from playwright.async_api import (
    BrowserContext,
    CDPSession,
    ElementHandle,
    Frame,
    Locator,
    Page,
)
from playwright.async_api import Error as PlaywrightError

from automation.browser.cdp import backend_node_id_of
from automation.browser.config import BrowserConfig
from automation.browser.dialogs import DialogGuard
from automation.browser.downloads import DownloadKeeper
from automation.browser.evaluate import Evaluation, PageRuntime, evaluate
from automation.browser.identity import ElementIdentity, capture, locate
from automation.browser.interact import Interactions
from automation.browser.pagelog import PageLog
from automation.browser.pageops import PageOps
from automation.browser.pwcall import call
from automation.browser.refcheck import RESOLVE_JS, STATE_JS, check_actionable, stale_ref
from automation.browser.settle import Settler
from automation.browser.snapshot import (
    CALL_JS,
    REF_RE,
    SNAPSHOT_JS,
    FramePart,
    RefEntry,
    Snapshot,
    SnapshotOptions,
    WalkOutOfTime,
    frame_paths,
    reduced_note,
    ref_entries,
    stitch,
    truncate,
    walk_frames,
)
from automation.budget import Budget, close_unawaited
from automation.errors import (
    ActionFailed,
    ActionInvalid,
    BrowserClosed,
    RefNotFound,
    StaleRef,
    TabwrightError,
    UrlBlocked,
)

if TYPE_CHECKING:
    from automation.browser.tabs import TabGroup

__all__ = ["SELECTOR_ENGINE", "RefState", "Tab", "Target"]

log = logging.getLogger("automation.browser")
T = TypeVar("T")


@dataclass(frozen=True)
class Target:
    """The element a recorded step acted on: its ref then, role, name, a CSS selector and
    its full identity (how replay finds it again)."""

    ref: str = ""
    role: str = ""
    name: str = ""
    selector: str = ""
    identity: ElementIdentity | None = None


# Registered once per Playwright instance as "tabwright": resolves a ref through the
# document's registry, which re-checks role, name and row first (fail closed).
SELECTOR_ENGINE = """{
  queryAll(root, ref) {
    const reg = window.__tabwright;
    const el = reg && reg.resolve(ref);
    if (!el) return [];
    return root === document || root === el || root.contains(el) ? [el] : [];
  },
  query(root, ref) { return this.queryAll(root, ref)[0] || null; }
}"""

_RETIRED_CAP = 5_000
_HANDLE_WAIT_MS = 500  # a resolved ref's element, taken at once (see Tab.handle_of)


class RefState:
    """What a tab knows about its refs; kept per browser target, so a new ``Page`` object
    for the same tab (after reconnecting over CDP) carries on with the same refs."""

    def __init__(self) -> None:
        self.refs: dict[str, RefEntry] = {}
        self.retired: OrderedDict[str, RefEntry] = OrderedDict()  # issued, since gone
        self.seed = 1  # the next ref number; numbers are never reused within a tab
        self.backend_ids: dict[str, int] = {}
        # Identities taken of refs' elements (by Tab.target, or given by replay): how an
        # action finds its element again when the page replaced it (effect.Subject).
        self.identities: dict[str, ElementIdentity] = {}

    def moved(self, reported: object) -> None:
        """Refs a walk moved to an element the page re-created in the place of theirs
        (snapshot_changes.js, adopt): the CDP id of the old element no longer names them.
        Page data, so only ever used to forget an id, which is asked for again when needed."""
        for ref in reported if isinstance(reported, list) else []:
            if isinstance(ref, str):
                self.backend_ids.pop(ref, None)

    def replace(self, refs: dict[str, RefEntry]) -> None:
        for ref, entry in self.refs.items():
            if ref not in refs:
                self.retired[ref] = entry
                self.identities.pop(ref, None)
        while len(self.retired) > _RETIRED_CAP:
            self.retired.popitem(last=False)
        self.refs = refs
        for entry in refs.values():
            self.retired.pop(entry.ref, None)
            num = int(REF_RE.match(entry.ref).group("num"))  # type: ignore[union-attr]
            self.seed = max(self.seed, num + 1)


class Tab(Interactions, PageOps):
    def __init__(
        self,
        page: Page,
        *,
        context: BrowserContext | None = None,
        config: BrowserConfig | None = None,
        on_close: Callable[[Tab], None] | None = None,
        state: RefState | None = None,
        workspace: Path | None = None,
    ) -> None:
        self.page = page
        self.context = context or page.context
        self.config = config or BrowserConfig()
        self.state = state or RefState()
        self.workspace = workspace
        self.crashed = False
        self._on_close = on_close
        self._frames: dict[str, Frame] = {"": page.main_frame}  # ref prefix -> frame
        self._prefixes: dict[Frame, str] = {page.main_frame: ""}
        self._next_frame = 1
        self.cdp: CDPSession | None = None  # the page's CDP session, once one is made
        self.runtime: PageRuntime | None = None  # the evaluate engine's own session
        # Set by the session: a fresh evaluate session, should the connection drop.
        self.reattach_runtime: Callable[[], Awaitable[PageRuntime | None]] | None = None
        self.evaluations: deque[Evaluation] = deque(maxlen=200)
        self.group: TabGroup | None = None
        # Why a host could not be reached, from the egress proxy the browser goes through.
        self.why_unreachable: Callable[[str], str | None] = lambda _url: None
        # Set by the run (automation.secrets.Secrets.is_secret): a value it says is secret
        # is typed only into a field masked first (automation.browser.masking).
        self.is_secret: Callable[[str], bool] | None = None
        self.log = PageLog(page)  # console, page errors, network requests
        self.dialogs = DialogGuard(page)  # answers dialogs as armed, dismisses the rest
        # What each action set off (requests, navigations, DOM changes), waited for
        # before the action returns.
        self.settler = Settler(page)
        # Downloads land in the run's workspace; without one they are refused by Chromium.
        self.downloads = DownloadKeeper(page, workspace / "downloads") if workspace else None
        page.on("crash", self._on_crash)
        page.on("framedetached", self._on_frame_detached)

    # -- state -------------------------------------------------------------------------

    @property
    def refs(self) -> dict[str, RefEntry]:
        return self.state.refs

    def _on_crash(self, _page: Page) -> None:
        self.crashed = True

    def _on_frame_detached(self, frame: Frame) -> None:
        prefix = self._prefixes.pop(frame, None)
        if prefix:
            self._frames.pop(prefix, None)

    @property
    def url(self) -> str:
        return self.page.url

    @property
    def blocked_total(self) -> int:
        """How many navigations the URL guard has stopped in this tab's group."""
        return self.group.blocked_total if self.group is not None else 0

    def raise_if_blocked(self, what: str, *, since: int) -> None:
        """A navigation that failed because the URL guard stopped it (a redirect to a
        refused address, say) is reported as UrlBlocked, not as a network error."""
        if self.group is not None and self.group.blocked_total > since:
            url, reason = self.group.blocked[-1]
            raise UrlBlocked(f"{what}: the browser was sent to {url[:200]!r}, refused: {reason}")

    def dialogs_raise(self, what: str) -> None:
        """After an action: a dialog nobody armed was dismissed; say so as an error."""
        self.dialogs.raise_if_unexpected(what)

    def _budget(self, budget: Budget | None, label: str) -> Budget:
        if budget is None:
            return Budget(self.config.action_timeout_ms, label=label)
        return budget.child(label=label)

    def _check_alive(self) -> None:
        if self.crashed:
            raise BrowserClosed("the tab crashed", hint="start a new run or open a new tab")
        if self.page.is_closed():
            raise BrowserClosed("the tab is closed")

    async def _call(self, what: str, budget: Budget, work: Awaitable[T]) -> T:
        """Await one Playwright call inside the budget; turn its errors into ours."""
        try:
            self._check_alive()
        except BrowserClosed:
            close_unawaited(work)
            raise
        return await call(what, budget, work, gone=lambda: self.crashed or self.page.is_closed())

    # -- snapshot ----------------------------------------------------------------------

    async def snapshot(
        self, options: SnapshotOptions | None = None, *, budget: Budget | None = None
    ) -> Snapshot:
        """The accessibility tree with refs; the tab's ref table is replaced by it."""
        options = options or SnapshotOptions()
        budget = self._budget(budget, "snapshot")
        try:
            await self._call(
                "snapshot",
                budget,
                self.page.wait_for_load_state(
                    "domcontentloaded", timeout=budget.playwright_timeout()
                ),
            )
        except ActionFailed:
            pass  # a page still loading is snapshotted as it is
        frames = self._frames_to_walk(options.scope)  # parents first: a child needs its host

        async def walk(frame: Frame, refs: dict[str, RefEntry], ms: float, cut: bool) -> Any:
            return await self._walk(frame, options, budget, refs, time_ms=ms, reduced=cut)

        # A page too big to walk in time gets the reduced snapshot, not a failed run.
        parts, refs, reduced = await walk_frames(
            frames, walk, budget=budget, full_pass_ms_setting=self.config.snapshot_full_pass_ms
        )
        if options.scope:
            self._merge(refs)
        else:
            self.state.replace(refs)
        lines = stitch(parts)
        if reduced:
            note = reduced_note(parts, budget_label=budget.label, budget_ms=budget.timeout_ms)
            lines = [note, *lines]
        elif options.delta:
            removed = [line for p in parts for _ref, line in p.removed]
            head = "# changes since the last snapshot (the rest is unchanged)"
            if removed:
                shown = ", ".join(removed[:20]) + (
                    f" +{len(removed) - 20}" if len(removed) > 20 else ""
                )
                head += f"\n# removed: {shown}"
            if not lines and not removed:
                head = "# no changes since the last snapshot"
            lines = [head, *lines]
        text, cut = truncate(lines, options.max_chars)
        title = await self._call("snapshot", budget, self.page.title())
        return Snapshot(
            text=text,
            refs=dict(refs),
            url=self.page.url,
            title=title,
            delta=options.delta and not reduced,
            truncated_chars=cut,
            reduced=reduced,
        )

    def _merge(self, refs: dict[str, RefEntry]) -> None:
        """A scoped snapshot adds to the table without dropping refs outside the scope."""
        merged = dict(self.state.refs)
        merged.update(refs)
        self.state.replace(merged)

    def _frames_to_walk(self, scope: str) -> list[Frame]:
        if scope and REF_RE.match(scope):
            entry = self._entry(scope)
            return [self._frame_of(entry)]
        if scope:
            return [self.page.main_frame]
        frames: list[Frame] = []

        def add(frame: Frame) -> None:
            if frame.is_detached():
                return
            frames.append(frame)
            for child in frame.child_frames:
                add(child)

        add(self.page.main_frame)
        return frames

    def _prefix_of(self, frame: Frame) -> str:
        prefix = self._prefixes.get(frame)
        if prefix is None:
            prefix = f"f{self._next_frame}"
            self._next_frame += 1
            self._prefixes[frame] = prefix
            self._frames[prefix] = frame
        return prefix

    async def _walk(
        self,
        frame: Frame,
        options: SnapshotOptions,
        budget: Budget,
        refs: dict[str, RefEntry],
        *,
        time_ms: float = 0,
        reduced: bool = False,
    ) -> FramePart | None:
        prefix = self._prefix_of(frame)
        host = ""
        if frame is not self.page.main_frame:
            host = await self._host_ref(frame, budget)
            if not host:
                return None  # its <iframe> is hidden or not walked: nothing to show
        args = options.for_js(prefix=prefix, seed=self.state.seed, time_ms=time_ms, reduced=reduced)
        raw = await self._evaluate_in(frame, args, budget)
        if raw is None:
            return None
        result = json.loads(raw)
        if result.get("outOfTime"):
            raise WalkOutOfTime(f"the walk of {frame.url} gave up after {time_ms:.0f} ms")
        if "error" in result:
            raise ActionInvalid(
                f"snapshot scope {options.scope!r} matches no element",
                hint="give a ref from the latest snapshot or a CSS selector that matches",
            )
        self.state.moved(result.get("rebound"))
        for entry in ref_entries(
            result["refs"], frame=prefix, host=host, backend_ids=self.state.backend_ids
        ):
            refs[entry.ref] = entry
        slots = {f["ref"]: (f["line"], f["depth"]) for f in result["frames"]}
        lines = result["text"].split("\n") if result["text"] else []
        removed = [(str(r[0]), str(r[1])) for r in result["removed"]]
        # A scoped walk is shown on its own, not under its frame's <iframe> line.
        counts = result.get("reduced") or {}
        return FramePart(
            prefix, lines, slots, "" if options.scope else host, removed,
            int(counts.get("elements", 0)), int(counts.get("late", 0)), int(counts.get("over", 0)),
            frame_paths(result.get("paths")),
        )  # fmt: skip

    async def _evaluate_in(self, frame: Frame, args: dict[str, Any], budget: Budget) -> str | None:
        what = "snapshot" if frame is self.page.main_frame else f"snapshot of frame {frame.url}"
        try:
            raw = await self._call(what, budget, frame.evaluate(CALL_JS, args))
            if raw is None:  # a document that predates the init script: install now
                await self._call(what, budget, frame.evaluate(SNAPSHOT_JS))
                raw = await self._call(what, budget, frame.evaluate(CALL_JS, args))
        except ActionFailed:
            if frame is self.page.main_frame:
                raise
            return None  # a child frame that went away mid-walk is left out
        return raw

    async def _host_ref(self, frame: Frame, budget: Budget) -> str:
        """The ref of the <iframe> holding ``frame``, as issued by its parent's walk."""
        try:
            handle = await budget.run(frame.frame_element())
            ref = await budget.run(handle.evaluate("el => window.__tabwright?.refOf(el) || ''"))
            await handle.dispose()
        except PlaywrightError:
            return ""
        return str(ref or "")

    # -- refs --------------------------------------------------------------------------

    def _entry(self, ref: object) -> RefEntry:
        if not isinstance(ref, str) or not ref.strip():
            raise RefNotFound("no ref given", hint="act by a ref from the snapshot, like e5")
        ref = ref.strip().strip("[]")
        if not REF_RE.match(ref):
            raise RefNotFound(
                f"{ref[:40]!r} is not a ref",
                hint="refs look like e5 (or f1e5 inside a frame); take them from the snapshot",
            )
        entry = self.state.refs.get(ref)
        if entry is not None:
            return entry
        old = self.state.retired.get(ref)
        if old is not None:
            raise StaleRef(
                f"ref {old.describe()} is from an earlier snapshot and is gone now",
                hint="take a new snapshot",
            )
        raise RefNotFound(
            f"unknown ref {ref!r}: it is not in the latest snapshot of this tab",
            hint="use a ref from the latest snapshot",
        )

    def _frame_of(self, entry: RefEntry) -> Frame:
        frame = self._frames.get(entry.frame)
        if frame is None or frame.is_detached():
            raise StaleRef(f"the frame holding {entry.ref} is gone", hint="take a new snapshot")
        return frame

    def locator(self, ref: str) -> tuple[Locator, RefEntry]:
        """The locator for a ref, without touching the page (see :meth:`resolve`)."""
        entry = self._entry(ref)
        return self._frame_of(entry).locator(f"tabwright={entry.ref}"), entry

    async def resolve(
        self, ref: str, *, budget: Budget | None = None, action: str = ""
    ) -> tuple[Locator, RefEntry]:
        """The locator for ``ref``, proven to be its element with its role and name, in its
        row, and able to take ``action`` (visible; enabled; editable for typing)."""
        budget = self._budget(budget, "resolve")
        self._check_alive()  # a dead tab is BrowserClosed, not a stale ref
        locator, entry = self.locator(ref)
        try:
            found = await budget.run(self._frame_of(entry).evaluate(RESOLVE_JS, entry.ref))
        except PlaywrightError:
            found = None  # the frame or the element's document is gone
        state = found.get("state") if isinstance(found, dict) else None
        if not isinstance(state, dict):
            why = found.get("stale") if isinstance(found, dict) else ["gone"]
            raise stale_ref(entry.describe(), why)
        if action:
            check_actionable(action, entry, state)
        return locator, entry

    async def follow(self, ref: str, *, budget: Budget, action: str = "") -> ElementHandle:
        """The element of a ref whose node the page replaced, found again by the identity
        taken of it (:meth:`target`) and able to take ``action``; StaleRef when there is
        no identity or it finds nothing.  For an action that re-rendered the page itself
        (fill_form's next field), never for a ref the model kept from an older page."""
        entry = self._entry(ref)
        identity = self.state.identities.get(entry.ref)
        if identity is None:
            raise StaleRef(
                f"ref {entry.describe()} no longer points at that element",
                hint="take a new snapshot",
            )
        located = await locate(self.page, identity, budget=budget)
        if located.element is None:
            raise StaleRef(
                f"ref {entry.describe()} no longer points at that element, and it could not be "
                f"found again: {located.reason}",
                hint="take a new snapshot",
            )
        try:
            state = await budget.run(located.element.evaluate(f"(el) => ({STATE_JS})([el])[0]"))
        except PlaywrightError:
            raise StaleRef(f"ref {entry.describe()}: the element found again went away") from None
        if action:
            check_actionable(action, entry, state)
        return located.element

    async def selector_for(self, ref: str, *, budget: Budget | None = None) -> str:
        """A CSS selector for the ref's element (test id > id > aria-label > name >
        placeholder > a path from the nearest ancestor with an id)."""
        return (await self.target(ref, budget=budget)).selector

    def known_target(self, ref: str) -> Target:
        """What the ref table says of the ref's element, without asking the page."""
        entry = self.refs.get(ref) if ref else None
        return Target(ref, entry.role, entry.name) if entry else Target(ref)

    async def target(self, ref: str, *, budget: Budget | None = None) -> Target:
        """The ref's element as a recorded step keeps it: its identity and its best
        selector.  Take it before acting (an action that navigates leaves the ref
        behind); StaleRef if the element is gone."""
        budget = self._budget(budget, "identity")
        locator, entry = await self.resolve(ref, budget=budget)
        handle = await self.handle_of(locator, entry, budget=budget)
        found = await capture(handle, budget=budget)
        identity = replace(found, backend_node_id=self.state.backend_ids.get(entry.ref))
        self.state.identities[entry.ref] = identity
        selector = identity.selectors[0] if identity.selectors else ""
        return Target(entry.ref, entry.role, entry.name, selector, identity)

    async def handle_of(
        self, locator: Locator, entry: RefEntry, *, budget: Budget
    ) -> ElementHandle:
        """The element of a ref just resolved (:meth:`resolve`).  An app may replace it
        the next moment: then the ref is stale at once, instead of Playwright waiting the
        whole budget for an element that will never come back."""
        try:
            return await budget.run(locator.element_handle(timeout=_HANDLE_WAIT_MS))
        except PlaywrightError:
            raise StaleRef(
                f"ref {entry.describe()}: the page replaced the element as it was taken",
                hint="take a new snapshot",
            ) from None

    def remember_identity(self, ref: str, identity: ElementIdentity) -> None:
        """The identity of the ref's element, as the caller already knows it (replay's
        located element): an action uses it to find the element again after a re-render."""
        self.state.identities[self._entry(ref).ref] = identity

    async def backend_node_id(self, ref: str, *, budget: Budget | None = None) -> int:
        """CDP's backend node id of the ref's element: in the page's target (asked once,
        then remembered) or, for an element of an out-of-process frame, in the frame's."""
        budget = self._budget(budget, "backend node id")
        _, entry = await self.resolve(ref, budget=budget)
        known = self.state.backend_ids.get(entry.ref)
        if known is not None:
            return known
        what = f"backend node id of {entry.ref}"
        # An out-of-process frame can't be reached through the <iframe> chain and gets a
        # session of its own.
        attempts = [(self.page, self.registry_path(entry.ref))]
        if entry.frame:
            attempts.append(
                (self._frame_of(entry), f"window.__tabwright.resolve({json.dumps(entry.ref)})")
            )
        for target, expression in attempts:
            session: CDPSession | None = None
            try:
                if target is self.page:
                    if self.cdp is None:
                        self.cdp = await budget.run(self.context.new_cdp_session(self.page))
                    session = self.cdp
                else:
                    session = await budget.run(self.context.new_cdp_session(target))
                backend_id = await backend_node_id_of(
                    lambda method, params, s=session: budget.run(s.send(method, params)),
                    expression,
                )
            except PlaywrightError:
                continue  # cross-origin hop or not an out-of-process frame: try the next way
            finally:
                if session is not None and session is not self.cdp:
                    await _detach(session, budget)  # a frame's session is for this call only
            if backend_id is not None:
                if target is self.page:  # remembered only where the evaluate engine looks
                    self.state.backend_ids[entry.ref] = backend_id
                return backend_id
        raise ActionFailed(f"{what}: the element can't be reached over CDP")

    def registry_path(self, ref: str) -> str:
        """A JS expression that gives the ref's element in the page's main world, through
        the registries of the <iframe> chain (it throws across an out-of-process hop)."""
        chain = []
        host = self._entry(ref).host
        while host:
            chain.insert(0, host)
            host = self._entry(host).host
        path = "window"
        for hop in chain:
            path = f"{path}.__tabwright.resolve({json.dumps(hop)}).contentWindow"
        return f"{path}.__tabwright.resolve({json.dumps(ref)})"

    # -- evaluate ----------------------------------------------------------------------

    async def evaluate(
        self, expression: str, arg: Any = None, *, ref: str = "", budget: Budget | None = None
    ) -> Any:
        """Run a script in the page (or, given a ref, a function of that element) within the
        budget; see :mod:`automation.browser.evaluate`.  Off unless the config allows it."""
        return await evaluate(
            self, expression, arg, ref=ref, budget=self._budget(budget, "evaluate")
        )

    def take_evaluations(self) -> list[Evaluation]:
        """The evaluations since the last call, for the run's events."""
        taken = list(self.evaluations)
        self.evaluations.clear()
        return taken

    # -- lifetime ----------------------------------------------------------------------

    async def close(self) -> None:
        """Close this tab; the run's last tab takes its browser context with it."""
        # The page's CDP session ends with the page; detaching it from a crashed page would
        # wait forever for an answer.  The evaluate session is told, not waited on.
        if self.runtime is not None:
            await self.runtime.close()
        if self.group is not None and len(self.group.tabs) <= 1:
            await self.group.close()
        else:
            if self.group is not None and self in self.group.tabs:
                self.group.tabs.remove(self)
                if self.group.current is self:
                    self.group.current = self.group.tabs[-1]
            try:
                if not self.page.is_closed():
                    await self.page.close()
            except PlaywrightError:
                pass  # the browser is already gone
        if self._on_close is not None:
            self._on_close(self)


async def _detach(session: CDPSession, budget: Budget) -> None:
    try:
        await budget.run(session.detach())
    except (PlaywrightError, TabwrightError):
        pass  # the frame or browser is already gone, or time is up: the session goes with it
