"""Redesigned back offices: record a task on one design, replay it on every other.

fixtures/reskin/designs.json lists one back office (bench/reskinapp.py serves it) in
designs that keep its routes and data and change its markup and navigation: collapsible
menu groups, icon-only buttons, an iframe-tabbed shell, searchable dropdowns over hidden
selects, boxes styled over by their label, login fields without labels, the same link in a
sidebar and a header, cards instead of tables, and apps that draw themselves after
``load`` (a late script loader, a deferred mount, lazily loaded client-side routes).

A person does each task on the recording design while :class:`Recorder` records: real mouse
clicks at the centre of each element and real typing.  ``add``: log in, open the form to
add a customer from the start page's Customers row, fill its name, choose its tier, tick
Active, type the date and the notes, save.  ``edit``: log in, open the list, search it,
filter it by tier, open the row's Edit, choose another tier, tick Active, retype the
notes, save.  Each recorded element step is tagged with what the person's action
was about, in the fixture's own terms: the field's ``name`` (``field:tier``), the route a
link leads to (``link:customers/new``) or the route a submit posts to
(``submit:customers/save``).

The scenario is then replayed on every other design in a fresh browser context.  The
``locate`` replay imports is wrapped: the first element it returns for a step is described
the same way (a widget standing for a hidden select is that select's field) and judged:
``step_wrong`` counts element steps whose element is another one.  A pair's ``task_ok``
reads the store only: exactly one save, of exactly the task's customer, and nothing else
changed.  ``false_green``: the replay said "passed" but the task is not done.
``agent_heals``: steps an agent did (an LLM profile; none here: the bench runs without one).

    .venv/bin/python -m bench.reskin [--verbose] [--record-on plain] [--only a,b]
        [--task add|edit] [--step-timeout-ms 15000]

Last line:
    RESULT reskin pairs=<n> task_ok=<share> false_green=<n> step_wrong=<n> agent_heals=<n>
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import ElementHandle, Page
from playwright.async_api import Error as PlaywrightError

from automation import (
    BrowserSession,
    Recorder,
    Replay,
    ReplayConfig,
    Scenario,
    TabwrightError,
)
from automation.browser.identity import Located
from bench import crossimpl
from bench.common import browser_config
from bench.crossimpl import _judging, _quiet
from bench.reskinapp import PASSWORD, SEED, USERNAME, Store, load_designs, serve_backoffice

__all__ = ["NEW_CUSTOMER", "PairResult", "Recording", "main", "record_on", "replay_on"]

NEW_CUSTOMER = {"name": "Grace Hopper", "tier": "gold", "active": True,
                "since": "2024-03-01", "notes": "Met at the fair"}  # fmt: skip
EDITED = {**SEED[0], "tier": "gold", "active": True, "notes": "Called back"}
TASKS = ("add", "edit")
SECRET_ENV = {"TABWRIGHT_SECRET_PASSWORD": PASSWORD}
VISIBLE_MS = 10_000
FINAL_SETTLE_S = 0.5

# What an element is in the fixture's own terms: a field by its name (a widget standing
# for a hidden select, or a label, by its control's), a link by the route it leads to, a
# submit by the route its form posts to.  Routes are relative to the design's folder.
_PART_JS = """(e, root) => {
  const route = (url) => {
    const u = new URL(url, location.href);
    const path = u.pathname.startsWith(root) ? u.pathname.slice(root.length) : u.pathname;
    return path;
  };
  const combo = e.closest && e.closest(".combo");
  if (combo && combo.previousElementSibling && combo.previousElementSibling.name) {
    return "field:" + combo.previousElementSibling.name;
  }
  const label = e.closest && e.closest("label");
  const control = e.tagName === "LABEL" ? e.control : label && label.control;
  const el = control || e;
  const field = el.matches("input:not([type=submit]), select, textarea");
  if (field && el.name) return "field:" + el.name;
  const link = el.closest("a[href]");
  if (link) return "link:" + route(link.href);
  const button = el.closest("button, input[type=submit]");
  if (button && button.form) return "submit:" + route(button.form.action);
  return "other:" + el.tagName.toLowerCase() + " " + (el.textContent || "").trim().slice(0, 40);
}"""


@dataclass
class Recording:
    design: str
    scenario: Scenario
    parts: list[str]  # per step: what it was about ("" for page steps)
    ok: bool  # the recording design's store reached the goal
    error: str = ""
    task: str = "add"


@dataclass
class PairResult:
    source: str
    target: str
    status: str
    reason: str
    task_ok: bool
    wrong: list[str] = field(default_factory=list)  # "step i: found X, meant Y"
    heals: list[str] = field(default_factory=list)  # steps done another way, and how
    agent_heals: int = 0
    duration_ms: int = 0

    @property
    def false_green(self) -> bool:
        return self.status == "passed" and not self.task_ok


def goal_reached(state: dict[str, Any], task: str = "add") -> bool:
    """Exactly one save, of the task's customer (added, or Ada Lovelace changed), and every
    other customer as it was seeded."""
    customers = state["customers"]
    seeded = {i + 1: dict(c) for i, c in enumerate(SEED)}
    if task == "edit":
        seeded[1] = EDITED
        return state["saves"] == [EDITED] and customers == seeded
    added = {k: v for k, v in customers.items() if k not in seeded}
    return (
        state["saves"] == [NEW_CUSTOMER]
        and list(added.values()) == [NEW_CUSTOMER]
        and all(customers.get(k) == v for k, v in seeded.items())
    )


async def _part(element: ElementHandle, design: str) -> str:
    try:
        return str(await element.evaluate(_PART_JS, f"/{design}/"))
    except PlaywrightError as exc:
        return f"other: could not judge ({exc.message.splitlines()[0]})"


# -- recording ---------------------------------------------------------------------------


async def _click(page: Page, selector: str) -> None:
    """A person's click: real mouse input at the middle of the element, once it shows."""
    locator = page.locator(selector).first
    await locator.wait_for(state="visible", timeout=VISIBLE_MS)
    box = await locator.bounding_box(timeout=VISIBLE_MS)
    assert box is not None, f"{selector} has no box"
    await page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def _person(page: Page, task: str) -> list[tuple[str, Callable[[], Awaitable[None]]]]:
    """A task as a person does it on the plain design: (what each action is about, the
    action).  add: a new customer from the start page's Customers row; edit: Ada Lovelace,
    found on the list by a search and the tier filter."""

    def click(selector: str) -> Callable[[], Awaitable[None]]:
        return lambda: _click(page, selector)

    def typing(selector: str, text: str) -> Callable[[], Awaitable[None]]:
        async def act() -> None:
            await _click(page, selector)
            await page.keyboard.type(text)

        return act

    async def date() -> None:
        box = await page.locator("input[name=since]").bounding_box(timeout=VISIBLE_MS)
        assert box is not None
        await page.mouse.click(box["x"] + 8, box["y"] + box["height"] / 2)  # its month
        await page.keyboard.type("03012024")

    async def tier() -> None:
        await page.focus("select[name=tier]")
        await page.keyboard.type("Gold")  # a select takes typed letters as its choice

    async def search() -> None:
        await _click(page, "input[name=q]")
        await page.keyboard.type("Lovelace")
        await page.keyboard.press("Enter")

    async def chosen(selector: str, letters: str) -> None:
        await page.focus(selector)
        await page.keyboard.type(letters)  # a select takes typed letters as its choice

    async def notes() -> None:
        await _click(page, "textarea[name=notes]")
        await page.keyboard.press("Control+A")
        await page.keyboard.type(EDITED["notes"])

    login = [
        ("field:username", typing("input[name=username]", USERNAME)),
        ("field:password", typing("input[name=password]", PASSWORD)),
        ("submit:login", click("form button")),
    ]
    if task == "edit":
        return [
            *login,
            ("link:customers", click("nav a[href$='/customers']")),
            ("field:q", search),
            ("field:tier", lambda: chosen("select[name=tier]", "Silver")),
            ("link:customers/1/edit", click("tr:has-text('Ada Lovelace') a[href$='/edit']")),
            ("field:tier", lambda: chosen("form.edit select[name=tier]", "Gold")),
            ("field:active", click("input[name=active]")),
            ("field:notes", notes),
            ("submit:customers/save", click("form.edit button")),
        ]
    return [
        *login,
        ("link:customers/new", click("tr:has(a[href$='/customers']) a[href$='/customers/new']")),
        ("field:name", typing("input[name=name]", NEW_CUSTOMER["name"])),
        ("field:tier", tier),
        ("field:active", click("input[name=active]")),
        ("field:since", date),
        ("field:notes", typing("textarea[name=notes]", NEW_CUSTOMER["notes"])),
        ("submit:customers/save", click("form.edit button")),
    ]


async def record_on(
    browser: BrowserSession, base: str, store: Store, design: str, task: str = "add"
) -> Recording:
    """A person does ``task`` on ``design`` while a Recorder records it."""
    store.reset()
    tab = await browser.new_tab()
    parts: list[str] = []
    error = ""
    recorder = Recorder(tab)
    try:
        await tab.navigate(f"{base}/{design}/login")
        await recorder.start()
        parts = ["" for _ in recorder.steps]
        for part, act in _person(tab.page, task):
            before = len(recorder.steps)
            try:
                await act()
            except (PlaywrightError, AssertionError) as exc:
                error = f"{part}: {str(exc).splitlines()[0]}"
                break
            await _quiet(recorder, "new_todo" if part.startswith("field:") else part)
            parts += [part if s.needs_element else "" for s in recorder.steps[before:]]
        steps = await recorder.stop()
        parts += ["" for _ in steps[len(parts) :]]
        del parts[len(steps) :]
    finally:
        await recorder.stop()
        await tab.close()
    scenario = Scenario(name=f"{task} a customer on {design}", steps=tuple(steps),
                        base_url=f"{base}/{design}/")  # fmt: skip
    return Recording(design, scenario, parts, goal_reached(store.snapshot(), task), error, task)


# -- replaying ---------------------------------------------------------------------------


class _Judge:
    """The first element ``locate`` returns for each step of one replay, described."""

    def __init__(self, recording: Recording, design: str) -> None:
        self.steps = recording.scenario.steps
        self.design = design
        self.found: dict[int, str] = {}

    _index = crossimpl._Judge._index

    async def note(self, identity: object, located: Located) -> None:
        index = self._index(identity)
        if index is None or index in self.found or located.element is None:
            return
        self.found[index] = await _part(located.element, self.design)


async def replay_on(
    base: str, store: Store, recording: Recording, design: str, *, step_timeout_ms: int = 15_000
) -> PairResult:
    """Replay ``recording`` on ``design`` in a fresh browser, and judge it by the store."""
    store.reset()
    started = time.monotonic()
    judge = _Judge(recording, design)
    async with BrowserSession(browser_config()) as browser:
        tab = await browser.new_tab()
        replay = Replay(
            tab, recording.scenario, base_url=f"{base}/{design}/", env=SECRET_ENV,
            config=ReplayConfig(step_timeout_ms=step_timeout_ms, locate_wait_ms=step_timeout_ms),
        )  # fmt: skip
        with _judging(judge):  # type: ignore[arg-type]
            try:
                result = await replay.run()
                status, reason, outcomes = result.status, result.reason, result.steps
            except TabwrightError as exc:
                status, reason, outcomes = "error", f"{type(exc).__name__}: {exc}", []
        await asyncio.sleep(FINAL_SETTLE_S)
    wrong = [
        f"step {i}: found {judge.found[i]}, meant {part}"
        for i, part in enumerate(recording.parts)
        if part and i in judge.found and judge.found[i] != part
    ]
    heals = [f"step {o.index}: {o.strategy} {'; '.join(o.changes)[:160]}"
             for o in outcomes if o.strategy in ("direct", "agent", "widget")]  # fmt: skip
    agents = sum(o.strategy == "agent" for o in outcomes)
    return PairResult(
        recording.design, design, status, reason, goal_reached(store.snapshot(), recording.task),
        wrong, heals,
        agents, int((time.monotonic() - started) * 1000),
    )  # fmt: skip


# -- the run -----------------------------------------------------------------------------


async def run(
    record_design: str = "plain", only: list[str] | None = None, *, verbose: bool = False,
    step_timeout_ms: int = 15_000, tasks: list[str] | None = None,
) -> list[PairResult]:  # fmt: skip
    designs = [d["id"] for d in load_designs()]
    targets = [d for d in designs if d != record_design and (not only or d in only)]
    results: list[PairResult] = []
    with serve_backoffice() as (base, store):
        for task in tasks or TASKS:
            results += await _task(base, store, task, record_design, targets, verbose=verbose,
                                   step_timeout_ms=step_timeout_ms)  # fmt: skip
    return results


async def _task(
    base: str, store: Store, task: str, record_design: str, targets: list[str], *,
    verbose: bool, step_timeout_ms: int,
) -> list[PairResult]:  # fmt: skip
    results: list[PairResult] = []
    async with BrowserSession(browser_config()) as browser:
        recording = await record_on(browser, base, store, record_design, task)
    steps = recording.scenario.steps
    error = f" ({recording.error})" if recording.error else ""
    print(f"{'ok ' if recording.ok else 'BAD'} record {task} on {record_design}: "
          f"{len(steps)} steps{error}")  # fmt: skip
    if verbose:
        for i, (step, part) in enumerate(zip(steps, recording.parts, strict=True)):
            print(f"    {i:2} {step.summary()[:90]}  [{part}]")
    if not recording.ok:
        return results
    for design in targets:
        pair = await replay_on(base, store, recording, design,
                               step_timeout_ms=step_timeout_ms)  # fmt: skip
        results.append(pair)
        mark = "ok " if pair.task_ok else ("FG!" if pair.false_green else "no ")
        print(f"{mark} {task}: {pair.source} -> {pair.target}: {pair.status} "
              f"{pair.duration_ms / 1000:.1f}s {pair.reason[:140]}")  # fmt: skip
        for line in pair.wrong:
            print(f"      WRONG {line}")
        if verbose:
            for line in pair.heals:
                print(f"      heal {line}")
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--record-on", default="plain")
    parser.add_argument("--only", default="", help="designs to replay on, comma separated")
    parser.add_argument("--step-timeout-ms", type=int, default=15_000)
    parser.add_argument("--task", choices=TASKS, help="one task (default: each)")
    args = parser.parse_args(argv)
    only = [d for d in args.only.split(",") if d]
    results = asyncio.run(run(args.record_on, only, verbose=args.verbose,
                              step_timeout_ms=args.step_timeout_ms,
                              tasks=[args.task] if args.task else None))  # fmt: skip
    n = len(results)
    ok = sum(r.task_ok for r in results)
    print(
        f"RESULT reskin pairs={n} task_ok={ok / n if n else 0:.2f} "
        f"false_green={sum(r.false_green for r in results)} "
        f"step_wrong={sum(len(r.wrong) for r in results)} "
        f"agent_heals={sum(r.agent_heals for r in results)}"
    )


if __name__ == "__main__":
    main()
