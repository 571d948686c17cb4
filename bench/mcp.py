"""Tabwright's MCP server against Playwright MCP (``@playwright/mcp``, pinned in
bench.mcpclient), both over stdio, both driven by the official MCP SDK's client, every call
timed on the client side.  Each server runs its own headless Chromium (/usr/bin/chromium);
the two are called in turn (Tabwright, Playwright, Tabwright, …), several repeats, medians.

    .venv/bin/python -m bench.mcp [--http-only | --snapshot-only | --click-only]

Playwright MCP is installed with npm into var/bench-npm when missing; the servers' stderr
goes to var/bench-mcp/.  Pages come from a loopback server: generated back-office screens
of about 500, 2,500 and 10,000 DOM nodes (bench.pages), the demo fixtures, and two small
apps generated here (a list whose rows re-render, and a page whose Save answers late).

Each side uses its defaults: Tabwright's ``snapshot`` and ``click`` with no options,
Playwright MCP's ``browser_snapshot`` and ``browser_click`` (which waits for the page to
settle and writes a page snapshot to a file, answering a link to it).  Each server's first
navigate and snapshot (the browser's launch) are not measured.  A table per measure, with
both sides' numbers, comes before the last line; no threshold is asserted.

Last line:
    RESULT mcp snap_chars_ratio=… snap_chars_ratio_max=… snap_time_ratio=… click_ratio=…
      loop_calls_ratio=… loop_bytes_ratio=… hang_contained_tw=… hang_contained_pw=…
      stale_safe_tw=… stale_safe_pw=… tools_list_bytes_ratio=… click_settle0_ratio=…
      http_first_call_ok=… http_together_ok=… http_runs_per_session=… http_runs_left=…
``--snapshot-only`` prints the first three alone, ``--click-only`` click_ratio and
click_settle0_ratio alone.
Ratios are Tabwright / Playwright MCP, measured in the same run.
- snap_chars_ratio: characters of the snapshot answer, median over the generated sizes
  (target ≤ 0.4); snap_chars_ratio_max: the highest over every page measured, the demo
  pages' included (target ≤ 0.4);
- snap_time_ratio: the snapshot call's wall time, median over sizes (target ≤ 0.8);
- click_ratio: a click's wall time on a button that changes its own text (no navigation),
  median over sizes (target ≤ 0.2);
- loop_calls_ratio, loop_bytes_ratio: click → wait for a text → read the page, on the demo
  "Load more" (the text comes after 300 ms) and a 2,500-node page whose Save answers after
  1 s; calls and answered characters, median over the two pages.  Tabwright makes one
  ``steps`` call (click, wait_for, read_page).  Playwright MCP makes ``browser_click``,
  then ``browser_wait_for`` only if the click's answer does not already show the text
  inline, then ``browser_snapshot`` only if no answer so far shows the page with the text
  inline (its click and wait answers link to a snapshot file, which an MCP client cannot
  read through the server: so it takes all three);
- hang_contained_tw / _pw: share of 3 trials (a fresh server each) in which a call running
  ``while(true){}`` in the page answered within 2 s + 1 s of slack and a click on the same
  page then worked (target 1.0).  Tabwright: ``evaluate`` with timeout_ms 2000;
  Playwright: ``browser_evaluate``, which has no timeout: the bench gives up after 10 s and
  the server is killed;
- stale_safe_tw / _pw: of six cases where the list re-renders between the snapshot and the
  click on row Alpha's Delete ref, how many ended safely: refused with nothing deleted, or
  Alpha deleted (target 6).  The page re-renders through evaluate / browser_evaluate
  (neither takes a new snapshot): (a) every row's nodes replaced, (b) rows reversed, keyed
  (nodes move with their rows), (c) Alpha renamed, (d) Alpha gone from the data and the
  rows drawn by index, all buttons named "Delete" (row 0's nodes now show Beta), (e) the
  same with per-row names ("Delete Alpha" becomes "Delete Beta" on the same node), (f)
  Alpha and Beta removed, keyed (their nodes leave the page);
- tools_list_bytes_ratio: compact JSON bytes of the tools/list result (target ≤ 1);
- click_settle0_ratio: click_ratio's measure against a second Playwright MCP launched with
  ``--timeout-settle 0`` (it answers without waiting for what the click set off to settle;
  Tabwright still checks the click's effect and settles), the highest over sizes: its
  answer carries the page's snapshot, whose time grows with the page, so the smallest
  page shows what a click itself costs each side (target ≤ 0.7);
- http_first_call_ok, http_together_ok, http_runs_per_session, http_runs_left: Tabwright's
  sessions over HTTP through a dashboard with two worker slots (bench.mcphttp): the share
  of first calls answered ok over twenty sessions in a row (target 1.0) and over three
  sessions at once, five times, each making two first calls together (target 1.0); runs
  made per session (target 1.0); runs still live (holding a slot or queued for one) once
  every session has ended (target 0).  ``--http-only`` measures these alone (no npm).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re

from bench.common import median, serve
from bench.mcpclient import Answer, Driver, ensure_playwright_mcp, open_driver, ref_after
from bench.mcphttp import IN_A_ROW, ROUNDS, TOGETHER, http_sessions, report
from bench.pages import back_office_page

SIZES = (500, 2_500, 10_000)
REPEATS = 5
DEMO_PAGES = (
    "demo/index.html",
    "demo/form.html",
    "demo/list.html",
    "demo/dynamic.html",
    "demo/flow/step1.html",
)
HANG_TRIALS = 3
HANG_BUDGET_MS = 2_000
HANG_SLACK_MS = 1_000
HANG_GIVE_UP_S = 10.0

# The rows Alpha, Beta, Gamma, Delta, each with a Delete button; window.rerender(kind)
# re-renders the list the way frameworks do.  window.deleted holds what the app's Delete
# buttons deleted, by the title each item had when the page opened.
LIST_APP = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Items</title>
</head><body><h1>Items</h1><ul id="list"></ul><script>
const perRow = new URLSearchParams(location.search).get("names") === "row";
let items = ["Alpha", "Beta", "Gamma", "Delta"].map(
  (title, i) => ({id: i + 1, title, origin: title}));
window.deleted = [];
const ul = document.getElementById("list");
function make(t) {
  const li = document.createElement("li");
  li.innerHTML = '<span class="title"></span> <button type="button" class="del"></button>';
  fill(li, t);
  return li;
}
function fill(li, t) {  // what a framework patches into a node it keeps
  li.dataset.id = t.id;
  li.querySelector(".title").textContent = t.title;
  li.querySelector(".del").textContent = perRow ? "Delete " + t.title : "Delete";
}
function keyed() {  // each item keeps its nodes, moved to its place
  const old = new Map([...ul.children].map((n) => [n.dataset.id, n]));
  for (const t of items) {
    const n = old.get(String(t.id)) || make(t);
    old.delete(String(t.id));
    fill(n, t);
    ul.append(n);
  }
  for (const n of old.values()) n.remove();
}
function byIndex() {  // node i shows item i, whatever it showed before
  items.forEach((t, i) => {
    const n = ul.children[i];
    if (n) fill(n, t); else ul.append(make(t));
  });
  while (ul.children.length > items.length) ul.lastElementChild.remove();
}
ul.addEventListener("click", (e) => {
  const b = e.target.closest(".del");
  if (!b) return;
  const t = items.find((x) => String(x.id) === b.closest("li").dataset.id);
  window.deleted.push(t.origin);
  items = items.filter((x) => x !== t);
  keyed();
});
const drop = (...titles) => { items = items.filter((t) => !titles.includes(t.title)); };
window.rerender = (kind) => {
  if (kind === "rebuild") ul.replaceChildren(...items.map(make));
  if (kind === "reorder") { items.reverse(); keyed(); }
  if (kind === "rename") { items[0].title = "Alef"; keyed(); }
  if (kind === "index-reuse") { drop("Alpha"); byIndex(); }
  if (kind === "remove") { drop("Alpha", "Beta"); keyed(); }
  return kind;
};
ul.replaceChildren(...items.map(make));
</script></body></html>"""
# (case, query, the re-render): the old ref is clicked after it.
STALE_CASES = (
    ("a nodes replaced", "", "rebuild"),
    ("b reordered, keyed", "", "reorder"),
    ("c Alpha renamed", "", "rename"),
    ("d index reuse, same names", "", "index-reuse"),
    ("e index reuse, row names", "?names=row", "index-reuse"),
    ("f rows removed", "", "remove"),
)
HANG_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Hang</title>
</head><body><button type="button" id="add">Add one</button> <span id="n">0</span><script>
document.getElementById("add").onclick = () => { const n = document.getElementById("n");
n.textContent = String(Number(n.textContent) + 1); };</script></body></html>"""
SAVE_SNIPPET = """<p><button type="button" id="save">Save</button> <span role="status"
id="saved"></span></p><script>let saves = 0; document.getElementById("save").onclick = () =>
setTimeout(() => { document.getElementById("saved").textContent = "Saved #" + (++saves); },
1000);</script>"""
# (page, anchor, button, what a model would call it, the text the loop waits for)
LOOP_CASES = (
    ("demo/dynamic.html", "Items", 'button "Load more"', "Load more button", "Loaded 3 items"),
    ("gen/save.html", "Orders", 'button "Save"', "Save button", "Saved #1"),
)


def must(answer: Answer, what: str) -> Answer:
    """A call the measure stands on: a failure stops the bench, saying what answered."""
    if answer.is_error:
        raise RuntimeError(f"{what}: {'timed out' if answer.timed_out else answer.text[:500]}")
    return answer


def must_ref(text: str, anchor: str, element: str, what: str) -> str:
    ref = ref_after(text, anchor, element)
    if ref is None:
        raise RuntimeError(f"{what}: no {element} after {anchor!r} in:\n{text[:2000]}")
    return ref


def first_line(answer: Answer, width: int = 46) -> str:
    if answer.timed_out:
        return f"no answer in {answer.ms / 1000:.0f} s"
    # Playwright MCP opens its answers with a "### Error" or "### Result" heading.
    lines = [ln for ln in answer.text.splitlines() if ln.strip() and not ln.startswith("###")]
    line = lines[0].strip() if lines else ""
    return line if len(line) <= width else line[: width - 1] + "…"


async def tools_list(tw: Driver, pw: Driver) -> float:
    (tw_n, tw_bytes), (pw_n, pw_bytes) = await tw.tools_list(), await pw.tools_list()
    print(f"\ntools/list      {'tools':>6} {'bytes':>8}")
    print(f"  tabwright     {tw_n:>6} {tw_bytes:>8}\n  playwright    {pw_n:>6} {pw_bytes:>8}")
    return tw_bytes / pw_bytes


async def snapshots(base: str, tw: Driver, pw: Driver) -> tuple[float, float, float]:
    """(chars ratio, time ratio), medians over the generated sizes; the highest chars
    ratio over every page."""
    print(
        f"\nsnapshot (median of {REPEATS})\n{'page':24} {'nodes':>6} {'tw ms':>8} {'pw ms':>8} "
        f"{'ratio':>6} {'tw chars':>9} {'pw chars':>9} {'ratio':>6}"
    )
    chars_ratios, time_ratios, every_page = [], [], []
    for path in [f"gen/{n}.html" for n in SIZES] + list(DEMO_PAGES):
        for driver in (tw, pw):
            must(await driver.navigate(f"{base}/{path}"), f"{driver.name} navigate {path}")
        count = await tw.evaluate("document.getElementsByTagName('*').length")
        times: dict[str, list[float]] = {"tw": [], "pw": []}
        chars = {}
        for _ in range(REPEATS):
            for key, driver in (("tw", tw), ("pw", pw)):
                answer = must(await driver.snapshot(), f"{driver.name} snapshot {path}")
                times[key].append(answer.ms)
                chars[key] = answer.chars
        tw_ms, pw_ms = median(times["tw"]), median(times["pw"])
        every_page.append(chars["tw"] / chars["pw"])
        if path.startswith("gen/"):
            chars_ratios.append(chars["tw"] / chars["pw"])
            time_ratios.append(tw_ms / pw_ms)
        print(
            f"{path:24} {count.text:>6} {tw_ms:>8.1f} {pw_ms:>8.1f} {tw_ms / pw_ms:>6.2f} "
            f"{chars['tw']:>9} {chars['pw']:>9} {chars['tw'] / chars['pw']:>6.3f}"
        )
    return median(chars_ratios), median(time_ratios), max(every_page)


async def clicks(base: str, tw: Driver, pw: Driver) -> list[float]:
    """The click's wall time on the Count button (its text goes up): the ratio on each
    size; a fresh snapshot (not timed) before each click gives a current ref."""
    print(
        f"\nclick on 'Count: n' against {pw.name} (median of {REPEATS}; ok = the next "
        f"snapshot shows the count)\n{'page':24} {'tw ms':>8} {'pw ms':>8} {'ratio':>6} "
        f"{'tw ok':>6} {'pw ok':>6}"
    )
    ratios = []
    for n in SIZES:
        path = f"gen/{n}.html"
        times: dict[str, list[float]] = {"tw": [], "pw": []}
        ok = {"tw": 0, "pw": 0}
        for driver in (tw, pw):
            must(await driver.navigate(f"{base}/{path}"), f"{driver.name} navigate {path}")
        for i in range(REPEATS):
            for key, driver in (("tw", tw), ("pw", pw)):
                snap = must(await driver.snapshot(), f"{driver.name} snapshot {path}")
                ref = must_ref(snap.text, "Orders", r'button "Count: \d+"', driver.name)
                answer = must(await driver.click(ref, "Count button"), f"{driver.name} click")
                times[key].append(answer.ms)
                after = must(await driver.snapshot(), f"{driver.name} snapshot {path}")
                ok[key] += f'button "Count: {i + 1}"' in after.text
        tw_ms, pw_ms = median(times["tw"]), median(times["pw"])
        ratios.append(tw_ms / pw_ms)
        print(
            f"{path:24} {tw_ms:>8.1f} {pw_ms:>8.1f} {tw_ms / pw_ms:>6.2f} "
            f"{ok['tw']:>4}/{REPEATS} {ok['pw']:>4}/{REPEATS}"
        )
    return ratios


async def loops(base: str, tw: Driver, pw: Driver) -> tuple[float, float]:
    """(calls ratio, answered characters ratio), medians over the loop's pages."""
    print(
        f"\nclick → wait for a text → read the page (median of {REPEATS}; ok = the last "
        f"answer shows the text)\n{'page':20} {'side':11} {'calls':>5} {'chars':>8} "
        f"{'ms':>8} {'ok':>5}  tools"
    )
    calls_ratios, chars_ratios = [], []
    for path, anchor, element, what, text in LOOP_CASES:
        seen: dict[str, dict[str, list[float]]] = {}
        tools: dict[str, list[str]] = {}
        ok = {"tw": 0, "pw": 0}
        for _ in range(REPEATS):
            for key, driver in (("tw", tw), ("pw", pw)):
                must(await driver.navigate(f"{base}/{path}"), f"{driver.name} navigate {path}")
                snap = must(await driver.snapshot(), f"{driver.name} snapshot {path}")
                ref = must_ref(snap.text, anchor, element, driver.name)
                answers = await driver.loop(ref, what, text)
                row = seen.setdefault(key, {"calls": [], "chars": [], "ms": []})
                row["calls"].append(len(answers))
                row["chars"].append(sum(a.chars for a in answers))
                row["ms"].append(sum(a.ms for a in answers))
                ok[key] += not any(a.is_error for a in answers) and text in answers[-1].text
                tools[key] = [a.tool for a in answers]
        for key in ("tw", "pw"):
            row = {k: median(v) for k, v in seen[key].items()}
            print(
                f"{path:20} {driver_name(key):11} {row['calls']:>5.0f} {row['chars']:>8.0f} "
                f"{row['ms']:>8.1f} {ok[key]:>3}/{REPEATS}  {', '.join(tools[key])}"
            )
        calls_ratios.append(median(seen["tw"]["calls"]) / median(seen["pw"]["calls"]))
        chars_ratios.append(median(seen["tw"]["chars"]) / median(seen["pw"]["chars"]))
    return median(calls_ratios), median(chars_ratios)


def driver_name(key: str) -> str:
    return "tabwright" if key == "tw" else "playwright"


async def stale_case(base: str, driver: Driver, query: str, kind: str) -> tuple[bool, str]:
    """(safe, what happened) for one re-render between the snapshot and the click."""
    must(await driver.navigate(f"{base}/stale/list.html{query}"), f"{driver.name} navigate")
    snap = must(await driver.snapshot(), f"{driver.name} snapshot list")
    ref = must_ref(snap.text, "Alpha", r'button "Delete(?: Alpha)?"', driver.name)
    must(await driver.evaluate(f"window.rerender('{kind}')"), f"{driver.name} rerender")
    click = await driver.click(ref, "Delete button in Alpha's row", timeout_s=20)
    read = must(
        await driver.evaluate("'DELETED:' + window.deleted.join(',') + ';'"),
        f"{driver.name} read deleted",
    )
    found = re.search(r"DELETED:([^;]*);", read.text)
    deleted = found[1].split(",") if found and found[1] else []
    if click.is_error:
        safe = not deleted
        said = f"refused: {first_line(click, 64)}"
    else:
        safe = deleted == ["Alpha"]
        said = "clicked"
    return safe, f"{said}; deleted {deleted or 'nothing'}"


async def stale(base: str, tw: Driver, pw: Driver) -> tuple[int, int]:
    print("\nstale ref: click Alpha's Delete after a re-render (safe = refused, or Alpha)")
    safe = {"tw": 0, "pw": 0}
    for case, query, kind in STALE_CASES:
        for key, driver in (("tw", tw), ("pw", pw)):
            ok, said = await stale_case(base, driver, query, kind)
            safe[key] += ok
            print(f"  {case:26} {driver_name(key):10} {'safe' if ok else 'UNSAFE':6} {said}")
    return safe["tw"], safe["pw"]


async def hang_trial(base: str, name: str) -> tuple[bool, str]:
    """One trial on a fresh server: (contained, what happened)."""
    async with open_driver(name) as driver:
        must(await driver.navigate(f"{base}/hang.html"), f"{name} navigate hang.html")
        snap = must(await driver.snapshot(), f"{name} snapshot hang.html")
        ref = must_ref(snap.text, "", r'button "Add one"', name)
        driver.note_processes()  # the spinning renderer among them
        spin = await driver.spin(HANG_GIVE_UP_S)
        if spin.timed_out:
            return False, f"no answer in {HANG_GIVE_UP_S:.0f} s: server killed"
        in_time = spin.ms <= HANG_BUDGET_MS + HANG_SLACK_MS
        click = await driver.click(ref, "Add one button", timeout_s=HANG_GIVE_UP_S)
        count = await driver.evaluate(
            "'N:' + document.getElementById('n').textContent + ';'", timeout_s=HANG_GIVE_UP_S
        )
        clicked = not click.is_error and "N:1;" in count.text
        said = f"answered in {spin.ms:.0f} ms ({first_line(spin, 40)}); next click "
        said += "worked" if clicked else f"failed: {first_line(click if click.is_error else count)}"
        return in_time and clicked, said


async def hangs(base: str) -> tuple[float, float]:
    print(f"\nwhile(true){{}} in the page ({HANG_TRIALS} trials, fresh servers)")
    contained = {"tabwright": 0, "playwright": 0}
    for trial in range(HANG_TRIALS):
        for name in contained:
            ok, said = await hang_trial(base, name)
            contained[name] += ok
            print(f"  {trial + 1} {name:11} {'contained' if ok else 'NOT contained':14} {said}")
    return contained["tabwright"] / HANG_TRIALS, contained["playwright"] / HANG_TRIALS


async def settle0_clicks(base: str) -> float:
    """click_settle0_ratio: the click against Playwright MCP with ``--timeout-settle 0``,
    each side a session of its own, warmed up alike.  (Not the session of the clicks
    before: its refs, never reused in a tab, are a digit longer by then, and the 10,000
    node page's snapshot is cut before its Count button.)"""
    async with open_driver("tabwright") as tw, open_driver("playwright-settle0") as pw0:
        for driver in (tw, pw0):
            must(await driver.navigate(f"{base}/demo/index.html"), f"{driver.name} warm-up")
            must(await driver.snapshot(), f"{driver.name} warm-up snapshot")
        return max(await clicks(base, tw, pw0))


async def compare(base: str, *, only: str = "") -> str:
    """Tabwright's stdio server against Playwright MCP: the RESULT fields (``only``:
    "snapshot" or "click", those measures alone)."""
    version = ensure_playwright_mcp()
    print(f"Playwright MCP {version} against Tabwright's MCP server")
    async with open_driver("tabwright") as tw, open_driver("playwright") as pw:
        for driver in (tw, pw):  # the first call launches the browser: not measured
            must(await driver.navigate(f"{base}/demo/index.html"), f"{driver.name} warm-up")
            must(await driver.snapshot(), f"{driver.name} warm-up snapshot")
        if only == "click":
            click_ratio = median(await clicks(base, tw, pw))
            settle0_ratio = await settle0_clicks(base)
            return f"click_ratio={click_ratio:.2f} click_settle0_ratio={settle0_ratio:.2f}"
        tools_ratio = await tools_list(tw, pw)
        chars_ratio, time_ratio, chars_max = await snapshots(base, tw, pw)
        sizes = (
            f"snap_chars_ratio={chars_ratio:.3f} snap_chars_ratio_max={chars_max:.3f} "
            f"snap_time_ratio={time_ratio:.2f}"
        )
        if only == "snapshot":
            return sizes
        click_ratio = median(await clicks(base, tw, pw))
        loop_calls, loop_chars = await loops(base, tw, pw)
        stale_tw, stale_pw = await stale(base, tw, pw)
        settle0_ratio = await settle0_clicks(base)
    hang_tw, hang_pw = await hangs(base)
    return (
        f"{sizes} click_ratio={click_ratio:.2f} loop_calls_ratio={loop_calls:.2f} "
        f"loop_bytes_ratio={loop_chars:.3f} hang_contained_tw={hang_tw:.2f} "
        f"hang_contained_pw={hang_pw:.2f} stale_safe_tw={stale_tw} stale_safe_pw={stale_pw} "
        f"tools_list_bytes_ratio={tools_ratio:.2f} click_settle0_ratio={settle0_ratio:.2f}"
    )


async def over_http(base: str) -> str:
    """Sessions over HTTP through a dashboard: the RESULT fields."""
    result = await http_sessions(base)
    report(result)
    calls = TOGETHER * ROUNDS * 2
    return (
        f"http_first_call_ok={result.first_ok / IN_A_ROW:.2f} "
        f"http_together_ok={result.together_ok / calls:.2f} "
        f"http_runs_per_session={result.runs / result.sessions:.2f} http_runs_left={result.left}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--http-only", action="store_true", help="only the sessions over HTTP (no npm)"
    )
    parser.add_argument(
        "--snapshot-only", action="store_true", help="only the snapshots' sizes and times"
    )
    parser.add_argument(
        "--click-only",
        action="store_true",
        help="only the clicks (Playwright MCP's defaults and --timeout-settle 0)",
    )
    options = parser.parse_args()
    # Everything shares the machine's cores with whatever else runs: say how busy it was.
    print(f"load {os.getloadavg()[0]:.1f}")
    pages = {f"/gen/{n}.html": back_office_page(n) for n in SIZES}
    pages["/gen/save.html"] = back_office_page(2_500).replace("</main>", SAVE_SNIPPET + "</main>")
    pages["/stale/list.html"] = LIST_APP
    pages["/hang.html"] = HANG_PAGE
    fields = []
    with serve(pages) as base:
        if not options.http_only:
            only = "snapshot" if options.snapshot_only else "click" if options.click_only else ""
            fields.append(await compare(base, only=only))
        if not (options.snapshot_only or options.click_only):
            fields.append(await over_http(base))
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    print("RESULT mcp " + " ".join(fields))


if __name__ == "__main__":
    asyncio.run(main())
