"""Signing in again in the middle of a replay: its scenario's login scenario.

A scenario may name a login scenario (``Scenario.login_scenario``; its document brings
it in ``callees``).  When a step of its replay fails on a page that asks to sign in (the
run's sign-in profile expired, or the site ended the session), the replay runs the login
scenario in the same tab, with the run's secrets (automation.recording.relogin: every
replay of the document does so), then goes back to the step's page and tries the step
again.  When the run started with its owner's own sign-in profile, the profile is saved
again with the new sign-in, so the next run starts signed in (unless it was deleted
meanwhile: a deleted profile is not made again), but only when the login scenario signed
in with its own values: a batch row, a schedule or a replay that gives it another value
(the row's ``user``) signed in as someone else, and the profile, shared by every run that
starts with it, keeps its own sign-in.  The run's page shows each time it happened (an
observation event).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from channels.db import database_sync_to_async

from automation.browser.storage import storage_state_read
from automation.budget import Budget
from automation.recording.relogin import Relogin, signs_in_as_given
from automation.recording.replay import Replay
from dashboard.models import Run
from dashboard.runs.signins import signin_save_again

__all__ = ["relogin_for"]


def _own_profile(run: Run) -> tuple[int, str] | None:
    """The run owner's own sign-in profile it started with (id, name), if any."""
    profile = run.signin_profile
    if profile is None or profile.owner_id != run.owner_id:
        return None
    return profile.pk, profile.name


async def relogin_for(run: Run, replay: Replay) -> Relogin | None:
    """The run's ``replay``'s way to sign in again, when its scenario names a login
    scenario (which its document brings): the engine's own (:attr:`Replay.relogin`),
    and the run's own profile saved again."""
    sign_in = replay.relogin
    if sign_in is None:
        return None
    own = await database_sync_to_async(_own_profile)(run)
    if own is None:
        return sign_in
    profile_id, name = own
    tab = replay.tab
    given = signs_in_as_given(replay)

    async def relogin(budget: Budget) -> str:
        said = await sign_in(budget)
        if given:
            names = ", ".join(map(repr, given))
            return (f"{said}; the sign-in profile {name!r} was not saved again: the login "
                    f"scenario signed in with the value this replay gave {names}, not its "
                    "own, and the profile keeps its own sign-in")  # fmt: skip
        state = await storage_state_read(tab.context, budget=budget)
        parts = urlsplit(tab.page.url)
        saved = await database_sync_to_async(signin_save_again)(
            profile_id=profile_id, owner_id=run.owner_id, state=state, run_id=run.pk,
            site=f"{parts.scheme}://{parts.netloc}" if parts.netloc else "",
        )  # fmt: skip
        if not saved:
            return f"{said}; the sign-in profile {name!r} was deleted meanwhile: not saved again"
        return f"{said}; the sign-in profile {name!r} was saved again"

    return relogin
