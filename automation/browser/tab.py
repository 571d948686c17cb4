"""A tab: its page, its refs, and every action on it.

Refs are issued by :meth:`Tab.snapshot` and resolved fail-closed by :meth:`Tab.resolve`: a
ref acts only on an element that still has the role and name it had when it was issued,
and no ref survives a navigation of the tab (Playwright reuses ref numbers on a new
document, so ``e2`` could otherwise point at another element).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from playwright.async_api import BrowserContext, Frame, FrameLocator, Locator, Page
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from automation.browser.config import BrowserConfig
from automation.browser.snapshot import RefEntry, Snapshot, parse_aria_snapshot
from automation.budget import Budget, close_unawaited
from automation.errors import (
    ActionFailed,
    ActionInvalid,
    BrowserClosed,
    BudgetExceeded,
    RefNotFound,
    StaleRef,
)

__all__ = ["Tab"]

log = logging.getLogger("automation.browser")
T = TypeVar("T")

# get_by_role only takes ARIA roles; pseudo-roles of the snapshot (iframe, text) skip that check.
_ARIA_ROLES = frozenset(
    """alert alertdialog application article banner blockquote button caption cell checkbox
    code columnheader combobox complementary contentinfo definition deletion dialog directory
    document emphasis feed figure form generic grid gridcell group heading img insertion link
    list listbox listitem log main marquee math meter menu menubar menuitem menuitemcheckbox
    menuitemradio navigation none note option paragraph presentation progressbar radio
    radiogroup region row rowgroup rowheader scrollbar search searchbox separator slider
    spinbutton status strong subscript superscript switch tab table tablist tabpanel term
    textbox time timer toolbar tooltip tree treegrid treeitem""".split()
)

# Runs inside the page on the element itself: the most stable unique CSS selector for it,
# preferring what survives a redesign (test ids) over what does not (positions).
_SELECTOR_JS = """(el) => {
  const root = el.getRootNode();
  const unique = (sel) => {
    try { const all = root.querySelectorAll(sel); return all.length === 1 && all[0] === el; }
    catch (e) { return false; }
  };
  const quote = (v) => JSON.stringify(v);
  const tag = el.tagName.toLowerCase();
  for (const attr of ["data-testid", "data-test", "data-qa", "data-cy"]) {
    const v = el.getAttribute(attr);
    if (v && unique(`[${attr}=${quote(v)}]`)) return `[${attr}=${quote(v)}]`;
  }
  if (el.id && unique("#" + CSS.escape(el.id))) return "#" + CSS.escape(el.id);
  for (const attr of ["aria-label", "name"]) {
    const v = el.getAttribute(attr);
    if (v && unique(`${tag}[${attr}=${quote(v)}]`)) return `${tag}[${attr}=${quote(v)}]`;
  }
  const parts = [];
  for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
    if (node !== el) {
      const tid = node.getAttribute("data-testid");
      if (tid && root.querySelectorAll(`[data-testid=${quote(tid)}]`).length === 1) {
        parts.unshift(`[data-testid=${quote(tid)}]`);
        break;
      }
      if (node.id && root.querySelectorAll("#" + CSS.escape(node.id)).length === 1) {
        parts.unshift("#" + CSS.escape(node.id));
        break;
      }
    }
    let part = node.tagName.toLowerCase();
    const parent = node.parentElement;
    if (parent) {
      const same = Array.from(parent.children).filter((c) => c.tagName === node.tagName);
      if (same.length > 1) part += `:nth-of-type(${same.indexOf(node) + 1})`;
    }
    parts.unshift(part);
    if (part === "html") break;
  }
  return parts.join(" > ");
}"""


class Tab:
    def __init__(
        self,
        page: Page,
        *,
        context: BrowserContext | None = None,
        config: BrowserConfig | None = None,
        on_close: Callable[[Tab], None] | None = None,
    ) -> None:
        self.page = page
        self.context = context
        self.config = config or BrowserConfig()
        self.epoch = 0  # bumped on every main-frame navigation: older refs are stale
        self.refs: dict[str, RefEntry] = {}
        self.crashed = False
        self._on_close = on_close
        page.on("framenavigated", self._on_frame_navigated)
        page.on("crash", self._on_crash)

    # -- state -------------------------------------------------------------------------

    def _on_frame_navigated(self, frame: Frame) -> None:
        if frame == self.page.main_frame:
            self.epoch += 1

    def _on_crash(self, _page: Page) -> None:
        self.crashed = True

    @property
    def url(self) -> str:
        return self.page.url

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
        try:
            return await budget.run(work)
        except PlaywrightTimeout as exc:
            if budget.expired:
                raise BudgetExceeded(f"{what}: out of time ({budget.timeout_ms:.0f} ms)") from None
            raise ActionFailed(f"{what} did not complete: {_brief(exc)}") from None
        except PlaywrightError as exc:
            if self.crashed or self.page.is_closed():
                raise BrowserClosed(f"{what}: the tab or browser is gone") from None
            raise ActionFailed(f"{what} failed: {_brief(exc)}") from None

    # -- snapshot and refs -------------------------------------------------------------

    async def snapshot(self, *, budget: Budget | None = None) -> Snapshot:
        """The accessibility tree with refs; the ref table of the tab is replaced by it."""
        budget = self._budget(budget, "snapshot")
        epoch = self.epoch
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
        raw = await self._call(
            "snapshot",
            budget,
            self.page.aria_snapshot(mode="ai", timeout=budget.playwright_timeout()),
        )
        if self.epoch != epoch:  # navigated while we read it: read the new document
            raw = await self._call(
                "snapshot",
                budget,
                self.page.aria_snapshot(mode="ai", timeout=budget.playwright_timeout()),
            )
        text, refs = parse_aria_snapshot(raw, epoch=self.epoch)
        self.refs = refs
        title = await self._call("snapshot", budget, self.page.title())
        return Snapshot(text=text, refs=refs, url=self.page.url, title=title)

    def _scope(self, entry: RefEntry) -> Page | FrameLocator:
        if not entry.host:
            return self.page
        host = self.refs.get(entry.host)
        if host is None:
            raise StaleRef(f"the frame holding {entry.ref} is gone", hint="take a new snapshot")
        outer = self._scope(host)
        return outer.locator(f"aria-ref={host.ref}").content_frame

    def _entry(self, ref: str) -> RefEntry:
        if not isinstance(ref, str) or not ref.strip():
            raise RefNotFound("no ref given", hint="act by a ref from the snapshot, like e5")
        ref = ref.strip().strip("[]")
        entry = self.refs.get(ref)
        if entry is None:
            raise RefNotFound(
                f"unknown ref {ref!r}: it is not in the latest snapshot of this tab",
                hint="use a ref from the latest snapshot",
            )
        if entry.epoch != self.epoch:
            raise StaleRef(
                f"ref {ref} ({entry.role} {entry.name!r}) is from a page that was left",
                hint="take a new snapshot",
            )
        return entry

    async def resolve(self, ref: str, *, budget: Budget | None = None) -> tuple[Locator, RefEntry]:
        """The locator for ``ref``, proven to be one element with the ref's role and name."""
        budget = self._budget(budget, "resolve")
        self._check_alive()  # a dead tab is BrowserClosed, not a stale ref
        entry = self._entry(ref)
        scope = self._scope(entry)
        locator = scope.locator(f"aria-ref={entry.ref}")
        if entry.role in _ARIA_ROLES:
            by_role = (
                scope.get_by_role(entry.role, name=entry.name, exact=True)  # type: ignore[arg-type]
                if entry.name
                else scope.get_by_role(entry.role)  # type: ignore[arg-type]
            )
            locator = locator.and_(by_role)
        try:
            count = await budget.run(locator.count())
        except PlaywrightError:
            count = 0  # the frame or the element's document is gone
        if count != 1:
            raise StaleRef(
                f"ref {entry.ref} no longer points at a {entry.role} named {entry.name!r}",
                hint="the page changed; take a new snapshot",
            )
        return locator, entry

    async def selector_for(self, ref: str, *, budget: Budget | None = None) -> str:
        """A CSS selector for the ref's element (data-testid > id > aria-label > name > path)."""
        budget = self._budget(budget, "selector")
        locator, entry = await self.resolve(ref, budget=budget)
        return await self._call(
            f"selector of {entry.ref}",
            budget,
            locator.evaluate(_SELECTOR_JS, timeout=budget.playwright_timeout()),
        )

    # -- actions -----------------------------------------------------------------------

    async def navigate(self, url: str, *, budget: Budget | None = None) -> str:
        budget = self._budget(budget, "navigate")
        url = self.config.url_policy.check(url)
        response = await self._call(
            f"navigate to {url}",
            budget,
            self.page.goto(url, wait_until="domcontentloaded", timeout=budget.playwright_timeout()),
        )
        status = response.status if response is not None else 0
        suffix = f" (HTTP {status})" if status >= 400 else ""
        return f"opened {self.page.url}{suffix}"

    async def click(self, ref: str, *, budget: Budget | None = None) -> str:
        budget = self._budget(budget, "click")
        locator, entry = await self.resolve(ref, budget=budget)
        await self._call(
            f"click {entry.ref} ({entry.role} {entry.name!r})",
            budget,
            locator.click(timeout=budget.playwright_timeout()),
        )
        return f"clicked {entry.role} {entry.name!r}"

    async def type(
        self, ref: str, text: str, *, submit: bool = False, budget: Budget | None = None
    ) -> str:
        """Replace the field's value with ``text`` (and press Enter when ``submit``)."""
        if not isinstance(text, str):
            raise ActionInvalid("type needs text as a string")
        budget = self._budget(budget, "type")
        locator, entry = await self.resolve(ref, budget=budget)
        what = f"type into {entry.ref} ({entry.role} {entry.name!r})"
        await self._call(what, budget, locator.fill(text, timeout=budget.playwright_timeout()))
        if submit:
            await self._call(
                what, budget, locator.press("Enter", timeout=budget.playwright_timeout())
            )
        return f"typed {len(text)} characters into {entry.role} {entry.name!r}"

    async def press(self, key: str, *, budget: Budget | None = None) -> str:
        if not isinstance(key, str) or not key.strip():
            raise ActionInvalid("press needs a key, like Enter or Control+A")
        budget = self._budget(budget, "press")
        await self._call(f"press {key}", budget, self.page.keyboard.press(key.strip()))
        return f"pressed {key.strip()}"

    async def wait_for_text(self, text: str, *, budget: Budget | None = None) -> str:
        if not isinstance(text, str) or not text.strip():
            raise ActionInvalid("wait_for needs the text to wait for")
        budget = self._budget(budget, "wait_for")
        await self._call(
            f"wait for text {text!r}",
            budget,
            self.page.get_by_text(text).first.wait_for(
                state="visible", timeout=budget.playwright_timeout()
            ),
        )
        return f"text {text!r} is visible"

    async def screenshot_jpeg(self, *, quality: int = 60, budget: Budget | None = None) -> bytes:
        budget = self._budget(budget, "screenshot")
        return await self._call(
            "screenshot",
            budget,
            self.page.screenshot(type="jpeg", quality=quality, timeout=budget.playwright_timeout()),
        )

    async def close(self) -> None:
        try:
            if self.context is not None:
                await self.context.close()
            elif not self.page.is_closed():
                await self.page.close()
        except PlaywrightError:
            pass  # the browser is already gone
        if self._on_close is not None:
            self._on_close(self)


def _brief(exc: BaseException) -> str:
    """Playwright's first message line, without the call log noise."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    for marker in ("element is not visible", "element is not enabled", "element is not editable"):
        if marker in text and marker not in first:
            first += f" ({marker})"
    return first[:300]
