"""The run page's commands through the JSON API, against a real daphne whose browser stops
answering (its process stopped, as a machine swapping or a hung GPU leaves it): the close
of a conversation's tab answers within the command's deadline, saying the tab is still
open (its close goes on), and the tab closes once the browser answers again."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import httpx
import pytest

from dashboard.runs.carry import COMMAND_ANSWER_MS
from tests.automation.browser.test_session import descendants, processes
from tests.daphne import api_token, log_in
from tests.e2e.ui import PASSWORD, UI_MS, USERNAME, Server
from tests.tasks import FORM_TASK

pytestmark = pytest.mark.e2e

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
