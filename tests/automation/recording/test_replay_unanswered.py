"""A write the server never answered, or refused in a frame, fails its step and its export
as a refused one does: a save sent by a script whose connection dropped (the checkbox stays
ticked, nothing saved), and a form a frame posted (a back office whose work area is an
iframe) answered HTTP 500.  Before, both passed: only a script's write answered 4xx/5xx
and the page's own document counted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario, ScenarioStep
from tests.automation.recording.test_replay_refused import refused_message, replayed_and_exported
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

PAGES = {
    "/settings.html": """<!doctype html><title>Settings</title><main><h1>Settings</h1>
<label><input type="checkbox" id="news"> Newsletter</label><p id="said"></p>
<script>
document.getElementById("news").addEventListener("change", (ev) => {
  fetch(location.pathname.includes("drop") ? "/api/drop" : "/api/news",
        {method: "POST", body: String(ev.target.checked)})
    .then(() => { document.getElementById("said").textContent = "Saved"; })
    .catch(() => {});  // the app says nothing and leaves the box ticked
});
</script></main>""",
    "/shell.html": """<!doctype html><title>Back office</title><h1>Back office</h1>
<iframe src="/frame.html" width="600" height="300"></iframe>""",
    "/frame.html": """<!doctype html><title>Customers</title><main><h2>Customers</h2>
<form method="post" action="/frame/save"><input name="note" aria-label="Note">
<button>Save</button></form></main>""",
}
PAGES["/drop/settings.html"] = PAGES["/settings.html"]
PAGES["/shell2.html"] = PAGES["/shell.html"].replace("/frame.html", "/frame2.html")
PAGES["/frame2.html"] = """<!doctype html><title>Customers</title><main><h2>Customers</h2>
<form method="post" action="/frame/next"><button>Next</button></form></main>"""


class _App(QuietHandler):
    def do_GET(self) -> None:
        body = PAGES.get(self.path.split("?")[0])
        self.send(200 if body else 404, (body or "not found").encode())

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/api/drop":  # the connection drops: no answer at all
            self.close_connection = True
            self.connection.close()
            return
        if self.path == "/frame/next":  # the frame's next page: the form of the save
            self.send(200, PAGES["/frame.html"].encode())
            return
        self.send(500 if self.path == "/frame/save" else 204)


@pytest.fixture(scope="module")
def app_url() -> Iterator[str]:
    with loopback_app(_App) as url:
        yield url


def on(role: str, name: str, **identity: str) -> ScenarioStep:
    tag = {"checkbox": "input", "button": "button"}[role]
    return ScenarioStep.from_dict({"action": "click", "args": {},
                                   "identity": {"role": role, "name": name, "tag": tag,
                                                **identity}})  # fmt: skip


@pytest.mark.parametrize(("path", "unanswered"), [("/drop/settings.html", True),
                                                   ("/settings.html", False)])  # fmt: skip
async def test_a_save_whose_connection_dropped_fails_its_step_and_its_export(
    tab: Tab, app_url: str, tmp_path: Path, path: str, unanswered: bool
) -> None:
    recorded = Scenario("Newsletter", (ScenarioStep("navigate", {"url": app_url + path}),
                                       on("checkbox", "Newsletter")),
                        base_url=app_url + "/")  # fmt: skip
    # The same save, answered: it passes, and so does its export.
    message, out = await replayed_and_exported(tab, recorded, tmp_path, refused=unanswered)
    if unanswered:
        assert "it sent POST" in message and "/api/drop, which got no answer (net::ERR_" in message
        assert "the server refused POST" in out and "no answer (net::ERR_" in out, out


async def test_a_form_a_frame_posted_that_the_server_refused_fails_its_step_and_export(
    tab: Tab, app_url: str, tmp_path: Path
) -> None:
    recorded = Scenario("Save a note", (
        ScenarioStep("navigate", {"url": f"{app_url}/shell.html"}),
        on("button", "Save", frame_url=f"{app_url}/frame.html"),
    ), base_url=app_url + "/")  # fmt: skip
    message = refused_message(await Replay(tab, recorded).run())
    assert "it sent POST" in message and "answered HTTP 500" in message
    code, out = await run_exported(to_pytest(recorded), tmp_path, recorded.base_url)
    assert code == 1 and "/frame/save: HTTP 500" in out, out


async def test_a_form_a_frame_posts_on_the_page_its_last_form_led_to_is_judged_too(
    tab: Tab, app_url: str
) -> None:
    """The frame's first form leads it to another page (a POST answered 200), whose form
    the server then refuses: the settle hears the frame's new document's form too, and
    the step fails (it listened to the frame's first document only)."""
    recorded = Scenario("Next, then save", (
        ScenarioStep("navigate", {"url": f"{app_url}/shell2.html"}),
        on("button", "Next", frame_url=f"{app_url}/frame2.html"),
        on("button", "Save", frame_url=f"{app_url}/frame/next"),
    ), base_url=app_url + "/")  # fmt: skip
    result = await Replay(tab, recorded).run()
    assert [o.status for o in result.steps[:2]] == ["passed", "passed"], result.to_dict()
    message = refused_message(result)
    assert "it sent POST" in message and "/frame/save, answered HTTP 500" in message
