"""Sign-in profiles: a site's signed-in state (cookies and each origin's localStorage)
saved from a run's tab under a name, and runs that start with it.

The state is kept only encrypted (Fernet, from ``cryptography``: AES-128-CBC with an
HMAC-SHA256, a timestamp, one token) with the server's keys, ``TABWRIGHT_PROFILE_KEYS``
(the first encrypts, each decrypts, so a key can be rotated), else a key derived from
Django's SECRET_KEY.  It is read back only where a run's browser context is made
(:func:`signin_state_for_run`), never shown, listed or exported: pages and the API show a
profile's name, site and counts.  Its owner and those granted it (users, groups; every
profile for a superuser) may start runs with it; only its owner saves over it.

Errors say which profile and what to do, never a value: a profile this server's keys
can't open (saved under another key), one the run's owner may not use, one whose cookies
have all expired.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.db import IntegrityError, transaction

from automation.browser.storage import storage_state_checked
from automation.errors import ActionInvalid
from dashboard.models import Run, SigninProfile, signin_refusal

__all__ = [
    "MAX_NAME_CHARS",
    "SigninRefused",
    "signin_by_name",
    "signin_fernet",
    "signin_open",
    "signin_save",
    "signin_seal",
    "signin_state_for_run",
    "signins_usable_by",
]  # fmt: skip

MAX_NAME_CHARS = 100
# A state larger than this is not a sign-in (Playwright's own files are a few KB).
MAX_STATE_BYTES = 5_000_000
SAVE_AGAIN = "sign in again in a run and press Save sign-in under the same name"


class SigninRefused(ActionInvalid):
    """A sign-in profile that can't be used: names the profile and says why."""

    code = "signin_refused"


def signin_fernet() -> MultiFernet:
    """The server's keys: TABWRIGHT_PROFILE_KEYS, else one derived from SECRET_KEY."""
    keys = list(settings.TABWRIGHT.get("PROFILE_KEYS") or ())
    if not keys:
        digest = hashlib.sha256(b"tabwright sign-in profiles\0" + settings.SECRET_KEY.encode())
        keys = [base64.urlsafe_b64encode(digest.digest()).decode("ascii")]
    try:
        return MultiFernet([Fernet(key) for key in keys])
    except ValueError:
        raise ActionInvalid(
            "TABWRIGHT_PROFILE_KEYS holds a key that is not a Fernet key",
            hint="make one with: python -c 'from cryptography.fernet import Fernet; "
            "print(Fernet.generate_key().decode())'",
        ) from None


def signin_seal(state: dict[str, Any]) -> bytes:
    """The state encrypted for the database."""
    data = json.dumps(storage_state_checked(state), separators=(",", ":")).encode()
    if len(data) > MAX_STATE_BYTES:
        raise ActionInvalid(f"the signed-in state is larger than {MAX_STATE_BYTES} bytes")
    return signin_fernet().encrypt(data)


def signin_open(profile: SigninProfile) -> dict[str, Any]:
    """The profile's state, decrypted and checked; SigninRefused when it can't be."""
    try:
        data = signin_fernet().decrypt(bytes(profile.state))
    except InvalidToken:
        raise SigninRefused(
            f"the sign-in profile {profile.name!r} can't be read with this server's keys "
            "(it was saved under another key)",
            hint=f"{SAVE_AGAIN}, or put its key back in TABWRIGHT_PROFILE_KEYS",
        ) from None
    try:
        return storage_state_checked(json.loads(data), where=f"the profile {profile.name!r}")
    except (ValueError, ActionInvalid):
        raise SigninRefused(f"the sign-in profile {profile.name!r} is damaged",
                            hint=SAVE_AGAIN) from None  # fmt: skip


def signins_usable_by(user: Any) -> Any:
    """The profiles ``user`` may start runs with (a queryset, by name)."""
    return SigninProfile.objects.usable_by(user).select_related("owner")


def signin_save(
    *, owner_id: int, name: str, state: dict[str, Any], site: str = "", run_id: int | None = None
) -> SigninProfile:
    """Save ``state`` as the owner's profile ``name`` (over their own of that name)."""
    name = " ".join(name.split())
    if not name or len(name) > MAX_NAME_CHARS:
        raise ActionInvalid(f"a sign-in profile needs a name of 1 to {MAX_NAME_CHARS} characters")
    fields = _saved(state, site, run_id)
    try:
        with transaction.atomic():
            profile, _ = SigninProfile.objects.update_or_create(
                owner_id=owner_id, name=name, defaults=fields
            )
    except IntegrityError:  # saved by another request at the same moment: saved over it
        profile = SigninProfile.objects.get(owner_id=owner_id, name=name)
        SigninProfile.objects.filter(pk=profile.pk).update(**fields)
    return profile


def signin_save_again(
    *, profile_id: int, owner_id: int, state: dict[str, Any], site: str = "",
    run_id: int | None = None,
) -> bool:  # fmt: skip
    """Save ``state`` over the owner's profile ``profile_id`` (a run's, signed in again),
    only while it is there: a profile deleted meanwhile (to end a saved session, say)
    stays deleted.  Whether it was saved."""
    fields = _saved(state, site, run_id)
    with transaction.atomic():
        return bool(SigninProfile.objects.filter(pk=profile_id, owner_id=owner_id).update(**fields))


def _saved(state: dict[str, Any], site: str, run_id: int | None) -> dict[str, Any]:
    """A profile's fields for ``state`` saved (sealed, with its counts)."""
    return {"state": signin_seal(state), "site": site[:300], "saved_from_id": run_id,
            "cookies": len(state.get("cookies") or []),
            "origins": len(state.get("origins") or [])}  # fmt: skip


def signin_state_for_run(run: Run) -> tuple[dict[str, Any], str] | None:
    """The state the run's browser context starts with and its profile's name (None: no
    profile); SigninRefused for a profile its owner may not use, can't be read, or whose
    cookies all expired."""
    if refusal := signin_refusal(run):
        raise SigninRefused(refusal, hint="start it again with another sign-in profile, or none")
    if run.signin_profile_id is None:
        return None
    profile = signins_usable_by(run.owner).filter(pk=run.signin_profile_id).first()
    if profile is None:
        raise SigninRefused(
            "the run's sign-in profile is not granted to its owner",
            hint="its owner grants it to users and groups in the admin (Sign-in profiles)",
        )
    state = signin_open(profile)
    cookies = state["cookies"]
    ends = [c["expires"] for c in cookies if isinstance(c.get("expires"), int | float)]
    if cookies and len(ends) == len(cookies) and all(0 < end < time.time() for end in ends):
        raise SigninRefused(
            f"the sign-in profile {profile.name!r} has expired: all its cookies ended",
            hint=SAVE_AGAIN,
        )
    return state, profile.name


def signin_by_name(user: Any, name: str) -> SigninProfile | None:
    """The sign-in profile ``name`` that ``user`` may start runs with (their own first;
    None for no name), or SigninRefused naming those there are."""
    if not name:
        return None
    usable = signins_usable_by(user)
    found = sorted(usable.filter(name=name), key=lambda p: p.owner_id != user.pk)
    if not found:
        names = sorted({p.name for p in usable})
        there = ", ".join(map(repr, names)) if names else "none (save one from a run's page)"
        raise SigninRefused(f"no sign-in profile {name!r} usable by you",
                            hint=f"the profiles you may use: {there}")  # fmt: skip
    return found[0]
