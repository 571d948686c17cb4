"""Replay a scenario (stored, or a JSON file) against one or more base URLs, for use in CI.

    python manage.py scenario_replay 12 --base-url http://127.0.0.1:8080 --json
    python manage.py scenario_replay login.json --base-url http://a.test --base-url http://b.test

Prints each step's outcome (how its element was found, with what score and what changed;
for a check, what it expected and what the page showed) and ends with a RESULT line per
base URL, or prints one JSON object per base URL (one per line) with ``--json``.  Several
base URLs share one browser, each replay in a fresh context.  Exit status: 0 every replay
passed, 1 a step or a check failed (or the browser could not run), 2 a step needs a person
(replay could not tell which element it means and did not guess), 3 the scenario can't be
used (a bad file, a missing parameter or secret).  A file replay needs no database: on a
checkout never migrated only the settings' URL policy applies.  Secrets come from the
environment (``TABWRIGHT_SECRET_<NAME>``) and are never printed.  A scenario that brings
its login scenario signs in again with it when a step meets a sign-in page (a ``note:``
line says so; automation.recording.relogin).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from automation import BrowserSession
from automation.budget import MAX_TIMEOUT_MS
from automation.errors import ScenarioInvalid, TabwrightError
from automation.events import ListSink, Observation
from automation.recording.outcome import every_outcome
from automation.recording.replay import Replay, ReplayConfig, ReplayResult, StepOutcome
from automation.recording.scenario import Scenario as Document
from dashboard.engineconf import browser_config
from dashboard.management.commands.scenario_import import read_scenario_file
from dashboard.models import Scenario
from dashboard.scenarios import selectors, services

EXIT = {"passed": 0, "failed": 1, "stopped": 1, "needs_person": 2}


class Command(BaseCommand):
    help = "Replay a scenario; exits non-zero when a step fails (1) or needs a person (2)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("scenario", help="a stored scenario's id, or a scenario .json file")
        parser.add_argument(
            "--base-url", required=True, action="append", dest="base_urls", metavar="URL",
            help="where to replay it (repeat to replay it on several, one browser for all)",
        )  # fmt: skip
        add = parser.add_argument
        add("--timeout-ms", type=int, default=600_000, help="the whole replay's budget")
        add("--step-timeout-ms", type=int, default=15_000, help="each step's budget")
        add("--param", action="append", default=[], metavar="NAME=VALUE",
            help="a parameter's value (repeat for more)")  # fmt: skip
        add("--json", action="store_true", help="print one JSON object")
        add("--save-heals", action="store_true",
            help="write confident heals to the stored scenario, propose the others")  # fmt: skip
        add("--allow-private", action="store_true",
            help="allow loopback and private addresses (a local test server)")  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        for key in ("timeout_ms", "step_timeout_ms"):
            if not 0 < options[key] <= MAX_TIMEOUT_MS:
                flag = "--" + key.replace("_", "-")
                raise CommandError(f"{flag} must be between 1 and {MAX_TIMEOUT_MS}", returncode=3)
        stored, document = self._scenario(options["scenario"])
        params = _params(options["param"])
        config = browser_config()
        if options["allow_private"]:
            policy = dataclasses.replace(config.url_policy, block_private=False)
            config = dataclasses.replace(config, url_policy=policy)
        replay_config = ReplayConfig(
            step_timeout_ms=options["step_timeout_ms"], run_timeout_ms=options["timeout_ms"]
        )
        bases = options["base_urls"]
        try:
            document.resolve(params)  # a missing parameter or secret: before the browser
            ran = asyncio.run(_replay(config, document, params, bases, replay_config))
        except ScenarioInvalid as exc:
            raise CommandError(str(exc), returncode=3) from None
        except TabwrightError as exc:
            raise CommandError(f"replay could not run: {exc}", returncode=1) from None
        results = [result for result, _ in ran]
        for base, (result, notes) in zip(bases, ran, strict=True):
            if stored is not None and options["save_heals"]:
                ids = {"": stored.pk, **selectors.scenario_callee_ids(scenario_id=stored.pk)}
                for name, outcome in every_outcome(result.steps):  # a callee's: to it
                    services.heal_record(
                        scenario_id=ids[name], outcome=outcome, succeeded=result.ok
                    )
            self._report(result, base, notes, as_json=options["json"], several=len(bases) > 1)
        failed = [(b, r) for b, r in zip(bases, results, strict=True) if not r.ok]
        if failed:
            # A failure says more than a pause for a person: it wins the exit status.
            worst = min(failed, key=lambda pair: EXIT[pair[1].status] == 2)
            message = "; ".join(f"replay {r.status} on {b}: {r.reason}" for b, r in failed)
            raise CommandError(message, returncode=EXIT[worst[1].status])

    def _scenario(self, which: str) -> tuple[Scenario | None, Document]:
        try:
            if which.isdigit():
                stored = Scenario.objects.filter(pk=int(which)).first()
                if stored is None:
                    raise CommandError(f"no scenario {which}", returncode=3)
                return stored, selectors.scenario_document(scenario=stored)
            return None, Document.from_dict(read_scenario_file(which))
        except ScenarioInvalid as exc:
            raise CommandError(f"{which}: {exc}", returncode=3) from None

    def _report(
        self, result: ReplayResult, base: str, notes: list[str], *, as_json: bool, several: bool
    ) -> None:
        if as_json:
            data = {"base_url": base, **result.to_dict(), "notes": notes}
            self.stdout.write(json.dumps(data, ensure_ascii=False))
            return
        if several:
            self.stdout.write(f"== {base}")
        for called, step in every_outcome(result.steps):  # a call's steps after it
            self.stdout.write((f"  in {called!r}: " if called else "") + _line(step))
        for note in notes:  # what the replay did besides its steps (an interruption handled)
            self.stdout.write(f"note: {note}")
        passed = sum(s.status == "passed" for s in result.steps)
        checks = [s for s in result.steps if s.action == "expect"]
        held = sum(s.status == "passed" for s in checks)
        self.stdout.write(
            f"RESULT {result.status} {passed}/{len(result.steps)} steps, "
            f"{held}/{len(checks)} checks in {result.duration_ms} ms"
            + (f" on {base}" if several else "")
        )


async def _replay(
    config: Any,
    document: Document,
    params: dict[str, str],
    bases: list[str],
    replay: ReplayConfig,
) -> list[tuple[ReplayResult, list[str]]]:
    """One replay per base URL, in one browser, each in a context of its own; with each,
    its notes (the observations it made)."""
    results = []
    async with BrowserSession(config) as browser:
        for base in bases:
            tab = await browser.new_tab()
            sink = ListSink()
            try:
                result = await Replay(tab, document, params=params, base_url=base, config=replay,
                                      sink=sink).run()  # fmt: skip
            finally:
                await tab.close()
            notes = [e.text for e in sink.events if isinstance(e, Observation)]
            results.append((result, notes))
    return results


def _params(pairs: list[str]) -> dict[str, str]:
    params = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise CommandError(f"--param {pair!r}: write NAME=VALUE", returncode=3)
        params[name] = value
    return params


def _line(step: StepOutcome) -> str:
    line = f"step {step.index:>3} {step.action:<14} {step.status:<12}"
    if step.action == "expect" and step.status == "passed":
        line += f" {step.result}"
    if step.strategy:
        line += f" {step.strategy}" + (f" {step.score:.3f}" if step.score is not None else "")
    if step.duration_ms:
        line += f" ({step.duration_ms} ms)"
    if step.heal:
        line += f" healed ({step.heal}): " + "; ".join(step.changes)
    if step.error:
        line += f"\n         [{step.error['code']}] {step.error['message']}"
    for c in step.candidates:
        line += f"\n         candidate: {c.get('role')} {c.get('name')!r} score {c.get('score')}"
    return line
