"""A page whose own script keeps its main thread busy (an app's heavy work, or a machine
running much beside it): a question sent to it waits for the answer.  Each script is for
``page.evaluate``; the work starts just after that call answers, so the question sent
next waits for it."""

from __future__ import annotations


def busy_once(ms: int) -> str:
    """Busy for ``ms`` at once."""
    return f"""() => {{
  setTimeout(() => {{
    const end = performance.now() + {ms};
    while (performance.now() < end);
  }}, 0);
}}"""


def busy_in_bursts(burst_ms: int, *, for_ms: int) -> str:
    """Busy ``burst_ms`` at a time, a moment free between (a question waits for the
    burst it lands in), for the next ``for_ms``."""
    return f"""() => {{
  const until = performance.now() + {for_ms};
  const burst = () => {{
    const end = performance.now() + {burst_ms};
    while (performance.now() < end);
    if (performance.now() < until) setTimeout(burst, 5);
  }};
  setTimeout(burst, 0);
}}"""
