"""An MCP client drives Tabwright over streamable HTTP with a person's API token, against a
real daphne: the session is a run on the person's dashboard, shown live; the person
pauses it (the client's calls answer paused_by_person) and resumes; the client ends the
session; the person saves it as a scenario, which replays to success.  A person who pauses
a session whose call is in flight, then stops it, ends both at once; one who resumes
before that call ends finds the session going on.  Without a token, or with another
person's, the endpoint refuses."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from playwright.async_api import Browser, expect

from dashboard.runs.carry import COMMAND_ANSWER_MS
from tests.daphne import api_token
from tests.daphne import log_in as http_log_in
from tests.e2e.ui import (
    LIVE_MS,
    OTHER_PASSWORD,
    OTHER_USERNAME,
    PASSWORD,
    SOCKET_SPY,
    UI_MS,
    USERNAME,
    Server,
    click_picture,
    live_picture,
    log_in,
    save,
    save_as_scenario,
)

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="session")]

ACCEPT = {"accept": "application/json, text/event-stream"}
HELLO = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"},
}}  # fmt: skip
MAX_OPEN_SESSIONS = 32  # a person's (dashboard.api.mcp)


@asynccontextmanager
async def mcp_client(
    base_url: str, token: str, headers: dict[str, bytes] | None = None
) -> AsyncIterator[Client]:
    """The MCP SDK's client of ``base_url``'s /mcp; ``headers`` sent as the bytes given."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    http.headers.update(headers or {})
    async with Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as client:
        yield client


async def text_of(client: Client, name: str, args: dict[str, object]) -> tuple[bool, str]:
    result = await client.call_tool(name, args)
    return not result.is_error, result.content[0].text


def mcp_runs(page: httpx.Client) -> list[dict[str, object]]:
    return [r for r in page.get("/api/runs").json() if r["kind"] == "mcp"]


def api(base_url: str, token: str) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.Client(base_url=base_url, timeout=20, headers=headers)


async def test_an_mcp_session_is_a_run_a_person_pauses_and_saves_as_a_scenario(
    server: Server, ui_browser: Browser
) -> None:
    base = server.base_url
    token = api_token(http_log_in(base, (USERNAME, PASSWORD)), "my editor")
    mine = api(base, token)
    context = await ui_browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(UI_MS)
    try:
        async with mcp_client(base, token) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"navigate", "snapshot", "click", "fill", "steps", "verify"} <= names
            assert not names & {"file_read", "shell", "read_page"}
            ok, said = await text_of(client, "navigate", {"url": f"{base}/demo/form.html"})
            assert ok, said
            [run] = mcp_runs(mine)
            assert run["status"] == "running"
            ok, snap = await text_of(client, "find", {"text": "Name"})
            assert ok and 'textbox "Name"' in snap, snap
            name_ref = snap.split("[")[1].split("]")[0]
            ok, said = await text_of(client, "fill", {"ref": name_ref, "value": "Ada"})
            assert ok, said

            # The person watches it live and pauses it.
            page = await context.new_page()
            await page.add_init_script(SOCKET_SPY)
            await log_in(page, base)
            await page.goto(f"{base}/runs/{run['id']}/")
            await live_picture(page)
            await page.locator("[data-command=pause]").click()
            await expect(page.locator("#status")).to_have_text("paused", timeout=LIVE_MS)
            ok, said = await text_of(client, "snapshot", {"interactive": True})
            assert not ok and said.startswith("error paused_by_person"), said
            await save(page, "mcp-session-paused.png")
            # The person takes over: a click on the picture ticks the terms box.
            probe = await context.new_page()
            await probe.set_viewport_size({"width": 1280, "height": 800})  # the run's tab's
            await probe.goto(f"{base}/demo/form.html")
            box = await probe.get_by_label("I accept the terms").bounding_box()
            await probe.close()
            assert box is not None
            x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
            await click_picture(page, x, y, 1280)
            await page.locator("[data-command=resume]").click()
            await expect(page.locator("#status")).to_have_text("running", timeout=LIVE_MS)

            ok, snap = await text_of(client, "snapshot", {"interactive": True})
            assert ok, snap
            email = next(line for line in snap.splitlines() if 'textbox "Email"' in line)
            email_ref = email.split("[")[1].split("]")[0]
            ok, said = await text_of(
                client, "fill", {"ref": email_ref, "value": "ada@example.org", "delta": True}
            )
            assert ok and "ada@example.org" not in said.split("\n")[0], said
            ok, said = await text_of(
                client, "verify", {"kind": "value", "ref": email_ref, "value": "ada@example.org"}
            )
            assert ok, said
        # The client ended the session (DELETE): the run ends, stopped with that reason.
        deadline = time.monotonic() + 20
        while (run := mine.get(f"/api/runs/{run['id']}").json())["status"] == "running":
            assert time.monotonic() < deadline, run
            await asyncio.sleep(0.1)
        assert run["status"] == "stopped", run
        steps = [(s["action"], s["by"]) for s in run["steps"]]
        assert steps == [
            ("navigate", "mcp"), ("find", "mcp"), ("fill", "mcp"), ("check", "person"),
            ("snapshot", "mcp"), ("fill", "mcp"), ("expect", "mcp"),
        ], steps  # fmt: skip

        await page.goto(f"{base}/runs/{run['id']}/")
        # Checks of the session's last page are proposed, as at an agent's run's end.
        await page.get_by_role("link", name="Save as scenario…").click()
        proposed = page.get_by_test_id("proposed-checks")
        await expect(proposed).to_contain_text("the page shows no error")
        await expect(proposed).to_contain_text("I accept the terms")
        await page.go_back()
        await save_as_scenario(page, "Sign up from MCP", screenshot="mcp-save.png")
        scenario_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
        replay = mine.post(f"/api/scenarios/{scenario_id}/replays", json={})
        assert replay.status_code == 201, replay.text
        deadline = time.monotonic() + 60
        while (done := mine.get(f"/api/runs/{replay.json()['id']}").json())["status"] in (
            "queued", "pending", "running",
        ):  # fmt: skip
            assert time.monotonic() < deadline, done
            await asyncio.sleep(0.2)
        assert done["status"] == "succeeded", done
    finally:
        await context.close()


async def test_the_mcp_endpoint_wants_a_token_and_keeps_sessions_apart(server: Server) -> None:
    base = server.base_url
    token = api_token(http_log_in(base, (USERNAME, PASSWORD)), "mine")
    theirs = api_token(http_log_in(base, (OTHER_USERNAME, OTHER_PASSWORD)), "theirs")
    async with httpx.AsyncClient(base_url=base, timeout=60, headers=ACCEPT) as http:
        refused = await http.post("/mcp", json=HELLO)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer")
        wrong = await http.post("/mcp", json=HELLO, headers={"Authorization": "Bearer tw_nope"})
        assert wrong.status_code == 401
        mine = await http.post("/mcp", json=HELLO, headers={"Authorization": f"Bearer {token}"})
        assert mine.status_code == 200, mine.text
        session = mine.headers["mcp-session-id"]
        # The stateless era has no session to keep a tab in: refused, naming the versions
        # that have one (the SDK's client falls back to them by itself).
        discover = {"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {}}
        stateless = await http.post("/mcp", json=discover, headers={
            "Authorization": f"Bearer {token}", "mcp-protocol-version": "2026-07-28",
        })  # fmt: skip
        error = stateless.json()["error"]
        assert stateless.status_code == 400 and stateless.json()["id"] == 7
        assert error["code"] == -32022 and "2025-06-18" in error["data"]["supported"]
    async with mcp_client(base, token) as client:  # a session of mine, with a run
        ok, said = await text_of(client, "navigate", {"url": f"{base}/demo/form.html"})
        assert ok, said
        run = mcp_runs(api(base, token))[0]  # the newest: this session's
        assert run["status"] == "running" and mcp_runs(api(base, theirs)) == []
        ok, snap = await text_of(client, "find", {"text": "Name"})
        name_ref = snap.split("[")[1].split("]")[0]
        # A secret its owner was not granted is refused, named, never filled.
        ok, said = await text_of(client, "fill", {"ref": name_ref, "value": "${SECRET:NOPE}"})
        assert not ok and said.startswith("error secret_not_granted") and "NOPE" in said, said
        # The person stops the run: the session's next call says it has ended.
        assert api(base, token).post(f"/api/runs/{run['id']}/stop").status_code == 200
        ok, said = await text_of(client, "snapshot", {})
        assert not ok and said.startswith("error session_ended"), said
        assert api(base, token).get(f"/api/runs/{run['id']}").json()["status"] == "stopped"
    # Their token with my session's id: as if there were no such session.
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    async with httpx.AsyncClient(base_url=base, timeout=60, headers=ACCEPT) as http:
        stolen = await http.post("/mcp", json=call, headers={
            "Authorization": f"Bearer {theirs}", "mcp-session-id": session,
            "mcp-protocol-version": "2025-06-18",
        })  # fmt: skip
        assert stolen.status_code == 404, stolen.text


async def test_a_burst_of_initialize_requests_opens_no_more_sessions_than_the_cap(
    server: Server,
) -> None:
    """Many initialize requests of one person at once (a client's retry loop, a script
    gone wrong) open as many sessions as the cap allows, and every other is answered 429:
    none slips past the check while the others' sessions are still being opened.
    Another person opens theirs meanwhile."""
    base = server.base_url
    theirs = api_token(http_log_in(base, (OTHER_USERNAME, OTHER_PASSWORD)), "burst")
    mine = api_token(http_log_in(base, (USERNAME, PASSWORD)), "next to a burst")
    burst = 4 * MAX_OPEN_SESSIONS
    limits = httpx.Limits(max_connections=burst + 1)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as http:

        async def hello(token: str) -> httpx.Response:
            auth = {"Authorization": f"Bearer {token}"}
            return await http.post("/mcp", json=HELLO, headers={**ACCEPT, **auth})

        async def end(token: str, answer: httpx.Response) -> None:
            ended = await http.delete("/mcp", headers={
                **ACCEPT, "Authorization": f"Bearer {token}",
                "mcp-session-id": answer.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-06-18",
            })  # fmt: skip
            assert ended.status_code == 200, ended.text

        *answers, other = await asyncio.gather(*[hello(theirs) for _ in range(burst)], hello(mine))
        opened = [answer for answer in answers if answer.status_code == 200]
        try:
            statuses = [answer.status_code for answer in answers]
            counted = {status: statuses.count(status) for status in set(statuses)}
            assert counted == {200: MAX_OPEN_SESSIONS, 429: burst - MAX_OPEN_SESSIONS}
            assert other.status_code == 200, other.text
            assert (await hello(theirs)).status_code == 429
        finally:
            for answer in opened:
                await end(theirs, answer)
        await end(mine, other)
        # Ended, they leave room again.
        again = await hello(theirs)
        assert again.status_code == 200, again.text
        await end(theirs, again)


async def test_a_session_starts_signed_in_with_a_profile_whose_name_is_beyond_ascii(
    server: Server,
) -> None:
    """A person saves an MCP session's sign-in as "Büro"; a client naming it in the
    sign-in header, in UTF-8 as clients send it (or in latin-1, as an older one may),
    starts its session signed in with it."""
    base = server.base_url
    token = api_token(http_log_in(base, (USERNAME, PASSWORD)), "the office's")
    mine = api(base, token)
    async with mcp_client(base, token) as client:
        ok, said = await text_of(client, "navigate", {"url": f"{base}/demo/form.html"})
        assert ok, said
        items = {"op": "set", "items": {"office": "signed in"}}
        ok, said = await text_of(client, "storage", items)
        assert ok, said
        run = mcp_runs(mine)[0]  # the newest: this session's
        saved = mine.post(f"/api/runs/{run['id']}/signin", json={"name": "Büro"})
        assert saved.status_code == 201, saved.text
    for encoding in ("utf-8", "latin-1"):
        named = {"X-Tabwright-Signin-Profile": "Büro".encode(encoding)}
        async with mcp_client(base, token, named) as client:
            ok, said = await text_of(client, "navigate", {"url": f"{base}/demo/form.html"})
            assert ok, f"{encoding}: {said}"
            ok, said = await text_of(client, "storage", {"op": "get"})
            assert ok and "office = signed in" in said, f"{encoding}: {said}"


async def test_a_call_s_timeout_is_read_as_its_session_reads_it(server: Server) -> None:
    """/mcp waits for a call's answer as long as the call's ``timeout_ms`` says, read as
    the session reads it: a number of ms, whole or not (40000.0 is 40 s, not the default),
    anything else refused at once, as the session would, before a run is made for it."""
    base = server.base_url
    token = api_token(http_log_in(base, (USERNAME, PASSWORD)), "timeouts")
    mine = api(base, token)
    before = mcp_runs(mine)
    form = f"{base}/demo/form.html"
    async with mcp_client(base, token) as client:
        refused = "error action_invalid: navigate: timeout_ms must be between 1 and 600000"
        for bad in (True, "40000", 0, 600_001):
            ok, said = await text_of(client, "navigate", {"url": form, "timeout_ms": bad})
            assert not ok and said == refused, f"{bad!r}: {said}"
        assert mcp_runs(mine) == before
        # Its first call's whole budget, a millisecond, is over before the browser opens.
        ok, said = await text_of(client, "navigate", {"url": form, "timeout_ms": 1.0})
        assert not ok and said.startswith(
            "error budget_exceeded: the session's browser did not open within the call's 1 ms"
        ), said
        ok, said = await text_of(client, "navigate", {"url": form, "timeout_ms": 40000.0})
        assert ok, said


async def started(http: httpx.AsyncClient, run_id: int, action: str) -> None:
    """Until the run's ``action`` is under way (its page was told)."""
    while True:
        events = (await http.get(f"/api/runs/{run_id}/events")).json()["events"]
        if any(e["type"] == "action.started" and e["name"] == action for e in events):
            return
        await asyncio.sleep(0.05)  # (the event is the run's store: nothing to await here)


# Each answer comes within the product's deadline for a command (and room for a loaded
# machine) or the test fails: a command that waited for the call would take its 600 s.
WITHIN_S = COMMAND_ANSWER_MS / 1000 + UI_MS / 1000


@asynccontextmanager
async def paused_in_flight(
    base: str, expression: str
) -> AsyncIterator[tuple[httpx.AsyncClient, Client, int, asyncio.Task[tuple[bool, str]]]]:
    """A session whose client's evaluate of ``expression`` (600 s) is in flight when its
    person pauses it through the API (the pause waits for the call to end): the person's
    API client, the MCP client, the run's id, the call."""
    token = api_token(http_log_in(base, (USERNAME, PASSWORD)), "a call in flight")
    mine = httpx.AsyncClient(base_url=base, timeout=WITHIN_S, headers={
        "Authorization": f"Bearer {token}"})  # fmt: skip
    try:
        async with mcp_client(base, token) as client:
            ok, said = await text_of(client, "navigate", {"url": f"{base}/demo/form.html"})
            assert ok, said
            run_id = mcp_runs(api(base, token))[0]["id"]  # the newest: this session's
            call = asyncio.create_task(text_of(client, "evaluate", {
                "expression": expression, "timeout_ms": 600_000}))  # fmt: skip
            try:
                async with asyncio.timeout(WITHIN_S):
                    await started(mine, run_id, "evaluate")
                paused = await mine.post(f"/api/runs/{run_id}/pause")
                assert paused.status_code == 200, paused.text
                yield mine, client, run_id, call
            finally:
                call.cancel()  # answered by then, unless the test failed
    finally:
        await mine.aclose()


async def test_a_stop_after_a_pause_ends_the_call_in_flight_and_answers(server: Server) -> None:
    async with paused_in_flight(server.base_url, "new Promise(() => {})") as (
        mine, client, run_id, hung,
    ):  # fmt: skip
        # The pause waits for the call to end; the stop ends the call, and the pause.
        stopped = await mine.post(f"/api/runs/{run_id}/stop")
        assert stopped.status_code == 200, stopped.text
        assert stopped.json()["status"] == "stopped", stopped.json()
        async with asyncio.timeout(WITHIN_S):
            ok, said = await hung
        assert not ok and said.startswith("error evaluate_cancelled"), said
        ok, said = await text_of(client, "snapshot", {})
        assert not ok and said.startswith("error session_ended"), said


@asynccontextmanager
async def gate() -> AsyncIterator[tuple[str, asyncio.Event]]:
    """A loopback address whose answer waits until the test sets the event: a page's fetch
    of it is a call in flight for as long as the test wants, not for a guessed time."""
    opened = asyncio.Event()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            await opened.wait()
            writer.write(b"HTTP/1.1 200 OK\r\nAccess-Control-Allow-Origin: *\r\n"
                         b"Content-Type: text/plain\r\nContent-Length: 6\r\n"
                         b"Connection: close\r\n\r\nopened")  # fmt: skip
            await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/", opened
    finally:
        opened.set()  # a fetch still waiting ends, and with it the server's wait
        server.close()
        await server.wait_closed()


async def test_a_resume_before_the_call_in_flight_ends_leaves_the_session_running(
    server: Server,
) -> None:
    """A person pauses a session while a call is in flight (the pause waits for it), then
    resumes before it ends: when it ends the session goes on, its next call answered, not
    paused_by_person until a second Resume."""
    async with gate() as (url, opened):
        fetch = f"fetch({url!r}).then((r) => r.text())"
        async with paused_in_flight(server.base_url, fetch) as (mine, client, run_id, call):
            resumed = await mine.post(f"/api/runs/{run_id}/resume")
            assert resumed.status_code == 200, resumed.text
            opened.set()  # the call in flight ends now, after the resume
            async with asyncio.timeout(WITHIN_S):
                ok, said = await call
            assert ok and "opened" in said, said
            ok, said = await text_of(client, "find", {"text": "Name"})
            assert ok and 'textbox "Name"' in said, said
            run = (await mine.get(f"/api/runs/{run_id}")).json()
            assert run["status"] == "running", run
            events = (await mine.get(f"/api/runs/{run_id}/events")).json()["events"]
            assert "run.paused" not in [e["type"] for e in events], events
