"""When a server refused what a page's script sent: a write (POST, PUT, PATCH, DELETE) it
sent to the page's own site by fetch or XHR (a form sent by script, a save), answered HTTP
4xx/5xx, or answered in JSON that says it failed (:func:`said_failed`: ``{"ok": false}``,
HTTP 200).  A replay fails the step that sent it (:mod:`automation.browser.pagelog` notes
them); the pytest export fails the same way: it writes the code below its marker into the
exported file as it is.  And where a write led: :func:`same_place` tells whether the page
a write ended on is the place it led to when recorded; :func:`address_shape` whether the
server's answer to a form stands at the address a check was recorded on.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = [
    "ANSWER_READ_BYTES",
    "WRITES",
    "address_shape",
    "answer_read",
    "refused_write",
    "said_failed",
    "same_place",
    "same_site",
]

# -- written into an exported pytest file as it is ----------------------------------
import json
from urllib.parse import parse_qsl, unquote

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# What names one record among others in an address, read as one "#": a UUID, a hex id
# (of 6 or more, a digit among them), a generated id (of 10 or more letters and digits,
# both: a cuid, a nanoid, a ULID), a run of digits.
_ID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|(?<![0-9a-z])(?=[0-9a-z]*\d)(?=[0-9a-z]*[a-z])(?:[0-9a-f]{6,}|[0-9a-z]{10,})(?![0-9a-z])"
    r"|\d+",
    re.IGNORECASE,
)


def _shape(text: str) -> str:
    """``text`` with each id in it (:data:`_ID`) as one "#"."""
    return _ID.sub("#", text)


def same_site(url: str, page_url: str) -> bool:
    """Whether ``url`` is on the page's site: its host, or a host under the same last two
    labels (app.example.com and api.example.com); an address's host only as itself."""
    host, page_host = urlsplit(url).hostname or "", urlsplit(page_url).hostname or ""
    if host == page_host:
        return bool(host)
    if not host or not page_host or ":" in host or host.replace(".", "").isdigit():
        return False
    return host.split(".")[-2:] == page_host.split(".")[-2:] and "." in host


def refused_write(method: str, resource_type: str, status: int, url: str, page_url: str) -> bool:
    """Whether a request the page made, answered ``status``, is a write of its script's to
    its own site that the server refused."""
    return (
        status >= 400
        and resource_type in ("fetch", "xhr")
        and method in WRITES
        and same_site(url, page_url)
    )


ANSWER_READ_BYTES = 64 * 1024  # a write's JSON answer longer than this is not read
# What a JSON answer's "status" says when the write failed (JSend's "fail" and "error").
_FAILED_STATUS = frozenset({"error", "fail", "failed", "failure"})
# The keys whose true says the write was done, whose false says it was not.
_SAID_DONE = ("ok", "success", "succeeded", "saved")
# The keys of an answer that is an envelope of its outcome, no record: {"status": "error"}
# alone, or with its code and words, is a refusal where a record's own status is not.
_ENVELOPE = frozenset({"status", "result", "data", "message", "msg", "code", "reason",
                       "detail", "error", "errors"})  # fmt: skip


def answer_read(headers: dict[str, str]) -> bool:
    """Whether a write's answer, by its ``headers``, is JSON short enough to read for
    what it says of the write (:func:`said_failed`)."""
    kind = (headers.get("content-type") or "").lower()
    length = headers.get("content-length") or "0"
    return "json" in kind and length.isdigit() and int(length) <= ANSWER_READ_BYTES


def said_failed(body: bytes) -> str:
    """What the JSON answer ``body`` to a write says of the write's failure, whatever its
    HTTP status (a save answered 200 ``{"ok": false, "error": "Price locked"}``); "" when
    it says none.  Failed: ``ok``, ``success``, ``succeeded`` or ``saved`` false, an
    ``error`` or ``errors`` that holds something (GraphQL's errors beside its data), or
    a ``status`` (or ``result``) "fail" or "error" beside its data or message (JSend's), or
    in an answer that holds nothing but its outcome (``{"status": "error"}``, with a code or
    its words: no record, whose own status it could be); never where one of those four is
    true."""
    if len(body) > ANSWER_READ_BYTES:
        return ""
    try:
        answer = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return ""
    if not isinstance(answer, dict):
        return ""
    done = [answer.get(key) for key in _SAID_DONE]
    if any(value is True for value in done):
        return ""
    status = next(
        (v for v in (answer.get("status"), answer.get("result")) if isinstance(v, str)), ""
    )
    jsend = status.lower() in _FAILED_STATUS and (
        "data" in answer or "message" in answer or set(answer) <= _ENVELOPE
    )
    if not (any(value is False for value in done) or jsend
            or answer.get("error") or answer.get("errors")):  # fmt: skip
        return ""
    for key in ("error", "message", "msg", "errors", "detail", "reason"):
        said = _said(answer.get(key))
        if said:
            return said[:200]
    return json.dumps(answer)[:120]


def _said(value: object) -> str:
    """The words of an answer's error: a text, an object's message, a list's first."""
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, dict):
        return _said(value.get("message") or value.get("detail") or value.get("error"))
    if isinstance(value, list) and value:
        return _said(value[0])
    return ""


def same_place(recorded: str, now: str) -> bool:
    """Whether the page at ``now`` is the place the address ``recorded`` names, as a
    person reads an address: the same path, a trailing slash aside, and every parameter of
    the recorded query still there with its value; ids aside in both (record 17 where the
    recording had 12, page 3 where it had 2, a UUID or a hex id where it had another).  A
    parameter the app adds (``?saved=1``, ``?page=2``) and the fragment (``#saved``) name
    no other place.  Each
    is read decoded, however it was encoded (``Ada%20L``, ``Ada+L``: a form and a script
    write a value differently)."""
    was, now_parts = urlsplit(recorded), urlsplit(now)

    def fields(query: str) -> set[tuple[str, str]]:
        return {(_shape(key), _shape(value)) for key, value in parse_qsl(query, True)}

    if _shape(unquote(was.path).rstrip("/")) != _shape(unquote(now_parts.path).rstrip("/")):
        return False
    return fields(was.query) <= fields(now_parts.query)


def address_shape(url: str) -> str:
    """A page's path and query with each id in it (a run of digits, a UUID…) as one "#"."""
    parts = urlsplit(url)
    return _shape(parts.path.rstrip("/") + ("?" + parts.query if parts.query else ""))
