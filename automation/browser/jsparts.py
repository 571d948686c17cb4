"""In-page scripts kept in files of one concept each and joined into one closure.

A main script (snapshot.js, identity.js) holds a line ``// @include <file>`` (indented as
the code around it) where each of its parts goes; :func:`joined` puts each part's text in
place of its line.  The parts use the main script's constants and helpers: they are read
only as part of it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

__all__ = ["joined"]

_HERE = Path(__file__).parent


def joined(main: str, parts: Sequence[str]) -> str:
    """The text of ``main`` (a file beside this module) with each of ``parts`` in place of
    its include line, which must stand in it exactly once."""
    text = (_HERE / main).read_text(encoding="utf-8")
    for name in parts:
        marker = re.compile(rf"^[ \t]*// @include {re.escape(name)}\n", re.MULTILINE)
        pieces = marker.split(text)
        if len(pieces) != 2:
            raise RuntimeError(f"{main} must hold the {name} include line once")
        text = pieces[0] + (_HERE / name).read_text(encoding="utf-8") + pieces[1]
    return text
