"""Replays across implementations (fixtures/crossimpl/, measured whole by bench/crossimpl.py):
a person's recording of the todo task on one app replays on apps written apart — the
classic markup, a list redrawn in the click handler, rows in shadow roots, aria-pressed
toggles with tab filters, a table with hidden radio filters — and reaches the same end
state, judged by each app's own model, never by the replay's verdict."""

from __future__ import annotations

import pytest

from automation import BrowserSession
from bench.crossimpl import load_manifest, record_app, replay_on

APPS = ("classic", "rerender", "shadow-rows", "pressed", "table")

pytestmark = pytest.mark.long  # one of the longest files: dealt out first


@pytest.mark.parametrize("source", APPS)
async def test_a_recording_on_one_app_does_the_task_on_the_others(
    browser: BrowserSession, fixture_url: str, source: str
) -> None:
    apps = {app["id"]: app for app in load_manifest()["apps"]}
    recording = await record_app(browser, fixture_url, apps[source])
    assert recording.ok and not recording.missing, (recording.error, recording.state)
    for target in APPS:
        if target == source:
            continue
        pair = await replay_on(browser, fixture_url, recording, apps[target])
        wrong = [s for s in pair.steps if s.verdict == "wrong"]
        assert not wrong, f"{source} -> {target}: acted on {[s.found for s in wrong]}"
        assert pair.task_ok, f"{source} -> {target}: {pair.status} {pair.reason} {pair.state}"
        assert pair.status == "passed", f"{source} -> {target}: {pair.reason}"
