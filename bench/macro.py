"""One ``steps`` macro against the same four calls made one at a time, through the act API
of a real dashboard (daphne on loopback, a paused run, its Chromium).

The sequence, on an orders page whose "Mark shipped" button sets ``<p id="status">``
to "Clicked": read_page → click → wait_for "Clicked" → read_page.  Singles: four
``POST /runs/<id>/act`` calls (read_page, click, wait_for, read_page), each answer read
before the next is sent, as a client that decides on what it sees must.  Macro: one call
with the four steps and ``return_mode=delta``.  50 trials of each, interleaved, with the
status reset between them (not timed); every answer is checked for "Clicked".

    .venv/bin/python -m bench.macro [--trials 50]

bytes: the HTTP response bodies; wall: from the first request sent to the last answer read.
Targets: bytes_ratio <= 0.4, wall_ratio <= 0.6.

Last line (ratios of the medians, macro over singles):
    RESULT macro calls=1/4 bytes_ratio=<macro bytes / singles> wall_ratio=<macro wall / singles>
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from automation.browser.config import default_chromium
from bench.common import median, p95, serve
from tests.daphne import daphne

USER = ("bench", "bench-password-5k2q")
ROWS = 30
CUSTOMERS = ("Ada Lovelace", "Grace Hopper", "Alan Turing", "Katherine Johnson", "Edsger Dijkstra")


def _page() -> str:
    rows = "\n".join(
        f'<tr><td><a href="#o{1000 + i}">#{1000 + i}</a></td><td>{CUSTOMERS[i % 5]}</td>'
        f"<td>${(i * 37) % 400 + 10}.00</td><td>{'paid' if i % 3 else 'open'}</td>"
        f'<td><button type="button">Details</button></td></tr>'
        for i in range(ROWS)
    )
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<link rel="icon" href="data:,"><title>Orders</title></head><body>
<nav><a href="#home">Home</a> <a href="#orders">Orders</a> <a href="#customers">Customers</a>
<a href="#settings">Settings</a></nav>
<main><h1>Orders</h1>
<form role="search"><label>Search <input type="search" name="q"></label>
<label>Status <select name="status"><option>All</option><option>Open</option>
<option>Paid</option></select></label><button type="button">Filter</button></form>
<p><button type="button" onclick="document.getElementById('status').textContent = 'Clicked'"
>Mark shipped</button>
<button type="button" onclick="document.getElementById('status').textContent = 'Waiting'"
>Reset</button></p>
<p id="status">Waiting</p>
<table><thead><tr><th>Order</th><th>Customer</th><th>Amount</th><th>State</th><th></th></tr>
</thead><tbody>
{rows}
</tbody></table></main></body></html>"""


class ActClient:
    """The act API as an outside client uses it: logged in, with the CSRF token."""

    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=30)
        login = self.http.get("/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)
        assert token, "no CSRF token on the login page"
        done = self.http.post(
            "/accounts/login/",
            data={"username": USER[0], "password": USER[1], "csrfmiddlewaretoken": token[1]},
        )
        assert done.status_code in (200, 302) and "sessionid" in self.http.cookies, "login failed"

    def _csrf(self) -> dict[str, str]:
        return {"X-CSRFToken": self.http.cookies["csrftoken"]}

    def start_paused_run(self, url: str) -> int:
        # The rule planner can't read "pause here": it asks the person, and the run waits.
        form = {"start_url": url, "task": "pause here", "planner": "rules"}
        made = self.http.post("/runs/new", data=form, headers=self._csrf())
        found = re.search(r"/runs/(\d+)/", made.headers.get("location", ""))
        assert made.status_code == 302 and found, f"no run started: {made.status_code}"
        return int(found[1])

    def act(self, run_id: int, body: dict[str, Any]) -> tuple[int, dict[str, Any], int]:
        reply = self.http.post(f"/runs/{run_id}/act", json=body, headers=self._csrf())
        return reply.status_code, reply.json(), len(reply.content)


def wait_until_paused(client: ActClient, run_id: int) -> str:
    """The first page the paused run's tab answers with (the agent has the tab until then)."""
    deadline = time.monotonic() + 60
    while True:
        status, answer, _ = client.act(run_id, {"action": "read_page"})
        if status == 200 and answer["ok"]:
            return str(answer["result"])
        assert time.monotonic() < deadline, f"the run never paused: {status} {answer}"
        time.sleep(0.1)


def act_settings() -> dict[str, str]:
    """A dashboard whose runs a client drives from outside: the rule planner (a task it
    can't read pauses the run for the person), pages on 127.0.0.1 allowed."""
    return {
        "TABWRIGHT_PLANNER": "rules",
        "TABWRIGHT_BLOCK_PRIVATE_ADDRESSES": "0",  # the pages are on 127.0.0.1
        "TABWRIGHT_CHROMIUM_PATH": os.environ.get("TABWRIGHT_CHROMIUM_PATH") or default_chromium(),
        "TABWRIGHT_LOG": "WARNING",
    }


def ref(page: str, name: str) -> str:
    found = re.search(rf'button "{name}" \[(e\d+)\]', page)
    assert found, f"no button {name!r} in\n{page}"
    return found[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=50)
    options = parser.parse_args()
    with (
        serve({"/bench/orders.html": _page()}) as pages,
        tempfile.TemporaryDirectory() as var,
        daphne(Path(var), USER, act_settings()) as (base_url, _log),
    ):
        client = ActClient(base_url)
        run_id = client.start_paused_run(f"{pages}/bench/orders.html")
        first = wait_until_paused(client, run_id)
        go, reset = ref(first, "Mark shipped"), ref(first, "Reset")

        def call(body: dict[str, Any]) -> tuple[dict[str, Any], int]:
            status, answer, size = client.act(run_id, body)
            assert status == 200 and answer["ok"], f"{body} failed: {status} {answer}"
            return answer, size

        def singles() -> tuple[float, int]:
            started = time.perf_counter()
            _, read1 = call({"action": "read_page"})
            _, clicked = call({"action": "click", "args": {"ref": go}})
            _, waited = call({"action": "wait_for", "args": {"text": "Clicked"}})
            final, read2 = call({"action": "read_page"})
            wall = time.perf_counter() - started
            assert "Clicked" in final["result"]
            return wall, read1 + clicked + waited + read2

        def macro() -> tuple[float, int]:
            started = time.perf_counter()
            answer, size = call(
                {
                    "steps": [
                        {"type": "read_page"},
                        {"type": "click", "ref": go},
                        {"type": "wait_for", "text": "Clicked"},
                        {"type": "read_page"},
                    ],
                    "return_mode": "delta",
                }
            )
            wall = time.perf_counter() - started
            assert "Clicked" in answer["result"] and len(answer["steps"]) == 4
            return wall, size

        def reset_status() -> None:
            call({"action": "click", "args": {"ref": reset}})
            call({"action": "wait_for", "args": {"text": "Waiting"}})

        for _ in range(3):  # warm both paths up
            for run in (singles, macro):
                reset_status()
                run()
        results: dict[str, list[tuple[float, int]]] = {"singles": [], "macro": []}
        for trial in range(options.trials):
            order = ("singles", "macro") if trial % 2 == 0 else ("macro", "singles")
            for kind in order:
                reset_status()
                results[kind].append(singles() if kind == "singles" else macro())

    walls = {k: [w * 1000 for w, _ in v] for k, v in results.items()}
    sizes = {k: [b for _, b in v] for k, v in results.items()}
    for kind in ("singles", "macro"):
        print(
            f"{kind:8} calls={4 if kind == 'singles' else 1} "
            f"wall p50={median(walls[kind]):.1f} ms p95={p95(walls[kind]):.1f} ms "
            f"bytes p50={median(sizes[kind]):.0f}"
        )
    bytes_ratio = median(sizes["macro"]) / median(sizes["singles"])
    wall_ratio = median(walls["macro"]) / median(walls["singles"])
    print(f"RESULT macro calls=1/4 bytes_ratio={bytes_ratio:.3f} wall_ratio={wall_ratio:.3f}")


if __name__ == "__main__":
    main()
