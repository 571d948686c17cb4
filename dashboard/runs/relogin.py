"""Signing in again in the middle of a replay: its scenario's login scenario.

A scenario may name a login scenario (``Scenario.login_scenario``; its document brings
it in ``callees``).  When a step of its replay fails on a page that asks to sign in (the
run's sign-in profile expired, or the site ended the session), the replay runs the login
scenario in the same tab, with the run's secrets (automation.recording.relogin: every
replay of the document does so), then goes back to the step's page and tries the step
again.  When the run started with its owner's own sign-in profile, the profile is saved
again with the new sign-in, so the next run starts signed in.  The run's page shows each
time it happened (an observation event).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from channels.db import database_sync_to_async

from automation.browser.storage import storage_state_read
from automation.budget import Budget
from automation.recording.relogin import Relogin
from automation.recording.replay import Replay
from dashboard.models import Run
from dashboard.runs.signins import signin_save

__all__ = ["relogin_for"]


def _own_profile(run: Run) -> str:
    """The name of the run owner's own sign-in profile it started with ("" when none)."""
    profile = run.signin_profile
    return profile.name if profile is not None and profile.owner_id == run.owner_id else ""


async def relogin_for(run: Run, replay: Replay) -> Relogin | None:
    """The run's ``replay``'s way to sign in again, when its scenario names a login
    scenario (which its document brings): the engine's own (:attr:`Replay.relogin`),
    and the run's own profile saved again."""
    sign_in = replay.relogin
    if sign_in is None:
        return None
    profile = await database_sync_to_async(_own_profile)(run)
    if not profile:
        return sign_in
    tab = replay.tab

    async def relogin(budget: Budget) -> str:
        said = await sign_in(budget)
        state = await storage_state_read(tab.context, budget=budget)
        parts = urlsplit(tab.page.url)
        await database_sync_to_async(signin_save)(
            owner_id=run.owner_id, name=profile, state=state, run_id=run.pk,
            site=f"{parts.scheme}://{parts.netloc}" if parts.netloc else "",
        )  # fmt: skip
        return f"{said}; the sign-in profile {profile!r} was saved again"

    return relogin
