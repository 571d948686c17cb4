"""Nothing one person sends can stall the others: a dashboard under hostile inputs, while a
person's page loads go on.

One round starts a dashboard as it runs for real (daphne with its embedded worker, a fresh
SQLite database, a user, an API token, the scripted LLM server as its "openai" planner) and
a probe that loads the logged-in home page every 100 ms, timing each load.  Meanwhile a
schedule is made due again and again (its next time set to now in the database, every
BEAT_S), each time replaying the demo sign-up.  After QUIET_S of pages with nothing
sent, the round sends, one after the other:

1. a run whose output schema is a ``$ref`` to a loopback server that accepts and never
   answers (through the API: refused at once, nothing fetched);
2. a run whose schema's ``pattern`` is ``^(a+)+$`` (catastrophic for a backtracking
   matcher) and whose model (the scripted server, answering in one JSON body) ends twice
   with 100,000 "a" and a "!", which the pattern does not match: the run checks the
   output, tells the model, then pauses;
3. a schedule made due whose replay fails, told to a webhook on loopback that drips its
   answer one byte every DRIP_S (sent early in the round, so the drip lasts through the
   rest);
4. a batch from a CSV of 5 MiB and 10,000 rows through the API (then stopped);
5. 20 rule-planner runs of the demo form sent at once through the API.

Then it reads ``/metrics`` (read every BEAT_S as well: its lag p99 is the latest minute's;
the round lasts at least that minute past QUIET_S) and prints the details (the worst page
while each input was being sent, what each input got) and one line::

    RESULT stall worst_page_ms=… loop_lag_p99_ms=… firings_missed=… false_stale=…

- worst_page_ms: the slowest home page load of the round (a load that fails counts as
  PAGE_TIMEOUT_S); goal under 1000;
- loop_lag_p99_ms: the highest ``tabwright_loop_lag_p99_seconds`` read whose minute
  holds none of the dashboard's start (from LAG_WINDOW_S + QUIET_S after the probe's
  start: the first requests import the URL conf on the loop); goal under 100;
- firings_missed: times of the repeated schedule not fired before the next one was set
  (BEAT_S later, three worker polls), plus firings the API reports missed; goal 0;
- false_stale: of the 20 runs (static pages), those that paused or failed with a
  ``stale_ref`` error; goal 0.

``--rounds N`` repeats the round N times, each on a fresh dashboard, and reports the worst
of each figure.  Stalls the loop's watchdog logged (daphne's log) are shown with the code
that held the loop: its stack's frames in the project's code and the innermost two (a
stack that ends in the selector's ``select`` is a loop kept from the CPU: another thread
held the GIL, or the machine was busy).  ``--keep`` keeps each round's folder, its
daphne log included.

``python -m bench.stall [--rounds 3] [--runs 20] [--csv-mib 5] [--keep]``
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import socketserver
import sqlite3
import statistics
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from select import select
from typing import Any

import httpx

from tests.daphne import ROOT, api_token, daphne, log_in
from tests.dashboard.signup import sign_up
from tests.e2e.ui import CHROMIUM
from tests.fakellm import Reply, ScriptedLLMServer
from tests.tasks import FORM_TASK

KEPT = ROOT / "var" / "bench-stall"
USER = ("bench", "bench-password-7w3d")
PROBE_EVERY_S = 0.1
QUIET_S = 10.0  # the probe's pages before anything is sent
LAG_WINDOW_S = 60.0  # what /metrics's lag p99 covers (600 beats of 100 ms)
PAGE_TIMEOUT_S = 30.0
BEAT_S = 15.0  # the repeated schedule is made due this often (the worker polls every 5 s)
DRIP_S = 3.0  # the webhook receiver's pause between two bytes of its answer
RUN_DEADLINE_S = 300.0  # the most a run of the round is waited for
ENDED = {"succeeded", "failed", "stopped"}
CATASTROPHIC = {"type": "object", "required": ["v"],
                "properties": {"v": {"type": "string", "pattern": "^(a+)+$"}}}  # fmt: skip
HELD = "the event loop has been held for"
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
SETTINGS = {
    "TABWRIGHT_DEBUG": "1",  # /demo/
    "TABWRIGHT_BLOCK_PRIVATE_ADDRESSES": "0",  # the demo pages are on 127.0.0.1
    "TABWRIGHT_WEBHOOK_ALLOWED_DOMAINS": "127.0.0.1",  # the dripping receiver
    "TABWRIGHT_PLANNER": "rules",
    "TABWRIGHT_CHROMIUM_PATH": CHROMIUM,
    "TABWRIGHT_SESSION_IDLE_S": "0",
    "TABWRIGHT_LLM_MODEL": "bench-model",
}


# -- loopback servers that answer slowly or never ----------------------------------------


class _Slow(socketserver.BaseRequestHandler):
    """Holds each connection until the client hangs up: with ``drip_s``, reads the request
    and answers one byte per ``drip_s``; without, never answers."""

    drip_s: float | None = None
    stop: threading.Event
    held_s: list[float]  # how long each connection was held before the client hung up

    def handle(self) -> None:
        sock, start = self.request, time.monotonic()
        try:
            if self.drip_s is None:
                while not self._hung_up(0.5):
                    pass
            else:
                _read_request(sock)
                for byte in ANSWER:
                    sock.sendall(bytes([byte]))
                    if self._hung_up(self.drip_s):
                        break
        except OSError:
            pass  # the client hung up while a byte was sent
        self.held_s.append(time.monotonic() - start)

    def _hung_up(self, wait_s: float) -> bool:
        readable, _, _ = select([self.request], [], [], wait_s)
        return bool(readable and not self.request.recv(65536)) or self.stop.is_set()


def _read_request(sock: Any) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = re.search(rb"(?i)content-length:\s*(\d+)", head)
    while length and len(body) < int(length.group(1)):
        chunk = sock.recv(65536)
        if not chunk:
            return
        body += chunk


@contextmanager
def slow_server(drip_s: float | None) -> Iterator[tuple[str, list[float]]]:
    """A loopback server that drips its answer (``drip_s``) or never answers (None); its
    URL and the seconds each connection was held (one entry per connection ended)."""
    stop, held = threading.Event(), []
    handler = type("Handler", (_Slow,), {"drip_s": drip_s, "stop": stop, "held_s": held})
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", held
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


# -- what runs through the round -----------------------------------------------------------


class Probe:
    """A person's page: the home page loaded every PROBE_EVERY_S, each load timed."""

    def __init__(self, base_url: str, cookies: httpx.Cookies) -> None:
        self.client = httpx.Client(base_url=base_url, cookies=cookies, timeout=PAGE_TIMEOUT_S)
        self.ms: list[float] = []
        self.phases: list[str] = []  # what the round was sending during each load
        self.phase = "quiet"
        self.failed = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="probe", daemon=True)

    def _loop(self) -> None:
        while not self.stop.wait(PROBE_EVERY_S):
            start, phase = time.perf_counter(), self.phase
            try:
                ok = self.client.get("/").status_code == 200
            except httpx.HTTPError:
                ok = False
            self.ms.append((time.perf_counter() - start) * 1000 if ok else PAGE_TIMEOUT_S * 1000)
            self.phases.append(phase)
            self.failed += not ok

    def worst_by_phase(self) -> str:
        worst: dict[str, float] = {}
        for ms, phase in zip(self.ms, self.phases, strict=True):
            worst[phase] = max(worst.get(phase, 0.0), ms)
        return ", ".join(f"{phase} {ms:.0f}" for phase, ms in worst.items())


def make_due(db: sqlite3.Connection, schedule: int) -> str:
    """The schedule's next time set to now (as Django keeps it in SQLite: UTC, no zone), in
    the database as the tests do; the time as stored."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
    with db:
        db.execute("update dashboard_schedule set next_fire_at = ? where id = ?", (now, schedule))
    return now


def next_fire(db: sqlite3.Connection, schedule: int) -> str:
    query = "select next_fire_at from dashboard_schedule where id = ?"
    return str(db.execute(query, (schedule,)).fetchone()[0])


class Beats:
    """The repeated schedule: made due every BEAT_S; a time still not fired when the next
    is set (three worker polls later) was missed.  /metrics is read at each beat (its lag
    p99 covers the latest minute only)."""

    def __init__(self, db: Path, schedule: int, metrics: Callable[[], dict[str, float]]) -> None:
        self.db, self.schedule, self.metrics = db, schedule, metrics
        self.set: list[str] = []  # the due times set, as stored
        self.unfired = 0
        self.lag_p99_ms: list[float] = []
        self.started = time.monotonic()  # when the probe started
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="beats", daemon=True)

    def _loop(self) -> None:
        with closing(sqlite3.connect(self.db, timeout=30)) as db:
            while True:
                self.unfired += bool(self.set) and next_fire(db, self.schedule) == self.set[-1]
                self.set.append(make_due(db, self.schedule))
                self.read_lag()
                if self.stop.wait(BEAT_S):
                    return

    def read_lag(self) -> None:
        """The loop's lag p99 from /metrics, kept once its minute holds none of the
        dashboard's start (its first requests import the URL conf, on the loop)."""
        try:
            lag_ms = self.metrics()["tabwright_loop_lag_p99_seconds"] * 1000
        except httpx.HTTPError:
            return  # the next beat reads it again
        if time.monotonic() - self.started >= LAG_WINDOW_S + QUIET_S:
            self.lag_p99_ms.append(lag_ms)

    def last_fired(self) -> None:
        """Waits up to BEAT_S for the last time set to fire (the round ends there)."""
        deadline = time.monotonic() + BEAT_S
        with closing(sqlite3.connect(self.db, timeout=30)) as db:
            while next_fire(db, self.schedule) == self.set[-1]:
                if time.monotonic() > deadline:
                    self.unfired += 1
                    return
                time.sleep(0.5)


@dataclass
class Round:
    pages_ms: list[float] = field(default_factory=list)
    page_failures: int = 0
    lag_p99_ms: float = 0.0
    lag_max_ms: float = 0.0
    stalls: int = 0
    beats: int = 0
    firings_missed: int = 0
    false_stale: int = 0
    notes: list[str] = field(default_factory=list)
    stacks: list[str] = field(default_factory=list)


class Api:
    def __init__(self, base_url: str, token: str) -> None:
        self.base_url, self.token = base_url, token
        self.client = self.new()

    def new(self) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=120,
                            headers={"Authorization": f"Bearer {self.token}"})  # fmt: skip

    def status(self, run: int) -> dict[str, Any]:
        return dict(self.client.get(f"/api/runs/{run}").json())

    def wait_run(self, run: int, done: set[str], deadline_s: float = RUN_DEADLINE_S) -> str:
        deadline = time.monotonic() + deadline_s
        while (status := self.status(run)["status"]) not in done:
            if time.monotonic() > deadline:
                return f"still {status} after {deadline_s:.0f} s"
            time.sleep(0.5)
        return status


def timed(call: Callable[[], httpx.Response]) -> tuple[httpx.Response, float]:
    start = time.perf_counter()
    answer = call()
    return answer, (time.perf_counter() - start) * 1000


def remote_ref(api: Api, base: str, never: str, fetched: list[float], out: Round) -> None:
    body = {"task": "read the page", "start_url": f"{base}/demo/form.html", "planner": "rules",
            "output_schema": {"$ref": f"{never}/schema.json"}}  # fmt: skip
    answer, ms = timed(lambda: api.client.post("/api/runs", json=body))
    code = answer.json().get("error", {}).get("code") if answer.status_code != 201 else "made"
    out.notes.append(f"1 remote $ref: {answer.status_code} {code} in {ms:.0f} ms, "
                     f"{len(fetched)} connection(s) to the silent server")  # fmt: skip


def catastrophic_pattern(api: Api, llm: ScriptedLLMServer, base: str, out: Round) -> None:
    done = {"action": "done", "summary": "read", "output": {"v": "a" * 100_000 + "!"}}
    # One JSON answer, not a stream: a scripted stream comes at once, not at a model's pace,
    # and 12,500 chunks of it would measure the token events, not the check.
    llm.script(*[Reply(text="<action>" + json.dumps(done) + "</action>", json_body=True)] * 2)
    body = {"task": "read the page", "start_url": f"{base}/demo/form.html", "planner": "openai",
            "output_schema": CATASTROPHIC}  # fmt: skip
    answer = api.client.post("/api/runs", json=body)
    if answer.status_code != 201:
        out.notes.append(f"2 pattern: refused {answer.status_code} {answer.text[:200]}")
        return
    run, start = answer.json()["id"], time.monotonic()
    status = api.wait_run(run, ENDED | {"paused"})
    reason = api.status(run)["status_reason"][:80]
    out.notes.append(f"2 pattern ^(a+)+$ on 100,001 characters: run {status} after "
                     f"{time.monotonic() - start:.1f} s ({reason})")  # fmt: skip
    if status == "paused":
        api.client.post(f"/api/runs/{run}/stop")


def big_batch(api: Api, scenario: int, base: str, body: bytes, out: Round) -> None:
    answer, ms = timed(lambda: api.client.post(
        f"/api/scenarios/{scenario}/batches", content=body,
        headers={"Content-Type": "application/json"},
    ))  # fmt: skip
    if answer.status_code != 201:
        out.notes.append(f"4 CSV batch: {answer.status_code} in {ms:.0f} ms {answer.text[:200]}")
        return
    made = answer.json()
    api.client.post(f"/api/batches/{made['id']}/stop")
    out.notes.append(f"4 CSV batch of {len(body) / 2**20:.1f} MiB: {made['progress']['total']} "
                     f"rows made in {ms:.0f} ms, then stopped")  # fmt: skip


def csv_body(mib: float, base: str) -> bytes:
    """A batch request of ``mib`` MiB of CSV, as many rows as a batch takes (10,000)."""
    rows, header = 10_000, "name,greet\n"
    width = max(1, ((int(mib * 2**20) - len(header)) // rows - 12) // 2)  # a row: 2 names + 2
    names = ["n" * width + f"{n:05}" for n in range(rows)]
    text = header + "".join(f"{name},{name}\n" for name in names)
    return json.dumps({"csv": text, "concurrency": 1, "base_url": base}).encode()


def many_runs(api: Api, base: str, count: int, out: Round) -> None:
    body = {"task": FORM_TASK, "start_url": f"{base}/demo/form.html", "planner": "rules"}

    def make(_: int) -> int | None:
        with api.new() as client:
            made = client.post("/api/runs", json=body)
        return int(made.json()["id"]) if made.status_code == 201 else None

    start = time.monotonic()
    with ThreadPoolExecutor(count) as pool:
        ids = {run for run in pool.map(make, range(count)) if run is not None}
    if len(ids) < count:
        out.notes.append(f"5 {count - len(ids)} of the {count} runs were refused")
    ended: dict[int, str] = {}
    deadline = start + RUN_DEADLINE_S
    while len(ended) < len(ids) and time.monotonic() < deadline:
        for run in api.client.get("/api/runs?limit=500").json():
            if run["id"] in ids and run["id"] not in ended and run["status"] in ENDED | {"paused"}:
                ended[run["id"]] = run["status"]
                if run["status"] != "succeeded":
                    out.false_stale += _stale(api, run["id"])
                if run["status"] == "paused":  # it holds a slot until stopped
                    api.client.post(f"/api/runs/{run['id']}/stop")
        time.sleep(1)
    statuses = ", ".join(f"{n} {status}" for status, n in Counter(ended.values()).items())
    out.notes.append(f"5 {count} runs at once: {statuses or 'none ended'} within "
                     f"{time.monotonic() - start:.0f} s; {out.false_stale} on a stale ref, "
                     f"{len(ids) - len(ended)} never ended")  # fmt: skip


def _stale(api: Api, run: int) -> bool:
    got = api.status(run)
    errors = [step["error"] or {} for step in got["steps"] or []]
    return "stale_ref" in got["status_reason"] or any(e.get("code") == "stale_ref" for e in errors)


def hook_told(api: Api, schedule: int, held: list[float], out: Round) -> None:
    """Waits (bounded) for the failing firing's first alert try to be cut, and says so."""
    deadline = time.monotonic() + RUN_DEADLINE_S
    tries: list[dict[str, Any]] = []
    while not held and time.monotonic() < deadline:
        time.sleep(1)
    firings = api.client.get(f"/api/schedules/{schedule}").json()["firings"]
    for firing in firings:
        for delivery in firing["deliveries"]:
            tries += delivery["log"]
    out.notes.append(f"3 dripping webhook: firing {[f['outcome'] for f in firings]}, "
                     f"receiver held {[round(s) for s in held]} s, tries logged: "
                     f"{[t.get('error') or t.get('status_code') for t in tries]}")  # fmt: skip


def metrics(client: httpx.Client) -> dict[str, float]:
    found = re.findall(r"^(tabwright_loop_\w+) ([\d.e+-]+)$", client.get("/metrics").text, re.M)
    return {name: float(value) for name, value in found}


def held_stacks(log: Path) -> list[str]:
    """Each stall the watchdog logged: how long, and its stack's frames in the project's
    code (the request or task that held the loop) and the innermost two."""
    found = []
    lines = log.read_text(errors="replace").splitlines()
    for n, line in enumerate(lines):
        if HELD not in line:
            continue
        frames: list[list[str]] = []
        for later in lines[n + 1 :]:
            if later.startswith("  File "):
                frames.append([later.strip()])
            elif later.startswith("    ") and frames:
                frames[-1].append(later.strip())
            else:
                break
        ours = [f for f in frames[:-2] if "/.venv/" not in f[0] and "/lib/python" not in f[0]]
        shown = [" | ".join(frame) for frame in ours + frames[-2:]]
        found.append(line.strip() + "\n" + "\n".join(shown))
    return found


def one_round(var: Path, runs: int, csv_mib: float) -> Round:
    out = Round()
    with ExitStack() as stack:
        llm = ScriptedLLMServer().start()
        stack.callback(llm.stop)
        never, fetched = stack.enter_context(slow_server(None))
        hook, held = stack.enter_context(slow_server(DRIP_S))
        settings = {**SETTINGS, "TABWRIGHT_LLM_BASE_URL": llm.base_url}
        base, log = stack.enter_context(daphne(var, USER, settings))
        page = log_in(base, USER)
        stack.callback(page.close)
        api = Api(base, api_token(page, "bench"))
        scenario = api.client.post("/api/scenarios", json=sign_up(base)).json()["id"]

        def schedule(**fields: Any) -> int:
            made = api.client.post(f"/api/scenarios/{scenario}/schedules", json={
                "cron": "0 7 * * 1-5", "timezone": "Europe/Paris", **fields})  # fmt: skip
            assert made.status_code == 201, made.text
            return int(made.json()["id"])

        failing = schedule(params={"name": "Ada", "greet": "Someone else"}, webhook_url=hook)
        repeated = schedule(params={"name": "Ada", "greet": "Ada"})
        body = csv_body(csv_mib, base)
        page.get("/")  # the first load (templates compiled) is not the probe's
        probe = Probe(base, page.cookies)
        beats = Beats(var / "db.sqlite3", repeated, lambda: metrics(page))
        probe.thread.start()
        beats.thread.start()
        time.sleep(QUIET_S)  # the pages with nothing sent
        steps: list[tuple[str, Callable[[], None]]] = [
            ("1 $ref", lambda: remote_ref(api, base, never, fetched, out)),
            ("2 pattern", lambda: catastrophic_pattern(api, llm, base, out)),
            ("4 CSV", lambda: big_batch(api, scenario, base, body, out)),
            ("5 runs", lambda: many_runs(api, base, runs, out)),
            ("3 webhook", lambda: hook_told(api, failing, held, out)),
        ]
        try:
            with closing(sqlite3.connect(var / "db.sqlite3", timeout=30)) as db:
                make_due(db, failing)  # its replay fails, its alert drips all along
            for phase, step in steps:
                probe.phase = phase
                out.notes.append(f"{datetime.now():%H:%M:%S} {phase}")
                step()
        finally:
            beats.stop.set()
            beats.thread.join(timeout=60)
            beats.last_fired()
            probe.stop.set()
            probe.thread.join(timeout=PAGE_TIMEOUT_S + 5)
        firings = api.client.get(f"/api/schedules/{repeated}").json()["firings"]
        due = {datetime.fromisoformat(f["due_at"]).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
               for f in firings}  # fmt: skip
        reported = sum(f["missed"] + (f["outcome"] == "missed") for f in firings)
        out.beats = len(beats.set)
        out.firings_missed = max(beats.unfired, len(set(beats.set) - due)) + reported
        time.sleep(max(0.0, beats.started + LAG_WINDOW_S + QUIET_S - time.monotonic()))
        beats.read_lag()
        final = metrics(page)
    out.pages_ms, out.page_failures = probe.ms, probe.failed
    out.notes.insert(0, f"worst page (ms) while sending: {probe.worst_by_phase()}")
    out.lag_p99_ms = max(beats.lag_p99_ms)
    out.lag_max_ms = final["tabwright_loop_lag_max_seconds"] * 1000
    out.stalls = int(final["tabwright_loop_stalls_total"])
    out.stacks = held_stacks(log)
    return out


def report(number: int, got: Round) -> None:
    pages = sorted(got.pages_ms)
    print(f"round {number}: {len(pages)} page loads, median {statistics.median(pages):.0f} ms, "
          f"worst {pages[-1]:.0f} ms, {got.page_failures} failed; loop lag p99 "
          f"{got.lag_p99_ms:.1f} ms, max {got.lag_max_ms:.0f} ms, {got.stalls} stall(s); "
          f"repeated schedule made due {got.beats} times, {got.firings_missed} missed")  # fmt: skip
    for note in got.notes:
        print(f"  {note}")
    for stack in got.stacks[:5]:
        print("  " + stack.replace("\n", "\n    "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1, help="rounds, each on a fresh dashboard")
    parser.add_argument("--runs", type=int, default=20, help="runs sent at once")
    parser.add_argument("--csv-mib", type=float, default=5.0, help="size of the batch's CSV")
    parser.add_argument("--keep", action="store_true",
                        help=f"keep each round's folder (daphne's log) in {KEPT}")  # fmt: skip
    args = parser.parse_args()
    rounds = []
    with tempfile.TemporaryDirectory(prefix="tabwright-stall-") as tmp:
        folder = KEPT if args.keep else Path(tmp)
        if args.keep:
            shutil.rmtree(KEPT, ignore_errors=True)
        for number in range(1, args.rounds + 1):
            rounds.append(one_round(folder / f"round-{number}", args.runs, args.csv_mib))
            report(number, rounds[-1])
    print(
        "RESULT stall "
        f"worst_page_ms={max(max(r.pages_ms) for r in rounds):.0f} "
        f"loop_lag_p99_ms={max(r.lag_p99_ms for r in rounds):.1f} "
        f"firings_missed={max(r.firings_missed for r in rounds)} "
        f"false_stale={max(r.false_stale for r in rounds)}"
    )


if __name__ == "__main__":
    main()
