"""Cookies, localStorage/sessionStorage and saved sessions of a browser context.

Business apps keep their login in cookies and localStorage.  Saving that state after one run
(:func:`storage_state_save`) and applying it to the context of a later run
(:func:`storage_state_load`) lets the later run start logged in instead of replaying a login
with its captchas and one-time codes.

Two ways to reuse a saved state:

* at creation time, ``await browser.new_context(storage_state=path)``: Playwright fills
  cookies and localStorage before any page exists; the simplest way when you create the
  context yourself;
* on a context that already exists (a run's tab is created before anyone chose a state):
  :func:`storage_state_load` adds the cookies and installs an init script that fills each
  origin's localStorage the first time a page of that origin loads in the context.  Pages
  already open see the new localStorage after their next navigation.

Saved states hold session secrets: the file is written with owner-only permissions.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from playwright.async_api import BrowserContext, Page

from automation.browser.pwcall import call
from automation.budget import Budget
from automation.errors import ActionFailed, ActionInvalid, BrowserClosed

__all__ = [
    "STATE_MARKER_KEY",
    "StorageKind",
    "cookies_clear",
    "cookies_get",
    "cookies_set",
    "storage_state_checked",
    "storage_state_load",
    "storage_state_read",
    "storage_state_save",
    "web_storage_clear",
    "web_storage_get",
    "web_storage_set",
]

StorageKind = Literal["local", "session"]

# The init script of storage_state_load lists its load id under this localStorage key once
# it filled an origin, so a later navigation does not put back what the app changed since
# (a logout that removed the token must stay a logout).  One list for every load, so two
# loads into one context do not undo each other's mark and refill on every navigation.
STATE_MARKER_KEY = "tabwright.storage_state"

_COOKIE_KEYS = frozenset(
    "name value url domain path expires httpOnly secure sameSite partitionKey".split()
)
_SAME_SITE = ("Strict", "Lax", "None")
_MAX_STATE_BYTES = 20_000_000


# -- cookies ---------------------------------------------------------------------------


async def cookies_get(
    context: BrowserContext, *, urls: str | list[str] | None = None, budget: Budget
) -> list[dict[str, Any]]:
    """The context's cookies, or only those that would be sent to ``urls``."""
    if urls is not None:
        listed = [urls] if isinstance(urls, str) else urls
        if not isinstance(listed, list) or not all(
            isinstance(url, str) and url.startswith(("http://", "https://")) for url in listed
        ):
            raise ActionInvalid("urls must be an http(s) URL or a list of them")
        urls = listed
    cookies = await call("read cookies", budget, context.cookies(urls))
    return [dict(cookie) for cookie in cookies]


async def cookies_set(
    context: BrowserContext, cookies: list[dict[str, Any]], *, budget: Budget
) -> int:
    """Add (or overwrite) cookies; returns how many were set."""
    if not isinstance(cookies, list) or not cookies:
        raise ActionInvalid("cookies must be a non-empty list of cookie objects")
    checked = [_check_cookie(cookie, f"cookie #{n}") for n, cookie in enumerate(cookies)]
    await call("set cookies", budget, context.add_cookies(checked))  # type: ignore[arg-type]
    return len(checked)


async def cookies_clear(
    context: BrowserContext,
    *,
    name: str | None = None,
    domain: str | None = None,
    budget: Budget,
) -> int:
    """Remove cookies (all, or those matching ``name`` and/or ``domain``); returns how many."""
    for label, value in (("name", name), ("domain", domain)):
        if value is not None and (not isinstance(value, str) or not value):
            raise ActionInvalid(f"{label} must be a non-empty text")
    before = await call("read cookies", budget, context.cookies())
    await call("clear cookies", budget, context.clear_cookies(name=name, domain=domain))
    after = await call("read cookies", budget, context.cookies())
    return len(before) - len(after)


def _check_cookie(cookie: object, where: str) -> dict[str, Any]:
    if not isinstance(cookie, Mapping):
        raise ActionInvalid(f"{where} must be an object with name, value and url or domain+path")
    unknown = sorted(set(cookie) - _COOKIE_KEYS)
    if unknown:
        raise ActionInvalid(
            f"{where} has unknown fields {unknown}",
            hint="known: " + ", ".join(sorted(_COOKIE_KEYS)),
        )
    for key in ("name", "value"):
        if not isinstance(cookie.get(key), str):
            raise ActionInvalid(f"{where} needs {key} as a text")
    if not cookie["name"]:
        raise ActionInvalid(f"{where} has an empty name")
    has_url = cookie.get("url") is not None
    has_place = cookie.get("domain") is not None or cookie.get("path") is not None
    if has_url == has_place:
        raise ActionInvalid(
            f"{where} ({cookie['name']}) needs either url, or domain and path",
            hint='like {"url": "https://shop.example"} or {"domain": ".shop.example", "path": "/"}',
        )
    if has_url and not str(cookie["url"]).startswith(("http://", "https://")):
        raise ActionInvalid(f"{where} url must start with http:// or https://")
    if has_place and not (
        isinstance(cookie.get("domain"), str)
        and cookie["domain"]
        and isinstance(cookie.get("path"), str)
        and cookie["path"].startswith("/")
    ):
        raise ActionInvalid(f"{where} needs both domain and a path starting with /")
    expires = cookie.get("expires")
    if expires is not None and (isinstance(expires, bool) or not isinstance(expires, int | float)):
        raise ActionInvalid(f"{where} expires must be a Unix time in seconds (-1: session)")
    for flag in ("httpOnly", "secure"):
        if flag in cookie and not isinstance(cookie[flag], bool):
            raise ActionInvalid(f"{where} {flag} must be true or false")
    if cookie.get("sameSite") is not None and cookie["sameSite"] not in _SAME_SITE:
        raise ActionInvalid(f"{where} sameSite must be one of {', '.join(_SAME_SITE)}")
    return {key: value for key, value in cookie.items() if value is not None}


# -- localStorage / sessionStorage -----------------------------------------------------

# One round trip that also checks the origin: about:blank, data: URLs and sandboxed frames
# have an opaque origin whose storage throws or belongs to nobody.
_WEB_STORAGE_JS = """({kind, op, key, items}) => {
  if (location.origin === "null") return {error: "opaque", url: location.href};
  let store;
  try { store = kind === "local" ? window.localStorage : window.sessionStorage; }
  catch (e) { return {error: String(e && e.message || e), url: location.href}; }
  const all = () => Object.fromEntries(Array.from({length: store.length}, (_, i) => {
    const k = store.key(i); return [k, store.getItem(k)];
  }));
  if (op === "get") {
    if (key === null) return {items: all()};
    const value = store.getItem(key);
    return {items: value === null ? {} : {[key]: value}};
  }
  if (op === "set") {
    for (const [k, v] of Object.entries(items)) store.setItem(k, v);
    return {count: Object.keys(items).length};
  }
  const count = store.length;
  store.clear();
  return {count};
}"""


async def _web_storage(
    page: Page, kind: str, op: str, *, budget: Budget, key: str | None = None, items: Any = None
) -> dict[str, Any]:
    if kind not in ("local", "session"):
        raise ActionInvalid(f"unknown storage kind {kind!r}", hint="use 'local' or 'session'")
    if page.is_closed():
        raise BrowserClosed("the tab is closed")
    what = f"{op} {kind}Storage"
    result = await call(
        what,
        budget,
        page.evaluate(_WEB_STORAGE_JS, {"kind": kind, "op": op, "key": key, "items": items}),
    )
    if result.get("error") == "opaque":
        raise ActionFailed(
            f"{what}: the page {result['url']!r} has no origin of its own",
            hint="navigate to the site first; about:blank and data: pages have no storage",
        )
    if "error" in result:
        raise ActionFailed(f"{what}: the page refused storage access: {result['error']}")
    return result


async def web_storage_get(
    page: Page, kind: StorageKind, key: str | None = None, *, budget: Budget
) -> dict[str, str]:
    """The page origin's storage items (or only ``key``, absent from the result if unset)."""
    if key is not None and (not isinstance(key, str) or not key):
        raise ActionInvalid("key must be a non-empty text")
    result = await _web_storage(page, kind, "get", key=key, budget=budget)
    return dict(result["items"])


async def web_storage_set(
    page: Page, kind: StorageKind, items: dict[str, str], *, budget: Budget
) -> int:
    """Set items in the page origin's storage; returns how many."""
    if (
        not isinstance(items, Mapping)
        or not items
        or not all(isinstance(k, str) and k and isinstance(v, str) for k, v in items.items())
    ):
        raise ActionInvalid("items must be a non-empty object of text keys to text values")
    result = await _web_storage(page, kind, "set", items=dict(items), budget=budget)
    return int(result["count"])


async def web_storage_clear(page: Page, kind: StorageKind, *, budget: Budget) -> int:
    """Empty the page origin's storage; returns how many items were removed."""
    result = await _web_storage(page, kind, "clear", budget=budget)
    return int(result["count"])


# -- saved sessions --------------------------------------------------------------------


async def storage_state_save(
    context: BrowserContext, path: Path, *, budget: Budget
) -> dict[str, Any]:
    """Write the context's cookies and localStorage to ``path`` (JSON, atomically)."""
    path = _check_path(path)
    state = await call("read the storage state", budget, context.storage_state())
    data = json.dumps(state, indent=2, ensure_ascii=False)
    try:
        await budget.run(asyncio.to_thread(_write_atomically, path, data))
    except OSError as exc:
        raise ActionFailed(f"could not write the storage state to {path}: {exc}") from None
    return _counts(dict(state), path)


async def storage_state_read(context: BrowserContext, *, budget: Budget) -> dict[str, Any]:
    """The context's cookies and each origin's localStorage, as Playwright's
    ``storage_state`` gives them (for a caller that keeps them elsewhere than a file)."""
    return dict(await call("read the storage state", budget, context.storage_state()))


def storage_state_checked(state: Any, *, where: str = "the storage state") -> dict[str, Any]:
    """``state`` as a context may be created with (``new_context(storage_state=…)``), or
    ActionInvalid naming the flaw."""
    cookies, origins = _check_state(state, where)
    return {
        "cookies": cookies,
        "origins": [{"origin": o, "localStorage": items} for o, items in origins.items()],
    }


async def storage_state_load(
    context: BrowserContext, path_or_dict: Path | str | dict[str, Any], *, budget: Budget
) -> dict[str, Any]:
    """Apply a saved state to an existing context: cookies now, localStorage on page load."""
    if isinstance(path_or_dict, dict):
        state, where = path_or_dict, "the storage state"
        path = None
    else:
        path = _check_path(path_or_dict)
        where = str(path)
        state = await budget.run(asyncio.to_thread(_read_state, path))
    cookies, origins = _check_state(state, where)
    if cookies:
        await call("add saved cookies", budget, context.add_cookies(cookies))  # type: ignore[arg-type]
    if origins:
        fill = {
            origin: [[i["name"], i["value"]] for i in items] for origin, items in origins.items()
        }
        script = _FILL_JS % (
            json.dumps(fill),
            json.dumps(STATE_MARKER_KEY),
            json.dumps(secrets.token_hex(8)),
        )
        await call("install the localStorage filler", budget, context.add_init_script(script))
    return _counts(
        {"cookies": cookies, "origins": [{"localStorage": v} for v in origins.values()]}, path
    )


_FILL_JS = """(() => {
  const fill = %s, marker = %s, loadId = %s;
  const items = fill[location.origin];
  if (!items) return;
  try {
    let done = [];
    try { done = JSON.parse(localStorage.getItem(marker) || "[]"); } catch (e) {}
    if (!Array.isArray(done)) done = [];
    if (done.includes(loadId)) return;
    for (const [name, value] of items) localStorage.setItem(name, value);
    localStorage.setItem(marker, JSON.stringify([...done, loadId]));
  } catch (e) { /* a sandboxed frame has no storage: nothing to fill */ }
})();"""


def _check_path(path: object) -> Path:
    if isinstance(path, str) and path.strip():
        path = Path(path)
    if not isinstance(path, Path):
        raise ActionInvalid(f"a storage state path must be a file path, not {path!r}")
    return path


def _read_state(path: Path) -> Any:
    try:
        if path.stat().st_size > _MAX_STATE_BYTES:
            raise ActionInvalid(f"{path} is too large to be a storage state")
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ActionInvalid(f"no storage state file at {path}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ActionInvalid(f"{path} is not a JSON storage state: {exc}") from None
    except OSError as exc:
        raise ActionInvalid(f"cannot read the storage state {path}: {exc}") from None


def _check_state(
    state: Any, where: str
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, str]]]]:
    """The cookies and per-origin localStorage of a state, or ActionInvalid naming the flaw."""
    shape = 'like {"cookies": [...], "origins": [{"origin": ..., "localStorage": [...]}]}'
    if not isinstance(state, dict) or not ({"cookies", "origins"} & state.keys()):
        raise ActionInvalid(f"{where} is not a storage state", hint=shape)
    raw_cookies, raw_origins = state.get("cookies", []), state.get("origins", [])
    if not isinstance(raw_cookies, list) or not isinstance(raw_origins, list):
        raise ActionInvalid(f"{where}: cookies and origins must be lists", hint=shape)
    try:
        cookies = [_check_cookie(c, f"cookie #{n}") for n, c in enumerate(raw_cookies)]
    except ActionInvalid as exc:
        raise ActionInvalid(f"{where}: {exc.message}", hint=exc.hint) from None
    origins: dict[str, list[dict[str, str]]] = {}
    for n, entry in enumerate(raw_origins):
        origin = entry.get("origin") if isinstance(entry, dict) else None
        items = entry.get("localStorage", []) if isinstance(entry, dict) else None
        if not isinstance(origin, str) or not origin.startswith(("http://", "https://")):
            raise ActionInvalid(f"{where}: origin #{n} needs an http(s) origin", hint=shape)
        if not isinstance(items, list) or not all(
            isinstance(i, dict)
            and isinstance(i.get("name"), str)
            and isinstance(i.get("value"), str)
            for i in items
        ):
            raise ActionInvalid(
                f"{where}: localStorage of {origin} must be a list of {{name, value}} texts"
            )
        if items:
            origins.setdefault(origin.rstrip("/"), []).extend(items)
    return cookies, origins


def _write_atomically(path: Path, data: str) -> None:
    """Write to a temporary file beside ``path``, then rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _counts(state: dict[str, Any], path: Path | None) -> dict[str, Any]:
    origins = state.get("origins") or []
    return {
        "path": str(path) if path is not None else None,
        "cookies": len(state.get("cookies") or []),
        "origins": len(origins),
        "local_storage_items": sum(len(o.get("localStorage") or []) for o in origins),
    }
