"""A write refused inside a frame a step acted in fails the step, whatever site the frame
is from: a vendor's contact widget (another site than the page around it) whose Save the
server answered 500 said so in plain words (no alert), and the replay and its export
passed; the same widget on the page's own site failed.  A frame no step acted in (an
analytics widget whose own post failed) is not the scenario's to judge."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario, ScenarioStep
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

WIDGET = """<!doctype html><title>Widget</title><h2>Contact</h2>
<label>Phone <input id=phone></label> <button id=save>Save phone</button><p id=said></p>
<script>
save.onclick = async () => {
  const answer = await fetch("/api/save", {method: "POST", body: phone.value});
  said.textContent = answer.ok ? "Saved" : "Could not save the phone number";
};
</script>"""
# A frame of another site whose script posts on its own, answered 500 when ``refused``.
BEACON = """<!doctype html><title>Stats</title><p>Stats</p>
<script>fetch("/api/beacon", {method: "POST", body: "seen"});</script>"""


class _Crm(QuietHandler):
    """A customer's page holding a widget (``?at=`` its host: the page's own, or another
    site) and a stats frame of another site; ``refused``: the saves answered 500."""

    refused = False
    saved: list[str] = []

    def do_GET(self) -> None:
        where = urlsplit(self.path)
        port = self.server.server_address[1]
        if where.path == "/customer":
            at = parse_qs(where.query)["at"][0]
            self.send(200, (
                "<!doctype html><title>Customer</title><h1>Customer Ada</h1>"
                f"<iframe src='http://{at}:{port}/widget' title=Contact width=400 height=150>"
                f"</iframe><iframe src='http://localhost:{port}/stats' title=Stats></iframe>"
            ).encode())  # fmt: skip
            return
        self.send(200, (WIDGET if where.path == "/widget" else BEACON).encode())

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        if self.path == "/api/beacon":
            self.send(500, b"stats are down", Content_Type="text/plain")
        elif self.refused:
            self.send(500, b"error", Content_Type="text/plain")
        else:
            _Crm.saved.append(body)
            self.send(200, b"ok", Content_Type="text/plain")


def _on(frame: str, role: str, name: str, action: str, **args: object) -> ScenarioStep:
    identity = {"role": role, "name": name, "tag": "button" if role == "button" else "input",
                "frame_url": frame}  # fmt: skip
    return ScenarioStep.from_dict({"action": action, "args": args, "identity": identity})


@pytest.mark.parametrize("at", ["127.0.0.1", "localhost"], ids=["own site", "another site"])
async def test_a_save_refused_in_a_frame_a_step_acted_in_fails_the_step(
    tab: Tab, tmp_path: Path, at: str
) -> None:
    with loopback_app(_Crm) as app:
        widget = f"http://{at}:{urlsplit(app).port}/widget"
        steps = (ScenarioStep("navigate", {"url": f"{app}/customer?at={at}"}),
                 _on(widget, "textbox", "Phone", "fill", value="555-0100"),
                 _on(widget, "button", "Save phone", "click"))  # fmt: skip
        scenario = Scenario("Save the phone", steps, base_url=app)
        code = to_pytest(scenario)
        _Crm.refused, _Crm.saved = True, []
        result = await Replay(tab, scenario).run()
        assert result.status == "failed", result.to_dict()
        assert "POST" in result.reason and "/api/save" in result.reason, result.reason
        assert "HTTP 500" in result.reason, result.reason
        status, out = await run_exported(code, tmp_path, app)
        assert status == 1 and "/api/save: HTTP 500" in out, out
        # Saved: both pass, the stats frame's own refused post no step's.
        _Crm.refused = False
        result = await Replay(tab, scenario).run()
        assert result.ok, result.to_dict()
        (tmp_path / "saved").mkdir()
        status, out = await run_exported(code, tmp_path / "saved", app)
        assert status == 0, out
        assert _Crm.saved == ["555-0100", "555-0100"]
