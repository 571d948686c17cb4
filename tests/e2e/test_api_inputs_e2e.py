"""What one person sends can't stall the others, against a real daphne: an output schema
whose pattern backtracks in Python leaves the server answering; a body past its call's
limit gets the API's JSON error (announced or chunked), and one past any request's is
answered before it is all sent; a socket sending past a page's pace is cut; a token put
in a query string is refused and never written to the server's log; a close of a
conversation's tab answers within its deadline while the server's browser does not."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from dashboard.api.bodylimit import MAX_REQUEST_BYTES
from dashboard.runs.carry import COMMAND_ANSWER_MS
from tests.automation.browser.test_session import descendants, processes
from tests.daphne import api_token, log_in
from tests.dashboard.signup import sign_up
from tests.e2e.ui import PASSWORD, UI_MS, USERNAME, Server
from tests.tasks import FORM_TASK

pytestmark = pytest.mark.e2e

MiB = 1024 * 1024
WAIT_S = 120  # bounds a hang only: each wait ends when its condition holds


@pytest.fixture(scope="module")
def token(server: Server) -> str:
    return api_token(log_in(server.base_url, (USERNAME, PASSWORD)), "inputs")


def script(server: Server, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=server.base_url, timeout=30, headers={"Authorization": f"Bearer {token}"}
    )


def test_an_output_pattern_that_backtracks_does_not_hold_the_server(
    server: Server, token: str
) -> None:
    """``^(a+)+$`` against 40 a's and a '!': 2^40 steps for Python's ``re`` on the server's
    event loop (the login page would wait with everything else); with RE2 in the output's
    own check, the run's two misses pause it as any wrong output does."""
    output = "a" * 40 + "!"
    done = {"action": "done", "summary": "read", "output": output}
    server.llm.script(*["<action>" + json.dumps(done) + "</action>"] * 2)
    client = script(server, token)
    made = client.post("/api/runs", json={
        "task": "Read the a's", "planner": "openai",
        "output_schema": {"type": "string", "pattern": "^(a+)+$"},
    })  # fmt: skip
    assert made.status_code == 201, made.text
    run_id = made.json()["id"]
    deadline = time.monotonic() + WAIT_S
    while (run := client.get(f"/api/runs/{run_id}").json())["status"] != "paused":
        assert run["status"] in ("queued", "pending", "running"), run
        assert time.monotonic() < deadline, run
        # Anyone's page answers all along, the login page first.
        assert httpx.get(f"{server.base_url}/accounts/login/", timeout=30).status_code == 200
        time.sleep(0.2)
    assert run["status_reason"].startswith("output_invalid"), run
    events = client.get(f"/api/runs/{run_id}/events").json()["events"]
    told = json.dumps(events)
    assert "does not match '^(a+)+$'" in told
    client.post(f"/api/runs/{run_id}/stop")


def _chunks(total: int) -> Iterator[bytes]:
    yield b'{"task": "t", "padding": "'
    for _ in range(total // (64 * 1024)):
        yield b"x" * (64 * 1024)
    yield b'"}'


def test_a_body_past_its_call_s_limit_gets_the_json_error(server: Server, token: str) -> None:
    client = script(server, token)
    big = json.dumps({"task": "t", "padding": "x" * (3 * MiB)})
    for content in (big.encode(), _chunks(3 * MiB)):  # with Content-Length, then chunked
        answer = client.post(
            "/api/runs", content=content, headers={"Content-Type": "application/json"}
        )
        assert answer.status_code == 413, answer.text[:300]
        error = answer.json()["error"]
        assert error["code"] == "too_large" and "at most 1048576 (1 MiB)" in error["message"]
    assert all(run["task"] != "t" for run in client.get("/api/runs").json())

    # A batch's CSV as big as the upload page takes fits in its call: 6 MiB of JSON.
    made = client.post("/api/scenarios", json=sign_up(server.base_url))
    assert made.status_code == 201, made.text
    line = 'Ada "the first",' + "x" * 600 + "\n"
    rows = 5 * MiB // len(line)
    body = json.dumps({"csv": "name,greet\n" + line * rows, "concurrency": 1})
    assert len(body) > 5 * MiB
    batch = client.post(f"/api/scenarios/{made.json()['id']}/batches", content=body,
                        headers={"Content-Type": "application/json"})  # fmt: skip
    assert batch.status_code == 201, batch.text[:500]
    assert batch.json()["progress"]["total"] == rows
    client.post(f"/api/batches/{batch.json()['id']}/stop")


def send_until_closed(
    sock: socket.socket, chunk: bytes, counts: int, meant: int
) -> tuple[int, bytes]:
    """``chunk`` sent again and again (each ``counts`` bytes of what is meant) until
    ``meant`` bytes are sent or the server closes the connection; how much was sent, and
    the server's answer read to its end."""
    sent = 0
    try:
        while sent < meant:
            sock.sendall(chunk)
            sent += counts
    except OSError:  # the server closed the connection: its answer is waiting
        pass
    answer = b""
    with contextlib.suppress(OSError):
        while data := sock.recv(65536):
            answer += data
    return sent, answer


@pytest.mark.parametrize("path", ["/api/runs", "/mcp", "/accounts/login/"])
def test_a_body_past_any_request_s_limit_is_answered_before_it_is_all_sent(
    server: Server, path: str
) -> None:
    """Anyone, unsigned, sending a chunked body without end: the server answers 413 once
    it has read past its limit and closes, so the client can't send what it meant to (the
    whole body would have been held in memory and read back on the event loop)."""
    meant = 20 * MAX_REQUEST_BYTES
    port = urlsplit(server.base_url).port
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        chunk = b"%x\r\n%s\r\n" % (MiB, b"x" * MiB)
        sent, answer = send_until_closed(sock, chunk, MiB, meant)
    assert sent < meant, "the server read the whole body"
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 "), answer[:300]
    error = json.loads(body)["error"]
    assert error["code"] == "too_large" and f"at most {MAX_REQUEST_BYTES}" in error["message"]
    assert httpx.get(f"{server.base_url}/accounts/login/", timeout=WAIT_S).status_code == 200


@pytest.mark.parametrize("many", [False, True], ids=["one-long-header", "headers-without-end"])
def test_headers_without_end_are_refused_before_they_are_all_sent(
    server: Server, many: bool
) -> None:
    """Anyone, unsigned, sending a header line that never ends (or header lines without
    end): the server answers 400 once it has read past its limit and closes (the answer
    may be lost to the reset of a connection still sending), and the next request is
    answered as any."""
    meant = 20 * MiB
    port = urlsplit(server.base_url).port
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
        sock.sendall(b"GET /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: ")
        chunk = b"x: y\r\n" * (MiB // 6) if many else b"x" * MiB
        sent, answer = send_until_closed(sock, chunk, len(chunk), meant)
    assert sent < meant, "the server read all the headers"
    assert not answer or answer.startswith(b"HTTP/1.1 400 "), answer[:300]
    assert httpx.get(f"{server.base_url}/accounts/login/", timeout=WAIT_S).status_code == 200


def test_a_socket_sending_past_a_page_s_pace_is_cut_and_the_next_one_is_answered(
    server: Server, token: str
) -> None:
    """A signed-in client's socket sending commands in a loop (a page sends a few a
    second): past the pace its messages are not read, and the connection is cut; its
    owner's next socket is answered as any."""
    page = log_in(server.base_url, (USERNAME, PASSWORD))
    made = script(server, token).post("/api/runs", json={"task": "wait for Ready"})
    assert made.status_code == 201, made.text
    address = server.base_url.replace("http://", "ws://") + f"/ws/runs/{made.json()['id']}/"
    headers = {"Origin": server.base_url,
               "Cookie": "; ".join(f"{k}={v}" for k, v in page.cookies.items())}  # fmt: skip
    command = json.dumps({"command": "nope", "pad": "x" * 1000})
    meant = 100_000  # 100 MB: more than any socket buffers between the two
    sent = 0
    with connect(address, additional_headers=headers, open_timeout=WAIT_S) as flood:
        with contextlib.suppress(ConnectionClosed, OSError):
            while sent < meant:
                flood.send(command)
                sent += 1
    assert sent < meant, "the server read every message"
    with connect(address, additional_headers=headers, open_timeout=WAIT_S) as calm:
        calm.send(json.dumps({"command": "nope"}))
        while (said := json.loads(calm.recv(timeout=WAIT_S))).get("type") != "error":
            pass
        assert said["message"] == "unknown command"


def _logged(log: Path, needle: str) -> str:
    """The server's log once it has a line with ``needle`` (daphne writes a request's
    line when its answer is sent)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        text = log.read_text(errors="replace")
        if needle in text:
            return text
        assert time.monotonic() < deadline, text[-3000:]
        time.sleep(0.1)


def test_a_token_in_a_query_string_is_refused_and_never_logged(server: Server, token: str) -> None:
    answer = httpx.get(f"{server.base_url}/api/runs?status=&token={token}", timeout=30)
    assert answer.status_code == 401 and answer.json()["error"]["code"] == "unauthorized"
    answer = httpx.get(f"{server.base_url}/api/runs/{token}", timeout=30)
    assert answer.status_code in (401, 404)

    text = _logged(server.log, "GET /api/runs?status=&token=")
    assert token not in text and token[3:] not in text
    assert "GET /api/runs?status=&token=[redacted]" in text
    assert "GET /api/runs/tw_[redacted]" in _logged(server.log, "GET /api/runs/tw_")


# -- the run page's commands, while the server's browser does not answer (its process
# stopped, as a machine swapping or a hung GPU leaves it): the close of a conversation's
# tab answers within the command's deadline, saying the tab is still open (its close goes
# on), and the tab closes once the browser answers again.
# Each answer comes within the product's deadline for a command (and room for a loaded
# machine) or the test fails: a close that waited for the browser would wait for as long
# as the browser does not answer.
WITHIN_S = COMMAND_ANSWER_MS / 1000 + UI_MS / 1000
WAIT_S = 120  # bounds a hang only: each wait ends when its condition holds


def run_when(mine: httpx.Client, run_id: int, done: object) -> dict[str, object]:
    """The run once ``done(run)`` holds (looked at again every 0.1 s)."""
    deadline = time.monotonic() + WAIT_S
    while not done(run := mine.get(f"/api/runs/{run_id}").json()):  # type: ignore[operator]
        assert time.monotonic() < deadline, run
        time.sleep(0.1)
    return run


@contextmanager
def browser_stopped(server: Server) -> Iterator[None]:
    """The server's Chromium stopped (SIGSTOP: it answers nothing) while in this, then
    let go on (SIGCONT)."""
    port = urlsplit(server.base_url).port
    table = processes()
    [daphne] = [pid for pid, (_, _, cmd) in table.items()
                if "daphne" in cmd and f"-p {port} " in cmd]  # fmt: skip
    browsers = [pid for pid in descendants(daphne, table)
                if "chrom" in table[pid][2] and "--type=" not in table[pid][2]]  # fmt: skip
    assert browsers, "the server runs no browser"
    for pid in browsers:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in browsers:
            os.kill(pid, signal.SIGCONT)


def test_a_close_answers_within_its_deadline_while_the_browser_does_not(server: Server) -> None:
    base = server.base_url
    token = api_token(log_in(base, (USERNAME, PASSWORD)), "close")
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, timeout=WITHIN_S, headers=headers) as mine:
        form = f"{base}/demo/form.html"
        made = mine.post(
            "/api/runs", json={"task": FORM_TASK, "start_url": form, "planner": "rules"}
        )
        assert made.status_code == 201, made.text
        run_id = made.json()["id"]
        run = run_when(mine, run_id, lambda r: r["status"] not in ("queued", "pending", "running"))
        assert (run["status"], run["session"]) == ("succeeded", "open"), run
        with browser_stopped(server):
            closed = mine.post(f"/api/runs/{run_id}/close")
            assert closed.status_code == 200, closed.text
            # Answered as it is: its tab is not closed yet, its close goes on.
            assert closed.json()["session"] == "open", closed.json()
        run = run_when(mine, run_id, lambda r: r["session"] == "closed")
        assert run["status"] == "succeeded", run
