"""Cross-implementation replay: record a todo task on one app, replay it on every other.

fixtures/crossimpl/ holds one small todo app written twelve ways (manifest.json lists them,
the kinds of markup each one has, and CSS for the parts a person uses): classic TodoMVC,
whole-list re-renders, late rendering, shadow DOM, renamed labels, unnamed or generic
checkboxes, controlled checkboxes, a form that reloads the page, tables, custom toggles.
Every app exposes ``window.__crossimplState()`` (its model: items and filter), the ground
truth here; the bench never asks the replay whether it worked.

For every app A, a person does the task in a fresh tab while :class:`Recorder` records:
real mouse clicks at the centre of each element and real typing (add "Buy milk", add
"Walk the dog", tick "Buy milk", show Active).  Each recorded element step is tagged with
the part the person's action was about (``new_todo``, ``toggle`` of "Buy milk",
``filter_active``: the steps that came after the action, once the recorder was quiet);
the step's identity is also located again on A then (``recorded_as``: a recording that
points at something else is a recorder bug).  ``recorded_ok``: A's own state reached the
goal; a recording with no step for a part the person acted on is reported as incomplete.

For every other app B, A's scenario is replayed against B's folder in a fresh tab.  The
``locate`` replay imports is wrapped: the first element it returns for a step is judged
at once (before the step acts) against B's manifest parts.  Per element step:

- correct: the element found is the part the step was about;
- wrong: it is another element (acted on, or tried: a failed action counts as tried);
- abstain: nothing found (the step needed a person), or the step never ran.

An element the app removed between locate and the judge (a re-render) is judged by the
markup it was in, and shown as "(detached)".

A pair's ``task_ok`` reads B's final ``__crossimplState()`` only: items
[Buy milk (done), Walk the dog (open)] in that order, filter "active".  ``false_green``:
the replay said "passed" but the task is not done.

    .venv/bin/python -m bench.crossimpl [--verbose] [--only A,B,...] [--record-only] [--self]
        [--step-timeout-ms 10000]

Last line:
    RESULT crossimpl pairs=<n> task_ok=<share> step_correct=<share> step_wrong=<share> step_abstain=<share> false_green=<share> recorded_ok=<ok>/<apps>
(``--record-only``: ``RESULT crossimpl-record apps=<n> recorded_ok=<ok>/<n> complete=<n>/<n> element_steps=<n> located_as_meant=<share>``;
complete: recordings with a step for each part the person acted on)
"""  # noqa: E501

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from playwright.async_api import ElementHandle, Locator, Page
from playwright.async_api import Error as PlaywrightError

import automation.browser.identity as identity_module
import automation.recording.replay as replay_module
from automation import (
    BrowserSession,
    Budget,
    Recorder,
    Replay,
    ReplayConfig,
    Scenario,
    ScenarioStep,
    TabwrightError,
)
from automation.browser.identity import ElementIdentity, Located
from bench.common import FIXTURES, browser_config, serve
from bench.crossimplreport import (
    PARTS,
    PairResult,
    Recording,
    StepVerdict,
    print_recording,
    share,
    state_brief,
    summaries,
)

__all__ = [
    "MANIFEST",
    "PARTS",
    "PairResult",
    "Recording",
    "StepVerdict",
    "app_url",
    "folder_url",
    "goal_state",
    "load_manifest",
    "main",
    "part_of",
    "read_state",
    "record_app",
    "replay_on",
    "run",
]

MANIFEST = FIXTURES / "crossimpl" / "manifest.json"
# Apps written apart from the engine's tuning: how replays generalise.
HELDOUT = FIXTURES / "crossimpl-heldout" / "manifest.json"
CORPORA = {"crossimpl": (MANIFEST,), "heldout": (HELDOUT,), "all": (MANIFEST, HELDOUT)}
SETTLE_S = 0.3  # after each of the person's actions
QUIET_S = 1.3  # then no new step for this long (the recorder may hold a box's ~1.1 s)
TYPED_QUIET_S = 0.3  # ... after typing, which no box's click is part of
QUIET_MAX_S = 5.0
VISIBLE_MS = 10_000  # the person waits this long for the next element (some apps are late)
LOCATE_MS = 5_000
FINAL_SETTLE_S = 0.6  # after a replay, before reading the state (async apps)

_real_locate = identity_module.locate

# True when the element ``e`` is one of ``targets``: the same element, inside it (a span
# in a button), the control of the label it sits in, or the label of it.
_SAME_PART_JS = """(e, targets) => targets.some((t) => t === e || t.contains(e)
  || (t.closest && t.closest("label") && t.closest("label").control === e)
  || (e.tagName === "LABEL" && e.control === t))"""

# The same question for an element the page has already removed (an app that re-renders
# between locate and this judge): asked of the markup it was in.  "" when it is none.
# A removed row has lost its parent, so a selector's last compound ("li.item" of
# "ul.items > li.item") is tried as well.
_DETACHED_PART_JS = """(e, a) => {
  const last = (sel) => sel.split(/\\s*[\\s>+~]\\s*/).filter(Boolean).pop();
  const up = (sel) => {
    for (const s of [sel, last(sel)]) {
      try { const hit = e.closest(s); if (hit) return hit; } catch { /* not CSS here */ }
    }
    return null;
  };
  if (up(a.new_todo)) return "new_todo";
  if (up(a.filter_active)) return "filter_active";
  const row = up(a.row);
  return row && row.textContent.includes(a.title) && up(a.toggle) ? "toggle" : "";
}"""


# -- the corpus --------------------------------------------------------------------------


def load_manifest(path: Path = MANIFEST) -> dict[str, Any]:
    """A corpus's manifest; each app also gets ``root``, the corpus folder under fixtures/."""
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data.get("version") == 1, f"{path}: unknown manifest version"
    for app in data["apps"]:
        missing = {"id", "path", "kinds", "new_todo", "row", "toggle", "filter_active"} - set(app)
        assert not missing, f"{path}: app {app.get('id')} lacks {sorted(missing)}"
        app["root"] = path.parent.name
    return data


def folder_url(base: str, app: dict[str, Any]) -> str:
    """Where the app lives: the scenario's base URL (navigations move between folders)."""
    return f"{base}/{app.get('root', 'crossimpl')}/{app['id']}"


def app_url(base: str, app: dict[str, Any]) -> str:
    return f"{base}/{app.get('root', 'crossimpl')}/{app['path']}"


def goal_state(task: dict[str, Any]) -> dict[str, Any]:
    items = [{"title": t, "done": t == task["toggle"]} for t in task["add"]]
    return {"items": items, "filter": task["filter"]}


async def read_state(page: Page) -> Any:
    """The app's own model, once the page has loaded (None if it can't be read)."""
    for _ in range(3):
        try:
            await page.wait_for_load_state("load", timeout=5_000)
            return await page.evaluate("() => window.__crossimplState && __crossimplState()")
        except PlaywrightError:  # a navigation under way destroyed the context: again
            await asyncio.sleep(0.3)
    return None


def _part_locator(page: Page, app: dict[str, Any], part: str, task: dict[str, Any]) -> Locator:
    if part == "toggle":
        row = page.locator(app["row"]).filter(has_text=task["toggle"])
        return row.locator(app["toggle"])
    return page.locator(app[part])


async def _detached_part(element: ElementHandle, app: dict[str, Any], task: dict[str, Any]) -> str:
    args = {k: app[k] for k in ("new_todo", "row", "toggle", "filter_active")}
    part = await element.evaluate(_DETACHED_PART_JS, {**args, "title": task["toggle"]})
    return f"{part} (detached)" if part else "other: (detached)"


async def part_of(
    page: Page, app: dict[str, Any], element: ElementHandle, task: dict[str, Any]
) -> str:
    """Which manifest part of ``app`` the element is, or "other: <its html>".  An element
    the page removed meanwhile is judged by the markup it was in (its part + " (detached)")."""
    if not await element.evaluate("(e) => e.isConnected"):
        return await _detached_part(element, app, task)
    for part in PARTS:
        targets = await _part_locator(page, app, part, task).element_handles()
        if targets and await element.evaluate(_SAME_PART_JS, targets):
            return part
    if not await element.evaluate("(e) => e.isConnected"):  # redrawn while it was judged
        return await _detached_part(element, app, task)
    try:
        html = await element.evaluate("(e) => e.outerHTML.replace(/\\s+/g, ' ').slice(0, 90)")
    except PlaywrightError:
        html = "?"
    return f"other: {html}"


# -- recording ---------------------------------------------------------------------------


async def _click_centre(page: Page, locator: Locator) -> None:
    """A person's click: real mouse input at the middle of the element, once it shows."""
    await locator.wait_for(state="visible", timeout=VISIBLE_MS)
    await locator.scroll_into_view_if_needed(timeout=VISIBLE_MS)
    box = await locator.bounding_box(timeout=VISIBLE_MS)
    assert box is not None, "the element has no box"
    await page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def _person_actions(
    page: Page, app: dict[str, Any], task: dict[str, Any]
) -> list[tuple[str, Callable[[], Awaitable[None]]]]:
    """The task as a person does it: (the part each action is about, the action)."""

    def add(title: str) -> Callable[[], Awaitable[None]]:
        async def act() -> None:
            await _click_centre(page, page.locator(app["new_todo"]).first)
            await page.keyboard.type(title)
            await page.keyboard.press("Enter")

        return act

    async def toggle() -> None:
        await _click_centre(page, _part_locator(page, app, "toggle", task).first)

    async def show() -> None:
        await _click_centre(page, page.locator(app["filter_active"]).first)

    return [("new_todo", add(t)) for t in task["add"]] + [
        ("toggle", toggle),
        ("filter_active", show),
    ]


async def _quiet(recorder: Recorder, part: str) -> None:
    """Let the page settle, then wait until the recorder has had nothing new for a while:
    it may hold a checkbox's (or a radio filter's) step until the app has answered the
    click; typing a title has no such step."""
    await asyncio.sleep(SETTLE_S)
    count, since = len(recorder.steps), time.monotonic()
    deadline = since + QUIET_MAX_S
    quiet_s = TYPED_QUIET_S if part == "new_todo" else QUIET_S
    while time.monotonic() < deadline and time.monotonic() - since < quiet_s:
        await asyncio.sleep(0.1)
        if len(recorder.steps) != count:
            count, since = len(recorder.steps), time.monotonic()


async def _recorded_as(
    page: Page, app: dict[str, Any], step: ScenarioStep, task: dict[str, Any]
) -> str:
    target = step.target()
    if target is None:
        return ""
    located = await _real_locate(page, target, budget=Budget(LOCATE_MS, label="recorded as"))
    if located.element is None:
        return f"abstain: {located.reason}"
    return await part_of(page, app, located.element, task)


async def record_app(
    browser: BrowserSession, base: str, app: dict[str, Any], task: dict[str, Any] | None = None
) -> Recording:
    """A person does the task on ``app`` in a fresh tab while a Recorder records it."""
    task = task or load_manifest()["task"]
    tab = await browser.new_tab()
    parts: list[str] = []
    recorded_as: list[str] = []
    error = ""
    recorder = Recorder(tab)
    try:
        await tab.navigate(app_url(base, app))
        await recorder.start()
        page = tab.page
        parts = ["" for _ in recorder.steps]  # the navigation start() records
        recorded_as = list(parts)
        for part, act in _person_actions(page, app, task):
            before = len(recorder.steps)
            try:
                await act()
            except (PlaywrightError, AssertionError) as exc:
                error = f"{part}: {str(exc).splitlines()[0]}"
                break
            await _quiet(recorder, part)
            steps = recorder.steps
            for step in steps[before:]:
                parts.append(part if step.needs_element else "")
                recorded_as.append(await _recorded_as(page, app, step, task))
        steps = await recorder.stop()
        # Steps delivered after the last look (none, normally) belong to the last action.
        while len(parts) < len(steps):
            step = steps[len(parts)]
            parts.append("filter_active" if step.needs_element else "")
            recorded_as.append("(late)")
        state = await read_state(page)
        if len(parts) > len(steps):  # a step was replaced by a later one (merged)
            del parts[len(steps) :], recorded_as[len(steps) :]
    finally:
        await recorder.stop()
        await tab.close()
    scenario = Scenario(
        name=f"todo on {app['id']}", steps=tuple(steps), base_url=folder_url(base, app)
    )
    return Recording(app, scenario, parts, recorded_as, state, state == goal_state(task), error)


# -- replaying ---------------------------------------------------------------------------


class _Judge:
    """Judges the first element ``locate`` returns for each step of one replay."""

    def __init__(
        self, page: Page, app: dict[str, Any], recording: Recording, task: dict[str, Any]
    ) -> None:
        self.page, self.app, self.task = page, app, task
        self.steps = recording.scenario.steps
        self.found: dict[int, tuple[str, str]] = {}  # step -> (part found, strategy)
        self.calls = 0

    def _index(self, identity: object) -> int | None:
        for i, step in enumerate(self.steps):
            if step.target() is identity:
                return i
        # A copy of it, maybe with where it leads moved to the replay's base URL.
        plain = _untargeted(identity) if isinstance(identity, ElementIdentity) else identity
        for i, step in enumerate(self.steps):
            target = step.target()
            if i not in self.found and target is not None and _untargeted(target) == plain:
                return i
        return None

    async def note(self, identity: object, located: Located) -> None:
        self.calls += 1
        index = self._index(identity)
        if index is None or index in self.found or located.element is None:
            return
        frame = getattr(located, "frame", None)
        if frame is not None and frame != self.page.main_frame:
            self.found[index] = (f"other: in a frame {frame.url}", located.strategy)
            return
        try:
            part = await part_of(self.page, self.app, located.element, self.task)
        except PlaywrightError as exc:
            part = f"other: could not judge ({exc.message.splitlines()[0]})"
        self.found[index] = (part, located.strategy)


def _untargeted(identity: ElementIdentity) -> ElementIdentity:
    """The identity without where it (and its variants) lead, nor what it must show:
    replay moves the one and adds the other (the values its scenario types)."""
    return replace(identity, target="", shows={}, variants=tuple(
        replace(v, target="", shows={}) for v in identity.variants))  # fmt: skip


_judge: _Judge | None = None  # the replay under way (pairs run one after another)


async def _judging_locate(*args: Any, **kwargs: Any) -> Located:
    located = await _real_locate(*args, **kwargs)
    identity = kwargs.get("identity", args[1] if len(args) > 1 else None)
    if _judge is not None and isinstance(identity, ElementIdentity):
        await _judge.note(identity, located)
    return located


@contextlib.contextmanager
def _judging(judge: _Judge) -> Iterator[None]:
    """Route replay's locate through the judge: where replay.py imports it, and on the
    module it comes from (in case replay looks it up there)."""
    global _judge
    _judge = judge
    saved = replay_module.locate, identity_module.locate
    replay_module.locate = identity_module.locate = _judging_locate  # type: ignore[assignment]
    try:
        yield
    finally:
        replay_module.locate, identity_module.locate = saved  # type: ignore[assignment]
        _judge = None


async def replay_on(
    browser: BrowserSession,
    base: str,
    recording: Recording,
    app: dict[str, Any],
    task: dict[str, Any] | None = None,
    *,
    step_timeout_ms: int = 10_000,
) -> PairResult:
    """Replay ``recording`` against ``app``'s folder in a fresh tab, and judge it."""
    task = task or load_manifest()["task"]
    tab = await browser.new_tab()
    started = time.monotonic()
    judge = _Judge(tab.page, app, recording, task)
    try:
        replay = Replay(
            tab,
            recording.scenario,
            base_url=folder_url(base, app),
            config=ReplayConfig(step_timeout_ms=step_timeout_ms),
        )
        with _judging(judge):
            try:
                result = await replay.run()
                status, reason, outcomes = result.status, result.reason, result.steps
            except TabwrightError as exc:
                status, reason, outcomes = "error", f"{type(exc).__name__}: {exc}", []
        await asyncio.sleep(FINAL_SETTLE_S)
        state = await read_state(tab.page)
    finally:
        await tab.close()
    statuses = {o.index: o.status for o in outcomes}
    verdicts: list[StepVerdict] = []
    unjudged = 0
    for i in recording.element_steps:
        step = recording.scenario.steps[i]
        part = recording.parts[i] if i < len(recording.parts) else ""
        found, strategy = judge.found.get(i, ("", ""))
        if not found:
            verdict = "abstain"
            unjudged += statuses.get(i) == "passed"
        else:
            verdict = "correct" if found.removesuffix(" (detached)") == part else "wrong"
        verdicts.append(
            StepVerdict(i, step.action, part, verdict, found, strategy, statuses.get(i, ""))
        )
    return PairResult(
        recording.app["id"],
        app["id"],
        status,
        reason,
        state == goal_state(task),
        state,
        verdicts,
        int((time.monotonic() - started) * 1000),
        unjudged,
    )


async def run(
    apps: list[dict[str, Any]],
    task: dict[str, Any],
    *,
    verbose: bool = False,
    record_only: bool = False,
    self_replay: bool = False,
    step_timeout_ms: int = 10_000,
) -> None:
    with serve() as base:
        async with BrowserSession(browser_config()) as browser:
            recordings = [await record_app(browser, base, app, task) for app in apps]
            for rec in recordings:
                if verbose or record_only or not rec.ok or rec.error or rec.missing:
                    print_recording(rec)
            recorded_ok = sum(r.ok for r in recordings)
            if record_only:
                steps = [(r, i) for r in recordings for i in r.element_steps]
                meant = sum(r.recorded_as[i] == r.parts[i] for r, i in steps)
                print(
                    f"RESULT crossimpl-record apps={len(apps)}"
                    f" recorded_ok={recorded_ok}/{len(apps)}"
                    f" complete={sum(not r.missing for r in recordings)}/{len(apps)}"
                    f" element_steps={len(steps)}"
                    f" located_as_meant={share(meant, len(steps)):.3f}"
                )
                return
            pairs: list[PairResult] = []
            selves: list[PairResult] = []
            for rec in recordings:
                if rec.error:
                    print(f"skipping replays of {rec.app['id']}: its recording failed")
                    continue
                for app in apps:
                    if app["id"] == rec.app["id"] and not self_replay:
                        continue
                    pair = await replay_on(
                        browser, base, rec, app, task, step_timeout_ms=step_timeout_ms
                    )
                    (selves if app["id"] == rec.app["id"] else pairs).append(pair)
                    if verbose:
                        print(
                            f"{pair.source:>13} -> {pair.target:13} {pair.status:12}"
                            f" task_ok={'yes' if pair.task_ok else 'no '}"
                            f" {' '.join(v.short() for v in pair.steps)}"
                            f" | {'' if pair.task_ok else state_brief(pair.state) + ' | '}"
                            f"{pair.reason[:160]}"
                        )
    summaries(apps, pairs)
    if selves:
        print(
            f"self replays: task_ok={sum(p.task_ok for p in selves)}/{len(selves)} "
            + " ".join(f"{p.source}={'ok' if p.task_ok else p.status}" for p in selves)
        )
    verdicts = Counter(v.verdict for p in pairs for v in p.steps)
    n_steps = sum(verdicts.values())
    n = len(pairs)
    print(
        f"RESULT crossimpl pairs={n} task_ok={share(sum(p.task_ok for p in pairs), n):.3f}"
        f" step_correct={share(verdicts['correct'], n_steps):.3f}"
        f" step_wrong={share(verdicts['wrong'], n_steps):.3f}"
        f" step_abstain={share(verdicts['abstain'], n_steps):.3f}"
        f" false_green={share(sum(p.false_green for p in pairs), n):.3f}"
        f" recorded_ok={recorded_ok}/{len(apps)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--verbose", action="store_true", help="a line for every pair")
    parser.add_argument("--only", default="", help="comma-separated app ids (a quick run)")
    parser.add_argument(
        "--record-only", action="store_true", help="record every app and show its steps"
    )
    parser.add_argument(
        "--self", dest="self_replay", action="store_true",
        help="also replay each recording on its own app (reported apart, not in RESULT)",
    )  # fmt: skip
    parser.add_argument(
        "--step-timeout-ms", type=int, default=10_000, help="each replayed step's budget"
    )
    parser.add_argument(
        "--corpus", choices=sorted(CORPORA), default="crossimpl",
        help="crossimpl: the 12 apps (default); heldout: 8 apps written apart from the "
        "engine's tuning; all: both, every app replayed on every other",
    )  # fmt: skip
    args = parser.parse_args()
    manifests = [load_manifest(path) for path in CORPORA[args.corpus]]
    manifest = manifests[0]
    apps = [app for m in manifests for app in m["apps"]]
    if args.only:
        wanted = [a.strip() for a in args.only.split(",") if a.strip()]
        unknown = set(wanted) - {a["id"] for a in apps}
        if unknown:
            parser.error(f"unknown apps: {', '.join(sorted(unknown))}")
        apps = [a for a in apps if a["id"] in wanted]
    asyncio.run(
        run(
            apps,
            manifest["task"],
            verbose=args.verbose,
            record_only=args.record_only,
            self_replay=args.self_replay,
            step_timeout_ms=args.step_timeout_ms,
        )
    )


if __name__ == "__main__":
    main()
