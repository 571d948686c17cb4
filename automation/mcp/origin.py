"""A snapshot's URL without its scheme and host when the client's model was just told
them: ``Page: /orders?page=2`` after an answer that named ``https://shop.example``.

A session keeps the origin (``scheme://host:port``) of the last answer that named URLs of
one origin alone; an answer naming several forgets it, and so does a page that is not on
the web (``about:``, ``data:``, ``file:``: shown whole).  A snapshot on the origin kept
shows its URL from the path on; on another origin, its URL whole (which the session then
keeps).  So a path alone always belongs to the origin of the latest URL the model read.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = ["ShownOrigin"]

_WEB_URL = re.compile(r"\bhttps?://[^\s/?#'\"<>]+", re.IGNORECASE)


def _origin(url: str) -> str:
    """``scheme://host:port`` of a web URL; "" for any other."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return ""
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


class ShownOrigin:
    def __init__(self) -> None:
        self.origin = ""  # the one origin the latest answer naming URLs named

    def told(self, text: str, *, snapshot: bool) -> str:
        """The answer ``text`` as the model gets it (a snapshot's ``Page:`` line shortened
        when its origin is the one kept); what it names is kept for the next."""
        if snapshot and text.startswith("Page: "):
            line, newline, rest = text.partition("\n")
            url = line.rsplit(" ", 1)[-1]
            origin = _origin(url)
            if origin and origin == self.origin and url.lower().startswith(origin):
                line = line[: -len(url)] + (url[len(origin) :] or "/")
            self.origin = origin
            return line + newline + rest
        origins = {_origin(found) for found in _WEB_URL.findall(text)}
        if len(origins) == 1:
            self.origin = origins.pop()
        elif origins:
            self.origin = ""
        return text
