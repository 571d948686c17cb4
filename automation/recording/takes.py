"""What a replay of a scenario takes: its own parameters, and its login scenario's.

:func:`replay_takes` is the one list every place that gives a replay its values reads:
the replay's own check (:meth:`Scenario.resolve
<automation.recording.scenario.Scenario.resolve>`), the dashboard's replay form, a
batch's columns, a schedule's values, the API's ``params`` and the checks of an edit.

A scenario's own parameters (those its steps use and those it declares) are needed
before its first step, unless they have a default.  Its login scenario signs in again
with the values the replay was given (a batch row's ``user`` signs in again as that
user: :mod:`automation.recording.relogin`), so the login scenario's parameters are taken
too; one that only the login scenario has is needed only when the replay signs in again,
as the login scenario's secrets are: without a value or a default of its own then,
signing in again fails, naming it and the login scenario.  A name both have is the
scenario's own: its value (given, or its default) is the one the login scenario signs in
with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from automation.recording.calls import brought_login

if TYPE_CHECKING:
    from automation.recording.scenario import Scenario

__all__ = ["Taken", "replay_takes"]


@dataclass(frozen=True)
class Taken:
    """One parameter a replay takes: its default (None: none) and, when only the login
    scenario has it, that scenario's name (``login``)."""

    default: str | None = None
    login: str = ""

    @property
    def needed(self) -> bool:
        """Whether a replay needs a value for it before its first step: the scenario's
        own without a default (the login scenario's is needed when it signs in again)."""
        return self.default is None and not self.login


def replay_takes(scenario: Scenario) -> dict[str, Taken]:
    """Each parameter a replay of ``scenario`` takes, by name (sorted): its own, then
    the parameters of the login scenario it brings that it has not."""
    own = scenario.placeholders()[0] | set(scenario.params)
    takes = {name: Taken(_default(scenario, name)) for name in sorted(own)}
    login = brought_login(scenario)  # (which brings none of its own)
    if login is not None:
        for name in sorted(login.placeholders()[0] | set(login.params)):
            takes.setdefault(name, Taken(_default(login, name), login=login.name))
    return takes


def _default(scenario: Scenario, name: str) -> str | None:
    default = (scenario.params.get(name) or {}).get("default")
    return None if default is None else str(default)
