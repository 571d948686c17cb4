"""``python -m automation``: one action in one budget from the command line, as a real
process against the fixture server; Ctrl-C stops a script running in the page."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys

from tests.conftest import CHROMIUM, ROOT
from tests.net import QuietHandler, loopback_app


# Interpreter start and browser shutdown happen outside the budget.
async def cli(*argv: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "automation", "--chromium", CHROMIUM, *argv,
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


async def answer_of(proc: asyncio.subprocess.Process) -> tuple[int, dict[str, object]]:
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    lines = out.decode().strip().splitlines()
    assert lines, err.decode()
    return proc.returncode, json.loads(lines[-1])


async def test_an_action_and_a_hung_script_within_the_timeout(fixture_url: str) -> None:
    url = f"{fixture_url}/engine/evaluate.html"
    page = ["--allow-evaluate", "--allow-private", "--url", url]
    code, answer = await answer_of(await cli(*page, "evaluate", '{"expression": "document.title"}'))
    assert (code, answer) == (0, {"ok": True, "result": '"Evaluate"'})
    code, answer = await answer_of(
        await cli(*page, "--timeout-ms", "10000", "evaluate", '{"expression": "while (true) {}"}')
    )
    error: dict[str, str] = answer["error"]  # type: ignore[assignment]
    assert code == 1 and error["code"] == "evaluate_timeout", error
    # Stopped within what was left of the command's 10 s (the browser's start took the rest:
    # seconds on a busy machine), however long the machine took to start the process itself.
    found = re.search(r"ran past its (\d+) ms budget", error["message"])
    assert found is not None and 0 < int(found.group(1)) <= 10_000, error


async def test_ctrl_c_cancels_the_script(fixture_url: str) -> None:
    url = f"{fixture_url}/engine/evaluate.html"
    proc = await cli(
        "--allow-evaluate", "--allow-private", "--url", url, "--timeout-ms", "60000",
        "evaluate", '{"expression": "while (true) {}"}',
    )  # fmt: skip
    assert proc.stderr is not None
    while b"running evaluate" not in await asyncio.wait_for(proc.stderr.readline(), 30):
        pass
    await asyncio.sleep(0.3)  # spinning now
    proc.send_signal(signal.SIGINT)
    code, answer = await answer_of(proc)
    # Cancelled by the signal: the command's 60 s would have ended it as evaluate_timeout.
    assert code == 1 and answer["error"]["code"] == "evaluate_cancelled"  # type: ignore[index]


# Ctrl-C while the command's modules load, before any handler of its own: its import
# raises KeyboardInterrupt there (a signal sent at once would race Python's own start).
INTERRUPTED_LOADING = (
    "import sys, runpy\n"
    "class Interrupting:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'automation.cli':\n"
    "            raise KeyboardInterrupt\n"
    "sys.meta_path.insert(0, Interrupting())\n"
    "runpy.run_module('automation', run_name='__main__')\n"
)


async def test_ctrl_c_before_the_command_runs_answers_cancelled() -> None:
    """Answered as a later Ctrl-C is: a JSON answer, cancelled, exit 1 (it was Python's
    traceback, no answer, exit -2)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", INTERRUPTED_LOADING, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    code, answer = await answer_of(proc)
    assert code == 1 and answer["error"]["code"] == "cancelled", answer  # type: ignore[index]


async def test_bad_command_lines_exit_2() -> None:
    for argv in (["evaluate", "[1]"], ["evaluate", "{not json"], ["fly"],
                 ["--timeout-ms", "0", "back"]):  # fmt: skip
        proc = await cli(*argv)
        await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 2, argv


async def test_a_macro_from_the_command_line_reads_and_names_its_failing_step(
    fixture_url: str,
) -> None:
    page = ["--allow-private", "--url", f"{fixture_url}/engine/macro.html"]
    macro = {"steps": [{"type": "read_page"}, {"type": "click", "ref": "e999"}]}
    code, answer = await answer_of(await cli(*page, "steps", json.dumps(macro)))
    assert code == 1 and answer["ok"] is False and answer["failed_index"] == 1
    assert [s["ok"] for s in answer["steps"]] == [True, False]  # type: ignore[union-attr,index]
    code, answer = await answer_of(await cli(*page, "read_page"))
    assert code == 0 and str(answer["result"]).startswith("Page: 'Macro'")


class _SpinsOnLoad(QuietHandler):
    def do_GET(self) -> None:
        self.send(200, b"<!doctype html><title>Spins</title><script>while (true) {}</script>")


async def test_a_page_that_hangs_as_it_loads_is_named_as_hung(fixture_url: str) -> None:
    """Its script stopped and said so, not a budget to give more time."""
    with loopback_app(_SpinsOnLoad) as url:
        code, answer = await answer_of(
            await cli(
                "--allow-private", "--timeout-ms", "15000", "navigate", json.dumps({"url": url})
            )
        )
    error: dict[str, str] = answer["error"]  # type: ignore[assignment]
    assert code == 1 and error["code"] == "page_hung", error
    assert "was stopped" in error["message"] and "more time" not in error["hint"], error
