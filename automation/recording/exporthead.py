"""The fixed text of a pytest export (automation.recording.export): its header, and the
helper that checks a download.  Nothing of a scenario is in them but what ``format``
puts in the header's slots, each a Python literal made by the export."""

from __future__ import annotations

__all__ = ["DOWNLOADS", "HEADER", "MARKER"]

# Nothing of the scenario goes into the docstring: its name and base URL are the
# constants below, written by repr().
HEADER = '''"""A Tabwright scenario replayed with Playwright.

Exported from a Tabwright scenario (format version {version}).  Run it with:

    BASE_URL=<where the app runs> python -m pytest <this file>

TIMEOUT_MS (default 15000) is how long a step or a check waits for the page.

SCENARIO below is the scenario's name, RECORDED_BASE where it was recorded.
"""

from __future__ import annotations

import json
import os
import re
import time
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from urllib.parse import quote, quote_plus, unquote, unquote_plus, urlsplit

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Frame, FrameLocator, Locator, Page, expect, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeout

SCENARIO = {name}
BASE_URL = os.environ.get("BASE_URL", {base_url}).rstrip("/")
RECORDED_BASE = {base_url}


def url(recorded: str, recorded_base: str = RECORDED_BASE) -> str:
    """A recorded address moved to BASE_URL (other sites stay as they are); a base is
    a folder, with or without its last slash.  A called scenario's (recorded under
    its own base) moves as the test's moved (moved_base, below)."""
    base = recorded_base.rstrip("/")
    if base and (recorded == base or recorded.startswith((base + "/", base + "?"))):
        to = BASE_URL if recorded_base == RECORDED_BASE else moved_base(
            recorded_base, RECORDED_BASE, BASE_URL)
        return to + recorded[len(base):]
    return recorded


def check_params(names: list) -> None:
    """As Tabwright's replay checks a scenario's parameters before its first step: each
    parameter of ``names`` (those the test, or its login scenario, has no default for)
    has a value, its TABWRIGHT_PARAM_<name>; the test fails naming each that has none."""
    missing = [f"parameter {{name!r}} (environment variable TABWRIGHT_PARAM_{{name}})"
               for name in names if "TABWRIGHT_PARAM_" + name not in os.environ]
    if missing:
        pytest.fail("no value for " + "; ".join(missing), pytrace=False)


def frame_of(page: Page, path: str):  # noqa: ANN201 (a Frame)
    """The frame whose address ends with the recorded path."""
    frame = page.frame(url=re.compile(re.escape(path) + "$"))
    assert frame is not None, f"no frame at {{path}}"
    return frame


REFUSED: list = []  # the writes of the page's scripts that its site refused
SAID_FAILED: list = []  # ... answered in JSON saying they failed ({{"ok": false}}, HTTP 200)
UNDER_WAY: set = set()  # ... and those not answered yet
ASKED: set = set()  # the fetches and XHRs of the page's scripts not done yet (any method)
WROTE: list = []  # every write the page sent (a form posted, a save), the latest last
OWN_WROTE: list = []  # ... those that may be its own: a form posted, a script's (type, URL)
DOCUMENT: list = []  # the method of the request each page's document answered, the latest last
POSTED: list = []  # each form a page itself posted (its main frame's writes), in order
POSTING: set = set()  # ... those not answered in full yet
COMMITS: list = []  # the address of each document a page committed, the latest last
ACTED: set = set()  # the paths of the frames a step acted in (their writes are the steps')
# The page's timers of up to HOLD_MS still to run (a save 600 ms after the last change),
# put in before the page's own scripts: what the last steps left for later, which replay's
# verdict waits for too (automation.browser.settle.HOLD_TIMER_MS); at the end, those of
# up to END_MS (an undo toast's deletion, sent once it went: settle.END_HOLD_TIMER_MS).
HOLD_MS = {hold_ms}
END_MS = {end_ms}
# ... and those of up to MET_MS a tick or a choice that asked the server set as the answer
# came (an app that puts it back a moment later), as replay waits for them
# (automation.browser.fieldops.ANSWER_MET_MS).
MET_MS = {met_ms}
SHORT_TIMERS_JS = """(() => {{
  if (window.__timersLeft) return;
  const left = new Map();  // timer id -> its delay
  window.setTimeout = new Proxy(window.setTimeout, {{ apply(target, self, args) {{
    const [fn, ms] = args;
    if (typeof fn !== "function" || Number(ms) > {end_ms}) {{
      return Reflect.apply(target, window, args);
    }}
    const run = function () {{ left.delete(id); return fn.apply(this, arguments); }};
    const id = Reflect.apply(target, window, [run, ...args.slice(1)]);
    left.set(id, Number(ms) || 0);
    return id;
  }} }});
  for (const name of ["clearTimeout", "clearInterval"]) {{
    window[name] = new Proxy(window[name], {{ apply(target, self, args) {{
      left.delete(args[0]);
      return Reflect.apply(target, window, args);
    }} }});
  }}
  window.__timersLeft = (ids, maxMs = {hold_ms}) =>
    (ids || [...left.keys()]).filter((id) => left.has(id) && left.get(id) <= maxMs);
}})();"""


# What the page's scripts do with their server's answers, still to come: each fetch, XHR
# and read of an answer's body is left until two tasks after it settled (so an ``await``
# of it, what that runs at once and a task it posts are done by then); how many the page
# asked for so far.
ANSWERS_JS = """(() => {{
  if (window.__answersLeft) return;
  const left = new Set();
  let ids = 0;
  let asked = 0;
  const channel = new MessageChannel();
  const queued = [];
  channel.port1.onmessage = () => {{ for (const fn of queued.splice(0)) fn(); }};
  const post = MessagePort.prototype.postMessage;
  const begun = () => {{ ids += 1; left.add(ids); return ids; }};
  const later = (fn) => {{ queued.push(fn); Reflect.apply(post, channel.port2, [null]); }};
  // Two tasks on: what its handlers handed to a task of their own (a render a scheduler
  // posts) runs first.
  const done = (id) => () => later(() => later(() => left.delete(id)));
  const until = (promise) => {{
    const id = begun();
    promise.then(done(id), done(id));
    return promise;
  }};
  window.fetch = new Proxy(window.fetch, {{ apply(target, self, args) {{
    asked += 1;
    return until(Reflect.apply(target, window, args));
  }} }});
  for (const name of ["json", "text", "arrayBuffer", "blob", "formData", "bytes"]) {{
    const read = Response.prototype[name];
    if (typeof read !== "function") continue;
    Response.prototype[name] = new Proxy(read, {{ apply(target, self, args) {{
      return until(Reflect.apply(target, self, args));
    }} }});
  }}
  XMLHttpRequest.prototype.send = new Proxy(XMLHttpRequest.prototype.send, {{
    apply(target, self, args) {{
      asked += 1;
      const id = begun();
      self.addEventListener("loadend", done(id));  // after the page's own load handlers
      try {{
        return Reflect.apply(target, self, args);
      }} catch (error) {{
        left.delete(id);
        throw error;
      }}
    }},
  }});
  window.__answersLeft = () => ({{ asked, left: [...left] }});
}})();"""


def served(page: Page) -> None:
    """As Tabwright's replay judges the steps: what the last steps left for later (the
    page's timers of up to END_MS) is waited for; then a write the page's script sent to its
    site (a form sent by fetch, a save) or a form a frame posted, that the server refused
    (HTTP 4xx/5xx) or never answered, fails the test, one still under way waited for (up
    to 15 s); so does the page itself answered 4xx/5xx (a form posted, a link followed).
    A dialog no step armed fails it first, as replay's verdict."""
    held(page, END_MS)
    DIALOGS.none_unexpected("after the last step")  # one that came as the page went on
    assert not REFUSED, f"the server refused {{REFUSED[0]}}"


def answered_ok() -> None:
    """As Tabwright's replay ends: a write of the page's script answered in JSON that
    says it failed ({{"ok": false}}, HTTP 200), the page saying nothing the checks before
    read of it, fails the test."""
    assert not SAID_FAILED, f"the server refused {{SAID_FAILED[0]}}"


def held(page: Page, within_ms: int = HOLD_MS) -> None:
    """As Tabwright's replay holds: what the steps left for later (the page's timers of up
    to ``within_ms``) run, and the requests they sent answered; before a step that leaves
    the page too (a debounced save is sent, as a person waits for "Saved" before going
    on)."""
    look = "(ms) => window.__timersLeft ? window.__timersLeft(null, ms) : []"
    left = page.evaluate(look, within_ms)
    if not left and len(page.frames) > 1:
        page.wait_for_timeout(100)  # a form a frame posts: its request seen as under way
    # What ran may leave timers of its own (a save's answer that puts the old value back
    # a moment later): looked for again, three rounds at most, as replay's hold.
    for _ in range(3):
        if not left:
            break
        _timers_run(page, left, within_ms)
        page.wait_for_timeout(100)  # the requests those timers sent: seen as under way
        _until_answered(page)
        page.wait_for_timeout(100)  # what their answers set off: begun
        within_ms = HOLD_MS  # (a long timer that sets the next, a carousel: once)
        left = page.evaluate(look, within_ms)
    _until_answered(page)


def went_on(page: Page, documents: int, address: str) -> bool:
    """As Tabwright's replay reads the end: whether the app went on to another page by
    itself while what the last steps left was done (a document loaded since there were
    ``documents``, at another address than ``address``: the checks are of the page
    before), which then shows no error.  The same address loaded again (a reload) is the
    page the checks read."""
    if len(DOCUMENT) == documents or same_page(page.url, address):
        return False
    found = errors_shown(page)
    assert not found, f"the page the app went on to ({{page.url[:200]}}) shows {{found[0][:200]!r}}"
    return True


def writes_answered(page: Page) -> None:
    """As Tabwright's replay goes on after a step: a write the page's script sent that is
    still under way (a slow save) is answered first (up to 15 s), and not refused: a check
    read before the answer reads what the app showed meanwhile (taken back when the save
    is refused), and a step that leaves the page cancels it."""
    try:  # a round trip: the page's requests sent before it are seen as under way
        page.evaluate("0")
    except PlaywrightError:
        pass  # (a page going away: its writes are seen all the same)
    _until_answered(page)
    assert not REFUSED, f"the server refused {{REFUSED[0]}}"


def _until_answered(page: Page) -> None:
    for _ in range(300):
        if not UNDER_WAY:
            break
        page.wait_for_timeout(50)


@contextmanager
def checks_answered(page: Page) -> Iterator[None]:
    """As Tabwright's replay settles after a tick or a choice made inside it: what the
    page's scripts asked of the server since (a check that Express reaches the address)
    answered, up to 15 s, and what the page did with the answers done (the handlers of
    each, and what those ran at once).  When it asked, as the replay then holds the
    page: the timers of up to MET_MS set since run too (an app that meets the answer a
    moment later), and what they asked answered, three rounds at most.  A request under
    way before (a long poll) is not waited for, nor a timer set before."""
    before = _still_to_come(page) or {{"asked": 0, "answers": [], "timers": []}}
    asked = set(ASKED)
    yield
    for _ in range(3):
        now = _answers_met(page, asked, before)
        if now is None or now["asked"] == before["asked"]:
            return  # (a page going away), or it asked nothing
        timers = [t for t in now["timers"] if t not in before["timers"]]
        if not timers:
            return
        try:
            _timers_run(page, timers, MET_MS)
        except PlaywrightError:
            return  # (a page going away)


def typing_met(page: Page, before: dict | None) -> None:
    """As Tabwright's replay holds the page before a step that acts after one that typed
    (a search box's debounce, then the list it filters): the timers of up to HOLD_MS the
    typing set since ``before`` (still_to_come) run, what they asked of the server
    answered and met (up to 15 s each), three rounds at most.  A timer set before is
    not waited for (a page that polls)."""
    if before is None:
        return  # (a page going away)
    asked, seen = set(ASKED), set(before["timers"])
    for _ in range(3):
        now = _still_to_come(page, HOLD_MS)
        timers = [] if now is None else [t for t in now["timers"] if t not in seen]
        if not timers:
            return
        seen.update(timers)
        try:
            _timers_run(page, timers, HOLD_MS)
        except PlaywrightError:
            return  # (a page going away)
        page.wait_for_timeout(100)  # the requests those timers sent: seen as under way
        if _answers_met(page, asked, before) is None:
            return
        asked = set(ASKED)


def still_to_come(page: Page) -> dict | None:
    """What the page has still to come before a step that types (typing_met's)."""
    return _still_to_come(page, HOLD_MS)


def _timers_run(page: Page, ids: list, within_ms: int) -> None:
    """The page's timers ``ids`` run (each due within ``within_ms``: a page busy longer is
    read as it is)."""
    try:
        page.wait_for_function("([ids, ms]) => !window.__timersLeft || "
                               "window.__timersLeft(ids, ms).length === 0",
                               arg=[ids, within_ms], timeout=within_ms + 500)  # fmt: skip
    except PlaywrightTimeout:
        pass


def _still_to_come(page: Page, ms: int = MET_MS) -> dict | None:
    """What the page's scripts asked for so far, the answers they still have to meet and
    their timers of up to ``ms`` still to run; None when it can't be read."""
    try:
        return page.evaluate("(ms) => {{ const met = window.__answersLeft ? __answersLeft()"
                             " : {{asked: 0, left: []}}; return {{asked: met.asked, answers:"
                             " met.left, timers: window.__timersLeft ? __timersLeft(null, ms)"
                             " : []}}; }}", ms)  # fmt: skip
    except PlaywrightError:
        return None


def _answers_met(page: Page, asked: set, before: dict) -> dict | None:
    """The page's look once what its scripts asked since ``before`` (the requests new
    since ``asked``) is answered and the answers met (up to 15 s); None when it went."""
    for _ in range(300):
        now = _still_to_come(page)  # a round trip: what the page sent before it is seen
        if now is None:
            return None
        meeting = [a for a in now["answers"] if a not in before["answers"]]
        if not ASKED - asked and not meeting:
            return now
        page.wait_for_timeout(50)
    return _still_to_come(page)


def where_it_led(
    page: Page, sent: int, recorded: str, shown: tuple = (), expected: list = ()
) -> None:
    """As Tabwright's replay judges a step that sent a write (a form posted, a save; the
    page's writes were ``sent`` before it): the page it ends on is where it led when
    recorded (the same path, and the recorded query's parameters, ids aside); one away
    from the page it acted on (``shown``: :func:`errors_before`'s there) that the test
    read before shows no error it did not show then (a save sent back to a list with a
    message saying why it was refused), but one a check after it expects."""
    page.wait_for_load_state()
    if len(WROTE) == sent:
        return
    try:
        page.wait_for_url(lambda now: same_place(recorded, now))
    except PlaywrightTimeout:
        pass
    assert same_place(recorded, page.url), (
        f"what the step sent led to {{page.url}}, not to {{recorded}} as when recorded")
    if not shown or same_page(shown[0], page.url):
        return  # (on the page it acted on: refused_in_place's)
    earlier = next((errors for at, errors in reversed(ERRORS_AT) if same_place(at, page.url)),
                   None)
    if earlier is None:
        return  # a page the test had not read: what it showed when recorded is not known
    new = [e for e in errors_shown(page, named=True) if e not in earlier and not any(
        re.search(words(text), folded(e), re.IGNORECASE) for text in expected)]
    assert not new, (f"the app answered what the step sent with {{page.url[:200]}}, saying "
                     f"{{new[0][:200]!r}}, which that page did not show before: it likely "
                     f"refused it")


# The fields each document's forms were found not valid at since a step began (their
# ``invalid`` events), and its clicks and Enter keys (the forms they asked to send:
# NOT_SENT_JS), put in before the page's own scripts: what replay's settle hears.
INVALID_HEARD_JS = """(() => {{
  if (window.__invalidHeard) return;
  const heard = [];
  const tried = [];
  addEventListener("invalid", (e) => {{ if (heard.length < 50) heard.push(e.target); }}, true);
  const asked = (e) => {{ if (tried.length < 50) tried.push([e.type, e.composedPath()[0]]); }};
  addEventListener("click", asked, true);
  addEventListener("keydown", (e) => {{ if (e.key === "Enter") asked(e); }}, true);
  Object.defineProperty(window, "__invalidHeard", {{ value: heard }});
  Object.defineProperty(window, "__submitTried", {{ value: tried }});
}})();"""


def before_send(page: Page) -> tuple:
    """What :func:`form_sent` compares the page with after a step that may send a form:
    how many writes it sent and documents it committed so far (the fields found not valid
    so far are forgotten)."""
    page.evaluate("() => window.__invalidHeard && (window.__invalidHeard.splice(0),"
                  " window.__submitTried.splice(0))")
    return len(WROTE), len(COMMITS)


def form_sent(page: Page, before: tuple) -> None:
    """As Tabwright's replay judges a click, a key or an Enter that may send a form: the
    browser did not refuse to send it (a field not valid: its ``invalid`` events, and the
    focus moved to one or the step asked to send its form), or the page sent a write or
    went to another page all the same."""
    sent, commits = before
    if len(WROTE) > sent or len(COMMITS) > commits or page.is_closed():
        return
    try:
        fields = page.evaluate(f"() => ({{NOT_SENT_JS}})(window.__invalidHeard || [],"
                               f" window.__submitTried || [])")
    except PlaywrightError:  # it went away meanwhile
        return
    said = "; ".join(f"{{f['name']!r}}: {{f['said']}}" if f["name"] else f["said"]
                     for f in fields)
    assert not fields, f"the browser refused to send the form, nothing was sent: {{said}}"


def choose(option: Locator, name: str) -> None:
    """Click an option of a combobox's list, as Tabwright's replay judges it
    (automation/browser/choice.py): the choice took when, after the click, the option is
    selected, or the combobox (or the text around it) shows its name, or its name holds
    what the combobox shows now, changed; where no combobox is known, the click alone."""
    handle = option.element_handle()
    box = handle.evaluate_handle(BOX_JS)
    was = box.evaluate(SHOWN_JS, handle) if box.as_element() is not None else None
    option.click()
    if was is None or not name.strip():
        return
    try:
        if handle.evaluate(OPTION_SELECTED_JS):
            return
        now = box.evaluate(SHOWN_JS, handle)
    except PlaywrightError:  # the page went away (a choice that navigates)
        return
    if now is None:
        return
    shows, around = folded(now["box"]), folded(now["around"])
    if any(re.search(words(name), text, re.IGNORECASE) for text in (shows, around)):
        return
    changed = shows and shows != folded(was["box"])
    assert changed and re.search(words(shows), folded(name), re.IGNORECASE), (
        f"click option {{name!r}}: the choice did not take, the combobox shows {{now['box']!r}}")


def errors_before(page: Page) -> tuple:
    """What :func:`refused_in_place` compares the page with after a step: its address, the
    errors it shows, named as errors, and how many forms it posted and documents it
    committed so far."""
    errors = errors_shown(page, named=True, hidden=DRAWN == [True])
    ERRORS_AT[:] = [*ERRORS_AT[-19:], (page.url, errors)]  # (where_it_led reads them)
    return page.url, errors, len(POSTED), len(COMMITS)


def new_errors(page: Page, sent: int, shown: tuple, expected: list) -> list:
    """The errors the page shows now that it did not before a step that sent a write (the
    page's writes were ``sent`` before it; ``shown``: :func:`errors_before`'s), but one a
    check after the step expects (a text ``expected`` shows); [] when it sent none or the
    page is not where it acted.  A form the step posted is read once its answer is the
    page (Playwright's click and keys wait for no navigation)."""
    url, said, posted, commits = shown
    if len(WROTE) == sent or page.is_closed():  # (a popup its save closed)
        return []
    try:
        for _ in range(300):  # up to 15 s: its answer committed, or it ended without one
            if len(COMMITS) > commits or not POSTING.intersection(POSTED[posted:]):
                break
            page.wait_for_timeout(50)
        page.wait_for_load_state()
    except PlaywrightError:  # it closed meanwhile
        return []
    if not same_page(url, page.url):
        return []
    drawn = DRAWN == [True]  # (a form drawn again: its hidden parts' marks too)
    return [e for e in errors_shown(page, named=True, hidden=drawn) if e not in said and not any(
        re.search(words(text), folded(e), re.IGNORECASE) for text in expected)]


THEN: list = []  # the errors the last step's page showed right after it (errors_then)
ERRORS_AT: list = []  # each page errors_before read: its address, the errors it showed


def errors_then(page: Page, sent: int, shown: tuple, expected: list) -> None:
    """Keep the errors the last step's page shows right after it (:func:`new_errors`),
    for its judgement at the end (a toast saying why that hides itself meanwhile)."""
    THEN[:] = new_errors(page, sent, shown, expected)


def refused_in_place(
    page: Page, sent: int, shown: tuple, expected: list, then: tuple | list = ()
) -> None:
    """As Tabwright's replay judges a step that sent a write and stayed where it acted:
    the page shows no error it did not show before it (:func:`new_errors`), now or right
    after the step (``then``: the last step's, read before what it left for later was
    done: a toast saying why that hides itself a moment later)."""
    now = new_errors(page, sent, shown, expected)
    if not now and (page.is_closed() or not same_page(shown[0], page.url)):
        return  # (not where it acted: then is no longer its answer)
    new = [*then, *(e for e in now if e not in then)]
    new.sort(key=lambda error: error == "a field marked invalid")  # what it says first
    assert not new, (f"the app answered what the step sent on the same page, saying "
                     f"{{', '.join(repr(e[:200]) for e in new[:2])}}: it likely refused it")


def sent_again(page: Page, before: int, recorded: str, unchanged: dict, steps: list) -> None:
    """As Tabwright's replay judges a click or a key that sent a write when recorded
    (``recorded``: its method and path): it sends one of the page's own again (a form
    posted, or a script's write to its site: the first ``before`` of them came before
    it), once what it left for later ran (held); unless the values the ``steps`` before it
    on the page wrote were all there already (``unchanged``: written's)."""
    def sent() -> bool:
        return any(kind == "document" or same_site(url, page.url)
                   for kind, url in OWN_WROTE[before:])
    if sent():
        return
    held(page)
    nothing_changed = bool(steps) and all(unchanged.get(i) is True for i in steps)
    assert sent() or nothing_changed, (f"it sent nothing, where it sent {{recorded}} when "
                                       "recorded: the page did not take it")


def not_answered_again(page: Page, recorded: str) -> None:
    """As Tabwright's replay reads a check recorded on the page ``recorded``: the page is
    not the server's own answer to a form sent (not a redirect after it) at another
    address, where a form it refused comes back with its values in its fields and a check
    of them would hold.  Addresses are compared by their path and query, ids aside."""
    if DOCUMENT and DOCUMENT[-1] == "POST":
        assert address_shape(recorded) == address_shape(page.url), (
            f"the page is the server's answer to the form sent ({{page.url}}), not the page "
            f"it led to when recorded ({{recorded}}): the server likely refused the form")


def _sent(request) -> None:  # noqa: ANN001 (a Request)
    if request.resource_type in ("fetch", "xhr"):
        ASKED.add(request)
    if request.method in WRITES:
        WROTE.append(request.method)
        if request.resource_type in ("document", "fetch", "xhr"):
            OWN_WROTE.append((request.resource_type, request.url))
    followed = request.redirected_from is not None and request.redirected_from in POSTED
    if (request.method in WRITES or followed) and _page_itself(request):  # (its redirect too)
        POSTED.append(request)
        POSTING.add(request)
    script_write = request.method in WRITES and request.resource_type in ("fetch", "xhr")
    if script_write or _frame_write(request):
        UNDER_WAY.add(request)


def _frame_write(request) -> bool:  # noqa: ANN001 (a Request)
    """A form a frame inside the page posted: refused as a script's write is."""
    return (request.is_navigation_request() and request.frame.parent_frame is not None
            and request.method in WRITES)


def _page_itself(request) -> bool:  # noqa: ANN001 (a Request)
    """The page's own document: a form it posted, a link followed, an address gone to."""
    return request.is_navigation_request() and request.frame.parent_frame is None


def _script_write(page: Page, request, status: int) -> bool:  # noqa: ANN001 (a Request)
    """As Tabwright's replay: a write of a script's to its site that the server refused,
    the page's or that of a frame a step acted in (a widget of another site)."""
    if refused_write(request.method, request.resource_type, status, request.url, page.url):
        return True
    try:
        frame = request.frame
    except PlaywrightError:
        return False  # (a service worker's)
    return (frame.parent_frame is not None
            and any(re.search(re.escape(path) + "$", frame.url) for path in ACTED)
            and refused_write(request.method, request.resource_type, status, request.url,
                              frame.url))


def _answered(page: Page, response) -> None:  # noqa: ANN001 (a Response)
    request = response.request
    if response.status < 400 and _script_write(page, request, 400):
        _read_answer(request, response)  # (under way until it is read)
    UNDER_WAY.discard(request)
    if not 300 <= response.status < 400 and _page_itself(request):
        DOCUMENT.append(request.method)
        DRAWN[:] = [request.method == "POST"]  # (what expect_no_error reads)
    if _script_write(page, request, response.status) or (
            response.status >= 400 and (_frame_write(request) or _page_itself(request))):
        REFUSED.append(f"{{request.method}} {{request.url}}: HTTP {{response.status}}")


def _read_answer(request, response) -> None:  # noqa: ANN001 (a Request, a Response)
    """As Tabwright's replay: a write's JSON answer that says it failed ({{"ok": false}},
    HTTP 200: said_failed) fails the test once what the page showed was judged (answered_ok)."""
    if not answer_read(response.headers):
        return
    try:
        said = said_failed(response.body())
    except PlaywrightError:
        return  # (the page went away meanwhile)
    if said:
        SAID_FAILED.append(f"{{request.method}} {{request.url}}: HTTP {{response.status}} "
                           f"saying {{said!r}}")


def _failed(page: Page, request) -> None:  # noqa: ANN001 (a Request)
    """A write that got no answer (a dropped connection) was not served; one the page
    gave up itself (net::ERR_ABORTED) is not that."""
    UNDER_WAY.discard(request)
    ASKED.discard(request)
    POSTING.discard(request)
    failure = request.failure or "failed"
    if "ERR_ABORTED" in failure:
        return
    if _script_write(page, request, 599) or _frame_write(request):
        REFUSED.append(f"{{request.method}} {{request.url}}: no answer ({{failure}})")


def listen(page: Page) -> None:
    """A page's listeners (the test's, and each popup its steps enter): dialogs answered
    as the steps armed them, else dismissed and said; its writes watched."""
    page.on("dialog", DIALOGS.answer)
    page.on("request", _sent)
    page.on("response", lambda response: _answered(page, response))
    page.on("requestfailed", lambda request: _failed(page, request))
    page.on("requestfinished", lambda request: (ASKED.discard(request),
                                                POSTING.discard(request)))
    page.on("framenavigated",
            lambda frame: COMMITS.append(frame.url) if frame.parent_frame is None else None)


@pytest.fixture
def page() -> Iterator[Page]:
    executable = os.environ.get("TABWRIGHT_CHROMIUM_PATH") or os.environ.get("CHROMIUM") or None
    with sync_playwright() as playwright:
        playwright.selectors.register("tabwright-row", ROW_ENGINE_JS)  # rows_showing's
        playwright.selectors.register("tabwright-column", COLUMN_ENGINE_JS)  # a column's cells
        # Each site's frames in a process of their own, as replay runs them (the headless
        # shell does so only when told): a widget of another site whose script hangs
        # holds its own frame, not the page around it.
        isolated = ["--site-per-process"]
        browser = playwright.chromium.launch(executable_path=executable, args=isolated)
        page = browser.new_page()
        page.add_init_script(SHORT_TIMERS_JS)
        page.add_init_script(ANSWERS_JS)  # what the page does with its answers, still to come
        page.add_init_script(TYPED_JS)  # what is typed, told from what the app wrote
        page.add_init_script(INVALID_HEARD_JS)  # the forms the browser refused to send
        timeout_ms = float(os.environ.get("TIMEOUT_MS", "15000"))
        page.set_default_timeout(timeout_ms)
        expect.set_options(timeout=timeout_ms)  # a check waits as long as a step
        listen(page)
        yield page
        browser.close()
'''
# A step's download checked as replay checks it: the helper below, then the code of
# automation.recording.downloadfile as it is.
DOWNLOADS = '''

DOWNLOADS: dict = {}  # each page's downloads (the test's, its popups'), the latest last
CHECKED: dict = {}  # each page's: the downloads before this one are no answer; how many read


def keep_downloads(page: Page) -> None:
    """Keep the downloads of ``page`` (the test's, and each popup it opens: by its
    context), as replay keeps each tab's."""
    DOWNLOADS.setdefault(page, [])
    CHECKED.setdefault(page, [0, 0])
    page.on("download", lambda download: DOWNLOADS[page].append(download))


def downloads_step(page: Page) -> None:
    """A step after a download check: the checks after it read only what begins since."""
    checked = CHECKED.setdefault(page, [0, 0])
    checked[0] = checked[1]


def check_download(page: Page, args: dict) -> None:
    """The page's latest download begun since the step after the download checked before,
    once it has ended, against a download check, as Tabwright's replay checks it."""
    kept, checked = DOWNLOADS.setdefault(page, []), CHECKED.setdefault(page, [0, 0])
    since = " since the download checked before" if checked[0] else ""
    while len(kept) <= checked[0]:
        try:
            page.wait_for_event("download")
        except PlaywrightTimeout:
            raise AssertionError(f"nothing was downloaded{since}") from None
    download = kept[-1]
    checked[1] = len(kept)
    failure = download.failure()  # once it has ended
    assert failure is None, f"the download {download.suggested_filename!r} failed ({failure})"
    held, why = holds_file(Path(download.path()), download.suggested_filename, args)
    assert held, why

'''
MARKER = "# -- written into an exported pytest file as it is"
