"""The egress proxy in a real Chromium: every request of every kind passes the URL policy.

A page on an allowed loopback server (``allowed``) tries every way a page can reach
another host at a second loopback server on another port (``other``), which the policy
does not allow.  ``other`` counts every connection it accepts: it must see none, while
the same kinds of request to the allowed origin work.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import websockets
from playwright.async_api import Error as PlaywrightError

from automation import BrowserSession, Tab, UrlPolicy
from automation.browser.config import CHROMIUM, HEADLESS_SHELL, QUIET_CHROMIUM_ARGS
from automation.browser.launch import chromium_sandbox
from automation.browser.problems import ProblemWatcher
from automation.errors import BrowserError
from tests.automation.browser import counting
from tests.automation.browser.counting import Counting
from tests.automation.browser.test_problems import Collected
from tests.conftest import browser_config
from tests.waiting import eventually

# The two loopback servers, as fixtures of this module (tests/automation/browser/counting.py).
servers, allowed, other = counting.servers, counting.allowed, counting.other


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def echo_port() -> AsyncIterator[int]:
    """A WebSocket echo server on loopback: the allowed WebSocket origin."""

    async def echo(ws: Any) -> None:
        async for message in ws:
            await ws.send(message)

    async with websockets.serve(echo, "127.0.0.1", 0) as server:
        yield next(iter(server.sockets)).getsockname()[1]


MARKER = f"--tabwright-egress-test={uuid.uuid4().hex}"  # finds this module's Chromium


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def session(
    servers: tuple[Counting, Counting], echo_port: int
) -> AsyncIterator[BrowserSession]:
    policy = UrlPolicy(allowed_domains=(f"127.0.0.1:{servers[0].port}", f"127.0.0.1:{echo_port}"))
    session = BrowserSession(browser_config(url_policy=policy, args=(*QUIET_CHROMIUM_ARGS, MARKER)))
    await session.start()
    yield session
    await session.close()


@pytest_asyncio.fixture(loop_scope="session")
async def page_tab(session: BrowserSession, allowed: Counting) -> AsyncIterator[Tab]:
    tab = await session.new_tab()
    await tab.page.goto(f"{allowed.origin()}/blank")
    yield tab
    await tab.close()


# Each kind of request, as a function of the target origin that resolves to what happened.
ATTEMPTS = r"""
async ([origin, wsOrigin]) => {
  // A stuck attempt still ends the test (a refused iframe fires no event at all).
  const settle = (start, ms = 5000) => new Promise((resolve) => {
    start(resolve);
    setTimeout(() => resolve("no answer"), ms);
  });
  const out = {};
  const tryFetch = (url, init) =>
    fetch(url, init).then(async (r) => "status " + r.status + " " + await r.text(),
                          (e) => "error " + e);
  out.fetchGet = await tryFetch(origin + "/data");
  out.fetchPost = await tryFetch(origin + "/data", {method: "POST", body: "secret"});
  out.xhr = await settle((done) => {
    const x = new XMLHttpRequest();
    x.open("GET", origin + "/data");
    x.onload = () => done("status " + x.status);
    x.onerror = () => done("error");
    x.send();
  });
  out.websocket = await settle((done) => {
    const ws = new WebSocket(wsOrigin.replace("http", "ws") + "/");
    ws.onopen = () => ws.send("ping");
    ws.onmessage = (e) => { done("echo " + e.data); ws.close(); };
    ws.onerror = () => done("error");
  });
  out.eventsource = await settle((done) => {
    const es = new EventSource(origin + "/events");
    es.onmessage = (e) => { done("message " + e.data); es.close(); };
    es.onerror = () => { done("error"); es.close(); };
  });
  out.img = await settle((done) => {
    const img = new Image();
    img.onload = () => done("loaded " + img.naturalWidth);
    img.onerror = () => done("error");
    img.src = origin + "/pixel.gif";
  });
  out.script = await settle((done) => {
    const s = document.createElement("script");
    s.onload = () => done("ran " + window.scriptRan);
    s.onerror = () => done("error");
    s.src = origin + "/script.js";
    document.head.append(s);
  });
  out.css = await settle((done) => {
    const p = document.createElement("p");
    p.id = "styled";
    document.body.append(p);
    const link = document.createElement("link");
    link.rel = "stylesheet";
    link.onload = () => done("color " + getComputedStyle(p).color);
    link.onerror = () => done("error");
    link.href = origin + "/style.css";
    document.head.append(link);
  });
  out.worker = await settle((done) => {
    const w = new Worker("/worker.js");  // the worker is the page's own; its fetch is not
    w.onmessage = (e) => { done(e.data); w.terminate(); };
    w.onerror = () => done("worker failed");
    w.postMessage(origin + "/data");
  });
  out.iframe = await settle((done) => {
    const f = document.createElement("iframe");
    f.onload = () => {
      let text = "blocked";
      try { text = f.contentDocument.getElementById("inner").textContent; } catch (e) {}
      done(text);
    };
    f.src = origin + "/frame";
    document.body.append(f);
  }, 2000);
  return out;
}
"""


async def test_nothing_of_any_kind_reaches_a_host_off_the_allow_list(
    page_tab: Tab, allowed: Counting, other: Counting
) -> None:
    page = page_tab.page
    # A beacon can't be awaited: send one to the refused host first, then one to the
    # allowed host, and wait until that one arrives.
    await page.evaluate(
        "([a, b]) => { navigator.sendBeacon(b + '/beacon', 'secret');"
        " navigator.sendBeacon(a + '/beacon', 'ok'); }",
        [allowed.origin(), other.origin()],
    )
    await eventually(lambda: ("POST", "/beacon") in allowed.requests)

    results = await page.evaluate(ATTEMPTS, [other.origin(), other.origin()])

    assert other.connections == 0, other.requests
    assert other.requests == []
    assert results["fetchGet"].startswith("error TypeError")
    assert results["fetchPost"].startswith("error TypeError")
    assert results["worker"].startswith("error TypeError")
    for kind in ("xhr", "websocket", "eventsource", "img", "script", "css"):
        assert results[kind] == "error", kind
    assert results["iframe"] in ("blocked", "no answer")


async def test_the_same_kinds_to_the_allowed_origin_work(
    page_tab: Tab, allowed: Counting, echo_port: int
) -> None:
    ws_origin = f"http://127.0.0.1:{echo_port}"
    results = await page_tab.page.evaluate(ATTEMPTS, [allowed.origin(), ws_origin])
    assert results == {
        "fetchGet": 'status 200 {"ok": true}',
        "fetchPost": 'status 200 {"got": "secret"}',
        "xhr": "status 200",
        "websocket": "echo ping",
        "eventsource": "message hello",
        "img": "loaded 1",
        "script": "ran 1",
        "css": "color rgb(1, 2, 3)",
        "worker": "status 200",
        "iframe": "framed",
    }
    assert ("POST", "/data") in allowed.requests


async def test_a_rule_with_a_port_allows_that_port_only(
    page_tab: Tab, allowed: Counting, other: Counting, session: BrowserSession
) -> None:
    # The same address on two ports; only the port the rule names gets through, and the
    # refusal comes from the proxy (the page's fetch is not a document the guard sees).
    refused_before = session.egress.refused if session.egress else 0
    status = await page_tab.page.evaluate(
        "url => fetch(url).then(r => r.status, e => 'error')", f"{other.origin()}/data"
    )
    assert status == "error"
    assert session.egress is not None and session.egress.refused == refused_before + 1
    assert other.connections == 0
    ok = await page_tab.page.evaluate(
        "url => fetch(url).then(r => r.status)", f"{allowed.origin()}/data"
    )
    assert ok == 200


async def test_an_idle_browser_calls_nobody(
    servers: tuple[Counting, Counting], caplog: pytest.LogCaptureFixture
) -> None:
    # A browser we launch with its default switches, a page open and a password typed (what
    # would set off sync, sign-in checks, component and autofill downloads): over a window
    # longer than Chromium 156 took to make its first such call, nothing but the page passes
    # the proxy.  (A window, not a condition: what is tested is that nothing happens.)
    allowed = servers[0]
    policy = UrlPolicy(allowed_domains=(f"127.0.0.1:{allowed.port}",))
    session = BrowserSession(browser_config(url_policy=policy))
    await session.start()
    try:
        tab = await session.new_tab()
        await tab.page.goto(f"{allowed.origin()}/blank")
        await tab.page.set_content("<form><input name=u><input type=password name=p></form>")
        await tab.page.fill("input[name=u]", "someone")
        await tab.page.fill("input[type=password]", "secret")
        await asyncio.sleep(8)
        assert session.egress is not None
        calls = [r.getMessage() for r in caplog.records if "egress proxy" in r.getMessage()]
        assert (session.egress.refused, calls) == (0, [])
    finally:
        await session.close()


# -- names resolved by the proxy -------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="session")
async def open_session(other: Counting) -> AsyncIterator[BrowserSession]:
    """Private addresses blocked, no allow list; Chromium's own resolver is told that
    ``rebind.example`` is 127.0.0.1, as a rebinding DNS server would tell it at connect
    time, while the policy's resolver can't resolve the name at all."""
    policy = UrlPolicy(host_map=(("mapped.example", "127.0.0.1"),))
    rules = "--host-resolver-rules=MAP rebind.example 127.0.0.1"
    session = BrowserSession(browser_config(url_policy=policy, args=(*QUIET_CHROMIUM_ARGS, rules)))
    await session.start()
    yield session
    await session.close()


async def fetch_from_blank(session: BrowserSession, url: str) -> None:
    """A fetch from a fresh tab; what reaches the server is what the tests count."""
    tab = await session.new_tab()
    try:
        await tab.page.evaluate("url => fetch(url, {mode: 'no-cors'}).catch(e => null)", url)
    finally:
        await tab.close()


async def test_a_name_that_resolves_to_a_private_address_is_refused(
    open_session: BrowserSession, other: Counting
) -> None:
    assert open_session.egress is not None
    refused = open_session.egress.refused
    urls = [f"http://mapped.example:{other.port}/data", f"http://localhost:{other.port}/data"]
    name = socket.gethostname()  # /etc/hosts maps it to a local address on most machines
    try:
        local = {info[4][0] for info in socket.getaddrinfo(name, None)}
    except OSError:
        local = set()
    if local and all(a.startswith("127.") or a == "::1" for a in local):
        urls.append(f"http://{name}:{other.port}/data")
    for url in urls:
        await fetch_from_blank(open_session, url)
    assert other.connections == 0
    assert open_session.egress.refused >= refused + len(urls)


async def test_the_browser_never_resolves_a_name_the_proxy_checks(
    open_session: BrowserSession, other: Counting
) -> None:
    # Without the proxy, the guard's lookup finds nothing (let through) and Chromium's
    # own resolver then connects to 127.0.0.1: the rebinding gap.  With it, Chromium
    # hands the name to the proxy, whose one lookup is the one that is checked and used.
    await fetch_from_blank(open_session, f"http://rebind.example:{other.port}/data")
    tab = await open_session.new_tab()
    try:
        with contextlib.suppress(PlaywrightError):  # refused: an error page, or the 403
            await tab.page.goto(f"http://rebind.example:{other.port}/frame")
        await tab.page.wait_for_load_state()
        shown = None
        for _ in range(20):  # an error page may still be committing
            try:
                shown = await tab.page.content()
                break
            except PlaywrightError:
                await asyncio.sleep(0.1)
        assert shown is not None and "framed" not in shown
    finally:
        await tab.close()
    assert other.connections == 0


async def test_an_allowed_name_connects_to_the_address_the_proxy_checked(
    other: Counting,
) -> None:
    policy = UrlPolicy(
        allowed_domains=(f"mapped.example:{other.port}",),
        host_map=(("mapped.example", "127.0.0.1"),),
    )
    async with BrowserSession(browser_config(url_policy=policy)) as session:
        tab = await session.new_tab()
        await tab.page.goto(f"http://mapped.example:{other.port}/frame")
        assert await tab.page.inner_text("#inner") == "framed"
    assert ("GET", "/frame") in other.requests


# -- WebRTC ------------------------------------------------------------------------------


@pytest.mark.parametrize("executable", [CHROMIUM, HEADLESS_SHELL])
async def test_webrtc_sends_no_udp_around_the_proxy(executable: str, allowed: Counting) -> None:
    """Each Chromium a session may launch (they obey different switches)."""
    if not os.access(executable, os.X_OK):
        pytest.skip(f"{executable} is not installed")
    received: list[bytes] = []
    loop = asyncio.get_running_loop()

    class Udp(asyncio.DatagramProtocol):
        def datagram_received(self, data: bytes, addr: Any) -> None:
            received.append(data)

    transport, _ = await loop.create_datagram_endpoint(Udp, local_addr=("127.0.0.1", 0))
    policy = UrlPolicy(allowed_domains=(f"127.0.0.1:{allowed.port}",))
    session = BrowserSession(browser_config(url_policy=policy, executable_path=executable))
    try:
        tab = await session.new_tab()
        await tab.page.goto(f"{allowed.origin()}/blank")
        port = transport.get_extra_info("sockname")[1]
        state = await tab.page.evaluate(
            """async (port) => {
              const pc = new RTCPeerConnection({iceServers: [{urls: `stun:127.0.0.1:${port}`}]});
              pc.createDataChannel("x");
              await pc.setLocalDescription(await pc.createOffer());
              await new Promise((resolve) => {
                if (pc.iceGatheringState === "complete") resolve();
                pc.onicegatheringstatechange = () =>
                  pc.iceGatheringState === "complete" && resolve();
                setTimeout(resolve, 5000);
              });
              const state = pc.iceGatheringState;
              pc.close();
              return state;
            }""",
            port,
        )
        assert state == "complete"  # gathering ended: whatever it would send was sent
        assert received == []
    finally:
        await session.close()
        transport.close()


# -- how Chromium is launched -----------------------------------------------------------


def launched_command_line() -> str:
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if MARKER in cmdline and "--type=" not in cmdline:
            return cmdline
    raise AssertionError("this module's Chromium is not running")


async def test_chromium_is_launched_behind_the_proxy(session: BrowserSession) -> None:
    assert session.egress is not None
    cmdline = launched_command_line()
    assert f"--proxy-server={session.egress.url}" in cmdline
    assert "--proxy-bypass-list=<-loopback>" in cmdline
    assert "--webrtc-ip-handling-policy=disable_non_proxied_udp" in cmdline
    assert "--force-webrtc-ip-handling-policy=disable_non_proxied_udp" in cmdline
    assert "--site-per-process" in cmdline
    # Root can't run Chromium's sandbox: only here is it off.
    assert ("--no-sandbox" in cmdline) == (not chromium_sandbox(None))


def test_the_sandbox_is_on_unless_root_or_forced() -> None:
    assert chromium_sandbox(None, euid=1000) is True
    assert chromium_sandbox(None, euid=0) is False
    assert chromium_sandbox(True, euid=0) is True
    assert chromium_sandbox(False, euid=1000) is False


async def test_a_sandbox_that_cannot_start_says_how_to_fix_it() -> None:
    if chromium_sandbox(None):
        pytest.skip("not root: the sandbox may well start here")
    session = BrowserSession(browser_config(chromium_sandbox=True))
    try:
        with pytest.raises(BrowserError) as caught:
            await session.start()
    finally:
        await session.close()
    assert "TABWRIGHT_CHROMIUM_SANDBOX=0" in caught.value.hint
    assert "sandbox could not start" in caught.value.hint


def requests(told: Collected) -> list[str]:
    return [p.text for p in told.problems if p.kind == "request"]


async def test_a_request_the_proxy_refused_is_told_to_the_run_with_why(
    page_tab: Tab, allowed: Counting, other: Counting
) -> None:
    """A fetch and a page's own navigation to a host the policy refuses: the run's problems
    say each was refused and why (they said 403, or the tunnel's network error, as if the
    site had answered so)."""
    told = Collected()
    async with ProblemWatcher(page_tab, told):
        await page_tab.page.evaluate("(o) => fetch(o + '/data').catch(() => null)", other.origin())
        await page_tab.page.evaluate("(o) => { location.href = o + '/elsewhere'; }", other.origin())
        await eventually(lambda: len(requests(told)) >= 2, what="both told")
    texts = requests(told)
    why = "is not on the allowed list"
    assert len(texts) == 2 and all("refused" in t and why in t for t in texts), texts
    assert other.connections == 0
