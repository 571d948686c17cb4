"""The URL guard in a real Chromium: navigations the page starts on its own obey the policy.

The session's egress proxy, which resolves names for Chromium, maps every ``*.test`` name
to 127.0.0.1 (the session policy's ``host_map``), so one loopback server plays many sites,
and it remembers each request by the name it was sent to: a refused host must never see
a single request.  The guards' own policies have no such map: to them the ``.test``
names are unresolvable public names, let through, so what is judged here is the guard.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
import pytest_asyncio
from playwright.async_api import CDPSession

from automation import BrowserSession, Tab, UrlBlocked, UrlPolicy
from automation.browser import url_guard
from automation.browser.url_guard import install_url_guard
from tests.conftest import browser_config
from tests.waiting import eventually

PIXEL_GIF = bytes.fromhex(
    "47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b"
)
DOMAINS = UrlPolicy(block_private=False, blocked_domains=("blocked.test",))


class Site:
    """Pages by path for any host name; ``/redirect?to=URL`` answers 302."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        self.hits: list[tuple[str, str]] = []  # (host name, path) of every request
        self.port = 0

    def url(self, host: str, path: str) -> str:
        return f"http://{host}:{self.port}{path}"

    def redirect(self, host: str, to: str) -> str:
        return self.url(host, f"/redirect?to={to}")

    def hosts(self) -> set[str]:
        return {host for host, _path in self.hits}


class _Handler(BaseHTTPRequestHandler):
    site: Site

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        self.site.hits.append(((self.headers.get("Host") or "").rsplit(":", 1)[0], parts.path))
        if parts.path == "/redirect":
            self._answer(302, b"", Location=parse_qs(parts.query)["to"][0])
        elif parts.path == "/pixel.gif":
            self._answer(200, PIXEL_GIF, **{"Content-Type": "image/gif"})
        elif parts.path == "/data.json":
            self._answer(200, b'{"ok": true}', **{"Content-Type": "application/json"})
        elif parts.path in self.site.pages:
            body = self.site.pages[parts.path].encode()
            self._answer(200, body, **{"Content-Type": "text/html"})
        else:
            self._answer(404, b"not found")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.do_GET()

    def _answer(self, status: int, body: bytes, **headers: str) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server() -> Iterator[Site]:
    site = Site()
    handler = type("Handler", (_Handler,), {"site": site})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    site.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield site
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def site(server: Site) -> Site:
    server.pages.clear()
    server.hits.clear()
    return server


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def test_names_browser() -> AsyncIterator[BrowserSession]:
    policy = UrlPolicy(block_private=False, host_map=(("*.test", "127.0.0.1"),))
    config = browser_config(url_policy=policy)
    session = BrowserSession(config)
    await session.start()
    yield session
    await session.close()


@pytest_asyncio.fixture(loop_scope="session")
async def gtab(test_names_browser: BrowserSession) -> AsyncIterator[Tab]:
    tab = await test_names_browser.new_tab()
    yield tab
    await tab.close()


class Blocks(list[tuple[str, str]]):
    """What on_block heard, as (url, reason)."""

    def __call__(self, url: str, reason: str) -> None:
        self.append((url, reason))

    async def wait(self, count: int = 1, timeout_s: float = 60) -> None:
        await eventually(lambda: len(self) >= count, timeout_s)


async def guarded(tab: Tab, policy: UrlPolicy = DOMAINS) -> Blocks:
    blocks = Blocks()
    await install_url_guard(tab.context, policy, on_block=blocks)
    return blocks


# -- what the page does on its own -----------------------------------------------------


async def test_a_link_to_a_blocked_domain_is_stopped_and_the_page_stays(
    gtab: Tab, site: Site
) -> None:
    blocks = await guarded(gtab)
    start = site.url("shop.test", "/start")
    site.pages["/start"] = (
        f'<a id="bad" href="{site.url("blocked.test", "/secret")}">bad</a>'
        f'<a id="sub" href="{site.url("WWW.Blocked.test", "/secret")}">sub</a>'
        f'<a id="good" href="{site.url("shop.test", "/next")}">good</a>'
    )
    site.pages["/next"] = "<h1>next</h1>"
    await gtab.page.goto(start)

    await gtab.page.click("#bad")
    await blocks.wait()
    await gtab.page.click("#sub")
    await blocks.wait(2)
    assert gtab.page.url == start
    assert [url for url, _ in blocks] == [
        site.url("blocked.test", "/secret"),
        site.url("www.blocked.test", "/secret"),
    ]
    assert "blocked.test is on the blocked list" in blocks[0][1]
    assert "www.blocked.test is on the blocked list" in blocks[1][1]

    await gtab.page.click("#good")  # the page still works
    await gtab.page.wait_for_url(site.url("shop.test", "/next"))
    assert not site.hosts() & {"blocked.test", "www.blocked.test"}


async def test_forms_and_scripts_are_stopped_too(gtab: Tab, site: Site) -> None:
    blocks = await guarded(gtab)
    target = site.url("blocked.test", "/collect")
    site.pages["/start"] = (
        f'<form method="post" action="{target}"><input name="q" value="secret">'
        '<button id="send">send</button></form>'
    )
    await gtab.page.goto(site.url("shop.test", "/start"))
    await gtab.page.click("#send")
    await blocks.wait()
    await gtab.page.evaluate("url => { location.href = url }", target)
    await blocks.wait(2)
    await gtab.page.evaluate("url => location.replace(url)", target)
    await blocks.wait(3)
    assert gtab.page.url == site.url("shop.test", "/start")
    assert await gtab.page.input_value("input[name=q]") == "secret"
    assert "blocked.test" not in site.hosts()


async def test_iframes_to_a_blocked_domain_are_stopped(gtab: Tab, site: Site) -> None:
    blocks = await guarded(gtab)
    # Out of process (another site), in process (the same site, then a redirect), and
    # an allowed out-of-process frame with a link of its own.
    site.pages["/start"] = (
        f'<iframe src="{site.url("blocked.test", "/frame")}"></iframe>'
        f'<iframe src="{site.redirect("shop.test", site.url("x.blocked.test", "/f"))}"></iframe>'
        f'<iframe id="ok" src="{site.url("widgets.test", "/widget")}"></iframe>'
    )
    # Inside the out-of-process frame, one more of its own site: a frame the guard cannot
    # place, so every guard of the browser judges it.
    nested = site.redirect("widgets.test", site.url("blocked.test", "/nested"))
    site.pages["/widget"] = (
        f'<p>widget</p><a id="out" href="{site.url("blocked.test", "/from-frame")}">out</a>'
        f'<iframe src="{nested}"></iframe>'
    )
    await gtab.page.goto(site.url("shop.test", "/start"))
    await blocks.wait(3)
    assert {url for url, _ in blocks} == {
        site.url("blocked.test", "/frame"),
        site.url("x.blocked.test", "/f"),
        site.url("blocked.test", "/nested"),
    }
    widget = gtab.page.frame_locator("#ok")
    assert await widget.locator("p").inner_text() == "widget"

    await widget.locator("#out").click()
    await blocks.wait(4)
    assert blocks[3][0] == site.url("blocked.test", "/from-frame")
    assert await widget.locator("p").inner_text() == "widget"  # the frame kept its page
    assert not site.hosts() & {"blocked.test", "x.blocked.test"}


async def test_popups_to_a_blocked_domain_are_stopped(gtab: Tab, site: Site) -> None:
    blocks = await guarded(gtab)
    site.pages["/start"] = (
        f'<a id="new" target="_blank" href="{site.url("blocked.test", "/tab")}">new tab</a>'
        f'<a id="fine" target="_blank" href="{site.url("docs.test", "/help")}">help</a>'
    )
    site.pages["/help"] = "<h1>help</h1>"
    await gtab.page.goto(site.url("shop.test", "/start"))

    async with gtab.context.expect_page() as opened:
        await gtab.page.evaluate("url => window.open(url)", site.url("blocked.test", "/popup"))
    popup = await opened.value
    await blocks.wait()
    async with gtab.context.expect_page() as opened:
        await gtab.page.click("#new")
    await blocks.wait(2)
    assert [url for url, _ in blocks] == [
        site.url("blocked.test", "/popup"),
        site.url("blocked.test", "/tab"),
    ]
    assert not popup.url.startswith(site.url("blocked.test", "/"))

    async with gtab.context.expect_page() as opened:
        await gtab.page.click("#fine")
    helper = await opened.value
    await helper.wait_for_load_state()
    assert await helper.inner_text("h1") == "help"
    assert "blocked.test" not in site.hosts()


# -- server redirects ------------------------------------------------------------------


async def test_redirects_to_a_blocked_domain_are_stopped_at_any_hop(gtab: Tab, site: Site) -> None:
    blocks = await guarded(gtab)
    secret = site.url("blocked.test", "/secret")
    two_hops = site.redirect("shop.test", site.redirect("cdn.test", secret))
    with pytest.raises(Exception, match="ERR_BLOCKED_BY_CLIENT"):
        await gtab.page.goto(two_hops)
    assert blocks == [(secret, blocks[0][1])]
    await gtab.page.wait_for_url("chrome-error://chromewebdata/")  # a fresh tab shows why
    assert ("cdn.test", "/redirect") in site.hits  # the allowed hops ran; the last did not

    site.pages["/start"] = f'<a id="go" href="{site.redirect("shop.test", secret)}">go</a>'
    await gtab.page.goto(site.url("shop.test", "/start"))
    await gtab.page.click("#go")
    await blocks.wait(2)
    assert gtab.page.url == site.url("shop.test", "/start")
    assert "blocked.test" not in site.hosts()


async def test_redirects_to_private_addresses_are_stopped(gtab: Tab, site: Site) -> None:
    # public.test is "public" to the policy (Python cannot resolve it), while Chromium
    # sends it to 127.0.0.1: the page loads, and where it redirects to is judged.
    blocks = await guarded(gtab, UrlPolicy())
    secret = f"http://127.0.0.1:{site.port}/secret"
    targets = [
        secret,
        f"http://0x7f.1:{site.port}/secret",
        f"http://[::ffff:127.0.0.1]:{site.port}/secret",
        f"http://localhost:{site.port}/secret",
        "http://169.254.169.254/latest/meta-data/",
    ]
    site.pages["/start"] = (
        "".join(
            f'<a id="r{i}" href="{site.redirect("public.test", to)}">{i}</a>'
            for i, to in enumerate(targets)
        )
        + f'<a id="direct" href="http://2130706433:{site.port}/secret">direct</a>'
    )
    await gtab.page.goto(site.url("public.test", "/start"))
    for i in range(len(targets)):
        await gtab.page.click(f"#r{i}")
        await blocks.wait(i + 1)
    await gtab.page.click("#direct")
    await blocks.wait(len(targets) + 1)

    reasons = [reason for _, reason in blocks]
    assert "127.0.0.1 is a loopback address" in reasons[0]
    assert "127.0.0.1 is a loopback address" in reasons[1]
    assert "is a loopback address (127.0.0.1)" in reasons[2]
    assert "localhost is a loopback name" in reasons[3]
    assert "169.254.169.254 is the cloud metadata address" in reasons[4]
    assert "127.0.0.1 is a loopback address" in reasons[5]
    assert "TABWRIGHT_BLOCK_PRIVATE_ADDRESSES" in reasons[0]
    assert gtab.page.url == site.url("public.test", "/start")
    assert ("public.test", "/redirect") in site.hits
    assert "/secret" not in {path for _, path in site.hits}


# -- what must keep working ------------------------------------------------------------


async def test_allowed_navigations_and_subresources_work(gtab: Tab, site: Site) -> None:
    blocks = await guarded(gtab)
    site.pages["/start"] = (
        f'<img id="img" src="{site.url("img.test", "/pixel.gif")}">'
        f'<iframe id="f" src="{site.redirect("shop.test", site.url("widgets.test", "/w"))}">'
        "</iframe>"
        f'<form method="post" action="{site.url("shop.test", "/done")}">'
        '<input name="q" value="1"><button id="send">send</button></form>'
    )
    site.pages["/w"] = "<p>widget</p>"
    site.pages["/done"] = "<h1>done</h1>"
    await gtab.page.goto(site.redirect("shop.test", site.url("shop.test", "/start")))
    await gtab.page.wait_for_function("document.getElementById('img').naturalWidth === 1")
    data = await gtab.page.evaluate("fetch('/data.json').then(r => r.json())")
    assert data == {"ok": True}
    assert await gtab.page.frame_locator("#f").locator("p").inner_text() == "widget"
    await gtab.page.click("#send")
    await gtab.page.wait_for_url(site.url("shop.test", "/done"))
    assert blocks == []


async def test_an_allowed_navigation_goes_on_without_placing_its_frame(
    gtab: Tab, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A page load waits for the guard: when the one policy of every guard of the browser
    # allows the URL, which context the frame belongs to does not matter: the browser is
    # not asked.
    await guarded(gtab)
    site.pages["/plain"] = "<h1>plain</h1>"
    asked: list[str] = []
    send = CDPSession.send

    async def spy(self: CDPSession, method: str, params: dict | None = None) -> dict:
        asked.append(method)
        return await send(self, method, params)

    monkeypatch.setattr(CDPSession, "send", spy)
    await gtab.page.goto(site.url("shop.test", "/plain"))
    await gtab.page.goto(site.redirect("shop.test", site.url("img.test", "/plain")))
    assert await gtab.page.inner_text("h1") == "plain"
    assert asked.count("Fetch.continueRequest") == 3  # a page, a redirect and its hop
    assert "Target.getTargetInfo" not in asked and "Page.getFrameTree" not in asked


async def test_the_guard_watches_only_its_own_context(
    test_names_browser: BrowserSession, gtab: Tab, site: Site
) -> None:
    blocks = await guarded(gtab)
    site.pages["/page"] = (
        "<h1>open</h1>"
        f'<iframe id="f" src="{site.redirect("blocked.test", site.url("blocked.test", "/in"))}">'
        "</iframe>"
    )
    site.pages["/in"] = "<p>inner</p>"
    other = await test_names_browser.new_tab()
    try:
        await other.page.goto(site.url("blocked.test", "/page"))
        assert await other.page.inner_text("h1") == "open"
        assert await other.page.frame_locator("#f").locator("p").inner_text() == "inner"
    finally:
        await other.close()
    with pytest.raises(Exception, match="ERR_BLOCKED_BY_CLIENT"):
        await gtab.page.goto(site.url("blocked.test", "/page"))
    assert len(blocks) == 1


# -- a browser behind the session's egress proxy: no guard, the proxy refuses ----------

REFUSING = UrlPolicy(
    block_private=False, blocked_domains=("blocked.test",), host_map=(("*.test", "127.0.0.1"),)
)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def refusing() -> AsyncIterator[BrowserSession]:
    session = BrowserSession(browser_config(url_policy=REFUSING))
    await session.start()
    yield session
    await session.close()


async def test_behind_the_proxy_every_kind_of_navigation_is_refused_without_interception(
    refusing: BrowserSession, site: Site
) -> None:
    # Chromium intercepts nothing (an interception costs every request of the browser);
    # every document a page asks for still reaches no refused host: the proxy refuses it.
    assert refusing.egress is not None
    secret = site.url("blocked.test", "/secret")
    site.pages["/start"] = (
        f'<a id="link" href="{secret}">link</a>'
        f'<a id="tls" href="https://blocked.test:{site.port}/secret">https</a>'
        f'<a id="hop" href="{site.redirect("shop.test", secret)}">hop</a>'
        f'<form method="post" action="{secret}"><button id="post">post</button></form>'
    )
    attempts = [
        "document.getElementById('link').click()",
        "document.getElementById('tls').click()",
        "document.getElementById('hop').click()",
        "document.getElementById('post').click()",
        f"location.href = {secret!r}",
        f"document.body.append(Object.assign(document.createElement('iframe'), "
        f"{{src: {secret!r}}}))",
        f"window.open({secret!r})",
    ]
    for attempt in attempts:  # each in a tab of its own: an error page may follow
        tab = await refusing.new_tab()
        try:
            assert tab.context.browser not in url_guard._interceptors
            await tab.page.goto(site.url("shop.test", "/start"))
            refused = refusing.egress.refused
            await tab.page.evaluate(attempt)
            await eventually(lambda: refusing.egress.refused > refused)  # noqa: B023
        finally:
            await tab.close()
    assert ("shop.test", "/redirect") in site.hits  # the allowed hop ran
    assert "blocked.test" not in site.hosts()


async def test_behind_the_proxy_a_redirect_to_a_refused_https_host_is_url_blocked(
    refusing: BrowserSession, site: Site
) -> None:
    tab = await refusing.new_tab()
    try:
        hop = site.redirect("shop.test", f"https://blocked.test:{site.port}/secret")
        with pytest.raises(UrlBlocked, match=r"blocked\.test is on the blocked list"):
            await tab.navigate(hop)
        site.pages["/next"] = "<h1>next</h1>"
        await tab.navigate(site.url("shop.test", "/next"))  # the tab still works
        assert "blocked.test" not in site.hosts()
    finally:
        await tab.close()


async def test_behind_the_proxy_local_schemes_stay_refused_by_chromium(
    refusing: BrowserSession, site: Site
) -> None:
    # The guard never saw these (no network request: Chromium refuses a page's navigation
    # to them itself), so nothing of theirs moved to the proxy; they stay refused.
    tab = await refusing.new_tab()
    local = ["file:///etc/hostname", f"view-source:{site.url('shop.test', '/start')}",
             "chrome://version", f"filesystem:{site.url('shop.test', '/temporary/x')}"]  # fmt: skip
    try:
        site.pages["/start"] = "<h1>start</h1>"
        site.pages["/last"] = "<p id=last>last</p>"
        await tab.page.goto(site.url("shop.test", "/start"))
        await tab.page.evaluate(
            """([local, last]) => {
              for (const url of local) {
                window.open(url);
                document.body.append(Object.assign(document.createElement("iframe"), {src: url}));
              }
              document.body.append(Object.assign(document.createElement("iframe"), {src: last}));
            }""",
            [local, site.url("shop.test", "/last")],
        )
        await tab.page.frame_locator("iframe >> nth=-1").locator("#last").wait_for()
        for url in local:
            await tab.page.evaluate("url => { location.href = url }", url)
        await tab.page.goto(site.url("shop.test", "/last"))  # after the attempts above
        shown = [frame.url for page in tab.context.pages for frame in page.frames]
        assert not [url for url in shown if url.split(":")[0] in {"file", "view-source",
                    "chrome", "filesystem"}], shown  # fmt: skip
    finally:
        await tab.close()
