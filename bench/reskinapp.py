"""The reskin corpus's back office: one app (fixtures/reskin/designs.json) in many designs.

Every design keeps the routes and the data, under its own folder ``/<design>/``:

- ``login`` (GET the form, POST ``username`` + ``password``: a session cookie);
- ``""`` the start page (models: Groups, Users, Customers, with their lists and Add pages);
- ``customers?q=…&tier=…`` the list, searched and filtered;
- ``customers/new`` and ``customers/<id>/edit`` the form (name, tier select, active
  checkbox, customer-since date, notes textarea), POSTed to ``customers/save``;
- ``groups``, ``groups/new``, ``users``, ``users/new``: pages that lead elsewhere.

What changes between designs is markup and navigation: menu groups that start collapsed,
icon-only buttons, an iframe-tabbed shell, searchable dropdowns over hidden selects, boxes
styled over by their label, login fields without labels, the same link in a sidebar and a
header, cards instead of tables, and apps that draw their page after ``load`` (a late
script loader, a deferred mount, lazily loaded client-side routes).

The data lives in memory (:class:`Store`): the bench judges a replay by it, never by the
replay's own verdict.  ``/static/`` serves fixtures/reskin/.
"""

from __future__ import annotations

import copy
import html
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from bench.common import FIXTURES

__all__ = ["DESIGNS", "PASSWORD", "USERNAME", "Store", "load_designs", "serve_backoffice"]

FOLDER = FIXTURES / "reskin"
DESIGNS = FOLDER / "designs.json"
USERNAME = "admin"
PASSWORD = "correct horse"
TIERS = (("bronze", "Bronze"), ("silver", "Silver"), ("gold", "Gold"), ("platinum", "Platinum"))
SEED = (
    {"name": "Ada Lovelace", "tier": "silver", "active": False, "since": "2023-05-02",
     "notes": "Asked for a quote"},
    {"name": "Lovelace Ltd", "tier": "bronze", "active": True, "since": "2022-01-10",
     "notes": ""},
    {"name": "Alan Turing", "tier": "gold", "active": True, "since": "2021-11-30",
     "notes": "Renews in June"},
    {"name": "Edsger Dijkstra", "tier": "silver", "active": True, "since": "2020-07-14",
     "notes": ""},
)  # fmt: skip
_ICON = '<svg viewBox="0 0 16 16" aria-hidden="true"><path d="{}" stroke="#333" fill="none"/></svg>'
ICONS = {"add": "M8 2v12M2 8h12", "edit": "M2 14l3-1 8-8-2-2-8 8z", "save": "M2 2h10l2 2v10H2z"}


def load_designs(path: Path = DESIGNS) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text(encoding="utf-8"))["designs"])


@dataclass
class Store:
    """The back office's data: customers by id, and every save in order."""

    customers: dict[int, dict[str, Any]] = field(default_factory=dict)
    saves: list[dict[str, Any]] = field(default_factory=list)
    logins: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.customers = {i + 1: dict(c) for i, c in enumerate(SEED)}
            self.saves = []
            self.logins = 0

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {"customers": copy.deepcopy(self.customers), "saves": list(self.saves),
                    "logins": self.logins}  # fmt: skip

    def save(self, form: dict[str, str]) -> None:
        with self.lock:
            record = {
                "name": form.get("name", "").strip(),
                "tier": form.get("tier", ""),
                "active": form.get("active") == "on",
                "since": form.get("since", ""),
                "notes": form.get("notes", "").strip(),
            }
            self.saves.append(record)
            key = form.get("id", "")
            if key.isdigit() and int(key) in self.customers:
                self.customers[int(key)] = record
            else:
                self.customers[max(self.customers, default=0) + 1] = record


# -- markup ------------------------------------------------------------------------------


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


class _Page:
    """The markup of one design's pages; ``root`` is ``/<design>/``."""

    def __init__(self, design: dict[str, Any], store: Store) -> None:
        self.d = design
        self.root = f"/{design['id']}/"
        self.store = store

    def href(self, route: str) -> str:
        return self.root + route

    def icon_link(self, route: str, words: str, icon: str, *, primary: bool = False) -> str:
        if self.d.get("icons"):
            return f'<a class="icon" href="{self.href(route)}" title="{_e(words)}">{_ICON.format(ICONS[icon])}</a>'  # noqa: E501
        text = words if primary else words.split(" ")[0]
        return f'<a href="{self.href(route)}">{_e(text)}</a>'

    # -- navigation

    def nav(self) -> str:
        kind = self.d["nav"]
        links = [("", "Home"), ("customers", "Customers"), ("groups", "Groups"), ("users", "Users")]
        if kind == "header":
            items = " ".join(f'<a href="{self.href(r)}">{w}</a>' for r, w in links)
            return f'<header class="top"><strong>Back office</strong><nav>{items}</nav></header>'
        if kind == "twin":
            top = " ".join(f'<a href="{self.href(r)}">{w}</a>' for r, w in links[:2])
            side = "".join(f'<a href="{self.href(r)}">{w}</a>' for r, w in links)
            return (
                f'<header class="top"><strong>Office</strong><nav>{top}</nav></header>'
                f'<aside class="side"><nav aria-label="Sidebar">{side}</nav></aside>'
            )
        if kind == "menus":
            return (
                '<aside class="side"><nav aria-label="Main menu">'
                f'<a href="{self.href("")}">Dashboard</a>'
                '<details class="group"><summary>Sales</summary>'
                f'<a href="{self.href("customers")}">Customers</a></details>'
                '<details class="group"><summary>Authentication</summary>'
                f'<a href="{self.href("groups")}">Groups</a>'
                f'<a href="{self.href("users")}">Users</a></details></nav></aside>'
            )
        if kind == "tabs":
            items = "".join(
                f'<a href="{self.href(r)}?frame=1" target="content">{w}</a>' for r, w in links
            )
            return f'<nav class="tabs-menu" aria-label="Menu">{items}</nav>'
        raise ValueError(kind)

    def page(self, title: str, body: str, *, chrome: bool = True, framed: bool = False) -> str:
        head = (
            f'<!doctype html><html><head><meta charset="utf-8"><title>{_e(title)}</title>'
            '<link rel="stylesheet" href="/static/style.css">'
        )
        if self.d.get("widgets"):
            head += '<script src="/static/widget.js"></script>'
        mount = self.d.get("mount", "")
        content = f"<main><h1>{_e(title)}</h1>{body}</main>"
        if mount == "lazy":  # the route's view comes later (lazy.js), into the chrome
            content = '<main id="app"></main>'
        if chrome and not framed:
            nav = self.nav()
            content = (f'<div class="layout">{nav}{content}</div>'
                       if self.d["nav"] in ("menus", "twin", "tabs")
                       else nav + content)  # fmt: skip
        footer = '<footer><a href="/help">Help</a> · <a href="/privacy">Privacy</a></footer>'
        if mount == "loader":
            return (
                f'{head}</head><body><div id="app"></div>{footer}'
                f'<template id="view">{content}</template>'
                "<script>addEventListener('load', () => setTimeout(() => {"
                "const s = document.createElement('script'); s.src = '/static/mount.js';"
                "document.body.append(s); }, 1000));</script></body></html>"
            )
        if mount == "deferred":
            state = json.dumps(content).replace("</", "<\\/")
            return (
                f'{head}</head><body><div id="app"></div>{footer}'
                f'<script type="application/json" id="state">{state}</script>'
                "<script>addEventListener('load', () => requestAnimationFrame(() =>"
                " setTimeout(() => { document.getElementById('app').innerHTML ="
                " JSON.parse(document.getElementById('state').textContent);"
                " if (window.reskinWidgets) window.reskinWidgets(); }, 1000)));</script>"
                "</body></html>"
            )
        if mount == "lazy":
            return (
                f"{head}</head><body>{content}{footer}"
                '<script src="/static/lazy.js"></script></body></html>'
            )
        return f"{head}</head><body>{content}{footer}</body></html>"

    # -- pages

    def login(self, failed: bool) -> str:
        error = '<p role="alert">Wrong username or password.</p>' if failed else ""
        if self.d["login"] == "labels":
            fields = (
                '<p><label for="u">Username</label> <input id="u" name="username"></p>'
                '<p><label for="p">Password</label> <input id="p" type="password" name="password"></p>'  # noqa: E501
                "<button>Log in</button>"
            )
        else:
            fields = (
                '<p><input name="username" placeholder="Username"></p>'
                '<p><input type="password" name="password" placeholder="Password"></p>'
                '<button type="submit">Sign in</button>'
            )
        return f'{error}<form method="post" action="{self.href("login")}">{fields}</form>'

    def home(self) -> str:
        models = [("groups", "Groups"), ("users", "Users"), ("customers", "Customers")]
        if self.d.get("reorder"):
            models.reverse()
        kind = self.d["home"]
        if kind == "none":
            body = "<p>Welcome back. Pick a page from the menu.</p>"
        elif kind == "cards":
            cards = "".join(
                f'<div class="card"><h3>{w}</h3><a href="{self.href(r)}">View</a> '
                f"{self.icon_link(r + '/new', 'Add ' + w.lower()[:-1], 'add')}</div>"
                for r, w in models
            )
            body = f'<div class="cards">{cards}</div>'
        else:
            rows = "".join(
                f'<tr><td><a href="{self.href(r)}">{w}</a></td>'
                f'<td><a href="{self.href(r + "/new")}">'
                f"{'Add new' if self.d.get('renamed') else 'Add'}</a></td></tr>"
                for r, w in models
            )
            body = f"<table><tr><th>Model</th><th>Actions</th></tr>{rows}</table>"
        return body

    def listing(self, query: dict[str, str]) -> str:
        q, tier = query.get("q", ""), query.get("tier", "")
        with self.store.lock:
            rows = [(i, dict(c)) for i, c in self.store.customers.items()]
        shown = [
            (i, c) for i, c in rows
            if q.lower() in c["name"].lower() and (not tier or c["tier"] == tier)
        ]  # fmt: skip
        widget = ' class="widget"' if self.d.get("widgets") else ""
        options = '<option value="">All tiers</option>' + "".join(
            f'<option value="{v}"{" selected" if v == tier else ""}>{w}</option>' for v, w in TIERS
        )
        search_words = "Find" if self.d.get("renamed") else "Search"
        search = (
            f'<form method="get" action="{self.href("customers")}" role="search">'
            f'<input type="search" name="q" value="{_e(q)}" placeholder="Search customers"> '
            f'<label for="tier-filter">Tier</label> <select id="tier-filter" name="tier"{widget}'
            ' onchange="this.form.submit()">'
            f"{options}</select> <button>{search_words}</button></form>"
        )
        add = self.icon_link("customers/new", "Add customer", "add", primary=True)
        tiers = dict(TIERS)
        if self.d["list"] == "cards":
            items = "".join(
                f'<div class="card"><h3>{_e(c["name"])}</h3><p>{tiers[c["tier"]]}</p>'
                f"{self.icon_link(f'customers/{i}/edit', 'Edit', 'edit')}</div>"
                for i, c in shown
            )
            found = f'<div class="cards">{items}</div>'
        else:
            items = "".join(
                f"<tr><td>{_e(c['name'])}</td><td>{tiers.get(c['tier'], '')}</td>"
                f"<td>{'Yes' if c['active'] else 'No'}</td>"
                f"<td>{self.icon_link(f'customers/{i}/edit', 'Edit', 'edit')}</td></tr>"
                for i, c in shown
            )
            found = (
                f"<table><tr><th>Name</th><th>Tier</th><th>Active</th><th></th></tr>{items}</table>"
            )
        return f"<p>{add}</p>{search}{found}"

    def form(self, key: int | None, framed: bool) -> str:
        with self.store.lock:
            c = dict(self.store.customers.get(key or 0) or {})
        widget = ' class="widget"' if self.d.get("widgets") else ""
        options = "".join(
            f'<option value="{v}"{" selected" if v == c.get("tier") else ""}>{w}</option>'
            for v, w in TIERS
        )
        checked = " checked" if c.get("active") else ""
        if self.d.get("styled"):
            box = (
                f'<label class="styled"><input type="checkbox" name="active"{checked}>'
                '<span class="box"></span> Active</label>'
            )
        else:
            box = f'<label><input type="checkbox" name="active"{checked}> Active</label>'
        if self.d.get("icons"):
            save = f'<button type="submit" class="icon" aria-label="Save">{_ICON.format(ICONS["save"])}</button>'  # noqa: E501
        else:
            save = f"<button>{'Save changes' if self.d.get('renamed') else 'Save'}</button>"
        action = self.href("customers/save") + ("?frame=1" if framed else "")
        return (
            f'<form class="edit" method="post" action="{action}">'
            f'<input type="hidden" name="id" value="{key or ""}">'
            f'<p><label for="f-name">Name</label> <input id="f-name" name="name" value="{_e(c.get("name", ""))}"></p>'  # noqa: E501
            f'<p><label for="f-tier">Tier</label> <select id="f-tier" name="tier"{widget}>{options}</select></p>'  # noqa: E501
            f"<p>{box}</p>"
            f'<p><label for="f-since">Customer since</label> <input id="f-since" type="date" name="since" value="{_e(c.get("since", ""))}"></p>'  # noqa: E501
            f'<p><label for="f-notes">Notes</label> <textarea id="f-notes" name="notes">{_e(c.get("notes", ""))}</textarea></p>'  # noqa: E501
            f"<p>{save}</p></form>"
        )

    def simple(self, what: str, adding: bool) -> str:
        if adding:
            return (
                f'<form class="edit" method="post" action="{self.href(what + "/new")}">'
                f'<p><label for="g-name">Name</label> <input id="g-name" name="name"></p>'
                "<p><button>Save</button></p></form>"
            )
        return f"<p>No {what} to show.</p>"


# -- the server --------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    designs: dict[str, dict[str, Any]] = {}
    store: Store

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: str = "", kind: str = "text/html", **headers: str) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(data)

    def _route(self) -> tuple[_Page | None, str, dict[str, str]]:
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        first, _, rest = parts.path.lstrip("/").partition("/")
        design = self.designs.get(first)
        return (_Page(design, self.store) if design else None), rest, query

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path.startswith("/static/"):
            file = FOLDER / path.removeprefix("/static/")
            if file.parent != FOLDER or not file.is_file():
                self._send(404, "not found", "text/plain")
                return
            kind = {".js": "text/javascript", ".css": "text/css"}.get(file.suffix, "text/plain")
            self._send(200, file.read_text(encoding="utf-8"), kind)
            return
        page, rest, query = self._route()
        if page is None:
            self._send(404, "<p>not found</p>")
            return
        fragment = bool(self.headers.get("X-Fragment")) and page.d.get("mount") == "lazy"
        if rest == "login":
            body = page.login("failed" in query)
            if fragment:
                self._send(200, f"<h1>Log in</h1>{body}")
            else:
                self._send(200, page.page("Log in", body, chrome=False))
            return
        if "session=ok" not in self.headers.get("Cookie", ""):
            self._send(303, Location=page.href("login"))
            return
        framed = query.get("frame") == "1"
        title, body = self._view(page, rest, query, framed)
        if body is None:
            self._send(404, "<p>not found</p>")
            return
        if page.d["nav"] == "tabs" and not framed:
            # The shell: the route opens as the shell's tab, in its frame.
            src = (
                page.href(rest)
                + "?"
                + "&".join(f"{k}={v}" for k, v in {**query, "frame": "1"}.items())
            )
            body = (
                f'<iframe class="tab" name="content" title="{_e(title)}" src="{_e(src)}"></iframe>'
            )
        elif fragment:
            self._send(200, f"<h1>{_e(title)}</h1>{body}")
            return
        self._send(200, page.page(title, body, framed=framed))

    def _view(
        self, page: _Page, rest: str, query: dict[str, str], framed: bool
    ) -> tuple[str, str | None]:
        if rest == "":
            return "Site administration", page.home()
        if rest == "customers":
            return "Customers", page.listing(query)
        if rest == "customers/new":
            return "Add customer", page.form(None, framed)
        bits = rest.split("/")
        if len(bits) == 3 and bits[0] == "customers" and bits[1].isdigit() and bits[2] == "edit":
            return "Change customer", page.form(int(bits[1]), framed)
        for what in ("groups", "users"):
            if rest in (what, what + "/new"):
                adding = rest.endswith("/new")
                return ("Add " if adding else "") + what.capitalize(), page.simple(what, adding)
        return "", None

    def do_POST(self) -> None:
        page, rest, query = self._route()
        length = int(self.headers.get("Content-Length") or 0)
        form = {k: v[-1] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
        if page is None:
            self._send(404, "<p>not found</p>")
            return
        if rest == "login":
            if form.get("username") == USERNAME and form.get("password") == PASSWORD:
                with self.store.lock:
                    self.store.logins += 1
                self._send(303, Location=page.href(""), Set_Cookie="session=ok; Path=/")
            else:
                self._send(303, Location=page.href("login") + "?failed=1")
            return
        if "session=ok" not in self.headers.get("Cookie", ""):
            self._send(403, "<p>log in first</p>")
            return
        if rest == "customers/save":
            self.store.save(form)
            back = page.href("customers") + ("?frame=1" if query.get("frame") == "1" else "")
            self._send(303, Location=back)
            return
        if rest in ("groups/new", "users/new"):
            self._send(303, Location=page.href(rest.split("/")[0]))
            return
        self._send(404, "<p>not found</p>")


@contextmanager
def serve_backoffice(store: Store | None = None) -> Iterator[tuple[str, Store]]:
    """The back office in every design on 127.0.0.1: (its origin, its store)."""
    store = store or Store()
    designs = {d["id"]: d for d in load_designs()}
    handler = type("Handler", (_Handler,), {"designs": designs, "store": store})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", store
    finally:
        server.shutdown()
        server.server_close()
