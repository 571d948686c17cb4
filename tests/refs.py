"""Finding refs in a snapshot by role and name, for tests."""

from __future__ import annotations

from automation.browser.session import BrowserSession
from automation.browser.snapshot import Snapshot


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
