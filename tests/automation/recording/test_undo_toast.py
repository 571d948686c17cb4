"""A deletion an app commits only once its undo toast has gone is made by replay and its
export alike, before they end.

A person deleted an invoice: its row went at once, a toast said "Invoice INV-7 deleted.
Undo", and only when the toast went, seconds later, did the app send the deletion. Replay
clicked Delete, saw the row gone, and ended (its hold waits for timers of up to three
seconds); the browser closed with the deletion still to come, and the replay said
succeeded where nothing was deleted, every day. The export alike. Now what the last steps
left for later is waited for at the end for longer (up to settle.END_HOLD_TIMER_MS): the
deletion is sent, and answered, before the verdict."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from automation import Tab
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario, ScenarioStep
from tests.automation.recording.test_recorder import click_center
from tests.exported import both_pass
from tests.net import QuietHandler, loopback_app
from tests.waiting import eventually

# The toast's time to undo: longer than the hold between steps, as undo toasts are.
UNDO_MS = 4_000
INVOICES = """<!doctype html><title>Invoices</title><h1>Invoices</h1><table>
ROWS</table><p role=status id=toast hidden><span id=said></span>
<button id=undo>Undo</button></p>
<script>
let timer = null;
function drop(n) {
  const row = document.getElementById("inv" + n);
  row.hidden = true;
  said.textContent = `Invoice INV-${n} deleted.`;
  toast.hidden = false;
  undo.onclick = () => { clearTimeout(timer); row.hidden = false; toast.hidden = true; };
  timer = setTimeout(async () => {
    toast.hidden = true;
    await fetch("/invoices/" + n, { method: "DELETE" });
    row.remove();
  }, UNDO_MS);
}
</script>""".replace("UNDO_MS", str(UNDO_MS))


@pytest.fixture
def app() -> Iterator[tuple[list, str]]:
    deleted: list = []

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            rows = "".join(
                f'<tr id=inv{n}><td>INV-{n}</td><td><button onclick="drop({n})">Delete'
                "</button></td></tr>" for n in (6, 7, 8)
            )  # fmt: skip
            self.send(200, INVOICES.replace("ROWS", rows).encode())

        def do_DELETE(self) -> None:
            deleted.append(self.path)
            self.send(204)

    with loopback_app(Handler) as url:
        yield deleted, url


async def recorded(tab: Tab, base: str, deleted: list) -> Scenario:
    await tab.navigate(f"{base}/invoices")
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "#inv7 button")
    await eventually(lambda: deleted == ["/invoices/7"], UNDO_MS / 1000 + 30, "the deletion")
    return Scenario("Delete INV-7", tuple(await recorder.stop()), base_url=f"{base}/")


async def test_a_deletion_sent_once_its_undo_toast_went_is_made_by_replay_and_export(
    tab: Tab, app: tuple[list, str], tmp_path: Path
) -> None:
    deleted, base = app
    await both_pass(tab, await recorded(tab, base, deleted), tmp_path, base, deleted)


async def test_a_deletion_undone_is_not_made(tab: Tab, app: tuple[list, str]) -> None:
    """The hold waits for the toast's timer; an undo clicked (a later step) clears it,
    and nothing is deleted: the hold ends as soon as no timer is left."""
    deleted, base = app
    scenario = await recorded(tab, base, deleted)
    named = {"role": "button", "name": "Undo", "tag": "button"}
    undo = ScenarioStep.from_dict({"action": "click", "args": {}, "identity": named})
    deleted.clear()
    both = Scenario("Delete, then undo", (*scenario.steps, undo), base_url=f"{base}/")
    result = await Replay(tab, both).run()
    assert result.ok, result.to_dict()
    assert deleted == []
    assert await tab.page.is_visible("#inv7")
