"""One action from the command line, inside one budget: ``python -m automation``.

    python -m automation --url https://example.org --timeout-ms 10000 \\
        evaluate '{"expression": "document.title"}'

Opens a browser (launched, or ``--cdp-url``), optionally a URL, runs the action and prints
``{"ok": true, "result": ...}`` or ``{"ok": false, "error": {...}}`` as one JSON line
(progress goes to stderr).
``--timeout-ms`` is the budget of the whole call, browser start included; Ctrl-C cancels
it, which stops a running script in the page.  Exit status: 0 ok, 1 the action failed,
2 a bad command line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Sequence

from automation.actions import ACTIONS, MAX_TIMEOUT_MS, act
from automation.browser.config import BrowserConfig
from automation.browser.session import BrowserSession
from automation.browser.url_policy import UrlPolicy
from automation.budget import Budget
from automation.errors import TabwrightError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m automation", description=__doc__.split("\n")[0]
    )
    parser.add_argument("action", choices=sorted(ACTIONS), help="the action to run")
    parser.add_argument("args", nargs="?", default="{}", help="its arguments as a JSON object")
    parser.add_argument("--url", default="", help="open this URL first")
    parser.add_argument(
        "--timeout-ms", type=int, default=30_000, help="budget of the whole call (default 30000)"
    )
    parser.add_argument(
        "--chromium",
        default="",
        help="Chromium to launch (default: Debian's headless shell when headless and installed, "
        "else /usr/bin/chromium)",
    )
    parser.add_argument("--cdp-url", default="", help="connect to this browser instead")
    parser.add_argument("--allow-evaluate", action="store_true", help="turn evaluate on")
    parser.add_argument(
        "--allow-private", action="store_true", help="allow loopback and private addresses"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    options = parser.parse_args(argv)
    try:
        args = json.loads(options.args)
    except ValueError:
        parser.error("args must be a JSON object")
    if not isinstance(args, dict):
        parser.error("args must be a JSON object")
    if not 0 < options.timeout_ms <= MAX_TIMEOUT_MS:
        parser.error(f"--timeout-ms must be between 1 and {MAX_TIMEOUT_MS}")
    config = BrowserConfig(
        executable_path=options.chromium,
        cdp_url=options.cdp_url,
        evaluate_enabled=options.allow_evaluate,
        url_policy=UrlPolicy(block_private=not options.allow_private),
    )
    answer = asyncio.run(_run(config, options.url, options.action, args, options.timeout_ms))
    print(json.dumps(answer, ensure_ascii=False))
    return 0 if answer["ok"] else 1


async def _run(
    config: BrowserConfig, url: str, action: str, args: dict[str, object], timeout_ms: float
) -> dict[str, object]:
    budget = Budget(timeout_ms, label=action)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, budget.cancel, "interrupted")
    loop.add_signal_handler(signal.SIGTERM, budget.cancel, "terminated")
    session = BrowserSession(config)
    try:
        tab = await session.new_tab(budget=budget)
        if url:
            await tab.navigate(url, budget=budget)
        print(f"running {action}", file=sys.stderr, flush=True)  # progress, off the answer
        return await act(tab, action, args, budget=budget)
    except TabwrightError as exc:
        return {"ok": False, "error": exc.to_dict()}
    finally:
        await session.close()
