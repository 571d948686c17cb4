"""``python -m automation.mcp`` (or ``tabwright-mcp``): the MCP server over stdio.

    python -m automation.mcp --allow-private --scenario-out session.json

Logs go to stderr; stdout carries the protocol only.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from automation.browser.config import BrowserConfig
from automation.browser.url_policy import UrlPolicy
from automation.loading import pause_gc, resume_gc

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m automation.mcp", description="Tabwright's MCP server over stdio"
    )
    parser.add_argument(
        "--chromium",
        default="",
        help="Chromium to launch (default: Debian's headless shell when headless and installed, "
        "else /usr/bin/chromium)",
    )
    parser.add_argument("--cdp-url", default="", help="use this running Chrome instead")
    parser.add_argument("--headed", action="store_true", help="show the browser window")
    parser.add_argument("--allow-evaluate", action="store_true", help="offer evaluate")
    parser.add_argument(
        "--allow-private", action="store_true", help="allow loopback and private addresses"
    )
    parser.add_argument("--upload-dir", default="", help="files upload and drop_files may use")
    parser.add_argument(
        "--scenario-out", type=Path, help="write the session's steps as a scenario file here"
    )
    parser.add_argument("--scenario-name", default="", help="the scenario's name")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    pause_gc()  # while the server loads (resumed in _serve once it has)
    try:
        options = _parser().parse_args(argv)
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
        if options.scenario_out is not None and not options.scenario_out.parent.is_dir():
            _parser().error(f"--scenario-out: no folder {options.scenario_out.parent}")
        config = BrowserConfig(
            executable_path=options.chromium,
            cdp_url=options.cdp_url,
            headless=not options.headed,
            evaluate_enabled=options.allow_evaluate,
            upload_dir=options.upload_dir,
            url_policy=UrlPolicy(block_private=not options.allow_private),
        )
        asyncio.run(_serve(config, options))
    finally:
        resume_gc()
    return 0


async def _serve(config: BrowserConfig, options: argparse.Namespace) -> None:
    """The browser starts and the tab opens first; the MCP SDK (the larger import) loads
    in a thread meanwhile, so a client's first call waits for the later of the two, not
    their sum.  (Loading the SDK from the very start instead makes the browser's own code
    load slower beside it: the browser starts later.)"""
    from automation.mcp.ahead import TabAhead  # Playwright: not for --help

    ahead = TabAhead(config)
    try:
        stdio = await asyncio.to_thread(importlib.import_module, "automation.mcp.stdio")
    except BaseException:
        await ahead.close()
        raise
    finally:
        resume_gc()
    await stdio.serve_stdio(
        config,
        scenario_out=options.scenario_out,
        scenario_name=options.scenario_name,
        ahead=ahead,
    )


if __name__ == "__main__":
    sys.exit(main())
