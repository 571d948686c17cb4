"""The agent loop driven by a competent model that reads only its prompt: prompt cost
and honest verdicts.

Each task of :mod:`bench.agenttasks` runs through the real :class:`AgentRun` with the real
OpenAI planner over HTTP to :class:`bench.model.ScriptedModel` on 127.0.0.1, in a fresh
Chromium tab, twice: with native tools (the planner sends ``tools``, the model answers
with tool calls) and in text mode (no ``tools``; the model writes ``<action>`` tags).
The model computes every reply from the request (the task, the page rebuilt from the
snapshots in the messages, the actions offered), so what it costs is what the loop puts
in the prompt.  At the end the bench checks the page itself; a run is ok only when the
loop said "succeeded" and the check holds (``false_green``: succeeded, check failed).
A run that pauses for a person is stopped and counted as not ok.

    .venv/bin/python -m bench.agent [--only todo-list,form] [--modes tools,text] [--verbose]

Tasks: a five-round todo list (three adds, one toggle, done) on the TodoMVC app and on
an app that renders its whole list again on every change, a form, deleting a table row,
searching a list and reporting a value (fixtures/agentbench/directory.html), going to
another page and reading a value there, and a flow over two pages.

Prompt characters of a request: the sum of its message contents plus its ``tools`` array
as compact JSON when it has one.  Before the result, a table per task and mode
(ok, rounds, median and largest request, the system prompt's and the tools' share) and
the targets.  Last line:

    RESULT agent tasks=<runs> ok=<runs ok> rounds=<requests> prompt_chars_per_round_p50=<all requests> list_task_chars_p50=<todo-list, both modes> tools_over_text=<median tools request / median text request>
"""  # noqa: E501

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass, field

from automation import AgentConfig, AgentRun, BrowserSession
from automation.events import Event, RunPaused
from automation.llm.openai import OpenAICompatPlanner
from bench.agenttasks import LIST_TASK, SKILLS, TASKS, AgentTask
from bench.common import browser_config, median, serve
from bench.model import MODEL, RequestRecord, ScriptedModel, serve_model

__all__ = ["MODES", "RunResult", "main", "run_task", "run_tasks"]

MODES = ("tools", "text")
# Targets the project set for the loop's prompt (reported, never tuned for).
TOOLS_OVER_TEXT_MAX = 1.2
LIST_TASK_CHARS_MAX = 8_000
ROUND_CAP = 12  # a competent model needs at most 5 rounds for any task here


class _StopOnPause:
    """The run's sink: keeps the events; a pause (nobody is there to answer) stops the run."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.run: AgentRun | None = None
        self.pause = ""

    async def emit(self, event: Event) -> None:
        self.events.append(event)
        if isinstance(event, RunPaused) and self.run is not None:
            self.pause = f"paused ({event.reason}): {event.detail}"
            self.run.control.stop(self.pause)


@dataclass
class RunResult:
    task: str
    mode: str
    status: str  # the loop's verdict: succeeded | failed | stopped
    reason: str
    summary: str
    check_ok: bool
    seen: str  # what the check saw
    requests: list[RequestRecord] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "succeeded" and self.check_ok

    @property
    def false_green(self) -> bool:
        return self.status == "succeeded" and not self.check_ok

    @property
    def chars(self) -> list[int]:
        return [r.chars for r in self.requests]


async def run_task(
    browser: BrowserSession, base: str, model: ScriptedModel, task: AgentTask, mode: str
) -> RunResult:
    """One task in one mode, in a fresh tab; the page is checked before the tab closes."""
    planner = OpenAICompatPlanner(
        base_url=model.base_url, model=MODEL, native_tools=mode == "tools", retries=0
    )
    sink = _StopOnPause()
    tab = await browser.new_tab()
    first = len(model.requests)
    try:
        run = AgentRun(
            tab=tab,
            planner=planner,
            sink=sink,
            task=task.instruction,
            start_url=f"{base}/{task.start_path}",
            config=AgentConfig(
                round_cap=ROUND_CAP,
                llm_timeout_ms=30_000,
                action_timeout_ms=10_000,
                run_timeout_ms=120_000,
                screenshots=False,
                record_person=False,
            ),
        )
        sink.run = run
        finished = await run.run()
        check_ok, seen = await task.check(run.tab.page, finished.summary)
    finally:
        await planner.aclose()
        await tab.close()
    reason = finished.reason or sink.pause
    return RunResult(
        task.id, mode, finished.status, reason, finished.summary, check_ok, seen,
        list(model.requests[first:]),
    )  # fmt: skip


async def run_tasks(tasks: list[AgentTask], modes: tuple[str, ...]) -> list[RunResult]:
    results: list[RunResult] = []
    with serve() as base, serve_model(ScriptedModel(SKILLS)) as model:
        async with BrowserSession(browser_config()) as browser:
            for task in tasks:
                for mode in modes:
                    results.append(await run_task(browser, base, model, task, mode))
    return results


# -- reporting ----------------------------------------------------------------------------


def _p50(values: list[int]) -> float:
    return median([float(v) for v in values]) if values else 0.0


def _chars(results: list[RunResult], *, mode: str, tasks: set[str] | None = None) -> list[int]:
    """Prompt characters of every request of the runs in ``mode`` (of ``tasks``)."""
    return [
        c for r in results if r.mode == mode and (tasks is None or r.task in tasks) for c in r.chars
    ]


def _row(result: RunResult) -> str:
    chars = result.chars
    first = result.requests[0] if result.requests else None
    mark = "yes" if result.ok else ("FALSE GREEN" if result.false_green else "no")
    return (
        f"{result.task:14} {result.mode:5} {mark:11} {len(chars):6} {_p50(chars):9,.0f}"
        f" {max(chars, default=0):9,} {first.system_chars if first else 0:7,}"
        f" {first.tools_chars if first else 0:7,}"
    )


def report(results: list[RunResult], *, verbose: bool = False) -> str:
    """The table, the targets and (last) the RESULT line; printed by :func:`main`."""
    lines = [
        f"{'task':14} {'mode':5} {'ok':11} {'rounds':>6} {'p50 chars':>9} {'max chars':>9}"
        f" {'system':>7} {'tools':>7}"
    ]
    for result in results:
        lines.append(_row(result))
        if not result.ok:
            lines.append(f"    {result.status}: {result.reason or result.summary}"[:220])
            lines.append(f"    check: {result.seen}"[:220])
        if verbose:
            for n, req in enumerate(result.requests, start=1):
                reply = req.reply.replace("\n", " ")
                line = f"    round {n}: {req.chars:,} chars, {req.messages} messages: {reply}"
                lines.append(line[:220])
    everything = [c for r in results for c in r.chars]
    ran = {m: {r.task for r in results if r.mode == m} for m in MODES}
    both = ran["tools"] & ran["text"]
    same = {m: _chars(results, mode=m, tasks=both) for m in MODES}
    ratio = _p50(same["tools"]) / _p50(same["text"]) if same["text"] and same["tools"] else 0.0
    listed = {m: _chars(results, mode=m, tasks={LIST_TASK}) for m in MODES}
    list_chars = _p50(listed["tools"] + listed["text"])
    ok = sum(r.ok for r in results)
    greens = [f"{r.task}/{r.mode}" for r in results if r.false_green]
    medians = ", ".join(f"{m} {_p50(_chars(results, mode=m)):,.0f}" for m in MODES)
    lines.append(f"per-request median: {medians}; false green: {', '.join(greens) or 'none'}")
    if ratio:
        met = "met" if ratio <= TOOLS_OVER_TEXT_MAX else "NOT MET"
        lines.append(f"target tools/text per request <= {TOOLS_OVER_TEXT_MAX}: {ratio:.2f} {met}")
    if listed["tools"] or listed["text"]:
        shown = ", ".join(f"{m} {_p50(v):,.0f}" for m, v in listed.items() if v)
        under = all(_p50(v) < LIST_TASK_CHARS_MAX for v in listed.values() if v)
        lines.append(
            f"target {LIST_TASK} < {LIST_TASK_CHARS_MAX:,} chars per round (median of each"
            f" mode): {shown} {'met' if under else 'NOT MET'}"
        )
    lines.append(
        f"RESULT agent tasks={len(results)} ok={ok} rounds={len(everything)}"
        f" prompt_chars_per_round_p50={_p50(everything):.0f}"
        f" list_task_chars_p50={list_chars:.0f} tools_over_text={ratio:.2f}"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--only", default="", help="comma-separated task ids (a quick run)")
    parser.add_argument("--modes", default=",".join(MODES), help="tools,text (default: both)")
    parser.add_argument("--verbose", action="store_true", help="every request and its reply")
    args = parser.parse_args()
    tasks = TASKS
    if args.only:
        wanted = [t.strip() for t in args.only.split(",") if t.strip()]
        unknown = set(wanted) - {t.id for t in TASKS}
        if unknown:
            parser.error(f"unknown tasks: {', '.join(sorted(unknown))}")
        tasks = [t for t in TASKS if t.id in wanted]
    modes = tuple(m.strip() for m in args.modes.split(",") if m.strip())
    if not modes or set(modes) - set(MODES):
        parser.error(f"--modes takes {', '.join(MODES)}")
    results = asyncio.run(run_tasks(tasks, modes))
    print(report(results, verbose=args.verbose))


if __name__ == "__main__":
    main()
