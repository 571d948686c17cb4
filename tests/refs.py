"""Finding refs in a snapshot by role and name, for tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from automation.actions import execute
from automation.browser.session import BrowserSession
from automation.browser.snapshot import Snapshot
from automation.browser.tab import Tab
from automation.recording.scenario import ScenarioStep
from tests.bounds import room


def ref_of(snapshot: Snapshot, role: str, name: str, nth: int = 0) -> str:
    """The ref of the ``nth`` element with exactly this role and name; fails with the
    snapshot's text when there is none."""
    matches = [r for r in snapshot.refs.values() if r.role == role and r.name == name]
    assert len(matches) > nth, f"no {role} {name!r} #{nth} in\n{snapshot.text}"
    return matches[nth].ref


async def fresh_snapshot(browser: BrowserSession, url: str) -> Snapshot:
    """``url`` as a fresh tab snapshots it: the refs a run's new tab will give its elements."""
    probe = await browser.new_tab()
    try:
        await probe.navigate(url)
        return await probe.snapshot()
    finally:
        await probe.close()


async def acted(
    tab: Tab, url: str, acts: Sequence[tuple[str, str, str, dict[str, Any]]]
) -> tuple[ScenarioStep, ...]:
    """The steps of a run that opens ``url`` and does each of ``acts`` (action, role, name,
    args) on the element of that role and name, as an agent's steps are recorded: the
    element's identity taken before it acts, where the step ran and where it led."""
    await tab.navigate(url)
    rows: list[dict[str, Any]] = [{"action": "navigate", "args": {"url": url}}]
    for action, role, name, args in acts:
        at = tab.url
        target = await tab.target(ref_of(await tab.snapshot(), role, name))
        await execute(tab, action, {"ref": target.ref, **args}, budget=room())
        assert target.identity is not None
        rows.append({"action": action, "args": args, "identity": target.identity.to_dict(),
                     "url": at, "led_to": tab.url})  # fmt: skip
    return tuple(ScenarioStep.from_dict(row) for row in rows)
