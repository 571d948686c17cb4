"""A tab's snapshot: its frames walked in the page, stitched into one tree with refs.

Each frame is walked by the snapshot script (:mod:`automation.browser.snapshot` holds the
format and the script); a child frame's lines go under its ``<iframe>``'s line, its refs
carry the frame's prefix (``f1e5``).  The tab's ref table is replaced by the refs issued
(a scoped snapshot adds to it).  A page too big to walk in time gets the reduced snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame

from automation.browser.frames import held_by, silent_note, unanswering
from automation.browser.snapshot import (
    CALL_JS,
    REF_RE,
    SNAPSHOT_JS,
    FramePart,
    RefEntry,
    Snapshot,
    SnapshotOptions,
    WalkOutOfTime,
    frame_paths,
    next_seed,
    reduced_note,
    ref_entries,
    stitch,
    truncate,
    walk_frames,
)
from automation.budget import Budget
from automation.errors import ActionFailed, ActionInvalid, BudgetExceeded

if TYPE_CHECKING:
    from automation.browser.core import TabCore

__all__ = ["take_snapshot"]

# Playwright's words for a call whose document was replaced (a navigation) before it
# answered; it has no error type of its own for it.
NAVIGATED = "Execution context was destroyed"
WALK_TRIES = 3  # reads of a page that keeps moving to another document, then it fails
THREAD_JSON_CHARS = 256 * 1024  # a walk's result past this is read in a thread
THREAD_REFS = 5_000  # a ref table past this is numbered in a thread
PARSE_WAIT_MS = 2_000  # the longest a snapshot waits for the page's document to be parsed


async def take_snapshot(core: TabCore, options: SnapshotOptions, budget: Budget) -> Snapshot:
    """The accessibility tree with refs; the tab's ref table is replaced by it."""
    page = core.page
    # A page still being parsed (its HTML sent slowly, a report streaming) is snapshotted
    # as it is after a moment: waiting for the rest with the whole budget left nothing to
    # walk it with.
    parsed = budget.child(min(PARSE_WAIT_MS, budget.remaining_ms() / 4), label="page parsed")
    try:
        await core.call(
            "snapshot",
            parsed,
            page.wait_for_load_state("domcontentloaded", timeout=parsed.playwright_timeout()),
        )
    except (ActionFailed, BudgetExceeded):
        budget.check()  # (the caller's own budget gone, or cancelled: that ends it)
    frames = _frames_to_walk(core, options.scope)  # parents first: a child needs its host
    silent = await unanswering(frames, budget)  # busy or hung: shown as such, not walked

    async def walk(frame: Frame, refs: dict[str, RefEntry], ms: float, cut: bool) -> Any:
        return await _walk(core, frame, options, budget, refs, time_ms=ms, reduced=cut,
                           silent=silent)  # fmt: skip

    # A page too big to walk in time gets the reduced snapshot, not a failed run.
    parts, refs, reduced = await walk_frames(
        frames, walk, budget=budget, full_pass_ms_setting=core.config.snapshot_full_pass_ms
    )
    if options.scope:
        _merge(core, refs)
    elif len(refs) > THREAD_REFS:
        core.state.replace(refs, seed=await asyncio.to_thread(next_seed, refs))
    else:
        core.state.replace(refs)
    lines = stitch(parts, " " if options.brief else "  ")
    if reduced:
        note = reduced_note(parts, budget_label=budget.label, budget_ms=budget.timeout_ms)
        lines = [note, *lines]
    elif options.delta:
        removed = [line for p in parts for _ref, line in p.removed]
        head = "# changes since the last snapshot (the rest is unchanged)"
        if removed:
            shown = ", ".join(removed[:20]) + (
                f" +{len(removed) - 20}" if len(removed) > 20 else ""
            )
            head += f"\n# removed: {shown}"
        if not lines and not removed:
            head = "# no changes since the last snapshot"
        lines = [head, *lines]
    text, cut = truncate(lines, options.max_chars)
    # The main frame's walk read its title; a walk of a scope inside a frame did not.
    main = parts[0] if parts and not options.scope and parts[0].prefix == "" else None
    title = main.title if main is not None else await core.call("snapshot", budget, page.title())
    return Snapshot(
        text=text,
        refs=dict(refs),
        url=page.url,
        title=title,
        delta=options.delta and not reduced,
        truncated_chars=cut,
        reduced=reduced,
    )


def _merge(core: TabCore, refs: dict[str, RefEntry]) -> None:
    """A scoped snapshot adds to the table without dropping refs outside the scope."""
    merged = dict(core.state.refs)
    merged.update(refs)
    core.state.replace(merged)


def _frames_to_walk(core: TabCore, scope: str) -> list[Frame]:
    if scope and REF_RE.match(scope):
        entry = core.entry(scope)
        return [core.frame_of(entry)]
    if scope:
        return [core.page.main_frame]
    frames: list[Frame] = []

    def add(frame: Frame) -> None:
        if frame.is_detached():
            return
        frames.append(frame)
        for child in frame.child_frames:
            add(child)

    add(core.page.main_frame)
    return frames


async def _walk(
    core: TabCore,
    frame: Frame,
    options: SnapshotOptions,
    budget: Budget,
    refs: dict[str, RefEntry],
    *,
    time_ms: float = 0,
    reduced: bool = False,
    silent: set[Frame] | frozenset[Frame] = frozenset(),
) -> FramePart | None:
    prefix = core.prefix_of(frame)
    host = ""
    if frame is not core.page.main_frame:
        if held_by(frame, silent):
            return None  # its <iframe> is in a frame that did not answer: not shown
        host = await _host_ref(frame, budget)
        if not host:
            return None  # its <iframe> is hidden or not walked: nothing to show
        if frame in silent:
            note = f"# {silent_note(frame)}: what it shows is not listed"
            return FramePart(prefix, [note], {}, "" if options.scope else host)
    args = options.for_js(prefix=prefix, seed=core.state.seed, time_ms=time_ms, reduced=reduced)
    raw = await _evaluate_in(core, frame, args, budget)
    if raw is None:
        return None
    # A big page's walk is megabytes of JSON and tens of thousands of refs: read off the
    # event loop (every page and run shares it).
    big = len(raw) >= THREAD_JSON_CHARS
    result = await asyncio.to_thread(json.loads, raw) if big else json.loads(raw)
    if result.get("outOfTime"):
        raise WalkOutOfTime(f"the walk of {frame.url} gave up after {time_ms:.0f} ms")
    if "error" in result:
        raise ActionInvalid(
            f"snapshot scope {options.scope!r} matches no element",
            hint="give a ref from the latest snapshot or a CSS selector that matches",
        )
    core.state.moved(result.get("rebound"))
    # (A thread reads a copy of the ids: the loop may change the table meanwhile.)
    ids = dict(core.state.backend_ids) if big else core.state.backend_ids
    read = functools.partial(ref_entries, result["refs"], frame=prefix, host=host,
                             backend_ids=ids)  # fmt: skip
    for entry in await asyncio.to_thread(read) if big else read():
        refs[entry.ref] = entry
    slots = {f["ref"]: (f["line"], f["depth"]) for f in result["frames"]}
    lines = result["text"].split("\n") if result["text"] else []
    removed = [(str(r[0]), str(r[1])) for r in result["removed"]]
    # A scoped walk is shown on its own, not under its frame's <iframe> line.
    counts = result.get("reduced") or {}
    return FramePart(
        prefix, lines, slots, "" if options.scope else host, removed,
        int(counts.get("elements", 0)), int(counts.get("late", 0)), int(counts.get("over", 0)),
        frame_paths(result.get("paths")), str(result.get("title") or ""),
    )  # fmt: skip


async def _evaluate_in(
    core: TabCore, frame: Frame, args: dict[str, Any], budget: Budget
) -> str | None:
    """The walk's result in ``frame``.  A page that moved to another document while it
    was read is read again, in its new document (a redirect, a reload); one that keeps
    moving fails saying so."""
    main = frame is core.page.main_frame
    what = "snapshot" if main else f"snapshot of frame {frame.url}"
    for moves in range(WALK_TRIES):
        try:
            raw = await core.call(what, budget, frame.evaluate(CALL_JS, args))
            if raw is None:  # a document that predates the init script: install now
                await core.call(what, budget, frame.evaluate(SNAPSHOT_JS))
                raw = await core.call(what, budget, frame.evaluate(CALL_JS, args))
            return raw
        except ActionFailed as exc:
            if not main:
                return None  # a child frame that went away mid-walk is left out
            if NAVIGATED not in exc.message:
                raise
        if moves + 1 < WALK_TRIES:
            with contextlib.suppress(ActionFailed):
                timeout = budget.playwright_timeout()
                loaded = core.page.wait_for_load_state("domcontentloaded", timeout=timeout)
                await core.call(what, budget, loaded)
    raise ActionFailed(
        f"snapshot: the page went to another document as it was read, {WALK_TRIES} times in a row",
        hint="it keeps loading new pages (a redirect or reload loop): wait, or go elsewhere",
    )


async def _host_ref(frame: Frame, budget: Budget) -> str:
    """The ref of the <iframe> holding ``frame``, as issued by its parent's walk."""
    try:
        handle = await budget.run(frame.frame_element())
        ref = await budget.run(handle.evaluate("el => window.__tabwright?.refOf(el) || ''"))
        await handle.dispose()
    except PlaywrightError:
        return ""
    return str(ref or "")
