"""An upload the page refuses fails its step, in replay and in the pytest export.

A person attaches a receipt; the app checks it as it is chosen and refuses a type it
does not take: it empties the input and says "Only PDF receipts are accepted".  Before,
the upload step passed (the file was attached), the form was saved without the receipt,
and the replay and its export said succeeded.  Now the step is judged once the page is
done with the file (automation.browser.uploads.refused_files): refused where the input
says why it is invalid, is newly marked invalid, or lost the file while the page shows
a new error.  A widget that keeps the file itself and empties its input, a field still
marked from an earlier try, or an error the page showed before are no refusal.  An
agent's or an MCP client's upload or drop of files is judged alike."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from urllib.parse import unquote

import pytest

from automation import Tab
from automation.actions import execute
from automation.errors import ActionFailed
from automation.recording.export import to_pytest
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario, ScenarioStep
from tests.bounds import room
from tests.conftest import FIXTURES
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

# How the app takes the receipt (receipt.txt, a text file) as it is chosen: each a
# change handler of the file input, given `input`, `file` and `say(text)` (an error
# shown above the button).
TAKES = {
    # Refused:
    "emptied, said": 'input.value = ""; say("Only PDF receipts are accepted");',
    "custom validity": 'input.setCustomValidity("Only PDF receipts are accepted");',
    "marked, kept": 'input.setAttribute("aria-invalid", "true");'
                    'say("Only PDF receipts are accepted");',
    "checked by the server": 'fetch("/check", {method: "POST", body: file}).then((r) => {'
                             '  if (!r.ok) { input.value = "";'
                             '               say("Only PDF receipts are accepted"); } });',
    "asked the server": 'fetch("/check?name=" + file.name).then((r) => {'
                        '  if (!r.ok) { input.value = "";'
                        '               say("Only PDF receipts are accepted"); } });',
    "re-rendered, said": 'const fresh = input.cloneNode(); input.replaceWith(fresh);'
                         'say("Only PDF receipts are accepted");',
    # Taken:
    "kept": "",
    "kept by the widget": 'document.getElementById("chosen").textContent = file.name;'
                          'input.value = "";',
    "marked before": "",  # (the page came marked: "Receipt is required", from a try before)
    "an error shown before": "",
}  # fmt: skip
REFUSED = ("emptied, said", "custom validity", "marked, kept", "checked by the server",
           "asked the server", "re-rendered, said")  # fmt: skip
BEFORE = {
    "marked before": '<p class="error">Receipt is required</p>',
    "an error shown before": '<p class="error">The server was slow to answer earlier</p>',
}

PAGE = """<!doctype html><title>Expenses</title><main><h1>New expense</h1>{before}
<form method=post action="/save" enctype="multipart/form-data">
<label>Receipt <input type=file name=receipt id=receipt{marked}></label>
<p id=chosen></p><p id=msg></p><button>Save</button></form>
<script>
const say = (text) => {{ const m = document.getElementById("msg");
                         m.textContent = text; m.className = "error"; }};
document.getElementById("receipt").addEventListener("change", (e) => {{
  const input = e.target, file = input.files[0];
  if (file) {{ {take} }}
}});
</script></main>"""


class App(QuietHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/check?"):  # a file's check, that takes its time: no PDF
            threading.Event().wait(0.5)
            self.send(422, json.dumps({"error": "not a PDF"}).encode())
            return
        take = unquote(self.path.split("?take=", 1)[-1])
        marked = ' aria-invalid="true"' if take == "marked before" else ""
        page = PAGE.format(take=TAKES[take], before=BEFORE.get(take, ""), marked=marked)
        self.send(200, page.encode(), **{"Content-Type": "text/html"})

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/check":
            self.send(422, json.dumps({"error": "not a PDF"}).encode())
            return
        with_file = b'filename="receipt.txt"' in body
        said = f"Expense saved {'with' if with_file else 'without'} a receipt"
        self.send(200, f"<!doctype html><title>Saved</title><h1>{said}</h1>".encode(),
                  **{"Content-Type": "text/html"})  # fmt: skip


@pytest.fixture(scope="module")
def app() -> object:
    with loopback_app(App) as url:
        yield url


def expense(url: str, take: str) -> Scenario:
    """Attach the receipt, save, and see the expense saved (the app saves one without a
    receipt too: only the upload step can tell)."""
    field = {"role": "button", "name": "Receipt", "tag": "input"}
    save = {"role": "button", "name": "Save", "tag": "button"}
    steps = (
        ScenarioStep("navigate", {"url": f"{url}/new?take={take}"}),
        ScenarioStep.from_dict({"action": "upload", "args": {"files": ["receipt.txt"]},
                                "identity": field}),
        ScenarioStep.from_dict({"action": "click", "args": {}, "identity": save}),
        ScenarioStep("expect", {"kind": "text_visible", "text": "Expense saved"}),
    )  # fmt: skip
    return Scenario("Expense", steps, base_url=f"{url}/")


@pytest.mark.parametrize("take", sorted(TAKES))
async def test_an_upload_the_page_refuses_fails_its_step_in_replay_and_export(
    tab: Tab, app: str, take: str, tmp_path: Path
) -> None:
    scenario = expense(app, take)
    result = await Replay(tab, scenario, config=ReplayConfig(check_timeout_ms=3_000)).run()
    code, out = await run_exported(to_pytest(scenario), tmp_path, f"{app}/",
                                   env={"TABWRIGHT_UPLOAD_DIR": str(FIXTURES / "uploads")},
                                   timeout_ms=3_000)  # fmt: skip
    if take in REFUSED:
        assert result.status == "failed", result.to_dict()
        assert result.reason.startswith("step 1 (upload button 'Receipt')"), result.reason
        assert "the page refused receipt.txt: 'Only PDF receipts are accepted'" in result.reason
        assert [s.status for s in result.steps[2:]] == ["not_run", "not_run"]  # nothing saved
        assert code == 1, out
        assert ">       attach(" in out, out  # it failed at the upload
        if take == "checked by the server":  # the write its check sent, refused
            assert "the server refused POST" in out and "/check: HTTP 422" in out, out
        else:
            assert "the page refused receipt.txt: 'Only PDF receipts are accepted'" in out, out
    else:
        assert result.ok, result.to_dict()
        assert await tab.page.is_visible("text=Expense saved")
        assert code == 0, out


DROP_ZONE = """<!doctype html><title>Receipts</title><main><h1>Receipts</h1>
<div id=zone role=region aria-label="Drop receipts here">Drop receipts here</div>
<p id=said></p><ul id=kept></ul>
<script>
const zone = document.getElementById("zone");
zone.addEventListener("dragover", (e) => e.preventDefault());
zone.addEventListener("drop", async (e) => {
  e.preventDefault();
  const file = e.dataTransfer.files[0];
  await file.text();  // read first, as an app that looks inside does
  const said = document.getElementById("said");
  if (!file.name.startsWith("receipt")) {
    said.className = "error"; said.textContent = `${file.name} is not a receipt`; return;
  }
  document.getElementById("kept").insertAdjacentHTML("beforeend", `<li>${file.name}</li>`);
});
</script></main>"""


async def test_an_agent_is_told_the_page_refused_the_file_it_dropped_or_attached(
    tab: Tab, app: str
) -> None:
    """The engine's actions (an agent's, an MCP client's) say so too: a drop zone that
    reads the file and says "avatar.txt is not a receipt" refused it; a receipt dropped
    after it is taken (the error shown before is no refusal of it)."""
    await tab.page.set_content(DROP_ZONE)
    snap = await tab.snapshot()
    zone = next(r for r, e in snap.refs.items() if e.name == "Drop receipts here")
    with pytest.raises(ActionFailed, match=r"the page refused avatar\.txt: 'avatar\.txt is not a "):
        await execute(tab, "drop_files", {"ref": zone, "files": ["avatar.txt"]}, budget=room())
    said = await execute(tab, "drop_files", {"ref": zone, "files": ["receipt.txt"]}, budget=room())
    assert said.startswith("dropped receipt.txt"), said
    assert await tab.page.text_content("#kept") == "receipt.txt"

    await tab.page.goto(f"{app}/new?take=emptied, said")
    snap = await tab.snapshot()
    field = next(r for r, e in snap.refs.items() if e.name == "Receipt")
    with pytest.raises(ActionFailed, match=r"the page refused receipt\.txt: 'Only PDF receipts"):
        await execute(tab, "upload", {"ref": field, "files": ["receipt.txt"]}, budget=room())
