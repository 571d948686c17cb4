"""bench.daily through the dashboard (``--through dashboard``): the same day, fired by the
dashboard's own scheduler.

A dashboard (daphne with its embedded worker, its own database in a temporary folder)
holds the back office's secrets.  Through its JSON API: the login scenario and the order
scenario (naming it as its login scenario) are imported, a conversation signs in and its
tab's sign-in is saved as the profile "back office", and the order scenario is scheduled
at 07:00 on weekdays with that profile.  Each firing is the schedule's **Run now**: the
worker that hears it fires it through the scheduler (dashboard.jobs.schedules.fire_due),
as at one of its times.  The firing that meets the release's cover with no handler waits
for a person; nobody comes: it is stopped, and the handlers a person would keep are
written on the scenario (PUT /api/scenarios/{id}/handlers).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack, closing
from pathlib import Path
from typing import Any

import httpx

from tests import backoffice
from tests.backoffice import BackOffice
from tests.daphne import api_token, daphne, log_in
from tests.e2e.ui import CHROMIUM

__all__ = ["daily_through_dashboard"]

USER = ("bench", "bench-password-3k9q")
SETTINGS = {
    "TABWRIGHT_BLOCK_PRIVATE_ADDRESSES": "0",  # the back office is on 127.0.0.1
    "TABWRIGHT_PLANNER": "rules",
    "TABWRIGHT_CHROMIUM_PATH": CHROMIUM,
    "TABWRIGHT_SECRET_BO_PASSWORD": backoffice.PASSWORD,
    "TABWRIGHT_SECRET_BO": backoffice.SEED,
}
ENDED = ("succeeded", "failed", "stopped", "paused")
WAIT_S = 180.0  # a bound on a hang only


def _until(what: str, read: Callable[[], Any]) -> Any:
    deadline = time.monotonic() + WAIT_S
    while not (got := read()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"not after {WAIT_S:.0f} s: {what}")
        time.sleep(0.1)
    return got


def _ended(api: httpx.Client, run_id: int) -> dict[str, Any]:
    def run() -> dict[str, Any] | None:
        got = api.get(f"/runs/{run_id}").json()
        return got if got["status"] in ENDED else None

    return _until(f"run {run_id} ends", run)


def _set_up(api: httpx.Client, office: BackOffice) -> tuple[int, int]:
    """The scenarios, the profile and the schedule: (the order scenario, the schedule)."""
    login = backoffice.sign_in_scenario(office.url).to_dict()
    api.post("/scenarios", json=login).raise_for_status()
    made = api.post("/scenarios", json=backoffice.order_scenario(office.url))
    orders = int(made.raise_for_status().json()["id"])
    api.put(f"/scenarios/{orders}/login", json={"login_scenario": "Sign in"}).raise_for_status()
    run = api.post("/runs", json={"task": backoffice.sign_in_task(office.url), "planner": "rules"})
    run_id = int(run.raise_for_status().json()["id"])
    if _ended(api, run_id)["status"] != "paused":
        raise RuntimeError(f"the conversation did not sign in: {_ended(api, run_id)}")
    api.post(f"/runs/{run_id}/signin", json={"name": "back office"}).raise_for_status()
    api.post(f"/runs/{run_id}/stop").raise_for_status()
    schedule = api.post(f"/scenarios/{orders}/schedules", json={
        "cron": "0 7 * * 1-5", "timezone": "Europe/Paris", "signin_profile": "back office",
    })  # fmt: skip
    return orders, int(schedule.raise_for_status().json()["id"])


def _fire(api: httpx.Client, schedule: int, count: int) -> dict[str, Any]:
    """Run now; the run of the schedule's ``count``-th firing, ended."""
    api.post(f"/schedules/{schedule}/fire").raise_for_status()

    def fired() -> int | None:
        firings = api.get(f"/schedules/{schedule}").json()["firings"]
        if len(firings) == count and all(f["run_id"] for f in firings):
            return max(f["run_id"] for f in firings)
        return None

    return _ended(api, _until(f"firing {count} starts", fired))


def daily_through_dashboard(
    firings: int,
    every_s: float,
    *,
    day: Any,
    before: Callable[[int, BackOffice], None],
    quiet: bool = False,
) -> Any:
    """``firings`` firings of the dashboard's schedule ``every_s`` apart, counted on
    ``day`` (a bench.daily.Day); ``before(firing, office)`` runs before each."""
    with ExitStack() as stack:
        office = stack.enter_context(backoffice.back_office())
        var = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="daily-")))
        grants = [("BO", USER[0]), ("BO_PASSWORD", USER[0])]
        base, _log = stack.enter_context(daphne(var, USER, SETTINGS, grants=grants))
        with closing(log_in(base, USER)) as page:
            token = api_token(page, "daily")
        api = stack.enter_context(httpx.Client(
            base_url=f"{base}/api", timeout=60, headers={"Authorization": f"Bearer {token}"}
        ))  # fmt: skip
        orders, schedule = _set_up(api, office)
        started = time.monotonic()
        for firing in range(firings):
            time.sleep(max(0.0, started + firing * every_s - time.monotonic()))
            before(firing, office)
            run = _fire(api, schedule, firing + 1)
            events = api.get(f"/runs/{run['id']}/events").json()["events"]
            notes = [e["text"] for e in events if e["type"] == "observation"]
            day.firings += 1
            day.passed += run["status"] == "succeeded"
            day.relogins += sum(n.startswith("signed in again") for n in notes)
            day.interruptions_handled += sum(n.startswith("handled ") for n in notes)
            if run["status"] == "paused":  # waits for a person; nobody comes
                day.person_needed += 1
                api.post(f"/runs/{run['id']}/stop").raise_for_status()
                if "covered by" in run["status_reason"] and not day.handlers:
                    # What the person keeps after clearing them.
                    day.handlers = [backoffice.WHATS_NEW, backoffice.COOKIES]
                    api.put(f"/scenarios/{orders}/handlers",
                            json={"handlers": day.handlers}).raise_for_status()  # fmt: skip
            if run["status"] != "succeeded":
                day.reasons.append(run["status_reason"])
            if not quiet:
                print(f"firing {firing} at {time.monotonic() - started:.0f} s: run {run['id']} "
                      f"{run['status']}", flush=True)  # fmt: skip
        outcomes = [f["outcome"] for f in api.get(f"/schedules/{schedule}").json()["firings"]]
        if not quiet:
            print(f"the schedule's firings: {sorted(outcomes)}", flush=True)
    return day
