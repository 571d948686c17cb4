"""What a Save sent, from an agent's run through its saved scenario to a replay on the
next build, as a person crosses it on the dashboard.

The agent renames a profile and clicks Save, and the page sends ``POST api/profile``;
the person saves the run as a scenario.  The next build's Save returns at a check of its
own (a grey hint, no error mark) and sends nothing: its replay fails, saying what the
Save sent when recorded.  Where the person decides the step is not to be judged so (its
app saves some other way now), they empty its "sent" on the scenario's page and the
replay no longer fails on it."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

from playwright.async_api import Page, expect

from automation import BrowserSession
from tests.e2e.ui import LIVE_MS, Server, log_in, save, start_run
from tests.net import QuietHandler, loopback_app
from tests.refs import fresh_snapshot, ref_of


class _Profile(QuietHandler):
    """A profile on two builds: ``/v1/``'s Save sends it; ``/v2/``'s returns at its own
    check of the phone (said in grey) and sends nothing.  Each save kept in ``saved``."""

    saved: list[str] = []

    def do_GET(self) -> None:
        build = urlsplit(self.path).path.split("/")[1]
        stop = "return;" if build == "v2" else ""
        hint = "Phone must start with a country code." if build == "v2" else ""
        self.send(
            200,
            f"""<!doctype html><title>Profile</title><h1>Profile</h1>
            <label>Name <input id=nm value="Ann Lee"></label>
            <p style="color:#888">{hint}</p><button id=go>Save</button><p id=msg></p>
            <script>go.onclick = () => {{ {stop}
              fetch("api/profile", {{method: "POST", body: nm.value}})
                .then(() => {{ msg.textContent = "Saved"; }});
            }};</script>""".encode(),
        )

    def do_POST(self) -> None:
        self.saved.append(self.rfile.read(int(self.headers["Content-Length"])).decode())
        self.send(200, b'{"ok": true}', Content_Type="application/json")


async def test_a_save_the_next_build_does_not_send_fails_its_replay_until_the_person_says(
    page: Page, server: Server, browser: BrowserSession, tmp_path: Path
) -> None:
    _Profile.saved = []
    with loopback_app(_Profile) as app:
        snap = await fresh_snapshot(browser, f"{app}/v1/profile")
        click = {"action": "click", "ref": ref_of(snap, "button", "Save")}
        server.llm.script(
            "<action>" + json.dumps(click) + "</action>",
            '<action>{"action": "done", "summary": "profile saved"}</action>',
        )
        await log_in(page, server)
        await start_run(page, f"{app}/v1/profile", "Save the profile", planner="openai")
        await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
        assert _Profile.saved == ["Ann Lee"], _Profile.saved

        await page.get_by_role("link", name="Save as scenario…").click()
        await page.get_by_label("Name", exact=True).fill("Save the profile")
        for box in await page.get_by_test_id("proposed-checks").get_by_role("checkbox").all():
            await box.uncheck()
        await page.get_by_role("button", name="Save as scenario").click()
        await expect(
            page.get_by_role("heading", name="Save the profile", exact=True)
        ).to_be_visible()
        scenario_url = page.url

        await page.locator("#replay").get_by_label("Base URL").fill(f"{app}/v2/")
        await page.get_by_role("button", name="Replay").click()
        await expect(page.locator("#status")).to_have_text("failed", timeout=LIVE_MS)
        await expect(page.locator("body")).to_contain_text(
            "it sent nothing, where it sent POST /v1/api/profile when recorded"
        )
        await save(page, "seams-sent-nothing-failed.png")
        assert _Profile.saved == ["Ann Lee"], _Profile.saved

        await page.goto(scenario_url)
        step = page.get_by_test_id("step-1")  # the Save (step 0 goes to the profile)
        await step.get_by_text("Change values").click()
        sent = step.get_by_label("sent", exact=True)
        await expect(sent).to_have_value("POST /v1/api/profile")
        await sent.fill("")
        await step.get_by_role("button", name="Save step 1").click()
        await expect(page.get_by_role("status")).to_contain_text("changed")
        await page.locator("#replay").get_by_label("Base URL").fill(f"{app}/v2/")
        await page.get_by_role("button", name="Replay").click()
        await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
