"""Running a scenario's pytest export as a user would: its own pytest, in its own folder."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.replay import Replay, ReplayResult
from automation.recording.scenario import Scenario
from tests.conftest import CHROMIUM


async def run_exported(
    code: str, folder: Path, base_url: str, env: dict[str, str] | None = None,
    more: dict[str, str] | None = None, timeout_ms: int = 30_000, alone: bool = False,
) -> tuple[int, str]:  # fmt: skip
    """The exit status and output of pytest on the exported ``code`` against ``base_url``
    (``more``: other exported files by name, run by the same pytest).  ``timeout_ms``: how
    long each step and check waits (TIMEOUT_MS); a passing file waits only as long as the
    page takes, a check meant to fail waits it out.  ``folder`` is made if missing.  Run
    by this process's export host (tests/exporthost.py: its driver and browser kept from
    one export to the next), or ``alone`` in a pytest process of its own."""
    await asyncio.to_thread(folder.mkdir, parents=True, exist_ok=True)
    (folder / "test_exported.py").write_text(code)
    for name, text in (more or {}).items():
        (folder / name).write_text(text)
    (folder / "pytest.ini").write_text("[pytest]\n")
    # A plain pytest: none of this project's plugins (Django, asyncio, xdist, timeout)
    # loaded, which also shows the file needs none of them.  (Loading them is about a
    # second of CPU a run, and the suite runs dozens of exports.)
    environ = {**os.environ, **(env or {}), "BASE_URL": base_url,
               "TABWRIGHT_CHROMIUM_PATH": CHROMIUM, "TIMEOUT_MS": str(timeout_ms),
               "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # fmt: skip
    environ.pop("DJANGO_SETTINGS_MODULE", None)
    files = ["test_exported.py", *(more or {})]
    if alone or os.environ.get("TABWRIGHT_EXPORT_ALONE") == "1":
        return await _alone(folder, files, environ)
    try:
        async with asyncio.timeout(300):  # bounds a hang only
            return await asyncio.to_thread(_HOST.run, folder, files, environ)
    except TimeoutError:
        _HOST.stop()  # (its thread reads the end of its output, and ends)
        raise


async def _alone(folder: Path, files: list[str], environ: dict[str, str]) -> tuple[int, str]:
    """pytest on ``files`` in a process of its own, as a user runs it."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files,
        cwd=folder, env=environ,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    async with asyncio.timeout(300):  # bounds a hang only
        out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode()


class _Host:
    """This test process's export host (tests/exporthost.py), started at its first export."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None

    def run(self, folder: Path, files: list[str], environ: dict[str, str]) -> tuple[int, str]:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                # -I: the host's folder is not on sys.path (an export alone has only its own)
                self._proc = subprocess.Popen(
                    [sys.executable, "-I", str(Path(__file__).with_name("exporthost.py"))],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environ,
                )  # fmt: skip
            proc = self._proc
            assert proc.stdin is not None and proc.stdout is not None
            request = {"folder": str(folder), "files": files, "env": environ}
            try:
                proc.stdin.write(json.dumps(request) + "\n")
                proc.stdin.flush()
            except BrokenPipeError:
                pass  # (it ended: said below)
            answer = proc.stdout.readline()
            if not answer:
                self._proc = None
                raise RuntimeError(f"the export host ended ({proc.wait()}) running {folder}")
            done = json.loads(answer)
            return done["status"], done["out"]

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()


_HOST = _Host()


async def replayed_and_exported(
    tab: Tab, scenario: Scenario, folder: Path, base_url: str, reset: Callable[[], None]
) -> tuple[ReplayResult, int, str]:
    """The replay of ``scenario`` in ``tab``, then the run of its pytest export (in
    ``folder``) against ``base_url``, the app's data put back as it was before each
    (``reset``): the replay's result, the export's exit status and output."""
    reset()
    result = await Replay(tab, scenario).run()
    reset()
    status, out = await run_exported(to_pytest(scenario), folder, base_url)
    return result, status, out


async def both_pass(tab: Tab, scenario: Scenario, folder: Path, base_url: str, saved: list) -> None:
    """The replay of ``scenario`` and its export each pass, each having made the app
    save what it saved as recorded: ``saved``, the list the app keeps what it receives in
    (what the recording sent, cleared before each)."""
    recorded, each = list(saved), []

    def reset() -> None:
        each.append(list(saved))
        saved.clear()

    result, status, out = await replayed_and_exported(tab, scenario, folder, base_url, reset)
    assert result.ok and status == 0, (result.to_dict(), out[-3000:])
    assert [*each[1:], list(saved)] == [recorded, recorded]  # by the replay, by the export
