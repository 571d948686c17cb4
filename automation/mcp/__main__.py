"""``python -m automation.mcp`` (or ``tabwright-mcp``): the MCP server over stdio.

    python -m automation.mcp --allow-private --scenario-out session.json

Logs go to stderr; stdout carries the protocol only.  A headless session is served by the
user's warm server for these settings (started if none runs; :mod:`automation.mcp.warm`),
which keeps its browser for ``--warm-for`` seconds after the last session ends, so the
next session starts in a context opened ahead; ``--warm-for 0``, a headed browser or a
``--cdp-url`` serve the session in this process, with a browser of its own.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from automation.browser.config import BrowserConfig
from automation.browser.url_policy import UrlPolicy
from automation.loading import pause_gc, resume_gc

__all__ = ["config_of", "main", "parser"]

WARM_FOR_S = 300.0  # how long the warm server keeps its browser after the last session


def parser() -> argparse.ArgumentParser:
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
    parser.add_argument(
        "--warm-for",
        type=_seconds,
        default=WARM_FOR_S,
        metavar="SECONDS",
        help="keep the browser this long after a session for the next one (default "
        f"{WARM_FOR_S:.0f}; 0: a browser of this process's own, closed with it)",
    )
    return parser


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value <= 7 * 24 * 3600:
        raise argparse.ArgumentTypeError(f"from 0 to 604800 seconds, not {text}")
    return value


def config_of(options: argparse.Namespace) -> BrowserConfig:
    """The browser settings the options name (its paths from this process's folder)."""
    chromium = options.chromium
    return BrowserConfig(
        executable_path=os.path.abspath(chromium) if os.sep in chromium else chromium,
        cdp_url=options.cdp_url,
        headless=not options.headed,
        evaluate_enabled=options.allow_evaluate,
        upload_dir=os.path.abspath(options.upload_dir) if options.upload_dir else "",
        url_policy=UrlPolicy(block_private=not options.allow_private),
    )


def _warm_args(options: argparse.Namespace, config: BrowserConfig) -> list[str]:
    """The warm server's launch options: those that made ``config``."""
    args = ["--warm-for", str(options.warm_for)]
    if config.executable_path:
        args += ["--chromium", config.executable_path]
    if options.allow_evaluate:
        args.append("--allow-evaluate")
    if options.allow_private:
        args.append("--allow-private")
    if config.upload_dir:
        args += ["--upload-dir", config.upload_dir]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    pause_gc()  # while the server loads (resumed in _serve once it has)
    try:
        options = parser().parse_args(argv)
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
        if options.scenario_out is not None and not options.scenario_out.parent.is_dir():
            parser().error(f"--scenario-out: no folder {options.scenario_out.parent}")
        config = config_of(options)
        if options.warm_for > 0 and config.headless and not config.cdp_url:
            status = _relayed(options, config)
            if status is not None:
                return status
        import asyncio  # (not on the relay's path: a start's tenth)

        asyncio.run(_serve(config, options))
    finally:
        resume_gc()
    return 0


def _relayed(options: argparse.Namespace, config: BrowserConfig) -> int | None:
    """The session served by the warm server, through this process: its exit status;
    None when it could not be (then this process serves it)."""
    from automation.mcp.warm import PROTOCOL, relay_session

    out = options.scenario_out
    hello = {
        "protocol": PROTOCOL,
        "scenario_out": str(out.resolve()) if out is not None else None,
        "scenario_name": options.scenario_name,
        "secrets": {k: v for k, v in os.environ.items() if k.startswith("TABWRIGHT_SECRET_")},
    }
    timeout_s = config.launch_timeout_ms / 1000
    return relay_session(repr(config), _warm_args(options, config), hello, timeout_s=timeout_s)


async def _serve(config: BrowserConfig, options: argparse.Namespace) -> None:
    """The browser starts and the tab opens first; the MCP SDK (the larger import) loads
    in a thread meanwhile, so a client's first call waits for the later of the two, not
    their sum.  (Loading the SDK from the very start instead makes the browser's own code
    load slower beside it: the browser starts later.)"""
    import asyncio
    import importlib

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
