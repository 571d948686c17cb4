"""The live view on a real Chromium: frames of the current tab, bounded in rate, following
the run's tabs; and a person's clicks, keys and typing reaching the page, and recorded."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
from typing import Any

import pytest
from playwright.async_api import Error as PlaywrightError

from automation import BrowserSession, Budget, Tab
from automation.browser import screencast as screencast_module
from automation.browser.screencast import Frame, Screencast, person_input
from automation.errors import ActionInvalid, BrowserClosed
from automation.recording.recorder import Recorder
from tests.bounds import room
from tests.waiting import eventually

pytestmark = pytest.mark.long  # one of the longest files: dealt out first

ANIMATED = """data:text/html,<body><p id=n>0</p><script>
let n = 0; (function tick() { document.getElementById('n').textContent = ++n;
requestAnimationFrame(tick); })();</script></body>"""


class Frames:
    def __init__(self, delay_s: float = 0.0) -> None:
        self.got: list[Frame] = []
        self.delay_s = delay_s
        self.arrived = asyncio.Event()

    async def __call__(self, frame: Frame) -> None:
        self.got.append(frame)
        self.arrived.set()
        await asyncio.sleep(self.delay_s)

    async def next(self) -> Frame:
        self.arrived.clear()
        async with asyncio.timeout(60):  # bounds a hang only: frames come within a second
            await self.arrived.wait()
        return self.got[-1]

    async def count(self, more: int) -> float:
        """Waits for ``more`` frames after the next one; the seconds they took."""
        await self.next()
        before, started = len(self.got), time.monotonic()
        while len(self.got) < before + more:
            await self.next()
        return time.monotonic() - started


def is_picture_of(frame: Frame, tab: Tab, path: str) -> None:
    """``frame`` is a JPEG of the whole viewport of ``tab``, at ``path``."""
    size = tab.page.viewport_size
    assert size is not None
    assert frame.jpeg[:2] == b"\xff\xd8" and len(frame.jpeg) > 1000
    assert (frame.width, frame.height) == (size["width"], size["height"])
    assert frame.url.endswith(path)


async def cast_of_a_form(tab: Tab, fixture_url: str, **options: Any) -> tuple[Screencast, Frames]:
    """A started cast of ``tab`` on the sign-up form, its first frame checked."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    frames = Frames()
    cast = Screencast(lambda: tab, frames, **options)
    cast.start()
    try:
        is_picture_of(await frames.next(), tab, "/demo/form.html")
    except BaseException:
        await cast.stop()
        raise
    return cast, frames


async def test_frames_show_the_page_at_most_max_fps(tab: Tab, fixture_url: str) -> None:
    cast, frames = await cast_of_a_form(tab, fixture_url, max_fps=5)
    try:
        # A page redrawing at 60 fps: the sends stay at max_fps or below (a busy machine
        # sends fewer; a cast that sent every frame would send 60 a second).
        await tab.page.goto(ANIMATED)
        took = await frames.count(8)
        assert 8 / took <= 6, 8 / took
    finally:
        await cast.stop()
    assert not cast.running
    after = len(frames.got)
    await asyncio.sleep(0.5)
    assert len(frames.got) == after  # stopped means no more frames


async def test_chromium_encodes_about_one_frame_a_send_on_a_page_that_never_stops(
    tab: Tab, fixture_url: str
) -> None:
    cast, frames = await cast_of_a_form(tab, fixture_url, max_fps=5)
    try:
        await tab.page.goto(ANIMATED)
        await frames.count(8)
        # Each frame held unacked until one is sent: Chromium sends a frame a send, not
        # one for each of the page's 60 a second (it would on a busy machine too).
        assert cast.frames_received <= 2 * cast.frames_sent + 3, (
            cast.frames_received,
            cast.frames_sent,
        )
    finally:
        await cast.stop()


# Busy until told, then blank: a picture of it standing still is a small JPEG.
BUSY_THEN_BLANK = """data:text/html,<body style="margin:0"><div id=g></div><script>
const g = document.getElementById('g'); let busy = true;
function fill(into) { let h = '';
  for (let i = 0; i < 400; i++) h += '<span style="color:%23' +
    Math.floor(Math.random() * 16777215).toString(16).padStart(6, '0') + '">' +
    Math.random().toString(36).slice(2) + '</span> ';
  into.innerHTML = h; }
(function draw() { if (!busy) return; fill(g); requestAnimationFrame(draw); })();
window.stand = () => { busy = false; document.body.innerHTML = ''; };
window.once = () => fill(document.body);
</script></body>"""


async def cast_of_the_busy_page(tab: Tab, sent: int) -> tuple[Screencast, Frames]:
    """A started cast (4 sends a second) of BUSY_THEN_BLANK, once it sent ``sent`` frames
    after its first."""
    frames = Frames()
    cast = Screencast(lambda: tab, frames, max_fps=4)
    await tab.page.goto(BUSY_THEN_BLANK)
    cast.start()
    try:
        await frames.count(sent)
    except BaseException:
        await cast.stop()
        raise
    return cast, frames


async def stand_still(tab: Tab, frames: Frames, busy: int) -> None:
    """Makes the busy page stand still, then waits for a frame smaller than a third of
    ``busy`` bytes (frames still on their way may show the busy page) and for the sends to
    stop (a picture of it may follow, and the frame Chromium draws for that picture; never
    one after another for good)."""
    await tab.page.evaluate("window.stand()")
    async with asyncio.timeout(60):
        while len(frames.got[-1].jpeg) * 3 > busy:
            await frames.next()
    async with asyncio.timeout(60):
        while True:
            sent = len(frames.got)
            await asyncio.sleep(1)
            if len(frames.got) == sent:
                return


async def test_the_last_picture_of_a_page_that_then_stands_still_is_sent(tab: Tab) -> None:
    """Chromium drops a change that comes while its frames wait for their acks (held
    for the pace of the sends), and sends nothing more once the page stands still: the
    live view takes the picture itself."""
    cast, frames = await cast_of_the_busy_page(tab, 4)
    try:
        busy = max(len(frame.jpeg) for frame in frames.got)
        await stand_still(tab, frames, busy)
        assert len(frames.got[-1].jpeg) * 3 < busy
    finally:
        await cast.stop()


def chromium_sends(cast: Screencast, jpeg: bytes, drawn_at: float, width: int = 1280) -> None:
    """Hands ``cast`` a frame as Chromium would (drawn at ``drawn_at``, on the wall clock as
    Chromium stamps it)."""
    cast._on_cdp_frame({"data": base64.b64encode(jpeg).decode(), "sessionId": 0,
                        "metadata": {"timestamp": drawn_at, "deviceWidth": width,
                                     "deviceHeight": width * 800 // 1280}})  # fmt: skip


async def test_a_change_chromium_drops_with_a_single_frame_unacked_is_pictured(
    tab: Tab, fixture_url: str
) -> None:
    """On a busy machine Chromium drops a change that comes while it still encodes the
    frame before, with no other frame unacked: once no frame follows the send of that
    frame, the live view takes the picture itself.  Chromium's cast is stopped here behind
    the live view's back, so that the change is dropped for certain."""
    cast, frames = await cast_of_a_form(tab, fixture_url)
    try:
        assert cast._session is not None
        await cast._session.send("Page.stopScreencast")
        encoding = await tab.page.screenshot(type="jpeg", quality=30)  # the frame before
        await tab.page.evaluate("document.body.innerHTML = '<h1>Saved</h1>'")
        chromium_sends(cast, encoding, time.time())
        await eventually(lambda: frames.got[-1].jpeg == encoding, what="the frame sent")
        await eventually(lambda: frames.got[-1].jpeg != encoding, what="a picture of the change")
        now = await cast._shot()
        assert now is not None and frames.got[-1].jpeg == now.jpeg
    finally:
        await cast.stop()


async def test_a_frame_drawn_before_the_picture_shown_is_never_sent_after_it(tab: Tab) -> None:
    """On a busy machine a frame of the busy page, drawn before it stood still, can reach
    the live view after its picture of the page standing still: that older frame must not
    take the picture's place (a person would watch the busy page for good). Chromium's
    late delivery is played here by handing the cast the frame as Chromium would."""
    cast, frames = await cast_of_the_busy_page(tab, 2)
    try:
        busy = frames.got[-1].jpeg
        drawn_busy_at = time.time()
        await stand_still(tab, frames, len(busy))
        still = frames.got[-1].jpeg

        sent = len(frames.got)
        chromium_sends(cast, busy, drawn_busy_at)  # late: drawn before the page stood still
        for _ in range(20):  # the sender's turns, had it been woken
            await asyncio.sleep(0)
        assert len(frames.got) == sent and frames.got[-1].jpeg == still
        # A frame drawn while a screenshot of the tab had Chromium draw it at the
        # screenshot's size (480 wide: a frame that says so sends a person's click to 37%
        # of its point) is never sent.
        chromium_sends(cast, busy, time.time(), width=480)
        for _ in range(20):
            await asyncio.sleep(0)
        assert len(frames.got) == sent
        # A frame drawn after the picture is sent, as ever.
        chromium_sends(cast, busy, time.time())
        assert (await frames.next()).jpeg == busy and len(frames.got) == sent + 1
        assert (frames.got[-1].width, frames.got[-1].height) == (1280, 800)
    finally:
        await cast.stop()


async def test_frames_of_a_browser_on_a_clock_of_its_own_are_sent_after_a_picture(
    tab: Tab, fixture_url: str
) -> None:
    """A browser reached over CDP may run on a clock of its own: frames stamped an hour
    behind ours are placed by when they arrived, not taken as older than the picture the
    live view took (here: no first frame came, so a picture stands in for it)."""
    frames = Frames()
    cast = Screencast(lambda: tab, frames)
    chromium, held_back = cast._on_cdp_frame, [True]

    def an_hour_behind(params: dict[str, Any]) -> None:
        if not held_back[0]:
            meta = params["metadata"]
            chromium({**params, "metadata": {**meta, "timestamp": meta["timestamp"] - 3600}})

    cast._on_cdp_frame = an_hour_behind  # type: ignore[method-assign]
    await tab.navigate(f"{fixture_url}/demo/form.html")
    cast.start()
    try:
        is_picture_of(await frames.next(), tab, "/demo/form.html")  # the picture
        held_back[0] = False
        await tab.page.evaluate("document.querySelector('h1').textContent = 'Changed'")
        await eventually(lambda: len(frames.got) > 1, what="a frame after the picture")
    finally:
        await cast.stop()


async def test_a_page_that_never_stops_is_followed_by_pictures_until_it_stands_still(
    tab: Tab,
) -> None:
    """Chromium's capture goes on at the page's rate while its cast runs: a page that
    keeps it busy is followed by screenshots instead (the cast stopped), and gets its cast
    again once it stands still, with its last picture.

    Two sends a second: the page must draw faster than the sends for Chromium to wait at
    its limit, and on a machine busy with other work it draws this page at a few frames a
    second (at ten sends a second it kept up with them, rightly followed by the cast)."""
    frames = Frames()
    cast = Screencast(lambda: tab, frames, max_fps=2)
    await tab.page.goto(BUSY_THEN_BLANK)
    cast.start()
    try:
        await eventually(lambda: cast.polling, what="the cast gives way to pictures")
        received = cast.frames_received
        await frames.count(5)  # pictures go on, each a new one of the busy page
        assert cast.frames_received == received  # none from a cast
        busy = max(len(frame.jpeg) for frame in frames.got[-5:])
        assert len({frame.jpeg for frame in frames.got[-5:]}) == 5

        await tab.page.evaluate("window.stand()")
        await eventually(lambda: not cast.polling, what="the cast again")
        assert len(frames.got[-1].jpeg) * 3 < busy  # the page as it stands
        # The cast follows a change again.
        before = cast.frames_received
        await tab.page.evaluate("window.once()")
        await eventually(lambda: len(frames.got[-1].jpeg) * 3 > busy, what="a frame of the change")
        assert cast.frames_received > before and not cast.polling
    finally:
        await cast.stop()


async def test_a_tab_that_crashes_while_followed_by_pictures_is_said_once(
    browser: BrowserSession, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    tab = await browser.new_tab()
    cast = Screencast(lambda: tab, Frames(), max_fps=2)  # the page draws faster, loaded too
    follows = [0]
    follow = cast._follow

    async def counted(followed: Tab | None) -> None:
        follows[0] += 1
        await follow(followed)

    monkeypatch.setattr(cast, "_follow", counted)
    try:
        await tab.page.goto(ANIMATED)
        with caplog.at_level(logging.INFO, logger="automation.browser"):
            cast.start()
            await eventually(lambda: cast.polling, what="the cast gives way to pictures")
            before = follows[0]
            with contextlib.suppress(PlaywrightError):
                await tab.page.goto("chrome://crash")  # the page's renderer dies
            # The live view leaves the pictures and tries to follow the tab again, every
            # half second, quietly: the crash is said once, not four times a second.
            await eventually(lambda: follows[0] >= before + 3, what="followed anew, three times")
            assert cast.running and not cast.polling
        said = [r.getMessage() for r in caplog.records if "no picture" in r.getMessage()]
        assert len(said) <= 1, said
    finally:
        await cast.stop()
        await tab.close()


async def test_a_tab_chromium_sends_no_frame_of_is_shown_by_a_screenshot(
    browser: BrowserSession, tab: Tab, fixture_url: str
) -> None:
    """A cast of a page that stands still, told to skip all but every 1000th frame (so
    Chromium sends none, as it may not under load): the person watching still gets a
    picture of the tab."""
    cast, frames = await cast_of_a_form(tab, fixture_url, every_nth_frame=1000)
    assert cast.running
    await cast.stop()
    with pytest.raises(ActionInvalid, match="every_nth_frame"):
        Screencast(lambda: tab, frames, every_nth_frame=0)
    # A page with no viewport set (as one of a browser reached over CDP): its size is read.
    assert tab.page.context.browser is not None
    context = await tab.page.context.browser.new_context(no_viewport=True)
    try:
        bare = await browser.adopt(await context.new_page())
        await bare.page.goto(f"{fixture_url}/demo/form.html")
        assert bare.page.viewport_size is None
        frames = Frames()
        cast = Screencast(lambda: bare, frames, every_nth_frame=1000)
        cast.start()
        try:
            frame = await frames.next()
        finally:
            await cast.stop()
        size = await bare.page.evaluate("() => [innerWidth, innerHeight]")
        assert [frame.width, frame.height] == size and size[0] > 0 and size[1] > 0
    finally:
        await context.close()


async def test_a_slow_receiver_gets_the_newest_frame_not_a_queue(tab: Tab) -> None:
    frames = Frames(delay_s=0.6)
    cast = Screencast(lambda: tab, frames, max_fps=30)
    cast.start()
    try:
        await tab.page.goto(ANIMATED)
        # One send per 0.6 s however fast the page draws: each is the newest frame when
        # the receiver is free again, none waits in a queue behind it.
        assert await frames.count(3) >= 3 * 0.6
    finally:
        await cast.stop()


async def test_the_live_view_follows_the_current_tab_and_survives_its_close(
    tab: Tab, fixture_url: str
) -> None:
    assert tab.group is not None
    group = tab.group
    await tab.navigate(f"{fixture_url}/demo/form.html")
    frames = Frames()
    cast = Screencast(lambda: group.current, frames)
    cast.start()
    try:
        await frames.next()
        second = await group.open(f"{fixture_url}/replay/v1/login.html")
        deadline = time.monotonic() + 60  # bounds a hang only
        while not frames.got[-1].url.endswith("/replay/v1/login.html"):
            assert time.monotonic() < deadline, [f.url for f in frames.got]
            await frames.next()
        await group.close_tab(group.tabs.index(second))
        while not frames.got[-1].url.endswith("/demo/form.html"):
            assert time.monotonic() < deadline, [f.url for f in frames.got]
            await frames.next()
        assert cast.running
    finally:
        await cast.stop()


async def test_stop_after_the_page_closed_is_quiet_and_quick(browser) -> None:  # type: ignore[no-untyped-def]
    tab = await browser.new_tab()
    frames = Frames()
    cast = Screencast(lambda: tab, frames)
    cast.start()
    await frames.next()
    await tab.close()
    await asyncio.sleep(0.7)  # the sender looks at a closed tab meanwhile
    started = time.monotonic()
    await cast.stop()
    # The closed page's screencast is not waited for: no call runs into its timeout.
    assert time.monotonic() - started < screencast_module._CDP_MS / 1000


async def test_clicks_keys_and_typing_reach_the_page(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    budget = room()
    box = await tab.page.locator("#name").bounding_box()
    assert box is not None
    await person_input(tab, {"kind": "click", "x": box["x"] + 5, "y": box["y"] + 5},
                       budget=budget)  # fmt: skip
    await person_input(tab, {"kind": "type", "text": "Ada Lovelace"}, budget=budget)
    assert await tab.page.input_value("#name") == "Ada Lovelace"
    await person_input(tab, {"kind": "key", "key": "a", "modifiers": ["Control"]}, budget=budget)
    await person_input(tab, {"kind": "key", "key": "Backspace"}, budget=budget)
    assert await tab.page.input_value("#name") == ""
    await person_input(tab, {"kind": "key", "key": "Tab"}, budget=budget)
    assert await tab.page.evaluate("document.activeElement.id") == "email"
    await tab.page.set_content("<div style='height:5000px'>tall</div>")
    await person_input(tab, {"kind": "scroll", "x": 10, "y": 10, "dx": 0, "dy": 800},
                       budget=budget)  # fmt: skip
    await tab.page.wait_for_function("scrollY > 0")


@pytest.mark.parametrize(
    ("event", "says"),
    [
        ({"kind": "click", "x": -1, "y": 5}, "outside the viewport"),
        ({"kind": "click", "x": 5, "y": 99_999}, "outside the viewport"),
        ({"kind": "click", "x": float("nan"), "y": 5}, "x must be a finite number"),
        ({"kind": "click", "x": 10**400, "y": 5}, "x must be a finite number"),  # JSON's
        ({"kind": "scroll", "x": 5, "y": 5, "dx": 0, "dy": -(10**400)}, "dy must be a finite"),
        ({"kind": "click", "x": True, "y": 5}, "x must be a number"),
        ({"kind": "click", "x": 5, "y": 5, "button": "fourth"}, "button must be"),
        ({"kind": "click", "x": 5, "y": 5, "clicks": 3}, "clicks must be"),
        ({"kind": "scroll", "x": 5, "y": 5, "dx": 0, "dy": 1e9}, "dy must be at most"),
        ({"kind": "type", "text": ""}, "text must be"),
        ({"kind": "type", "text": "x" * 2001}, "text must be"),
        ({"kind": "key", "key": "F13"}, "is not one the live view sends"),
        ({"kind": "key", "key": "a"}, "is not one the live view sends"),
        ({"kind": "key", "key": "Enter", "modifiers": ["Hyper"]}, "modifiers are"),
        ({"kind": "drag"}, "kind must be"),
        ({}, "kind must be"),
    ],
)
async def test_bad_input_is_refused_before_it_reaches_the_page(
    module_tab: Tab, event: dict, says: str
) -> None:
    with pytest.raises(ActionInvalid, match=says):
        await person_input(module_tab, event, budget=Budget(2_000))


async def test_input_to_a_closed_tab_is_browser_closed(browser) -> None:  # type: ignore[no-untyped-def]
    tab = await browser.new_tab()
    await tab.close()
    with pytest.raises(BrowserClosed):
        await person_input(tab, {"kind": "type", "text": "x"}, budget=Budget(2_000))


async def test_the_recorder_records_live_view_input_as_steps(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    recorder = Recorder(tab)
    await recorder.start()
    budget = room()
    for selector, text in (("#name", "Ada"), ("#email", "ada@example.org")):
        box = await tab.page.locator(selector).bounding_box()
        assert box is not None
        await person_input(tab, {"kind": "click", "x": box["x"] + 4, "y": box["y"] + 4},
                           budget=budget)  # fmt: skip
        await person_input(tab, {"kind": "type", "text": text}, budget=budget)
    button = await tab.page.get_by_role("button", name="Sign up").bounding_box()
    assert button is not None
    await person_input(tab, {"kind": "click", "x": button["x"] + 4, "y": button["y"] + 4},
                       budget=budget)  # fmt: skip
    steps = await recorder.stop()
    acts = [(s.action, s.args, s.identity.name if s.identity else "") for s in steps[1:]]
    assert acts == [
        ("fill", {"value": "Ada"}, "Name"),
        ("fill", {"value": "ada@example.org"}, "Email"),
        ("click", {}, "Sign up"),
    ], acts


async def test_a_stop_that_lands_as_a_frame_arrives_still_ends_the_screencast() -> None:
    # The frame's wake-up and the stop's cancel in the same turn of the loop: a wait that
    # swallowed the cancel (asyncio.wait_for on Python 3.11) kept the screencast running,
    # and whatever awaited its stop (a run's end) waited forever.
    cast = Screencast(lambda: None, Frames())
    cast.start()
    await asyncio.sleep(0.05)  # waiting for a frame
    task = cast._task
    assert task is not None and not task.done()
    cast._fresh.set()
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=30)
    assert task in done and task.cancelled()
    await cast.stop()
    assert not cast.running


@pytest.mark.parametrize("failure", [RuntimeError("a bug"), PlaywrightError("Target closed")])
async def test_a_tab_it_keeps_failing_to_follow_is_logged_once(
    tab: Tab,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    failure: Exception,
) -> None:
    """The live view tries again every half second to follow a tab it could not: a tab
    that keeps failing the same way is said once (an unexpected failure with its stack),
    not once a try."""
    tries = asyncio.Event()
    count = [0]

    async def failing(_page: Any) -> Any:
        count[0] += 1
        if count[0] >= 4:
            tries.set()
        raise failure

    monkeypatch.setattr(tab.context, "new_cdp_session", failing)
    cast = Screencast(lambda: tab, Frames())
    with caplog.at_level(logging.INFO, logger="automation.browser"):
        cast.start()
        try:
            async with asyncio.timeout(60):
                await tries.wait()
        finally:
            await cast.stop()
    said = [r for r in caplog.records if "live view could not" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in said]
    unexpected = isinstance(failure, RuntimeError)
    assert (said[0].levelno, said[0].exc_info is not None) == (
        (logging.ERROR, True) if unexpected else (logging.INFO, False)
    )


# Red the first viewport high, green the second: scrolled to the second, a picture of the
# viewport is green all over.
RED_THEN_GREEN = """data:text/html,<body style="margin:0"><div style="height:100vh;
background:%23d00"></div><div style="height:100vh;background:%230a0"></div></body>"""
DECODE = """async (b64) => {
  const img = new Image();
  img.src = 'data:image/jpeg;base64,' + b64;
  await img.decode();
  const canvas = document.createElement('canvas');
  canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
  const g = canvas.getContext('2d');
  g.drawImage(img, 0, 0);
  const [r, gr, b] = g.getImageData(canvas.width >> 1, canvas.height >> 1, 1, 1).data;
  return {width: img.naturalWidth, height: img.naturalHeight, green: gr > 120 && r < 80};
}"""


async def test_frames_and_pictures_come_at_most_the_size_asked_for(
    browser: BrowserSession, tab: Tab
) -> None:
    """A person who sees the tab small is sent small JPEGs: the cast's frames, resized
    while it runs, and the pictures taken instead, which show the viewport where the page
    is scrolled to, as the frames do.  A frame's width and height stay the viewport's."""
    decoder = await browser.new_tab()

    async def decoded(frame: Frame) -> dict[str, Any]:
        return await decoder.page.evaluate(DECODE, base64.b64encode(frame.jpeg).decode())

    size = tab.page.viewport_size
    assert size is not None
    await tab.page.goto(RED_THEN_GREEN)
    await tab.page.evaluate("scrollTo(0, innerHeight)")
    # Drawn scrolled before the cast starts: its first frame may be the last one drawn.
    await tab.page.evaluate(
        "new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
    )
    try:
        frames = Frames()
        cast = Screencast(lambda: tab, frames)
        assert cast.max_size == (1280, 960)
        cast.start()
        try:
            first = await decoded(await frames.next())
            assert first["width"] == size["width"] and first["green"]
            cast.resize(320, 640)
            assert cast.max_size == (320, 640)
            async with asyncio.timeout(60):  # the cast starts again: its first frame
                while (small := await decoded(await frames.next()))["width"] > 320:
                    pass
            assert small["green"] and small["height"] == round(320 * size["height"] / size["width"])
            assert (frames.got[-1].width, frames.got[-1].height) == (size["width"], size["height"])
            with pytest.raises(ActionInvalid, match="max_width must be a whole number"):
                cast.resize(10, 640)
        finally:
            await cast.stop()

        # No frame from Chromium (every 1000th only): the picture taken instead.
        frames = Frames()
        cast = Screencast(lambda: tab, frames, every_nth_frame=1000, max_width=320)
        cast.start()
        try:
            picture = await frames.next()
        finally:
            await cast.stop()
        seen = await decoded(picture)
        assert seen["width"] == 320 and seen["green"], seen
        assert (picture.width, picture.height) == (size["width"], size["height"])
        with pytest.raises(ActionInvalid, match="max_height must be a whole number"):
            Screencast(lambda: tab, frames, max_height=5_000)
    finally:
        await decoder.close()


RESIZES = """data:text/html,<title>Sized</title><script>window.sizes = [];
addEventListener("resize", () => sizes.push([innerWidth, innerHeight]));</script><h1>Sized</h1>"""


async def test_a_live_view_picture_taken_beside_a_step_s_leaves_the_page_at_its_size(
    tab: Tab,
) -> None:
    """Chromium draws the page at a picture's size while it takes a scaled one; two taken at
    once (the live view's, and a step's or an MCP client's screenshot) left the page laid
    out at the small size for a moment: resize events to it, and an action or a script
    then read a 480 px wide layout (a person's click on the picture found its point there).
    One picture of a tab is taken at a time."""
    size = tab.page.viewport_size
    assert size is not None
    await tab.page.goto(RESIZES)
    cast = Screencast(lambda: tab, Frames(), every_nth_frame=1000, max_width=320)
    cast.start()
    try:
        await eventually(lambda: cast._session is not None, what="the live view on the tab")
        for _ in range(8):
            pictures = await asyncio.gather(cast._shot(), tab.screenshot(format="jpeg"))
            assert all(pictures)
        assert await tab.page.evaluate("sizes") == []
        assert await tab.page.evaluate("[innerWidth, innerHeight]") == [
            size["width"],
            size["height"],
        ]
    finally:
        await cast.stop()
