"""Which environment variables an LLM profile may read its API key from.

A profile names a variable and a base URL, and the key is sent to that URL as a bearer
token.  So whoever can edit a profile could send any variable of the server's environment
anywhere: Tabwright's own (``TABWRIGHT_SECRET_*`` values typed into pages, the metrics
token, the Django secret key) or another service's credentials (``AWS_SECRET_ACCESS_KEY``,
``DATABASE_URL``).  The rule, checked when a profile is saved AND when a run reads the key
(so a row stored before the rule can't be used):

- ``TABWRIGHT_LLM_API_KEY``, the documented default, is allowed;
- no other ``TABWRIGHT_*`` name is (Tabwright's settings and secrets);
- by default a name must end in ``_API_KEY`` (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``,
  ``GROQ_API_KEY``...): a name that says it is an API key, which infrastructure secrets
  (``*_SECRET_ACCESS_KEY``, ``*_TOKEN``, ``*_PASSWORD``, ``SECRET_KEY``) do not;
- an operator who wants exactly a list instead names it (``allowed``, from
  ``TABWRIGHT_LLM_KEY_VARIABLES``): then only those names, Tabwright's own still refused.

An allow rule, not a deny list: the variables a server may hold can't be listed, the shape
of an LLM key's name can.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping

from automation.errors import LLMError

__all__ = ["DEFAULT_KEY_ENV", "api_key_from_env", "key_env_refusal"]

DEFAULT_KEY_ENV = "TABWRIGHT_LLM_API_KEY"
_API_KEY_NAME = re.compile(r"[A-Z][A-Z0-9_]*_API_KEY")


def key_env_refusal(name: str, *, allowed: Collection[str] = ()) -> str:
    """Why ``name`` may not hold an LLM profile's key ("" when it may)."""
    if name == DEFAULT_KEY_ENV:
        return ""
    if name.startswith("TABWRIGHT_"):
        return (
            f"{name} is one of Tabwright's own variables (settings and ${{SECRET:…}} values); "
            f"use {DEFAULT_KEY_ENV} or a name like OPENAI_API_KEY"
        )
    if allowed:
        if name in allowed:
            return ""
        return f"{name} is not among the key variables the operator allows: " + ", ".join(
            sorted(allowed)
        )
    if not _API_KEY_NAME.fullmatch(name):
        return (
            f"{name} does not name an API key: use a variable whose name ends in _API_KEY "
            "(e.g. OPENAI_API_KEY)"
        )
    return ""


def api_key_from_env(
    name: str,
    *,
    allowed: Collection[str] = (),
    environ: Mapping[str, str] = os.environ,
    what: str = "the LLM profile",
) -> str:
    """The key held by the variable ``name`` ("" when unset); LLMError, without reading it,
    when ``name`` may not hold a key (:func:`key_env_refusal`)."""
    refusal = key_env_refusal(name, allowed=allowed)
    if refusal:
        raise LLMError(
            f"{what} may not read its API key from {name}: {refusal}",
            hint="an admin can change the profile's API key variable",
        )
    return environ.get(name, "")
