"""TraceRecorder on a real Chromium: the zip Playwright's trace viewer opens."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from automation import Budget, Tab
from automation.browser.tracing import TraceRecorder
from automation.errors import ActionInvalid, BrowserClosed
from tests.bounds import room


def budget() -> Budget:
    return room("trace test")


async def test_trace_of_a_navigation_and_a_click(
    tab: Tab, fixture_url: str, tmp_path: Path
) -> None:
    recorder = TraceRecorder(tab.context)
    assert not recorder.active
    await recorder.start(title="dialogs page", budget=budget())
    assert recorder.active
    await tab.page.goto(f"{fixture_url}/engine/log.html")
    await tab.page.click("#fetch-ok")
    await tab.page.wait_for_selector("#out:text-is('fetched engine fixture')", timeout=3_000)
    path = await recorder.stop(tmp_path / "traces" / "run.zip", budget=budget())
    assert path == tmp_path / "traces" / "run.zip" and not recorder.active
    names = zipfile.ZipFile(path).namelist()
    assert any(name.endswith(".trace") for name in names), names
    assert any(name.endswith(".network") for name in names), names
    assert any(name.startswith("resources/") for name in names), names

    await recorder.start(screenshots=False, snapshots=False, budget=budget())  # again is fine
    await recorder.stop(str(tmp_path / "second.zip"), budget=budget())
    assert (tmp_path / "second.zip").is_file()


async def test_misuse_is_invalid(tab: Tab, tmp_path: Path) -> None:
    recorder = TraceRecorder(tab.context)
    with pytest.raises(ActionInvalid, match="no trace"):
        await recorder.stop(tmp_path / "t.zip", budget=budget())
    with pytest.raises(ActionInvalid):
        await recorder.start(title=3, budget=budget())  # type: ignore[arg-type]
    with pytest.raises(ActionInvalid):
        await recorder.start(screenshots="yes", budget=budget())  # type: ignore[arg-type]
    await recorder.start(budget=budget())
    with pytest.raises(ActionInvalid, match="already"):
        await recorder.start(budget=budget())
    with pytest.raises(ActionInvalid, match=r"\.zip"):
        await recorder.stop(tmp_path / "t.txt", budget=budget())
    assert recorder.active  # a refused stop leaves the trace running
    await recorder.stop(tmp_path / "t.zip", budget=budget())


async def test_closed_context_is_browser_closed(tab: Tab) -> None:
    recorder = TraceRecorder(tab.context)
    await tab.context.close()
    with pytest.raises(BrowserClosed):
        await recorder.start(budget=budget())
    assert not recorder.active
