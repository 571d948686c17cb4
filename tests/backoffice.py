"""A small back office served on 127.0.0.1 for tests: a sign-in with a password and a
one-time code (RFC 6238), sessions that expire, orders behind the sign-in (a list, a page
per order) and a CSV export.

Pages are fixtures/backoffice/*.html with ``{…}`` fields filled in.  What a test reads:
``sign_ins`` (completed sign-ins), ``codes`` (codes accepted), ``views`` (signed-in pages
served, by path), :meth:`expire_sessions` (every session ends now, as after their
lifetime), ``keepalives``.

:meth:`BackOffice.switch_release` is a new release of the app: from then on, its signed-in
pages show a "What's new" modal (until its *Got it*) and a cookie wall (until *Accept
all* or *Only necessary*) over the page, from the ``after_views``-th page on (so at any
step of a scenario).  With ``expiry_prompt_s``, a page of a session older than that shows a
"Your session will expire soon" prompt over it (its *Stay signed in* keeps the session).

The scenarios that drive it: :func:`sign_in_scenario` (password and one-time code),
:func:`order_scenario` (an order's page and back), and the handlers of the release's
interruptions (:data:`WHATS_NEW`, :data:`COOKIES`, :data:`EXPIRY`)."""

from __future__ import annotations

import secrets
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pyotp

from automation.recording.scenario import Scenario

__all__ = [
    "COOKIES",
    "EXPIRY",
    "PASSWORD",
    "SEED",
    "USER",
    "WHATS_NEW",
    "BackOffice",
    "back_office",
    "handler",
    "order_scenario",
    "sign_in_scenario",
    "sign_in_task",
]

PAGES = Path(__file__).resolve().parent.parent / "fixtures" / "backoffice"
USER = "ada"
PASSWORD = "Correct-Horse-9"
SEED = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXQ"  # base32, 160 bits
EXPORT_CSV = "order,customer,total\r\n1001,Ada,12.50\r\n1002,Grace,8.00\r\n"
ORDERS = {"1001": ("Ada", "12.50"), "1002": ("Grace", "8.00")}


class BackOffice:
    def __init__(self, *, session_s: float = 3600, sign_in: bool = True) -> None:
        self.session_s = session_s
        self.sign_in = sign_in  # False: every page is open, as to a signed-in person
        self.sessions: dict[str, float] = {}  # token -> when it was made (monotonic)
        self.pending: set[str] = set()  # signed in with the password, the code still due
        self.sign_ins = 0
        self.codes: list[str] = []
        self.lock = threading.Lock()
        self.url = ""
        self.release = ""  # "" until switch_release
        self.views_left = 0  # signed-in pages still shown without the release's interruptions
        self.expiry_prompt_s: float | None = None
        self.keepalives = 0
        self.views: Counter[str] = Counter()

    def switch_release(self, release: str = "2026.12", *, after_views: int = 0) -> None:
        """A new release: its interruptions show from the ``after_views``-th signed-in page
        on (0: the next one)."""
        with self.lock:
            self.release, self.views_left = release, after_views

    def interruptions(self, cookie: str) -> str:
        """What a signed-in page shows over itself now ("" when nothing); counts the view."""
        shown = []
        with self.lock:
            if self.release and self.views_left > 0:
                self.views_left -= 1
            elif self.release:
                if not _cookie(cookie, "bo_cookies"):
                    shown.append("cookie-wall")
                if _cookie(cookie, "bo_seen") != self.release:
                    shown.append("whats-new")
            made = self.sessions.get(_cookie(cookie, "bo_session"), time.monotonic())
            if self.expiry_prompt_s is not None and time.monotonic() - made >= self.expiry_prompt_s:
                shown.append("expiry")
        if not shown:
            return ""
        text = (PAGES / "interruptions.html").read_text()
        return text.replace("{shown}", " ".join(shown)).replace("{release}", escape(self.release))

    def keep_alive(self, cookie: str) -> None:
        token = _cookie(cookie, "bo_session")
        with self.lock:
            if token in self.sessions:
                self.sessions[token] = time.monotonic()
                self.keepalives += 1

    def expire_sessions(self) -> None:
        with self.lock:
            self.sessions.clear()

    def signed_in(self, cookie: str) -> bool:
        token = _cookie(cookie, "bo_session")
        with self.lock:
            made = self.sessions.get(token)
            return not self.sign_in or (
                made is not None and time.monotonic() - made < self.session_s
            )


def _cookie(header: str, name: str) -> str:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return ""


def _handler(office: BackOffice) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _page(self, name: str, status: int = 200, **fields: str) -> None:
            text = (PAGES / name).read_text()
            for key, value in fields.items():
                text = text.replace("{" + key + "}", escape(value))
            if "{interruptions}" in text:
                shown = office.interruptions(self.headers.get("Cookie", ""))
                text = text.replace("{interruptions}", shown)
            self._send(status, text.replace("{error}", ""), "text/html; charset=utf-8")

        def _send(self, status: int, body: str, kind: str, *headers: tuple[str, str]) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers:
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _go(self, where: str, *cookies: str) -> None:
            self.send_response(303)
            self.send_header("Location", where)
            for cookie in cookies:
                self.send_header("Set-Cookie", cookie + "; Path=/; HttpOnly; SameSite=Lax")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            cookie = self.headers.get("Cookie", "")
            if path in ("/login", "/otp"):
                self._page(f"{path[1:]}.html")
                return
            if not office.signed_in(cookie):
                self._go("/login")
                return
            with office.lock:
                office.views[path] += 1
            if path in ("/", "/orders"):
                self._page("orders.html", user=USER)
            elif path.removeprefix("/orders/") in ORDERS:
                order = path.removeprefix("/orders/")
                customer, total = ORDERS[order]
                self._page("order.html", order=order, customer=customer, total=total)
            elif path == "/export.csv":
                saved = ("Content-Disposition", 'attachment; filename="orders.csv"')
                self._send(200, EXPORT_CSV, "text/csv", saved)
            else:
                self._send(404, "not found", "text/plain")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            path = urlsplit(self.path).path
            if path == "/login":
                if form.get("user") != USER or form.get("password") != PASSWORD:
                    self._page("login.html", 200, error="Wrong user name or password")
                    return
                token = secrets.token_hex(8)
                with office.lock:
                    office.pending.add(token)
                self._go("/otp", f"bo_pending={token}")
            elif path == "/keepalive":
                office.keep_alive(self.headers.get("Cookie", ""))
                self._send(204, "", "text/plain")
            elif path == "/otp":
                token = _cookie(self.headers.get("Cookie", ""), "bo_pending")
                code = form.get("otp", "")
                with office.lock:
                    known = token in office.pending
                if not known or not pyotp.TOTP(SEED).verify(code, valid_window=1):
                    self._page("otp.html", 200, error="Wrong code")
                    return
                session = secrets.token_hex(16)
                with office.lock:
                    office.pending.discard(token)
                    office.sessions[session] = time.monotonic()
                    office.sign_ins += 1
                    office.codes.append(code)
                self._go("/orders", f"bo_session={session}")
            else:
                self._send(404, "not found", "text/plain")

    return Handler


@contextmanager
def back_office(*, session_s: float = 3600, sign_in: bool = True) -> Iterator[BackOffice]:
    """A :class:`BackOffice` served on a loopback port (its ``url``) while the block runs."""
    office = BackOffice(session_s=session_s, sign_in=sign_in)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(office))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    office.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield office
    finally:
        server.shutdown()
        server.server_close()


def sign_in_scenario(url: str) -> Scenario:
    """Signs in with the secrets BO_PASSWORD (the password) and BO (the TOTP seed)."""

    def field(name: str, **more: str) -> dict[str, object]:
        return {"tag": "input", "name_attr": name, "selectors": [f"[name={name}]"], **more}

    button = {"role": "button", "tag": "button", "selectors": ["button[type=submit]"]}
    return Scenario.from_dict({
        "version": 1, "name": "Sign in", "base_url": url, "steps": [
            {"action": "navigate", "args": {"url": f"{url}/login"}},
            {"action": "fill", "args": {"value": USER}, "identity": field("user")},
            {"action": "fill", "args": {"value": "${SECRET:BO_PASSWORD}"},
             "identity": field("password", type="password")},
            {"action": "click", "args": {}, "identity": {**button, "name": "Sign in"}},
            {"action": "fill", "args": {"value": "${TOTP:BO}"},
             "identity": field("otp", autocomplete="one-time-code")},
            {"action": "click", "args": {}, "identity": {**button, "name": "Verify"}},
            {"action": "expect", "args": {"kind": "url", "url": "/orders"}},
            {"action": "expect", "args": {"kind": "text_visible", "text": "Signed in as ada"}},
        ],
    })  # fmt: skip


def sign_in_task(url: str) -> str:
    """A conversation's task for the rule planner that signs in and stops there: its last
    line matches nothing, so the run pauses signed in, its tab open (to save its sign-in)."""
    return "\n".join([
        f"go to {url}/login", f'type "{USER}" into "User name"',
        'type "${SECRET:BO_PASSWORD}" into "Password"', 'click "Sign in"',
        'type "${TOTP:BO}" into "Code"', 'click "Verify"', "wait for Signed in as",
        "click Nowhere",
    ])  # fmt: skip


def order_scenario(url: str, *handlers: dict[str, Any]) -> dict[str, Any]:
    """The list, an order's page (where a new release first shows its interruptions,
    ``after_views=1``) and back to the list."""

    def link(name: str) -> dict[str, Any]:
        return {"role": "link", "name": name, "tag": "a"}

    return {
        "format": "tabwright.scenario", "version": 1, "name": "Order 1001", "base_url": url,
        "handlers": list(handlers),
        "steps": [
            {"action": "navigate", "args": {"url": f"{url}/orders"}},
            {"action": "click", "args": {}, "identity": link("1001")},
            {"action": "expect", "args": {"kind": "text_visible", "text": "Customer: Ada"}},
            {"action": "click", "args": {}, "identity": link("Back to orders")},
            {"action": "expect", "args": {"kind": "url", "url": "/orders"}},
        ],
    }  # fmt: skip


def handler(name: str, role: str, button: str, **when: str) -> dict[str, Any]:
    """A handler cleared by a click on ``button``; ``when``: more of what it looks like."""
    click = {"role": "button", "name": button, "tag": "button"}
    return {"name": name, "when": {"role": role, "name": name, **when},
            "steps": [{"action": "click", "args": {}, "identity": click}]}  # fmt: skip


WHATS_NEW = handler("What's new", "dialog", "Got it")  # as written by hand: no tag
COOKIES = handler("Cookie consent", "region", "Accept all", tag="section")
EXPIRY = handler("Session will expire", "alertdialog", "Stay signed in")
