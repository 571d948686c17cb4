"""The WebSocket origin check: a socket is accepted only from the dashboard's own origin.

A browser sends ``Origin`` with every WebSocket handshake and any page may open a socket
to any host, with the dashboard's session cookie attached.  So the origin must be the
dashboard's own — scheme, host *and* port — or one the operator lists in
``CSRF_TRUSTED_ORIGINS`` (``TABWRIGHT_CSRF_TRUSTED_ORIGINS``; ``https://*.example.com``
covers the subdomains, as for Django's CSRF check).  Channels' AllowedHostsOriginValidator
only compares the host name with ALLOWED_HOSTS, so a page on another port of the same host
(another app on 127.0.0.1) could drive a run; this replaces it.

The dashboard's own origin is read the way Django reads it for a request
(``HttpRequest.get_host()`` and ``is_secure()``): the Host header, checked against
ALLOWED_HOSTS (X-Forwarded-Host only with USE_X_FORWARDED_HOST), and the scheme of the
socket (``wss`` is https), or SECURE_PROXY_SSL_HEADER when the operator configured one for
a TLS proxy.

A handshake without an Origin header is refused: browsers always send one, and a client
that is not a browser can send the dashboard's origin itself.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest
from django.utils.http import is_same_domain

__all__ = ["SameOriginValidator", "origin_allowed"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


class _HandshakeRequest(HttpRequest):
    """The handshake's headers as a Django request, to ask Django for host and scheme."""

    def __init__(self, scope: dict[str, Any]) -> None:
        super().__init__()
        self._scope_scheme = scope.get("scheme", "ws")
        for name, value in scope.get("headers", []):
            key = name.decode("latin1").upper().replace("-", "_")
            self.META[f"HTTP_{key}"] = value.decode("latin1")
        server = scope.get("server") or ("", "")
        self.META["SERVER_NAME"] = str(server[0] or "")
        self.META["SERVER_PORT"] = str(server[1] or "")

    def _get_scheme(self) -> str:
        return "https" if self._scope_scheme in ("wss", "https") else "http"


def _origin_key(origin: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an origin, the default port filled in; None if malformed."""
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return None
    if parts.username or parts.password or parts.query or parts.fragment:
        return None
    return scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[scheme]


def _origin_header(scope: dict[str, Any]) -> str | None:
    values = [v for n, v in scope.get("headers", []) if n.lower() == b"origin"]
    if len(values) != 1:  # none, or several: no one origin to trust
        return None
    try:
        return values[0].decode("ascii")
    except UnicodeDecodeError:
        return None


def origin_allowed(scope: dict[str, Any]) -> bool:
    """Whether the handshake in ``scope`` comes from the dashboard's own origin or a
    trusted one (see the module's doc)."""
    origin = _origin_header(scope)
    key = _origin_key(origin) if origin is not None else None
    if key is None:
        return False
    request = _HandshakeRequest(scope)
    try:
        own = f"{'https' if request.is_secure() else 'http'}://{request.get_host()}"
    except (DisallowedHost, KeyError):
        own = ""
    if own and _origin_key(own) == key:
        return True
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        if "*" not in trusted:
            if _origin_key(trusted) == key:
                return True
            continue
        parts = urlsplit(trusted)  # https://*.example.com[:port]: that domain and below
        netloc = f"{key[1]}:{key[2]}" if parts.port else key[1]
        same_port = (parts.port or _DEFAULT_PORTS.get(parts.scheme)) == key[2]
        if parts.scheme == key[0] and same_port and is_same_domain(netloc, parts.netloc[1:]):
            return True
    return False


class SameOriginValidator:
    """ASGI middleware: refuses (before accepting) a socket from any other origin."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] != "websocket":
            raise ValueError("SameOriginValidator guards WebSocket connections only")
        if origin_allowed(scope):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)
