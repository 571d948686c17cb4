"""A step whose page the server refuses fails: a form posted and answered HTTP 5xx (the
back office saved nothing), a link to a page answered 404, a form a script sends (fetch)
answered 5xx.  Before, a scenario without a check said succeeded there, its error page
(or message) shown.  A read the server answers 404 (a lookup) is no refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.replay import Replay, ReplayResult
from automation.recording.scenario import Scenario, ScenarioStep
from tests.exported import run_exported


def scenario(fixture_url: str, *steps: ScenarioStep, page: str = "refused.html") -> Scenario:
    page = f"{fixture_url}/replay/{page}"
    return Scenario("Add a customer", (ScenarioStep("navigate", {"url": page}), *steps),
                    base_url=f"{fixture_url}/replay/")  # fmt: skip


def on(role: str, name: str, action: str = "click", **args: str) -> ScenarioStep:
    tag = {"link": "a", "textbox": "input"}.get(role, role)
    identity = {"role": role, "name": name, "tag": tag}
    return ScenarioStep.from_dict({"action": action, "args": args, "identity": identity})


def refused_message(result: ReplayResult) -> str:
    """The message of a replay's last step, which failed on what the server refused."""
    last = result.steps[-1]
    assert result.status == "failed" and last.status == "failed", result.to_dict()
    assert last.error is not None and last.error["code"] == "http_status"
    return str(last.error["message"])


async def replayed_and_exported(
    tab: Tab, recorded: Scenario, tmp_path: Path, *, refused: bool
) -> tuple[str, str]:
    """``recorded`` replayed and its pytest export run: both pass when nothing is
    ``refused`` (the message is ""), else both fail: the replay's failed step's message,
    and the export's output."""
    result = await Replay(tab, recorded).run()
    code, out = await run_exported(to_pytest(recorded), tmp_path, recorded.base_url)
    if not refused:
        assert result.ok, result.to_dict()
        assert code == 0 and "1 passed" in out, out
        return "", out
    assert code == 1 and "the server refused" in out, out
    return refused_message(result), out


@pytest.mark.parametrize(
    ("steps", "status"),
    [
        ((on("textbox", "Name", "fill", value="Ada"), on("button", "Save")), 501),
        ((on("link", "Gone page"),), 404),
        ((on("link", "Again"),), None),
    ],
)
async def test_a_step_whose_page_the_server_refuses_fails(
    tab: Tab, fixture_url: str, tmp_path: Path, steps: tuple[ScenarioStep, ...],
    status: int | None,
) -> None:  # fmt: skip
    # The export fails as the replay does (it passed on the server's refusal page).
    message, out = await replayed_and_exported(
        tab, scenario(fixture_url, *steps), tmp_path, refused=status is not None
    )
    if status is not None:
        assert f"HTTP {status}" in out and f"was answered HTTP {status}" in message


@pytest.mark.parametrize(("button", "refused"), [("Save", True), ("Look up", False)])
async def test_a_write_a_script_sends_that_the_server_refuses_fails_its_step_and_export(
    tab: Tab, fixture_url: str, tmp_path: Path, button: str, refused: bool
) -> None:
    steps = (on("textbox", "Name", "fill", value="Ada"), on("button", button))
    recorded = scenario(fixture_url, *steps, page="refused-fetch.html")
    message, out = await replayed_and_exported(tab, recorded, tmp_path, refused=refused)
    if refused:
        assert "it sent POST" in message and "answered HTTP 501" in message
        # The export fails as the replay does, naming the write.
        assert "the server refused POST" in out and "HTTP 501" in out, out
