"""The browser's actions, as specs (:mod:`automation.actionspec`): each names its parameters
once and dispatches to the :class:`Tab` method.  :mod:`automation.actions` assembles them with
the macro of them (:mod:`automation.browser.macro`) and the agent's other tools into the one
registry.
"""

from __future__ import annotations

import json
from typing import Any

from automation.actionspec import REF_DESCRIPTION, ActionSpec, Param, optional
from automation.browser import storage
from automation.browser.dialogs import check_arming
from automation.browser.fieldops import check_key_delay
from automation.browser.pageops import check_wait_ms
from automation.browser.snapshot import SnapshotOptions
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import ActionInvalid

__all__ = ["BROWSER_ACTIONS", "EVALUATE_ACTIONS", "JSON_TYPES", "read_page"]

MAX_EVALUATE_RESULT_CHARS = 8_000  # what the model reads of a script's value
JSON_TYPES = (str, int, float, bool, list, dict)


def _ref(description: str = REF_DESCRIPTION) -> Param:
    return Param("ref", str, description)


_opt = optional


async def read_page(
    tab: Tab, *, delta: bool = False, link_urls: bool = False, budget: Budget
) -> str:
    """The page as the model reads it: title, URL and the snapshot (or what changed);
    ``link_urls`` shows each link's URL on its line."""
    snap = await tab.snapshot(SnapshotOptions(delta=delta, link_urls=link_urls), budget=budget)
    return f"Page: {snap.title!r} {snap.url}\n{snap.text}"


async def _tabs(tab: Tab, args: dict[str, Any], budget: Budget) -> str:
    group = tab.group
    if group is None:
        raise ActionInvalid("this tab is not part of a run's tab group")
    await group.sync()
    op = args.get("op", "list")
    if op == "open":
        opened = await group.open(args.get("url", ""), budget=budget)
        return f"opened tab {group.tabs.index(opened)} at {opened.url}; it is now current"
    if op == "select":
        chosen = await group.select(args.get("index"))  # type: ignore[arg-type]
        return f"tab {group.tabs.index(chosen)} is current: {chosen.url}"
    if op == "close":
        current = await group.close_tab(args.get("index"))  # type: ignore[arg-type]
        return f"closed; tab {group.tabs.index(current)} is current: {current.url}"  # type: ignore[arg-type]
    if op != "list":
        raise ActionInvalid("tabs: op must be list, open, select or close")
    return "\n".join(
        f"{t['index']}: {t['url']}{' (current)' if t['current'] else ''}" for t in group.list()
    )


def _dialog_action(args: dict[str, Any]) -> str:
    return "accept" if args.get("accept", True) else "dismiss"


async def _dialog(tab: Tab, args: dict[str, Any], budget: Budget) -> str:
    action, kind = _dialog_action(args), args.get("kind")
    tab.dialogs.arm(action, prompt_text=args.get("prompt_text"), times=args.get("times", 1),
                    kind=kind)  # fmt: skip
    answer = f" with {args['prompt_text']!r}" if args.get("prompt_text") is not None else ""
    return f"armed: the next {kind or 'dialog'} will be {action}ed{answer}"


async def _page_log(tab: Tab, args: dict[str, Any], budget: Budget) -> str:
    kind = args.get("kind", "errors")
    limit = args.get("limit", 20)
    contains = args.get("contains")
    if kind == "console":
        rows = [
            f"{e.level}: {e.text} ({e.location})"
            for e in tab.log.console(level=args.get("level"), contains=contains, limit=limit)
        ]
    elif kind == "errors":
        rows = [e.message for e in tab.log.errors(limit=limit)]
    elif kind == "requests":
        rows = [
            f"#{e.number} {e.method} {e.url} -> {e.failure or e.status or 'pending'}"
            for e in tab.log.requests(
                failed_only=args.get("failed_only", False), url_contains=contains, limit=limit
            )
        ]
    else:
        raise ActionInvalid("page_log: kind must be console, errors or requests")
    return "\n".join(rows) if rows else f"no {kind} recorded"


async def _cookies(tab: Tab, args: dict[str, Any], budget: Budget) -> str:
    op = args.get("op", "get")
    if op == "clear":
        gone = await storage.cookies_clear(
            tab.context, name=args.get("name"), domain=args.get("domain"), budget=budget
        )
        return f"cleared {gone} cookies"
    if op != "get":
        raise ActionInvalid("cookies: op must be get or clear")
    found = await storage.cookies_get(tab.context, budget=budget)
    # Values can be session secrets: the model gets names and domains only.
    return "\n".join(f"{c['name']} ({c['domain']})" for c in found) or "no cookies"


async def _storage(tab: Tab, args: dict[str, Any], budget: Budget) -> str:
    kind, op = args.get("kind", "local"), args.get("op", "get")
    if op == "get":
        items = await storage.web_storage_get(tab.page, kind, args.get("key"), budget=budget)
        return "\n".join(f"{k} = {v[:200]}" for k, v in items.items()) or f"{kind} storage is empty"
    if op == "set":
        count = await storage.web_storage_set(
            tab.page, kind, args.get("items") or {}, budget=budget
        )
        return f"set {count} {kind} storage items"
    if op == "clear":
        count = await storage.web_storage_clear(tab.page, kind, budget=budget)
        return f"cleared {count} {kind} storage items"
    raise ActionInvalid("storage: op must be get, set or clear")


async def _downloads(tab: Tab, args: dict[str, Any], budget: Budget) -> str:
    if tab.downloads is None:
        raise ActionInvalid("downloads are off: this tab has no workspace folder")
    if args.get("wait"):
        after = tab.downloads.unanswered()
        records = [await tab.downloads.wait_next(budget=budget, after=after)]
    else:
        records = tab.downloads.records()
    rows = [
        f"{r.name}: {r.size_bytes} bytes" if not r.failure else f"{r.name}: failed ({r.failure})"
        for r in records
    ]
    return "\n".join(rows) or "no downloads yet"


async def _evaluate(tab: Tab, args: dict[str, Any], budget: Budget) -> str:
    value = await tab.evaluate(
        args["expression"], args.get("arg"), ref=args.get("ref", ""), budget=budget
    )
    text = json.dumps(value, ensure_ascii=False)
    if len(text) > MAX_EVALUATE_RESULT_CHARS:
        cut = len(text) - MAX_EVALUATE_RESULT_CHARS
        text = f"{text[:MAX_EVALUATE_RESULT_CHARS]}… ({cut} more characters; return less)"
    return text


BROWSER_ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec(
        "navigate",
        "open a URL (http or https) in the tab",
        (Param("url", str, "absolute URL"),),
        lambda tab, a, b: tab.navigate(a["url"], budget=b),
    ),
    ActionSpec("back", "go back in the tab's history", (), lambda t, a, b: t.back(budget=b)),
    ActionSpec(
        "forward", "go forward in the tab's history", (), lambda t, a, b: t.forward(budget=b)
    ),
    ActionSpec("reload", "reload the page", (), lambda t, a, b: t.reload(budget=b)),
    ActionSpec(
        "read_page",
        "the page as a snapshot with refs; delta=true: only what changed since the previous one",
        (
            _opt("delta", bool, "only the changes"),
            _opt("link_urls", bool, "each link's URL on its line (-> /path)"),
        ),
        lambda tab, a, b: read_page(
            tab, delta=a.get("delta", False), link_urls=a.get("link_urls", False), budget=b
        ),
        for_agent=False,
    ),
    ActionSpec(
        "click",
        "click an element",
        (
            _ref(),
            _opt("button", str, "left (default), right or middle"),
            _opt("modifiers", list, 'keys held while clicking, like ["Shift"]'),
        ),
        lambda tab, a, b: tab.click(
            a["ref"], button=a.get("button", "left"), modifiers=a.get("modifiers", ()), budget=b
        ),
        targets_ref=True,
    ),
    ActionSpec(
        "double_click",
        "double-click the element",
        (_ref(),),
        lambda tab, a, b: tab.click(a["ref"], double=True, budget=b),
        targets_ref=True,
    ),
    ActionSpec(
        "hover",
        "move the mouse over an element (menus, tooltips)",
        (_ref(),),
        lambda tab, a, b: tab.hover(a["ref"], budget=b),
        targets_ref=True,
    ),
    ActionSpec(
        "type",
        "replace a field's text key by key; submit: press Enter after",
        (
            _ref("ref of a textbox"),
            Param("text", str, "the text to enter"),
            _opt("submit", bool, "press Enter after typing"),
            _opt("delay_ms", int, "pause between keys, for fields that react to each key"),
        ),
        lambda tab, a, b: tab.type(
            a["ref"],
            a["text"],
            submit=a.get("submit", False),
            delay_ms=a.get("delay_ms", 0),
            budget=b,
        ),
        targets_ref=True,
        check=lambda a: check_key_delay(a.get("delay_ms", 0)),
    ),
    ActionSpec(
        "fill",
        "set a field's value at once",
        (
            _ref("ref of a textbox"),
            Param("value", str, "the new value"),
            _opt("submit", bool, "press Enter after"),
        ),
        lambda tab, a, b: tab.fill(a["ref"], a["value"], submit=a.get("submit", False), budget=b),
        targets_ref=True,
    ),
    ActionSpec(
        "fill_form",
        'fill several fields in one call, fields like [{"ref": "e5", "value": "Ada"}]: '
        "text for textboxes, true/false for checkboxes, an option label for selects",
        (Param("fields", list, '[{"ref": "e5", "value": "Ada"}, {"ref": "e7", "value": true}]'),),
        lambda tab, a, b: tab.fill_form(a["fields"], budget=b),
    ),
    ActionSpec(
        "select_option",
        "choose an option of a select by its label",
        (_ref("ref of a combobox or listbox"), Param("values", (str, list), "label(s)")),
        lambda tab, a, b: tab.select_option(a["ref"], a["values"], budget=b),
        targets_ref=True,
    ),
    ActionSpec(
        "check",
        "check (checked=false: uncheck) a checkbox or radio",
        (_ref(), _opt("checked", bool, "true (default) or false")),
        lambda tab, a, b: tab.set_checked(a["ref"], a.get("checked", True), budget=b),
        targets_ref=True,
    ),
    ActionSpec(
        "press",
        "press a key (Enter, Tab, Escape, Control+A) on the focused element or a ref",
        (Param("key", str, "key name"), _opt("ref", str, "element to press it on")),
        lambda tab, a, b: tab.press_key(a["key"], ref=a.get("ref", ""), budget=b),
    ),
    ActionSpec(
        "drag",
        "drag one element onto another",
        (Param("source", str, "ref to drag"), Param("target", str, "ref to drop on")),
        lambda tab, a, b: tab.drag(a["source"], a["target"], budget=b),
    ),
    ActionSpec(
        "scroll",
        "bring an element into view, or scroll the page by dx/dy px",
        (
            _opt("ref", str, "element to bring into view"),
            _opt("dx", int, "px"),
            _opt("dy", int, "px"),
        ),
        lambda tab, a, b: tab.scroll(
            ref=a.get("ref", ""), dx=a.get("dx", 0), dy=a.get("dy", 0), budget=b
        ),
    ),
    ActionSpec(
        "highlight",
        "outline an element for the person watching",
        (_ref(),),
        lambda tab, a, b: tab.highlight(a["ref"], budget=b),
    ),
    ActionSpec(
        "upload",
        "attach files of the upload folder to a file input",
        (
            _ref("ref of the file input"),
            Param("files", list, "file names in the upload folder"),
        ),
        lambda tab, a, b: tab.set_input_files(a["ref"], a["files"], budget=b),
        targets_ref=True,
    ),
    ActionSpec(
        "wait_for",
        "wait for one: text to appear, text_gone to vanish, ref to reach state "
        "(visible|hidden|enabled|disabled), url to be reached, load_state, time_ms to pass",
        (
            _opt("text", str, "text to wait for"),
            _opt("text_gone", str, "text to wait to vanish"),
            _opt("ref", str, "element to watch"),
            _opt("state", str, "for ref: visible, hidden, enabled, disabled"),
            _opt("url", str, "address, its path's whole segments or ?field=value"),
            _opt("load_state", str, "load, domcontentloaded or networkidle"),
            _opt("time_ms", int, "milliseconds to wait"),
        ),
        lambda tab, a, b: tab.wait_for(budget=b, **a),
        # a wait of a minute at most, checked as the args are read (a file's at import)
        check=lambda a: check_wait_ms(a["time_ms"]) if a.get("time_ms") else None,
    ),
    ActionSpec(
        "resize",
        "set the viewport size",
        (Param("width", int, "px"), Param("height", int, "px")),
        lambda tab, a, b: tab.resize(a["width"], a["height"], budget=b),
    ),
    ActionSpec(
        "dialog",
        "before the action that opens a dialog (alert, confirm, prompt): how to answer "
        "it; an unarmed one is dismissed as an error",
        (
            _opt("accept", bool, "true (default) to accept, false to dismiss"),
            _opt("prompt_text", str, "the answer to type into a prompt"),
            _opt("times", int, "how many dialogs to answer this way (default 1)"),
            _opt(
                "kind",
                str,
                "answer only a dialog of this kind: alert, confirm, prompt or "
                "beforeunload (default: any); one of another kind is unexpected",
            ),
        ),
        _dialog,
        check=lambda a: check_arming(
            _dialog_action(a), a.get("prompt_text"), a.get("times", 1), a.get("kind")
        ),
    ),
    ActionSpec(
        "page_log",
        "what the page logged: kind console|errors|requests",
        (
            _opt("kind", str, "console, errors (default) or requests"),
            _opt("level", str, "console level: error, warning, info, log, debug"),
            _opt("contains", str, "only entries containing this text (or URL part)"),
            _opt("failed_only", bool, "requests: only failed ones"),
            _opt("limit", int, "at most this many, newest last (default 20)"),
        ),
        _page_log,
    ),
    ActionSpec(
        "cookies",
        "op get: cookie names; op clear",
        (
            _opt("op", str, "get (default) or clear"),
            _opt("name", str, "clear: only this cookie"),
            _opt("domain", str, "clear: only this domain"),
        ),
        _cookies,
    ),
    ActionSpec(
        "storage",
        "get, set or clear localStorage (kind local) or sessionStorage",
        (
            _opt("kind", str, "local (default) or session"),
            _opt("op", str, "get (default), set or clear"),
            _opt("key", str, "get: one key only"),
            _opt("items", dict, 'set: {"key": "value"}'),
        ),
        _storage,
    ),
    ActionSpec(
        "downloads",
        "files downloaded into the workspace, or wait for one",
        (
            _opt(
                "wait",
                bool,
                "wait for the download the action before started (or the next) to finish",
            ),
        ),
        _downloads,
    ),
    ActionSpec(
        "tabs",
        "op list|open (url)|select (index)|close (index) the run's tabs",
        (
            _opt("op", str, "list (default), open, select or close"),
            _opt("url", str, "for open"),
            _opt("index", int, "for select and close"),
        ),
        _tabs,
    ),
)

# Off unless the operator turns it on; listed after the macro (automation.browser.macro), where
# the model has always read it.
EVALUATE_ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec(
        "evaluate",
        "run JavaScript in the page and get its value as JSON: an expression, or a "
        "function called with arg; with a ref, a function of that element, like "
        "el => el.value",
        (
            Param("expression", str, "the script"),
            _opt("ref", str, "element to pass to the function"),
            _opt("arg", JSON_TYPES, "JSON data passed to the function"),
        ),
        _evaluate,
        switch="evaluate_enabled",
    ),
)
