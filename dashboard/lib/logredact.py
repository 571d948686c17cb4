"""Addresses as the logs show them: without credentials.

A script may put its API token in the query string (``/api/runs?token=tw_…``).  The API
refuses it (tokens go in the Authorization header), but the request line is logged as it
came: daphne's access log writes the path and query string in full.  Every logged address
goes through :func:`redact_url`: the value of a parameter named like a credential, and
anything shaped like one of our tokens (``tw_`` and 8 or more URL-safe characters), become
``[redacted]``.

Django logs the path too (``Unauthorized: /api/runs/…``), through the root logger's
handler that daphne's command line set up.  daphne builds its access logger itself
(``daphne.access.AccessLogGenerator``) and offers no hook for it.  So
:func:`redact_server_logs` wraps that class's one writing method and puts
:class:`TokenLogFilter` on the root logger's handlers; dashboard/asgi.py calls it when
daphne loads the application, after daphne set up logging and before it makes its access
logger.  The dashboard's own handlers have the filter from LOGGING.
"""

from __future__ import annotations

import logging
import re
from typing import Any

__all__ = ["REDACTED", "TokenLogFilter", "redact_server_logs", "redact_url"]

REDACTED = "[redacted]"
# A query parameter whose name says it carries a credential, up to the next separator.
_CREDENTIAL_PARAM = re.compile(
    r"(?i)([?&;](?:[\w.-]*token|api[_-]?key|key|secret|password|passwd|auth)=)[^&;#\s\"']*"
)
_OUR_TOKEN = re.compile(r"tw_[A-Za-z0-9_-]{8,}")


def redact_url(text: str) -> str:
    """``text`` (a URL, a request line or any log text) with credentials in it replaced."""
    text = _CREDENTIAL_PARAM.sub(lambda m: m.group(1) + REDACTED, text)
    return _OUR_TOKEN.sub("tw_" + REDACTED, text)


class TokenLogFilter(logging.Filter):
    """Redacts each record with :func:`redact_url` (installed on the handlers in the
    dashboard's LOGGING, as a filter on a logger would miss its children's records)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact_url(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


def redact_server_logs() -> None:
    """daphne's access log entries, and every record through the root logger's handlers,
    with :func:`redact_url` applied (idempotent)."""
    from daphne.access import AccessLogGenerator

    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, TokenLogFilter) for f in handler.filters):
            handler.addFilter(TokenLogFilter())
    write_entry = AccessLogGenerator.write_entry
    if getattr(write_entry, "redacts", False):
        return

    def redacted(self: Any, host: Any, date: Any, request: str, *args: Any, **kwargs: Any) -> None:
        write_entry(self, host, date, redact_url(request), *args, **kwargs)

    redacted.redacts = True  # type: ignore[attr-defined]
    AccessLogGenerator.write_entry = redacted  # type: ignore[method-assign]
