"""Popup windows a recorded page opens (``window.open``, a link with ``target=_blank``).

The recorder listens in its own tab only: what a person does in a popup while recording
(a related record created there, its Save setting the opener's field) is not a step, so
a replay of the recording does not do it.  (A run's steps in a popup, an agent's or an MCP
client's, are kept and replayed: :mod:`automation.recording.replaytabs`.)  So it must not
vanish silently either: the step that opened the popup keeps a ``note`` saying what was
not recorded, which the scenario's page shows as a warning."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from playwright.async_api import Page

from automation.recording.scenario import ScenarioStep

__all__ = ["PopupWatch"]

MAX_URL_CHARS = 300


class PopupWatch:
    """The popups ``page`` opens while a recording listens: (epoch ms, popup)."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.opened: list[tuple[float, Page]] = []
        page.on("popup", self._on_popup)

    def _on_popup(self, popup: Page) -> None:
        self.opened.append((time.time() * 1000, popup))

    def close(self) -> None:
        self.page.remove_listener("popup", self._on_popup)

    def noted(self, steps: Sequence[ScenarioStep], times: Sequence[float]) -> list[ScenarioStep]:
        """``steps`` (each done at ``times``, epoch ms) with a note on each step that
        opened a popup: the last one done before it opened."""
        out = list(steps)
        for opened_ms, popup in self.opened:
            at = max((i for i, t in enumerate(times) if t <= opened_ms), default=-1)
            if at < 0:
                continue
            url = popup.url if popup.url.startswith(("http:", "https:")) else ""
            where = f" ({url[:MAX_URL_CHARS]})" if url else ""
            said = (
                f"it opened a popup window{where}: what was done there is not recorded, "
                "and a replay does not do it"
            )
            note = out[at].note
            out[at] = replace(out[at], note=f"{note}; {said}" if note else said)
        return out
