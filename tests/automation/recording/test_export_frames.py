"""The pytest export judges a frame that does not answer as replay does (the journey on a
page whose widget hangs: tests/e2e/test_hung_widget_e2e.py): by replay's own bounds and
words, in a browser that runs each site's frames in a process of their own as replay's
does (else the widget's hang is the whole page's)."""

from __future__ import annotations

from types import SimpleNamespace

from automation.browser import frames
from automation.browser.launch import ISOLATION_ARGS
from automation.recording import exportseen
from automation.recording.export import to_pytest
from automation.recording.scenario import Scenario


def test_a_frame_is_given_the_time_replay_gives_it_and_said_in_its_words() -> None:
    assert exportseen.FRAME_ANSWER_MS == frames.FRAME_ANSWER_MS
    assert exportseen.FRAME_RECHECK_MS == frames.FRAME_RECHECK_MS
    widget = SimpleNamespace(url="http://widgets.test/chat")
    assert exportseen.silent_note(widget) == frames.silent_note(widget)  # type: ignore[arg-type]


def test_the_export_s_browser_isolates_sites_as_replay_s_does() -> None:
    scenario = Scenario.from_dict({
        "format": "tabwright.scenario", "version": 1, "name": "open",
        "steps": [{"action": "navigate", "args": {"url": "http://app.test/"}}],
    })  # fmt: skip
    code = to_pytest(scenario)
    assert ISOLATION_ARGS == ("--site-per-process",)
    assert 'isolated = ["--site-per-process"]' in code
    assert "launch(executable_path=executable, args=isolated)" in code
