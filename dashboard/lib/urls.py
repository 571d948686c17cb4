"""A URL that a person typed or an API client sent, read before it is kept.

A URL is stored as given and later put on the wire (a webhook's request line, a link in an
alert), so it must be one plain absolute http(s) URL: no control character, line break or
other whitespace anywhere in it (a CR/LF would end the request line; an invisible format
character makes a link read as another), the scheme http or https, a host, and a port that
is a number.  Surrounding whitespace is trimmed, as a pasted value often has it.
:class:`UrlInvalid` says what is wrong and where.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import urlsplit

from automation.errors import ActionInvalid

__all__ = ["MAX_URL_CHARS", "UrlInvalid", "origin_of", "plain_url"]

MAX_URL_CHARS = 2000
_NAMES = {"\r": "a carriage return (CR)", "\n": "a line feed (LF)", "\t": "a tab",
          " ": "a space", "\x00": "a NUL character"}  # fmt: skip
_HINT = "an absolute http:// or https:// URL on one line, e.g. https://hooks.example.com/tabwright"


class UrlInvalid(ActionInvalid):
    code = "url_invalid"


def _unwanted(char: str) -> str:
    """What ``char`` is when a URL may not hold it, else ''."""
    if char in _NAMES:
        return _NAMES[char]
    category = unicodedata.category(char)
    if category == "Cc":
        return f"a control character (U+{ord(char):04X})"
    if category == "Cf":
        return f"an invisible format character (U+{ord(char):04X})"
    if category in ("Zs", "Zl", "Zp") or char.isspace():
        return f"whitespace (U+{ord(char):04X})"
    return ""


def plain_url(text: object) -> str:
    """``text`` trimmed, if it is a plain absolute http(s) URL with a host; else UrlInvalid
    saying why."""
    if not isinstance(text, str):
        raise UrlInvalid("a URL is text", hint=_HINT)
    url = text.strip()
    if not url:
        raise UrlInvalid("empty URL", hint=_HINT)
    if len(url) > MAX_URL_CHARS:
        raise UrlInvalid(f"a URL is at most {MAX_URL_CHARS} characters, not {len(url)}")
    for position, char in enumerate(url, start=1):
        what = _unwanted(char)
        if what:
            raise UrlInvalid(f"the URL holds {what} at character {position}", hint=_HINT)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UrlInvalid(f"the URL can't be read: {exc}", hint=_HINT) from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not url[len(scheme) + 1 :].startswith("//"):
        shown = f"{parts.scheme}:" if parts.scheme else "no scheme"
        raise UrlInvalid(f"{shown} is not allowed: only http:// and https:// URLs",
                         hint=_HINT)  # fmt: skip
    if not parts.hostname:
        raise UrlInvalid("the URL has no host", hint=_HINT)
    if port == 0:
        raise UrlInvalid("the URL's port is 0", hint=_HINT)
    return url


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL checked by :func:`plain_url`, with a path prefix
    kept when it has one (a dashboard served under ``/tabwright/``), no trailing slash."""
    parts = urlsplit(plain_url(url))
    if parts.query or parts.fragment or parts.username is not None:
        raise UrlInvalid("an origin has no user, query or fragment",
                         hint="e.g. https://tabwright.example.com")  # fmt: skip
    return f"{parts.scheme.lower()}://{parts.netloc}{parts.path.rstrip('/')}"
