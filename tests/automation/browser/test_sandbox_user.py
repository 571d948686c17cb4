"""Chromium runs sandboxed when the server is not root: launched for real as another user.

The suite runs as root in CI, where Chromium can't sandbox; this test drops to ``nobody``
in a child process, starts a BrowserSession there with the default config, opens a page
and reads the browser's own command line.  It needs root (to drop), a kernel that lets an
unprivileged user sandbox Chromium and a Python that user can run; elsewhere it is
skipped, saying why.
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from automation.browser.config import default_chromium

ROOT = Path(__file__).resolve().parents[3]

CHILD = r"""
import asyncio, json, pathlib, sys
from automation import BrowserSession, BrowserConfig
from automation.browser.config import QUIET_CHROMIUM_ARGS

MARKER = "--tabwright-sandbox-probe"

def browser_args():
    for entry in pathlib.Path("/proc").iterdir():
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        args = [a.decode() for a in args if a]
        if MARKER in args and not any(a.startswith("--type=") for a in args):
            return args
    return []

async def main():
    config = BrowserConfig(executable_path=sys.argv[1], args=(*QUIET_CHROMIUM_ARGS, MARKER))
    async with BrowserSession(config) as session:
        tab = await session.new_tab()
        await tab.page.set_content("<p id=x>sandboxed</p>")
        text = await tab.page.inner_text("#x")
        print(json.dumps({"text": text, "args": browser_args()}))

asyncio.run(main())
"""


def _nobody() -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        return None


def _chromium_sandboxes_as(user: pwd.struct_passwd, chromium: str) -> bool:
    probe = subprocess.run(
        [chromium, "--headless", "--disable-gpu", "--no-first-run", "--dump-dom", "about:blank"],
        user=user.pw_uid,
        group=user.pw_gid,
        env={"HOME": "/tmp", "PATH": os.environ.get("PATH", "")},
        capture_output=True,
        timeout=60,
        cwd="/tmp",
    )
    return probe.returncode == 0 and b"<html>" in probe.stdout


def _can_import_as(user: pwd.struct_passwd) -> bool:
    try:
        probe = subprocess.run(
            [sys.executable, "-c", "import automation, playwright"],
            user=user.pw_uid,
            group=user.pw_gid,
            env={"HOME": "/tmp", "PYTHONPATH": str(ROOT)},
            capture_output=True,
            timeout=60,
            cwd="/tmp",
        )
    except OSError:
        return False
    return probe.returncode == 0


def test_a_server_that_is_not_root_runs_chromium_sandboxed() -> None:
    chromium_path = os.environ.get("TABWRIGHT_CHROMIUM_PATH") or default_chromium()
    user = _nobody()
    if os.geteuid() != 0 or user is None:
        pytest.skip("needs root to start a process as nobody")
    if not _chromium_sandboxes_as(user, chromium_path):
        pytest.skip("this kernel does not let an unprivileged user sandbox Chromium")
    if not _can_import_as(user):
        pytest.skip(f"nobody can't run {sys.executable} with the project (a private venv)")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, chromium_path],
        user=user.pw_uid,
        group=user.pw_gid,
        env={"HOME": "/tmp", "PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/tmp",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["text"] == "sandboxed"
    assert "--tabwright-sandbox-probe" in seen["args"]  # the browser's own command line
    assert "--no-sandbox" not in seen["args"]
