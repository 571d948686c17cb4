"""Actions on a tab's page as a whole: navigation, waiting, screenshots, PDF, size.

Navigation goes through the URL policy first (the egress proxy, or the context's URL
guard, also stops navigations the page starts itself, and the hops of redirects).  Waits
end within their budget with a typed error and leave the tab usable.

Each function takes the tab it acts in and uses only its public methods and its core
(:class:`~automation.browser.core.TabCore`); :class:`~automation.browser.tab.Tab` offers
them as its methods, and settles after navigations.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame, Request, Response

from automation.browser.address import address_holds
from automation.browser.frames import held_by, silent_note, unanswering
from automation.browser.listen import listener
from automation.browser.masking import MASK_COLOR, PICTURE_CSS, mask_locators
from automation.browser.seen import wait_text
from automation.budget import DEFAULT_HEADROOM_MS, Budget
from automation.errors import (
    ActionFailed,
    ActionInvalid,
    BrowserClosed,
    BudgetExceeded,
    Cancelled,
    HttpStatus,
    TabwrightError,
)
from automation.events import ScreenshotTaken
from automation.wording import named

if TYPE_CHECKING:
    from automation.browser.tab import Tab

__all__ = [
    "LOAD_WAIT_MS",
    "MAX_WAIT_MS",
    "check_wait_ms",
    "history",
    "navigate",
    "pdf",
    "read_text",
    "resize",
    "screenshot",
    "step_screenshot",
    "wait_for",
    "wait_for_text",
]

log = logging.getLogger("automation.browser")

LOAD_STATES = ("load", "domcontentloaded", "networkidle")
REF_STATES = ("visible", "hidden", "attached", "detached", "enabled", "disabled")
MAX_WAIT_MS = 60_000
MIN_SIZE, MAX_SIZE = 200, 4_000
# After DOMContentLoaded a navigation waits this long for "load" (images, scripts that
# draw the page); a page whose last resource never comes is used as it is.
LOAD_WAIT_MS = 10_000


async def navigate(tab: Tab, url: str, *, budget: Budget | None = None) -> str:
    """Open ``url`` and wait for it to load (DOMContentLoaded, then ``load`` for at
    most :data:`LOAD_WAIT_MS`).  An answer of HTTP 4xx/5xx is an error (HttpStatus):
    the page shown is the server's error page, not the one asked for.  A hop the egress
    proxy refused (a redirect to a refused address: its 403, or a tunnel it would not
    open) is UrlBlocked, saying why."""
    budget = tab.core.budget(budget, "navigate")
    url = await tab.config.url_policy.check_resolved(url, budget=budget)
    blocked_before = tab.blocked_total
    page = tab.page
    failed_hops: list[str] = []  # one the egress proxy refused fails the navigation

    def failed(request: Request) -> None:
        if request.is_navigation_request() and request.frame is page.main_frame:
            failed_hops.append(request.url)

    on_failed = listener(failed)
    page.on("requestfailed", on_failed)
    try:
        response = await tab.core.call(
            f"navigate to {url}",
            budget,
            page.goto(url, wait_until="domcontentloaded", timeout=budget.playwright_timeout()),
        )
    except ActionFailed as exc:
        tab.raise_if_blocked(f"navigate to {url}", since=blocked_before, hops=failed_hops)
        if why := tab.why_unreachable(url):
            raise ActionFailed(f"navigate to {url} failed: {why}", hint=exc.hint) from None
        raise
    finally:
        page.remove_listener("requestfailed", on_failed)
    _raise_for_status(f"navigate to {url}", response, tab=tab)
    await _loaded(tab, budget)
    return f"opened {tab.page.url}"


async def _loaded(tab: Tab, budget: Budget) -> None:
    """Wait for the page's ``load`` within :data:`LOAD_WAIT_MS` (and the budget)."""
    wait_ms = min(LOAD_WAIT_MS, budget.remaining_ms() - 2 * DEFAULT_HEADROOM_MS)
    if wait_ms <= 0:
        return
    try:
        await tab.core.call(
            "wait for the page to load",
            budget,
            tab.page.wait_for_load_state("load", timeout=wait_ms),
        )
    except (ActionFailed, BudgetExceeded):
        pass  # a resource that never comes (or no time left): the page is used as it is


async def history(tab: Tab, move: str, *, budget: Budget | None = None) -> str:
    """Go ``back``, ``forward`` or ``reload``, then wait for the page as :func:`navigate`
    does."""
    budget = tab.core.budget(budget, move)
    timeout = budget.playwright_timeout()
    page = tab.page
    step = {
        "back": lambda: page.go_back(wait_until="domcontentloaded", timeout=timeout),
        "forward": lambda: page.go_forward(wait_until="domcontentloaded", timeout=timeout),
        "reload": lambda: page.reload(wait_until="domcontentloaded", timeout=timeout),
    }[move]
    before = page.url
    response = await tab.core.call(f"go {move}", budget, step())
    if response is None and move != "reload" and page.url == before:
        return f"nothing to go {move} to; still at {page.url}"
    _raise_for_status(f"go {move} to {page.url}", response, tab=tab)
    await _loaded(tab, budget)
    return f"went {move} to {page.url}" if move != "reload" else f"reloaded {page.url}"


def check_wait_ms(time_ms: object) -> None:
    """ActionInvalid unless ``time_ms`` (given: not 0) is a whole number of milliseconds
    up to MAX_WAIT_MS.  Run when the action's args are read (a scenario file's at import,
    a model's before the call) and again when it runs."""
    whole = isinstance(time_ms, int) and not isinstance(time_ms, bool)
    if not whole or not 0 < time_ms <= MAX_WAIT_MS:
        raise ActionInvalid(f"wait_for: time_ms must be a whole number from 1 to {MAX_WAIT_MS}, "
                            f"not {time_ms!r}")  # fmt: skip


async def wait_for(
    tab: Tab,
    *,
    text: str = "",
    text_gone: str = "",
    ref: str = "",
    state: str = "visible",
    url: str = "",
    load_state: str = "",
    time_ms: int = 0,
    budget: Budget | None = None,
) -> str:
    """Wait for exactly one condition: a text to appear or go, a ref to reach a state,
    the address to hold ``url`` (its path or whole segments of it, its query's fields,
    as a URL check reads it), a load state, or a fixed time."""
    given = [bool(text), bool(text_gone), bool(ref), bool(url), bool(load_state), bool(time_ms)]
    if sum(given) != 1:
        raise ActionInvalid(
            "wait_for needs exactly one of: text, text_gone, ref (+state), url, load_state, time_ms"
        )
    budget = tab.core.budget(budget, "wait_for")
    timeout = budget.playwright_timeout()
    if time_ms:
        check_wait_ms(time_ms)
        if time_ms > budget.remaining_ms():
            raise BudgetExceeded(f"wait_for {time_ms} ms: only {budget.remaining_ms():.0f} ms left")
        await budget.run(asyncio.sleep(time_ms / 1000))
        return f"waited {time_ms} ms"
    if text or text_gone:
        wanted = text or text_gone
        if not isinstance(wanted, str) or not wanted.strip():
            raise ActionInvalid("wait_for needs the text to wait for")
        how = "visible" if text else "hidden"
        # In every frame (a form in an iframe says its "Thanks" there), of what a person
        # could see (automation.browser.seen, the rule the checks and the snapshot follow:
        # not a transparent toast's copy, nor one in a frame nobody sees): a text is shown
        # when one frame shows it, gone when none does.
        # Where it stands as words, as a check finds it ("Saved" is not in "Unsaved").
        what = f"wait for text {wanted!r} to be {how}"
        try:
            await wait_text(tab, wanted, shown=bool(text), budget=budget)
        except BudgetExceeded as exc:
            raise BudgetExceeded(f"{what}: {exc.message}", hint=exc.hint) from None
        return f"text {wanted!r} is {'visible' if text else 'gone'}"
    if ref:
        return await _wait_for_ref(tab, ref, state, budget)
    if url:  # as a URL check holds (automation.browser.address): not on /login?next=<url>
        what = f"wait for the address to hold {url!r}"
        try:
            await tab.core.call(
                what,
                budget,
                tab.page.wait_for_url(lambda u: address_holds(url, u), timeout=timeout),
            )
        except BudgetExceeded as exc:
            raise BudgetExceeded(
                f"{what}: it is {tab.page.url!r}; {exc.message}", hint=exc.hint
            ) from None
        return f"the URL is {tab.page.url}"
    if load_state not in LOAD_STATES:
        raise ActionInvalid(f"wait_for: load_state must be one of {', '.join(LOAD_STATES)}")
    await tab.core.call(
        f"wait for {load_state}",
        budget,
        tab.page.wait_for_load_state(load_state, timeout=timeout),  # type: ignore[arg-type]
    )
    return f"the page reached {load_state}"


async def wait_for_text(tab: Tab, text: str, *, budget: Budget | None = None) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ActionInvalid("wait_for needs the text to wait for")
    return await tab.wait_for(text=text, budget=budget)


async def _wait_for_ref(tab: Tab, ref: str, state: str, budget: Budget) -> str:
    if state not in REF_STATES:
        raise ActionInvalid(f"wait_for: state must be one of {', '.join(REF_STATES)}")
    locator, entry = tab.locator(ref)
    what = f"wait for {entry.describe()} to be {state}"
    timeout = budget.playwright_timeout()
    if state in ("enabled", "disabled"):
        wanted = state == "disabled"
        await tab.core.call(
            what,
            budget,
            locator.evaluate(
                """(el, wanted) => new Promise((done) => {
                  const check = () => {
                    const off = Boolean(el.disabled) ||
                      el.getAttribute("aria-disabled") === "true";
                    if (off === wanted) done(true); else requestAnimationFrame(check);
                  };
                  check();
                })""",
                wanted,
                timeout=timeout,
            ),
        )
    else:
        await tab.core.call(what, budget, locator.wait_for(state=state, timeout=timeout))  # type: ignore[arg-type]
    return f"{named(entry.role, entry.name)} is {state}"


async def screenshot(
    tab: Tab,
    *,
    ref: str = "",
    full_page: bool = False,
    format: Literal["png", "jpeg"] = "png",
    quality: int = 80,
    path: Path | None = None,
    budget: Budget | None = None,
) -> bytes:
    """The page (or one element) as PNG or JPEG bytes; also written to ``path``."""
    if format not in ("png", "jpeg"):
        raise ActionInvalid("screenshot format must be png or jpeg")
    budget = tab.core.budget(budget, "screenshot")
    silent = await unanswering(tab.page.frames, budget)
    if silent:  # Playwright's picture would wait on every frame: Chromium's own is taken
        data = await _picture_past(tab, silent, ref=ref, full_page=full_page, format=format,
                                   quality=quality, budget=budget)  # fmt: skip
        if path is not None:
            await asyncio.to_thread(Path(path).write_bytes, data)
        return data
    timeout = budget.playwright_timeout()
    # Fields holding a secret are covered, and passwords drawn blank, in every picture.
    extra: dict[str, Any] = {"mask": mask_locators(tab), "mask_color": MASK_COLOR,
                             "style": PICTURE_CSS}  # fmt: skip
    if format == "jpeg":
        extra["quality"] = max(1, min(int(quality), 100))
    if ref:
        locator, entry = await tab.resolve(ref, budget=budget, action="screenshot")
        async with tab.one_picture(budget):
            data = await tab.core.call(
                f"screenshot of {entry.describe()}",
                budget,
                locator.screenshot(type=format, timeout=timeout, **extra),
            )
    else:
        async with tab.one_picture(budget):
            data = await tab.core.call(
                "screenshot",
                budget,
                tab.page.screenshot(type=format, full_page=full_page, timeout=timeout, **extra),
            )
    if path is not None:
        await asyncio.to_thread(Path(path).write_bytes, data)
    return data


# Into each frame that answers, for a picture taken past the frames (_picture_past).
_PICTURE_STYLE_JS = """([id, css]) => {
  const style = document.createElement("style");
  style.id = id;
  style.textContent = css;
  (document.head || document.documentElement).append(style);
}"""
_PICTURE_STYLE_ID = "tabwright-picture-style"


async def _picture_past(
    tab: Tab, silent: set[Frame], *, ref: str, full_page: bool, format: str, quality: int,
    budget: Budget,
) -> bytes:  # fmt: skip
    """The picture by Chromium's own capture, past frames that do not answer: Playwright's
    asks each frame to get ready for a picture and waits for every one.  Fields holding a
    secret are drawn blank by their marks (as in the live view), passwords by a style put
    into every frame that answers for the picture's time; a frame that does not answer
    shows what it last drew."""
    params: dict[str, Any] = {"format": format}
    if format == "jpeg":
        params["quality"] = max(1, min(int(quality), 100))
    session = await tab.core.call("screenshot", budget, tab.core.cdp_session(budget))
    if ref:
        entry = tab.core.entry(ref)
        frame = tab.core.frame_of(entry)
        if frame in silent or held_by(frame, silent):
            raise ActionFailed(f"screenshot of {entry.describe()}: {silent_note(frame)}")
        locator, entry = await tab.resolve(ref, budget=budget, action="screenshot")
        timeout = budget.playwright_timeout()
        box = await tab.core.call(f"screenshot of {entry.describe()}", budget,
                                  locator.bounding_box(timeout=timeout))  # fmt: skip
        if box is None:
            raise ActionFailed(f"screenshot of {entry.describe()}: it is not shown")
        metrics = await tab.core.call("screenshot", budget, session.send("Page.getLayoutMetrics"))
        view = metrics["cssVisualViewport"]
        params["clip"] = {"x": box["x"] + view["pageX"], "y": box["y"] + view["pageY"],
                          "width": box["width"], "height": box["height"], "scale": 1}  # fmt: skip
        params["captureBeyondViewport"] = True
    elif full_page:
        metrics = await tab.core.call("screenshot", budget, session.send("Page.getLayoutMetrics"))
        size = metrics["cssContentSize"]
        params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"],
                          "scale": 1}  # fmt: skip
        params["captureBeyondViewport"] = True
    styled = [f for f in tab.page.frames if f not in silent and not held_by(f, silent)]
    try:
        for frame in styled:
            with contextlib.suppress(PlaywrightError):  # a frame that went away
                await budget.run(
                    frame.evaluate(_PICTURE_STYLE_JS, [_PICTURE_STYLE_ID, PICTURE_CSS])
                )
        async with tab.one_picture(budget):
            shot = await tab.core.call("screenshot", budget,
                                       session.send("Page.captureScreenshot", params))  # fmt: skip
    finally:
        for frame in styled:
            with contextlib.suppress(PlaywrightError, TabwrightError):
                gone = f"() => document.getElementById({_PICTURE_STYLE_ID!r})?.remove()"
                await budget.run(frame.evaluate(gone))
    log.info("a picture of %s past a frame that does not answer", tab.page.url)
    return base64.b64decode(shot["data"])


async def step_screenshot(tab: Tab, index: int, *, budget: Budget) -> ScreenshotTaken | None:
    """The JPEG shown after step ``index``, within 5 s of ``budget``; None (logged) when
    the page can't give one: a missing picture must not fail the step."""
    try:
        jpeg = await tab.screenshot_jpeg(budget=budget.child(5_000, label="screenshot"))
    except (Cancelled, BrowserClosed):
        raise
    except TabwrightError as exc:
        log.info("no screenshot after step %d: %s", index, exc)
        return None
    return ScreenshotTaken(index, jpeg, tab.url)


async def pdf(tab: Tab, path: Path, *, budget: Budget | None = None) -> str:
    """Save the page as PDF (headless Chromium only)."""
    budget = tab.core.budget(budget, "pdf")
    path = Path(path)
    if not path.parent.is_dir():
        raise ActionInvalid(f"save as PDF: no folder {str(path.parent)!r}")
    await tab.core.call("save as PDF", budget, tab.page.pdf(path=path))
    return f"saved the page as {path.name} ({path.stat().st_size} bytes)"


async def resize(tab: Tab, width: int, height: int, *, budget: Budget | None = None) -> str:
    for value in (width, height):
        if not isinstance(value, int) or not MIN_SIZE <= value <= MAX_SIZE:
            raise ActionInvalid(f"resize: width and height must be {MIN_SIZE} to {MAX_SIZE} px")
    budget = tab.core.budget(budget, "resize")
    await tab.core.call(
        "resize", budget, tab.page.set_viewport_size({"width": width, "height": height})
    )
    return f"the viewport is {width}x{height}"


async def read_text(tab: Tab, *, budget: Budget | None = None) -> str:
    """The visible text of the page, for a person reading a result."""
    budget = tab.core.budget(budget, "read")
    text = await tab.core.call("read the page", budget, tab.page.inner_text("body"))
    if not isinstance(text, str):
        raise ActionFailed("read the page: no text")
    return text


def _raise_for_status(what: str, response: Response | None, *, tab: Tab) -> None:
    status = response.status if response is not None else 0
    if response is not None and status == 403:  # the egress proxy's, when it refused a hop
        tab.raise_if_blocked(what, since=tab.blocked_total, hops=[response.url])
    if status >= 400:
        reason = f" {response.status_text}" if response is not None and response.status_text else ""
        raise HttpStatus(
            f"{what}: the server answered HTTP {status}{reason}",
            status=status,
            hint="the page shown is the server's error page; check the address",
        )
