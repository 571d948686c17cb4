"""An output is checked away from the event loop, in a child process with a deadline: a
schema's ``$ref`` fetches nothing (a real HTTP server on loopback sees no request), a
pattern that backtracks in Python is answered at once, and work past the deadline is
stopped, its process killed, while the loop goes on."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from automation.agent.output import check_output
from automation.agent.outputcheck import check_output_isolated
from automation.errors import OutputInvalid

# How long the tests let a check take before calling it hung: far past what a check that
# does not backtrack needs, on a machine as busy as a test run makes it.
HANG_MS = 120_000


class _Recorder(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.server.paths.append(self.path)  # type: ignore[attr-defined]
        body = b'{"type": "integer"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def schema_host() -> Iterator[ThreadingHTTPServer]:
    """A server on loopback that answers a schema to whoever asks, and keeps the paths."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.paths = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_remote_reference_is_never_fetched(schema_host: ThreadingHTTPServer) -> None:
    url = f"http://127.0.0.1:{schema_host.server_address[1]}/schema.json"
    for schema in ({"$ref": url}, {"type": "object", "properties": {"a": {"$ref": url}}}):
        with pytest.raises(OutputInvalid) as refused:
            check_output(schema, {"a": 1})
        assert "does not point within the schema" in refused.value.message
    assert schema_host.paths == []  # type: ignore[attr-defined]


async def test_a_pattern_that_backtracks_in_python_is_answered_at_once() -> None:
    """``^(a+)+$`` against a's and a '!' takes Python's ``re`` 2^n steps (26 a's: seconds,
    64: longer than the universe); matched with RE2, the answer comes at once."""
    schema = {"type": "string", "pattern": "^(a+)+$"}
    with pytest.raises(OutputInvalid) as caught:
        await check_output_isolated(schema, "a" * 64 + "!", timeout_ms=HANG_MS)
    assert caught.value.problems == [f"$: '{'a' * 64}!' does not match '^(a+)+$'"]
    await check_output_isolated(schema, "a" * 100_000, timeout_ms=HANG_MS)


def _checks_running() -> list[int]:
    """This process's children that are output checks."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            status = (proc / "status").read_text()
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = next(int(ln.split()[1]) for ln in status.splitlines() if ln.startswith("PPid:"))
        if ppid == os.getpid() and b"automation.agent.outputcheck" in cmdline:
            found.append(int(proc.name))
    return found


async def started() -> None:
    """Once a check's process runs."""
    async with asyncio.timeout(HANG_MS / 1000):
        while True:
            if _checks_running():
                return
            await asyncio.sleep(0.01)


async def test_a_check_past_its_deadline_is_stopped_and_the_loop_never_waits() -> None:
    """uniqueItems over 15,000 objects compares each pair: minutes of work.  The loop
    keeps turning while it runs, and at the deadline the check's process is killed."""
    schema = {"type": "array", "uniqueItems": True}
    output = [{"n": n} for n in range(15_000)]
    check = asyncio.create_task(check_output_isolated(schema, output, timeout_ms=3_000))
    await started()  # this test's own coroutine runs beside the check
    with pytest.raises(OutputInvalid) as caught:
        await check
    assert "took more than 3000 ms" in caught.value.message
    assert caught.value.problems == ["$: not checked within 3000 ms"]
    assert _checks_running() == []


async def test_a_cancelled_check_leaves_no_process() -> None:
    schema = {"type": "array", "uniqueItems": True}
    check = asyncio.create_task(
        check_output_isolated(schema, [{"n": n} for n in range(15_000)], timeout_ms=HANG_MS)
    )
    await started()
    check.cancel()
    with pytest.raises(asyncio.CancelledError):
        await check
    assert _checks_running() == []
