"""A wait for an address (``wait_for`` with a ``url``, as an agent's run records one) is
held by the URL check's rule in replay and in the pytest export: moved to the replay's base
URL as navigations are, and not passed by another page whose address only spells it (a
sign-in page's ``?next=``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from automation.browser.session import BrowserSession
from automation.recording.export import to_pytest
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

RECORDED = "http://127.0.0.1:9"  # where the run was recorded: another build, gone since


class _Orders(QuietHandler):
    """A home page whose link finishes the order; a signed-out session is sent to sign in
    first (``/login?next=/orders/done``)."""

    signed_out = False

    def do_GET(self) -> None:
        if self.path == "/orders/done" and self.signed_out:
            self.send(302, b"", Location="/login?next=/orders/done")
        elif self.path == "/orders/done":
            self.send(200, b"<h1>Order placed</h1>")
        elif self.path.startswith("/login"):
            self.send(200, b"<h1>Sign in</h1><label>Email <input name=email></label>")
        else:
            self.send(200, b'<h1>Cart</h1><a href="/orders/done">Place the order</a>')


class _SignedOut(_Orders):
    signed_out = True


def _scenario(origin: str, wait: str) -> Scenario:
    link = {"role": "link", "name": "Place the order", "tag": "a"}
    steps = [
        {"action": "navigate", "args": {"url": f"{origin}/"}},
        {"action": "click", "args": {}, "identity": link},
        {"action": "wait_for", "args": {"url": wait}},
    ]
    return Scenario.from_dict({"version": 1, "name": "Order", "base_url": origin, "steps": steps})


@pytest.mark.parametrize(
    ("app", "recorded_elsewhere", "reaches"),
    [(_Orders, True, True), (_SignedOut, False, False)],
    ids=["another-build", "sent-to-sign-in"],
)
async def test_a_wait_for_an_address_holds_as_a_url_check_in_replay_and_export(
    browser: BrowserSession,
    tmp_path: Path,
    app: type[_Orders],
    recorded_elsewhere: bool,
    reaches: bool,
) -> None:
    """Replayed on another build, the recorded address is this build's (the wait timed
    out on the recorded host, in replay and in the export); sent to sign in, the wait does
    not pass on ``/login?next=/orders/done`` (both said the order was placed)."""
    with loopback_app(app) as site:
        origin = RECORDED if recorded_elsewhere else site
        # The whole address recorded, or its path (a sign-in page's ``next`` spells it).
        scenario = _scenario(origin, f"{origin}/orders/done" if reaches else "/orders/done")
        tab = await browser.new_tab(workspace=tmp_path / "replay")
        try:
            config = ReplayConfig(step_timeout_ms=4_000)
            result = await Replay(tab, scenario, base_url=site, config=config).run()
            where = tab.page.url
        finally:
            await tab.close()
        (tmp_path / "export").mkdir()
        status, out = await run_exported(
            to_pytest(scenario), tmp_path / "export", site, timeout_ms=3_000
        )
    if reaches:
        assert result.ok, result.reason
        assert status == 0, out[-3000:]
    else:
        assert where.endswith("/login?next=/orders/done")
        assert not result.ok
        assert result.steps[-1].status == "failed"
        assert "/orders/done" in str(result.steps[-1].error)
        assert status != 0
        assert "the address to hold" in out, out[-3000:]
