"""Tabwright's MCP server over stdio, driven by the MCP SDK's own client: the tools come
from the action registry, answers are compact and typed errors, secrets never come back,
a hung script is stopped within the call's budget, and the session's steps are written as
a scenario file that loads."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import html
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from automation.actions import ACTIONS
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import Cancelled
from automation.events import (
    ActionFinished,
    ActionStarted,
    ListSink,
    RunPaused,
    StepRecorded,
)
from automation.mcp import McpSession
from automation.mcp.session import MAX_ANSWER_CHARS, Answer
from automation.recording.scenario import Scenario
from tests.automation.browser.test_session import descendants, processes
from tests.automation.mcp.warmth import warm_servers
from tests.bounds import ROOM_MS, room
from tests.conftest import CHROMIUM, FIXTURES
from tests.net import QuietHandler, loopback_app
from tests.sinks import WaitingSink

pytestmark = pytest.mark.asyncio(loop_scope="session")

ROOT = Path(__file__).resolve().parents[3]
NOTE = "n0te-s3cret-value"


_RUNTIME: list[Path] = []  # the module's warm servers' folder (the relays' XDG_RUNTIME_DIR)


@pytest.fixture(scope="module", autouse=True)
def _warm_runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """This module's sessions share its warm servers (one per set of flags), which stop
    as it ends."""
    with warm_servers(tmp_path_factory.mktemp("mcp-warm")) as runtime:
        _RUNTIME[:] = [runtime]
        yield


def server_env(**more: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "XDG_RUNTIME_DIR": str(_RUNTIME[0]), **more}


@asynccontextmanager
async def server(*flags: str, secrets: dict[str, str] | None = None) -> AsyncIterator[Client]:
    """A client of a session of ``python -m automation.mcp`` (served by the module's warm
    server for these flags unless they hold ``--warm-for 0``)."""
    named = {f"TABWRIGHT_SECRET_{name}": value for name, value in (secrets or {}).items()}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "automation.mcp", "--chromium", CHROMIUM, "--allow-private",
              "--upload-dir", str(FIXTURES / "uploads"), *flags],
        env=server_env(TABWRIGHT_SECRET_NOTE=NOTE, **named),
        cwd=str(ROOT),
    )  # fmt: skip
    async with Client(params) as client:
        yield client


async def call(client: Client, name: str, **args: object) -> tuple[bool, str]:
    result = await client.call_tool(name, args)
    return not result.is_error, result.content[0].text


def ref_of(snapshot: str, needle: str) -> str:
    line = next(line for line in snapshot.splitlines() if needle in line)
    return line.rsplit("[", 1)[1].split("]")[0]


async def test_the_tools_are_the_registry_s_actions_with_a_budget_each() -> None:
    async with server() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert {"navigate", "snapshot", "click", "fill", "fill_form", "select_option", "check",
            "press", "hover", "drag", "upload", "dialog", "tabs", "wait_for", "steps",
            "page_log", "network_request", "find", "verify", "emulate_media", "drop_files",
            "screenshot"} <= set(tools)  # fmt: skip
    assert not set(tools) & {"read_page", "file_read", "file_write", "shell", "evaluate"}
    for name, tool in tools.items():
        properties = tool.input_schema["properties"]
        assert properties["timeout_ms"]["type"] == "number", name  # 40000.0 is taken
        assert tool.input_schema["additionalProperties"] is False, name
        if name in ACTIONS:  # the registry's params, required as there
            spec = ACTIONS[name]
            assert {p.name for p in spec.params} <= set(properties), name
            assert set(tool.input_schema.get("required", [])) == {
                p.name for p in spec.params if p.required
            }, name
        assert len(tool.description or "") <= 300, name
    assert "delta" in tools["click"].input_schema["properties"]
    assert "delta" not in tools["find"].input_schema["properties"]  # it only reads


async def test_a_session_acts_by_ref_answers_briefly_and_writes_its_scenario(
    fixture_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "session.json"
    async with server("--scenario-out", str(out), "--scenario-name", "Sign up") as client:
        ok, said = await call(client, "navigate", url=f"{fixture_url}/demo/form.html")
        assert ok and said.startswith("opened"), said
        ok, snap = await call(client, "snapshot", interactive=True)
        assert ok and snap.startswith("Page: 'Sign up'"), snap
        name, email = ref_of(snap, 'textbox "Name"'), ref_of(snap, 'textbox "Email"')
        ok, said = await call(client, "fill", ref=name, value="${SECRET:NOTE}")
        assert ok and NOTE not in said, said
        ok, said = await call(client, "fill", ref=email, value="ada@example.org", delta=True)
        assert ok and "# changes since the last snapshot" in said, said
        assert len(said) < 600  # what changed, not the page
        ok, said = await call(client, "verify", kind="value", ref=email, value="ada@example.org")
        assert ok, said

        # Typed errors, each saying what to do.
        ok, said = await call(client, "click")
        assert not ok and said.startswith("error action_invalid: click needs 'ref'"), said
        ok, said = await call(client, "click", ref="e99999")
        assert not ok and said.startswith("error ref_not_found"), said
        ok, said = await call(client, "nonsense")
        assert not ok and "unknown tool" in said, said
        ok, said = await call(client, "wait_for", text="never there", timeout_ms=300)
        assert not ok and "error" in said, said
        await call(client, "navigate", url=f"{fixture_url}/demo/form.html")
        ok, said = await call(client, "fill", ref=email, value="x")  # from the page left
        assert not ok and said.startswith("error stale_ref") and "snapshot" in said, said

        result = await client.call_tool("screenshot", {})
        assert not result.is_error
        image = next(c for c in result.content if c.type == "image")
        assert image.mime_type == "image/jpeg"
        assert base64.b64decode(image.data)[:3] == b"\xff\xd8\xff"
    written = json.loads(out.read_text(encoding="utf-8"))
    scenario = Scenario.from_dict(written)
    assert scenario.name == "Sign up"
    assert [s.action for s in scenario.steps] == ["navigate", "fill", "fill", "expect", "navigate"]
    assert scenario.steps[1].args["value"] == "${SECRET:NOTE}"
    assert NOTE not in out.read_text(encoding="utf-8")
    left_out = scenario.description
    assert "(snapshot): it only read the page" in left_out
    assert "(wait_for text='never there'): it failed: " in left_out
    assert f"(fill): it failed: ref {email} (textbox 'Email') no longer points" in left_out


async def test_a_signal_ends_the_session_as_closing_stdin_does_writing_its_scenario(
    fixture_url: str, tmp_path: Path
) -> None:
    """SIGTERM (how a client stops a stdio server that did not exit once stdin closed, per
    the MCP spec, and how process managers stop one) ends the session in order: its
    scenario written, its browser closed, exit status 0.  (It ended the process at once:
    no file, the whole session's recording lost.)"""
    out = tmp_path / "session.json"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "automation.mcp", "--chromium", CHROMIUM, "--allow-private",
        "--scenario-out", str(out), "--warm-for", "0",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=str(ROOT),
        env=server_env(),
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    asked = 0

    async def ask(method: str, **params: object) -> dict[str, object]:
        nonlocal asked
        asked += 1
        message = {"jsonrpc": "2.0", "id": asked, "method": method, "params": params}
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        while True:  # (past any notification)
            answer = json.loads(await proc.stdout.readline())
            if answer.get("id") == asked:
                return answer["result"]

    async def tool(name: str, **args: object) -> str:
        result = await ask("tools/call", name=name, arguments=args)
        assert not result.get("isError"), result
        return result["content"][0]["text"]

    try:
        async with asyncio.timeout(ROOM_MS / 1000):  # ends a hang only
            await ask("initialize", protocolVersion="2025-06-18", capabilities={},
                      clientInfo={"name": "test", "version": "1"})  # fmt: skip
            proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
            await tool("navigate", url=f"{fixture_url}/demo/form.html")
            snap = await tool("snapshot", interactive=True)
            await tool("fill", ref=ref_of(snap, 'textbox "Name"'), value="Ada")
            await tool("click", ref=ref_of(snap, 'button "Sign up"'))
            table = processes()
            chromium = {p for p in descendants(proc.pid, table) if "chromium" in table[p][2]}
            assert chromium
            proc.send_signal(signal.SIGTERM)  # stdin left open
            status = await proc.wait()
            while True:  # the browser closed (its processes reaped by whoever inherits them)
                if not {p for p, (_, state, _) in processes().items() if state != "Z"} & chromium:
                    break
                await asyncio.sleep(0.1)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert out.exists(), f"no scenario written; exit status {status}"
    scenario = Scenario.from_dict(json.loads(out.read_text(encoding="utf-8")))
    assert [s.action for s in scenario.steps] == ["navigate", "fill", "click"]
    assert not out.with_name(f".{out.name}.part").exists()  # written, then renamed
    assert status == 0


async def test_a_hung_script_is_stopped_within_the_call_s_budget(fixture_url: str) -> None:
    async with server("--allow-evaluate") as client:
        await call(client, "navigate", url=f"{fixture_url}/demo/form.html")
        ok, said = await call(client, "evaluate", expression="while (true) {}", timeout_ms=1_000)
        assert not ok and "error" in said, said
        ok, said = await call(client, "evaluate", expression="document.title")
        assert ok and said == '"Sign up"', said  # the tab still answers


async def test_a_paused_or_stopped_session_refuses_calls_saying_which(
    tab: Tab, fixture_url: str
) -> None:
    session = McpSession(tab, sink=ListSink())
    answer = await session.call("navigate", {"url": f"{fixture_url}/demo/form.html"})
    assert answer.ok, answer
    session.control.request_pause()
    answer = await session.call("snapshot", {})
    assert not answer.ok and answer.text.startswith("error paused_by_person"), answer
    session.control.resume()
    assert (await session.call("snapshot", {"interactive": True})).ok
    session.control.stop()
    answer = await session.call("snapshot", {})
    assert not answer.ok and answer.text.startswith("error session_ended"), answer


async def paused_in_flight(
    tab: Tab, fixture_url: str, text: str
) -> tuple[McpSession, WaitingSink, asyncio.Future[Answer], asyncio.Future[None]]:
    """A session whose call waiting for ``text`` (600 s) is in flight, and a person's
    pause (``hold_for_person``) waiting for that call to end: the session, its events, the
    call, the pause."""
    sink = WaitingSink()
    session = McpSession(tab, sink=sink)
    assert (await session.call("navigate", {"url": f"{fixture_url}/demo/form.html"})).ok
    long = asyncio.ensure_future(session.call("wait_for", {"text": text, "timeout_ms": 600_000}))
    await sink.wait_for(ActionStarted, count=2)  # the navigate's, then the wait's
    session.control.request_pause()
    hold = asyncio.ensure_future(session.hold_for_person(Budget(600_000, label="pause")))
    await asyncio.sleep(0)  # the pause waits for the call in flight
    assert not hold.done()
    return session, sink, long, hold


async def test_a_stop_ends_a_pause_waiting_for_the_call_in_flight_and_that_call(
    tab: Tab, fixture_url: str
) -> None:
    """A person pauses while a call runs (the pause waits for it to end), then stops: the
    call and the pause both end at once, neither after the call's own 600 s."""
    session, _, long, hold = await paused_in_flight(tab, fixture_url, "never shown")
    session.control.stop()
    async with asyncio.timeout(ROOM_MS / 1000):  # ends a hang only
        with pytest.raises(Cancelled):
            await hold
        answer = await long
    assert not answer.ok and answer.text.startswith("error cancelled"), answer


async def test_a_resume_before_the_call_in_flight_ends_takes_the_pause_back(
    tab: Tab, fixture_url: str
) -> None:
    """A person pauses while a call runs (the pause waits for it to end), then resumes
    before it ends: when it ends, the session goes on; its next call is answered, not
    refused as paused until a second resume."""
    session, sink, long, hold = await paused_in_flight(tab, fixture_url, "Shown later")
    try:
        session.control.resume()
        await tab.page.evaluate("document.body.append('Shown later')")  # the call ends
        async with asyncio.timeout(ROOM_MS / 1000):  # ends a hang only
            answer = await long
            assert answer.ok, answer
            answer = await session.call("find", {"text": "Name"})
            assert answer.ok and 'textbox "Name"' in answer.text, answer
            await hold
        assert not session.control.paused
        assert not sink.of_type(RunPaused), sink.events
    finally:
        hold.cancel()  # done by then, unless the test failed


async def test_a_call_s_budget_covers_its_wait_for_the_call_before_it(
    tab: Tab, fixture_url: str
) -> None:
    """A client sends two calls of one session together: the second's timeout_ms is the
    budget of the whole call, its wait for the first included."""
    session = McpSession(tab, sink=ListSink())
    assert (await session.call("navigate", {"url": f"{fixture_url}/demo/form.html"})).ok
    long = asyncio.ensure_future(
        session.call("wait_for", {"text": "never shown", "timeout_ms": 60_000})
    )
    await asyncio.sleep(0)  # the long call starts: it takes the tab at once
    assert session.busy
    answer = await session.call("snapshot", {"timeout_ms": 1_000})
    assert not long.done()  # answered before the call it waited for ended
    assert answer.text.startswith("error budget_exceeded: snapshot: the call before it was")
    assert "1000 ms" in answer.text, answer
    long.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await long


async def test_a_call_that_runs_out_on_a_busy_machine_still_records_its_step(
    tab: Tab, fixture_url: str
) -> None:
    """A wait of 300 ms runs out; the machine is busy, so the session's loop gets the
    turn back 200 ms late (past the call's 30 ms margin, the call's own deadline gone by
    then).  The step is recorded all the same, failed: it was missing from the session's
    steps, and so from its scenario."""
    sink = WaitingSink()
    session = McpSession(tab, sink=sink)
    assert (await session.call("navigate", {"url": f"{fixture_url}/demo/form.html"})).ok
    held = asyncio.get_running_loop().call_later(0.25, time.sleep, 0.2)  # a busy machine
    answer = await session.call("wait_for", {"text": "never there", "timeout_ms": 300})
    held.cancel()
    assert not answer.ok and answer.text.startswith("error "), answer
    steps = [(e.action, e.ok) for e in sink.of_type(StepRecorded)]
    assert steps == [("navigate", True), ("wait_for", False)], steps


async def test_an_argument_of_megabytes_is_not_echoed_whole(tab: Tab, fixture_url: str) -> None:
    """An error that quotes its argument (a 3 MB URL) is cut: whole, it was more than the
    SDK's client takes in one message (a transport error, no answer); a text to find is
    refused past 1,000 characters."""
    session = McpSession(tab, sink=ListSink())
    assert (await session.call("navigate", {"url": f"{fixture_url}/demo/form.html"})).ok
    answer = await session.call("navigate", {"url": f"{fixture_url}/?q={'x' * 3_000_000}"})
    assert not answer.ok and answer.text.startswith("error "), answer.text[:200]
    assert len(answer.text) <= MAX_ANSWER_CHARS and "more chars]" in answer.text
    answer = await session.call("find", {"text": "y" * 3_000_000})
    assert answer.text == "error action_invalid: find: text is longer than 1000 characters"


async def test_an_argument_the_tool_does_not_take_is_refused_not_left_out(
    tab: Tab, fixture_url: str
) -> None:
    """A misnamed argument (``action`` for ``op``) ran the tool with its default and said
    done: ``tabs`` listed where the client asked to open one.  It is refused, naming what
    the tool takes, and nothing is done."""
    session = McpSession(tab, sink=ListSink())
    assert (await session.call("navigate", {"url": f"{fixture_url}/demo/form.html"})).ok
    opening = {"action": "open", "url": f"{fixture_url}/demo/form.html"}
    answer = await session.call("tabs", opening)
    assert answer.text.startswith("error action_invalid: tabs takes no 'action'"), answer.text
    assert "hint: tabs takes: index, op, timeout_ms, url" in answer.text, answer.text
    listed = await session.call("tabs", {})
    assert listed.ok and listed.text.count(fixture_url) == 1, listed.text  # none opened
    answer = await session.call("screenshot", {"fullpage": True})
    assert answer.text.startswith("error action_invalid: screenshot takes ref and full_page")
    answer = await session.call("click", {"ref": "e1", "delta": True, "timeout_ms": 5000.5})
    assert "takes no" not in answer.text, answer.text  # the session's own arguments


async def test_a_snapshot_delta_after_an_action_shows_what_changed_not_the_page(
    tab: Tab, fixture_url: str
) -> None:
    session = McpSession(tab, sink=ListSink())
    assert (await session.call("navigate", {"url": f"{fixture_url}/demo/form.html"})).ok
    page = await session.call("snapshot", {"interactive": True})
    assert page.ok, page
    answer = await session.call(
        "fill", {"ref": ref_of(page.text, 'textbox "Name"'), "value": "Ada"}
    )
    assert answer.ok, answer
    delta = await session.call("snapshot", {"delta": True})
    assert delta.ok and "# changes since the last snapshot" in delta.text, delta
    assert 'textbox "Name"' in delta.text and '"Ada"' in delta.text, delta
    assert "Back to the demo pages" not in delta.text, delta  # the rest is unchanged
    again = await session.call("snapshot", {"delta": True})
    assert again.ok and "# no changes since the last snapshot" in again.text, again


async def test_the_browser_starts_and_the_tab_opens_while_the_client_initializes() -> None:
    """No tool call yet: the server's own Chromium is up with a page's renderer (the
    first call then waits for nothing of that)."""
    async with server("--warm-for", "0") as client:
        await client.list_tools()
        table = processes()
        (pid,) = [
            pid
            for pid, (parent, _, cmd) in table.items()
            if parent == os.getpid() and "automation.mcp" in cmd
        ]

        def chromium_of_server() -> set[str]:
            table = processes()
            kinds = set()
            for child in descendants(pid, table):
                cmd = table[child][2]
                if "chromium" in cmd:  # (Debian's /usr/bin/chromium starts /usr/lib/...)
                    kinds.add("renderer" if "--type=renderer" in cmd else "browser")
            return kinds

        try:
            async with asyncio.timeout(30):
                while True:
                    if chromium_of_server() == {"browser", "renderer"}:
                        break
                    await asyncio.sleep(0.1)
        except TimeoutError:
            seen = chromium_of_server()
            raise AssertionError(f"no browser and tab before a call: {seen}") from None
        ok, text = await call(client, "snapshot")
        assert ok, text


async def test_a_click_s_step_target_is_taken_beside_the_click(
    tab: Tab, fixture_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The element's identity for the scenario is asked for as the click starts, not
    before it (the two round trips overlap), and is still the one the step keeps; a stale
    ref still clicks nothing and says why."""
    session = McpSession(tab, sink=(sink := ListSink()))
    assert (await session.call("navigate", {"url": f"{fixture_url}/settle/actions.html"})).ok
    page = await session.call("snapshot", {})
    said: list[str] = []
    target, click = tab.target, tab.click

    async def taking(*args: object, **kwargs: object) -> object:
        said.append("target asked")
        try:
            return await target(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            said.append("target taken")

    async def clicking(*args: object, **kwargs: object) -> str:
        said.append("click started")
        return await click(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tab, "target", taking)
    monkeypatch.setattr(tab, "click", clicking)
    ref = ref_of(page.text, 'button "Do nothing"')
    answer = await session.call("click", {"ref": ref})
    assert answer.ok and answer.text == "clicked button 'Do nothing'", answer
    assert said == ["target asked", "click started", "target taken"]
    assert await tab.page.evaluate("window.clicks") == 1
    step = sink.of_type(StepRecorded)[-1]
    assert (step.action, step.ok, step.ref) == ("click", True, ref)
    assert step.identity is not None and step.identity["name"] == "Do nothing"
    started = [e for e in sink.events if isinstance(e, ActionStarted | ActionFinished)]
    assert [type(e) for e in started[-2:]] == [ActionStarted, ActionFinished]
    assert started[-2].words == started[-1].words  # the identity's words, both times

    assert (await session.call("navigate", {"url": f"{fixture_url}/settle/actions.html"})).ok
    answer = await session.call("click", {"ref": ref})  # a ref from the page left
    assert not answer.ok and answer.text.startswith("error stale_ref"), answer
    assert await tab.page.evaluate("window.clicks ?? 0") == 0
    step = sink.of_type(StepRecorded)[-1]
    assert (step.action, step.ok, step.role, step.name) == ("click", False, "button", "Do nothing")


async def test_a_call_its_client_gave_up_ends_its_action_on_the_run_page(
    tab: Tab, fixture_url: str
) -> None:
    """The client went away mid-call (the host cancels it): the action's start was told,
    so its end is told too (the run page's chip would say "running" for ever)."""
    session = McpSession(tab, sink=(sink := WaitingSink()))
    assert (await session.call("navigate", {"url": f"{fixture_url}/demo/form.html"})).ok
    call = asyncio.ensure_future(
        session.call("wait_for", {"text": "never shown", "timeout_ms": 60_000})
    )
    await sink.wait_for(ActionStarted, count=2)  # the navigate's, then the wait's
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call
    [ended] = [e for e in sink.events if isinstance(e, ActionFinished) and e.name == "wait_for"]
    assert not ended.ok and ended.error is not None and ended.error["code"] == "cancelled"


async def test_a_call_that_waited_for_the_one_before_it_and_runs_out_is_a_recorded_step(
    tab: Tab, fixture_url: str
) -> None:
    """The action of a call that waited for the tab gets what is left of the call's time,
    less a margin: running out, it is a failed step of the session (in its scenario), not a
    vanished call (its step's time was counted from the call's whole timeout)."""
    sink = ListSink()
    session = McpSession(tab, sink=sink)
    assert (await session.call("navigate", {"url": f"{fixture_url}/demo/form.html"})).ok
    first = asyncio.ensure_future(
        session.call("wait_for", {"text": "never shown", "timeout_ms": 1_500})
    )
    await asyncio.sleep(0)  # the first call takes the tab at once
    assert session.busy
    answer = await session.call("wait_for", {"text": "not either", "timeout_ms": 3_000})
    assert not (await first).ok
    assert not answer.ok and "the call before it" not in answer.text, answer.text
    failed = [e for e in sink.of_type(StepRecorded) if not e.ok]
    assert [e.args.get("text") for e in failed] == ["never shown", "not either"], failed


async def test_a_snapshot_s_first_line_says_only_what_the_model_was_not_just_told(
    tab: Tab, fixture_url: str
) -> None:
    """The title goes when the page's heading says it; the URL is its path alone on the
    origin the last answer named, whole on another (localhost is not 127.0.0.1)."""
    session = McpSession(tab, sink=ListSink())
    assert (await session.call("navigate", {"url": f"{fixture_url}/demo/form.html"})).ok
    page = await session.call("snapshot", {})
    assert page.ok and page.text.startswith("Page: /demo/form.html\n"), page.text
    assert '\n- heading "Sign up"\n' in page.text, page.text
    assert (await session.call("navigate", {"url": f"{fixture_url}/demo/flow/step1.html"})).ok
    page = await session.call("snapshot", {})
    assert page.text.startswith("Page: 'Order — step 1 of 2' /demo/flow/step1.html\n"), page
    other = fixture_url.replace("127.0.0.1", "localhost")
    assert (await session.call("find", {"text": "Continue"})).ok  # names no URL
    await tab.navigate(f"{other}/demo/form.html", budget=room())  # as a person would
    page = await session.call("snapshot", {})
    assert page.text.startswith(f"Page: {other}/demo/form.html\n"), page.text
    page = await session.call("snapshot", {})
    assert page.text.startswith("Page: /demo/form.html\n"), page.text


# A password with the characters an app's page writes as entities and its JSON as escapes.
KEY = 'Tr&u"\u00e9<1'


class _Echo(QuietHandler):
    """A settings form whose save shows the key as a page writes it (HTML-escaped) and
    hands it to the page's script as JSON (escaped, as Python's json writes it)."""

    def do_GET(self) -> None:
        form = '<form method="post" action="/save"><label>Key <input name="key"></label>'
        self.send(
            200, f"<!doctype html><title>Key</title>{form}<button>Save</button></form>".encode()
        )

    def do_POST(self) -> None:
        sent = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        key = sent["key"][0]
        page = f"<p>Saved {html.escape(key)}</p><script>window.key = {json.dumps(key)};</script>"
        self.send(200, page.encode())


async def test_a_secret_the_app_echoes_escaped_is_not_in_a_network_request_s_answer() -> None:
    """The MCP client types a secret into an app that echoes it in its answer, escaped as
    HTML (``&amp;``, ``&quot;``, ``&lt;``) and as JSON (``\\"``, ``\\u00e9``): the body
    ``network_request`` shows hides it in each form, as it hides it plain and
    percent-encoded (those escapes spelled the password out to the client)."""
    with loopback_app(_Echo) as app:
        async with server(secrets={"KEY": KEY}) as client:
            ok, said = await call(client, "navigate", url=f"{app}/form")
            assert ok, said
            ok, snap = await call(client, "snapshot", interactive=True)
            ok, said = await call(client, "fill", ref=ref_of(snap, 'textbox "Key"'),
                                  value="${SECRET:KEY}")  # fmt: skip
            assert ok, said
            ok, said = await call(client, "click", ref=ref_of(snap, 'button "Save"'))
            assert ok, said
            ok, said = await call(client, "network_request", number=2)
            assert ok and "response body:" in said, said
    escaped = (html.escape(KEY), json.dumps(KEY), KEY)
    assert not [form for form in escaped if form in said], said
    assert said.count("${SECRET:KEY}") >= 2, said  # the body sent, and what came back
