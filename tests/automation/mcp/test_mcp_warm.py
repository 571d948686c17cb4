"""The stdio server's warm start (automation/mcp/warm.py, warmserver.py): a client's
``python -m automation.mcp`` relays its session to the user's warm server, which keeps its
browser between sessions.  Each session must still be what a server of its own gave it: a
context of its own, its own secrets and scenario file, its signals, its errors said."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from automation.mcp.warm import socket_address
from automation.recording.scenario import Scenario
from tests.automation.mcp.warmth import alive, servers_in, warm_servers
from tests.bounds import ROOM_MS
from tests.conftest import CHROMIUM
from tests.net import QuietHandler, loopback_app
from tests.waiting import eventually

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[3]
FLAGS = ("--chromium", CHROMIUM, "--allow-private")


class _Desk(QuietHandler):
    """/in?name=N signs N in (a cookie); /page shows who is signed in and a form whose
    Save sends the key typed to /typed, which the desk keeps."""

    typed: list[str]

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if url.path == "/in":
            name = query["name"][0]
            self.send(200, b"<title>In</title><h1>Signed in</h1>", **{"Set-Cookie": f"who={name}"})
        elif url.path == "/page":
            who = self.headers.get("Cookie") or "nobody"
            page = (
                f"<title>Desk</title><h1>Signed in: {who}</h1>"
                "<form action=/typed><label>Key <input name=key></label>"
                "<button>Save</button></form>"
            )
            self.send(200, page.encode())
        elif url.path == "/file":
            self.send(200, b"<title>File</title><label>Note <input type=file></label>")
        elif url.path == "/typed":
            self.typed.append(query.get("key", [""])[0])
            self.send(200, b"<title>Saved</title><h1>Saved</h1>")
        else:
            self.send(404)


@asynccontextmanager
async def desk() -> AsyncIterator[tuple[str, list[str]]]:
    typed: list[str] = []
    with loopback_app(type("Desk", (_Desk,), {"typed": typed})) as app:
        yield app, typed


def env_of(runtime: Path, **more: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "XDG_RUNTIME_DIR": str(runtime), **more}


async def tool(client: Client, name: str, **args: object) -> str:
    result = await client.call_tool(name, args)
    assert not result.is_error, result.content[0].text
    return result.content[0].text


def ref_of(snapshot: str, needle: str) -> str:
    line = next(line for line in snapshot.splitlines() if needle in line)
    return line.rsplit("[", 1)[1].split("]")[0]


async def sign_up(client: Client, app: str, *, name: str | None = None) -> str:
    """Sign in as ``name`` (unless None), then type the secret KEY on the desk and save:
    the desk's snapshot before typing."""
    if name is not None:
        await tool(client, "navigate", url=f"{app}/in?name={name}")
    await tool(client, "navigate", url=f"{app}/page")
    snap = await tool(client, "snapshot")
    await tool(client, "fill", ref=ref_of(snap, 'textbox "Key"'), value="${SECRET:KEY}")
    await tool(client, "click", ref=ref_of(snap, 'button "Save"'))
    return snap


class Relay:
    """``python -m automation.mcp`` spoken to over its pipes, its stderr kept."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.asked = 0

    @classmethod
    async def start(cls, runtime: Path, *flags: str, cwd: Path = ROOT, **env: str) -> Relay:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "automation.mcp", *FLAGS, *flags,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=str(cwd), env=env_of(runtime, **env),
        )  # fmt: skip
        relay = cls(proc)
        await relay.ask("initialize", protocolVersion="2025-06-18", capabilities={},
                        clientInfo={"name": "test", "version": "1"})  # fmt: skip
        relay.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return relay

    def send(self, message: dict[str, object]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")

    async def ask(self, method: str, **params: object) -> dict[str, object]:
        assert self.proc.stdout is not None
        self.asked += 1
        self.send({"jsonrpc": "2.0", "id": self.asked, "method": method, "params": params})
        async with asyncio.timeout(ROOM_MS / 1000):  # ends a hang only
            while True:  # (past any notification)
                line = await self.proc.stdout.readline()
                assert line, f"the relay closed its stdout; {await self.ended()}"
                answer = json.loads(line)
                if answer.get("id") == self.asked:
                    return answer["result"]

    async def tool(self, name: str, **args: object) -> str:
        result = await self.ask("tools/call", name=name, arguments=args)
        assert not result.get("isError"), result
        return result["content"][0]["text"]  # type: ignore[index]

    async def ended(self) -> tuple[int, str]:
        """Its exit status and what it said on stderr, once it exited."""
        assert self.proc.stderr is not None
        async with asyncio.timeout(ROOM_MS / 1000):
            said = await self.proc.stderr.read()
            return await self.proc.wait(), said.decode()

    def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()


@asynccontextmanager
async def relay(runtime: Path, *flags: str, cwd: Path = ROOT, **env: str) -> AsyncIterator[Relay]:
    started = await Relay.start(runtime, *flags, cwd=cwd, **env)
    try:
        yield started
    finally:
        started.kill()
        await started.proc.wait()


@asynccontextmanager
async def client(runtime: Path, *flags: str, **env: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "automation.mcp", *FLAGS, *flags],
        env=env_of(runtime, **env),
        cwd=str(ROOT),
    )
    async with Client(params) as opened:
        yield opened


def steps_of(path: Path) -> list[str]:
    return [s.action for s in Scenario.from_dict(json.loads(path.read_text())).steps]


async def test_the_next_session_is_served_warm_in_a_context_with_secrets_and_file_its_own(
    tmp_path: Path,
) -> None:
    """Two clients one after the other: the second is served by the warm server the first
    started, in a fresh context (the first's sign-in is not there), typing its own secret,
    and each session's scenario file holds its own steps, written as its client left."""
    with warm_servers(tmp_path) as runtime:
        async with desk() as (app, typed):
            first, second = tmp_path / "first.json", tmp_path / "second.json"
            async with client(
                runtime, "--scenario-out", str(first), TABWRIGHT_SECRET_KEY="k-1"
            ) as c:
                snap = await sign_up(c, app, name="ada")
                assert "Signed in: who=ada" in snap, snap
            assert steps_of(first) == ["navigate", "navigate", "fill", "click"]
            (served,) = servers_in(runtime).values()
            async with client(
                runtime, "--scenario-out", str(second), TABWRIGHT_SECRET_KEY="k-2"
            ) as c:
                snap = await sign_up(c, app)
                assert "Signed in: nobody" in snap, snap  # not ada's cookie
            assert steps_of(second) == ["navigate", "fill", "click"]
            assert list(servers_in(runtime).values()) == [served]
            assert typed == ["k-1", "k-2"]


async def test_other_settings_start_a_warm_server_of_their_own(tmp_path: Path) -> None:
    """A session that blocks private addresses is not served by the browser of one that
    allows them: its navigate to the loopback desk is refused."""
    with warm_servers(tmp_path) as runtime:
        async with desk() as (app, _):
            async with client(runtime) as c:
                await tool(c, "navigate", url=f"{app}/page")
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "automation.mcp", "--chromium", CHROMIUM],
                env=env_of(runtime),
                cwd=str(ROOT),
            )
            async with Client(params) as strict:
                result = await strict.call_tool("navigate", {"url": f"{app}/page"})
                assert result.is_error, result.content[0].text
            assert len(servers_in(runtime)) == 2


async def test_a_signal_to_the_relay_ends_its_session_in_order_and_the_server_goes_on(
    tmp_path: Path,
) -> None:
    """SIGTERM with stdin still open (a client's fallback, a process manager): the session
    ends as closing stdin ends it, its scenario written before the relay exits with 0;
    the warm server serves the next session."""
    out = tmp_path / "session.json"
    with warm_servers(tmp_path) as runtime:
        async with desk() as (app, typed):
            async with relay(runtime, "--scenario-out", str(out), TABWRIGHT_SECRET_KEY="k") as r:
                await r.tool("navigate", url=f"{app}/page")
                served = servers_in(runtime)
                r.proc.send_signal(signal.SIGTERM)
                status, said = await r.ended()
            assert status == 0, said
            assert steps_of(out) == ["navigate"]
            async with client(runtime, TABWRIGHT_SECRET_KEY="k") as c:
                await sign_up(c, app)
            assert servers_in(runtime) == served
            assert typed == ["k"]


async def test_the_client_s_relative_paths_are_from_its_own_folder(tmp_path: Path) -> None:
    """The warm server runs in a folder of its own: the scenario file and the upload
    folder a client names relative to its folder are still its own."""
    work = tmp_path / "work"
    (work / "files").mkdir(parents=True)
    (work / "files" / "note.txt").write_text("a note")
    with warm_servers(tmp_path) as runtime:
        async with desk() as (app, _):
            flags = ("--scenario-out", "session.json", "--upload-dir", "files")
            async with relay(runtime, *flags, cwd=work) as r:
                await r.tool("navigate", url=f"{app}/file")
                snap = await r.tool("snapshot")
                await r.tool("upload", ref=ref_of(snap, "Note"), files=["note.txt"])
                r.proc.stdin.close()  # type: ignore[union-attr]
                status, said = await r.ended()
    assert status == 0, said
    assert steps_of(work / "session.json") == ["navigate", "upload"]


async def test_a_warm_server_gone_mid_session_is_said_and_the_next_session_starts_another(
    tmp_path: Path,
) -> None:
    with warm_servers(tmp_path) as runtime:
        async with desk() as (app, _):
            async with relay(runtime) as r:
                await r.tool("navigate", url=f"{app}/page")
                (gone,) = servers_in(runtime).values()
                os.kill(gone, signal.SIGKILL)
                status, said = await r.ended()
            assert status == 1
            assert "the warm server ended the session" in said, said
            async with client(runtime) as c:
                await tool(c, "navigate", url=f"{app}/page")
            (started,) = servers_in(runtime).values()
            assert started != gone


async def test_a_warm_server_stopped_mid_session_writes_its_file_and_tells_the_client(
    tmp_path: Path,
) -> None:
    """A person stops the warm server (``kill`` of its pid): the session in it ends as
    one whose client left, its scenario written, and its client is told, not left to
    wait."""
    out = tmp_path / "session.json"
    with warm_servers(tmp_path) as runtime:
        async with desk() as (app, _):
            async with relay(runtime, "--scenario-out", str(out)) as r:
                await r.tool("navigate", url=f"{app}/page")
                (pid,) = servers_in(runtime).values()
                os.kill(pid, signal.SIGTERM)
                status, said = await r.ended()
            assert status == 1
            assert "the warm server ended the session" in said, said
            assert steps_of(out) == ["navigate"]
            await eventually(lambda: not alive(pid), what="the stopped warm server left")


async def test_a_warm_server_leaves_once_idle_for_its_time_and_gives_its_name_up(
    tmp_path: Path,
) -> None:
    with warm_servers(tmp_path) as runtime:
        async with desk() as (app, _):
            async with client(runtime, "--warm-for", "0.5") as c:
                await tool(c, "navigate", url=f"{app}/page")
                ((key, pid),) = servers_in(runtime).items()
            await eventually(lambda: not alive(pid), what="the idle warm server left")
            assert not (runtime / "tabwright" / f"mcp-{key}.sock").exists()
            async with client(runtime, "--warm-for", "0.5") as c:
                await tool(c, "navigate", url=f"{app}/page")
            assert list(servers_in(runtime)) == [key]


async def test_clients_that_start_at_once_share_one_warm_server(tmp_path: Path) -> None:
    with warm_servers(tmp_path) as runtime:
        async with desk() as (app, typed):

            async def session(key: str) -> None:
                async with client(runtime, TABWRIGHT_SECRET_KEY=key) as c:
                    await sign_up(c, app)

            await asyncio.gather(*(session(f"k-{n}") for n in range(3)))
            assert len(servers_in(runtime)) == 1
            assert sorted(typed) == ["k-0", "k-1", "k-2"]


async def test_a_folder_others_may_enter_keeps_the_session_in_its_own_process(
    tmp_path: Path,
) -> None:
    runtime = tmp_path / "run"
    (runtime / "tabwright").mkdir(parents=True)
    (runtime / "tabwright").chmod(0o755)
    async with desk() as (app, _):
        async with relay(runtime) as r:
            await r.tool("navigate", url=f"{app}/page")
            r.proc.stdin.close()  # type: ignore[union-attr]
            status, said = await r.ended()
    assert status == 0
    assert "no private folder for the warm server" in said, said
    assert not list((runtime / "tabwright").iterdir())


async def test_a_connection_that_is_not_a_session_is_refused_and_the_server_goes_on(
    tmp_path: Path,
) -> None:
    with warm_servers(tmp_path) as runtime:
        async with desk() as (app, _):
            async with client(runtime) as c:
                await tool(c, "navigate", url=f"{app}/page")
            ((key, _pid),) = servers_in(runtime).items()
            path = runtime / "tabwright" / f"mcp-{key}.sock"
            for hello in (b"not json\n", b'{"protocol": 1}\n', b'{"scenario_out": "relative"}\n',
                          b'{"protocol": 1, "scenario_out": "x", "scenario_name": "", '
                          b'"secrets": {}}\n', b"x" * (2 * 1024 * 1024) + b"\n"):  # fmt: skip
                answer = await asyncio.to_thread(_say_to, path, hello)
                assert answer == b"", (hello[:40], answer)
            async with client(runtime) as c:
                await tool(c, "navigate", url=f"{app}/page")
            assert list(servers_in(runtime)) == [key]


def _say_to(path: Path, hello: bytes) -> bytes:
    """What the server answers ``hello`` with before it closes the connection."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(ROOM_MS / 1000)
        with socket_address(path) as address:
            sock.connect(address)
        try:
            sock.sendall(hello)
        except OSError:  # it closed on the part it read
            return b""
        answer = b""
        while part := sock.recv(4096):
            answer += part
        return answer


@pytest.mark.parametrize("value", ["-1", "soon", "604801"])
async def test_a_warm_time_that_is_not_one_is_refused_at_start(value: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "automation.mcp", "--warm-for", value, cwd=str(ROOT),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(ROOM_MS / 1000):
        _, said = await proc.communicate()
    assert proc.returncode == 2
    assert "--warm-for" in said.decode(), said
