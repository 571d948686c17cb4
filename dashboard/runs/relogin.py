"""Signing in again in the middle of a replay: its scenario's login scenario.

A scenario may name a login scenario (``Scenario.login_scenario``).  When a step of its
replay fails on a page that asks to sign in (the run's sign-in profile expired, or the
site ended the session), the replay (automation.recording.replay, ``relogin``) runs the
login scenario in the same tab, with the run's secrets, then goes back to the step's page
and tries the step again.  When the run started with its owner's own sign-in profile,
the profile is saved again with the new sign-in, so the next run starts signed in.  The
run's page shows each time it happened (an observation event).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from channels.db import database_sync_to_async
from django.conf import settings

from automation.browser.storage import storage_state_read
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import ActionFailed
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario as Document
from automation.secrets import Secrets
from dashboard.models import Run, Scenario
from dashboard.runs.signins import signin_save
from dashboard.scenarios import selectors as scenario_selectors

__all__ = ["relogin_for"]

Relogin = Callable[[Budget], Awaitable[str]]


def _login_of(run: Run) -> tuple[str, Document, str] | None:
    """The login scenario of the run's scenario (its name and document) and the name of
    the run owner's own profile it started with ("" when none)."""
    scenario = Scenario.objects.filter(pk=run.scenario_id).select_related("login_scenario").first()
    login = scenario.login_scenario if scenario is not None else None
    if login is None:
        return None
    profile = run.signin_profile
    own = profile.name if profile is not None and profile.owner_id == run.owner_id else ""
    return login.name, scenario_selectors.scenario_document(scenario=login), own


async def relogin_for(run: Run, tab: Tab, secrets: Secrets) -> Relogin | None:
    """The replay's way to sign in again, when its scenario names a login scenario."""
    found = await database_sync_to_async(_login_of)(run)
    if found is None:
        return None
    name, document, profile = found

    async def relogin(budget: Budget) -> str:
        config = ReplayConfig(step_timeout_ms=settings.TABWRIGHT["ACTION_TIMEOUT_MS"],
                              run_timeout_ms=max(1, int(budget.remaining_ms())))  # fmt: skip
        result = await Replay(tab, document, base_url=run.start_url, secrets=secrets,
                              config=config).run()  # fmt: skip
        if not result.ok:
            raise ActionFailed(f"the login scenario {name!r} did not pass: {result.reason}")
        said = f"signed in again with the login scenario {name!r}"
        if profile:
            state = await storage_state_read(tab.context, budget=budget)
            parts = urlsplit(tab.page.url)
            await database_sync_to_async(signin_save)(
                owner_id=run.owner_id, name=profile, state=state, run_id=run.pk,
                site=f"{parts.scheme}://{parts.netloc}" if parts.netloc else "",
            )  # fmt: skip
            said += f"; the sign-in profile {profile!r} was saved again"
        return said

    return relogin
