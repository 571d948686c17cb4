"""A small back office whose related field has a "+" that opens a popup (``window.open``):
the popup creates a supplier, sets the opener's select through ``window.opener`` and closes
itself (a moment later with ``close_after_ms``; or, with ``autoclose`` off, says it is done
and waits; with ``save_fails``, its Save answers the form again with an error, as a back
office refusing a name does, and the popup stays open; with ``popup_ms``, the popup's page
is slow to come, as a busy back office's is).  A "Suppliers" link opens the list of
suppliers with ``target=_blank``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html import escape
from urllib.parse import parse_qs

from tests.net import QuietHandler, loopback_app


@dataclass
class PopupApp:
    autoclose: bool = True
    save_fails: bool = False
    says_why: bool = True  # a Save that fails says why (else the form comes back as it was)
    close_after_ms: int = 0  # the popup's answer shows for a moment before it closes
    popup_ms: int = 0  # how long the popup's form takes to be served
    suppliers: dict[int, str] = field(default_factory=lambda: {1: "Old Supplier"})
    customers: list[dict[str, str]] = field(default_factory=list)


def _page(title: str, body: str) -> bytes:
    return f"<!doctype html><title>{title}</title><h1>{title}</h1>{body}".encode()


def _customer_form(app: PopupApp) -> bytes:
    options = "".join(
        f"<option value={i}>{escape(name)}</option>" for i, name in app.suppliers.items()
    )
    return _page(
        "Add customer",
        "<form method=post action=/customer>"
        "<p><label>Name: <input name=name></label></p>"
        f"<p><label>Supplier: <select name=supplier id=supplier><option value=''>---</option>"
        f"{options}</select></label>"
        " <a href='/supplier' onclick=\"window.open(this.href,'sup','width=500,height=400');"
        'return false;">+</a></p>'
        "<button>Save</button></form>"
        "<p><a href=/suppliers target=_blank>Suppliers</a></p>"
        "<script>function added(id, name){const s=document.getElementById('supplier');"
        "s.add(new Option(name, id)); s.value=String(id);}</script>",
    )


_SUPPLIER_FORM = (
    "<form method=post action=/supplier><p><label>Name: <input name=name></label></p>"
    "<button>Save</button></form>"
)


@contextmanager
def serve(app: PopupApp) -> Iterator[str]:
    """The app on loopback: its base URL (the customer form is at ``/customer``)."""

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/customer"):
                self.send(200, _customer_form(app))
            elif self.path.startswith("/suppliers"):
                rows = "".join(f"<li>{escape(name)}</li>" for name in app.suppliers.values())
                self.send(200, _page("Suppliers", f"<ul>{rows}</ul>"))
            elif self.path.startswith("/supplier"):
                time.sleep(app.popup_ms / 1000)  # the app's own pace, not a test's wait
                self.send(200, _page("Add supplier", _SUPPLIER_FORM))
            elif self.path.startswith("/done"):
                self.send(200, _page("Saved", "<p>The customer was saved.</p>"))
            else:
                self.send(404)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            data = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            if self.path == "/supplier" and app.save_fails:
                error = "<p role=alert>A supplier of that name exists already.</p>"
                error = error if app.says_why else ""
                self.send(200, _page("Add supplier", error + _SUPPLIER_FORM))
            elif self.path == "/supplier":
                sid = max(app.suppliers) + 1
                app.suppliers[sid] = data.get("name", "")
                close = "window.close();" if app.autoclose else ""
                if close and app.close_after_ms:
                    close = f"setTimeout(() => window.close(), {app.close_after_ms});"
                script = f"window.opener.added({sid}, {json.dumps(app.suppliers[sid])});{close}"
                body = f"<p>Supplier added.</p><script>{script}</script>"
                self.send(200, _page("Supplier added", body))
            else:
                app.customers.append(
                    {"name": data.get("name", ""), "supplier": data.get("supplier", "")}
                )
                self.send(303, Location="/done")

    with loopback_app(Handler) as base:
        yield base
