"""Writes of API tokens.  Small keyword-only functions named <entity>_<verb>."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from automation.errors import ActionInvalid
from dashboard.models import (
    ApiToken,
)

# -- API tokens: a person's key to the JSON API (dashboard/api/) ---------------------

TOKEN_PREFIX = "tw_"
TOKEN_USE_WRITE_S = 60  # last_used_at is written at most this often per token


def api_token_create(*, owner: AbstractBaseUser, name: str) -> tuple[ApiToken, str]:
    """A new token of ``owner``'s; returns it and the token itself, which is shown once
    and never kept (only its SHA-256)."""
    name = name.strip()
    if not name:
        raise ActionInvalid("name the token (what it is for)")
    if len(name) > 100:
        raise ActionInvalid("a token's name is at most 100 characters")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        owner=owner, name=name, prefix=secret[:10], digest=_token_digest(secret)
    )
    return token, secret


def api_token_revoke(*, owner: AbstractBaseUser, token_id: int) -> bool:
    """Delete one of ``owner``'s tokens: it stops working at once.  False if none."""
    deleted, _ = ApiToken.objects.filter(pk=token_id, owner=owner).delete()
    return bool(deleted)


def api_token_user(*, secret: str) -> AbstractBaseUser | None:
    """The active person ``secret`` is a token of, noting its use; None for anything else."""
    if not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        return None
    token = (
        ApiToken.objects.select_related("owner")
        .filter(digest=_token_digest(secret), owner__is_active=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > timedelta(
        seconds=TOKEN_USE_WRITE_S
    ):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.owner


def bearer_token(authorization: str) -> str:
    """The token of an ``Authorization: Bearer <token>`` header's value, else ""."""
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _token_digest(secret: str) -> str:
    # A token is 256 random bits: a fast hash is enough (nothing to guess or brute-force).
    return hashlib.sha256(secret.encode()).hexdigest()
