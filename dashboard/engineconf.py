"""What the engine runs with, from the settings and the database: the browser (URL policy,
sandbox, tabs, tools) and the planner (LLM profiles and their keys, or the rule planner)."""

from __future__ import annotations

import os
import re
import time
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from automation import BrowserConfig
from automation.browser.url_policy import UrlPolicy
from automation.budget import Budget
from automation.errors import LLMError
from automation.llm.base import ChatMessage, Planner, PlannerRequest
from automation.llm.keys import api_key_from_env, key_env_refusal
from dashboard.lib.urls import plain_url
from dashboard.models import LLMProfile, Run
from dashboard.runs import selectors, services

__all__ = [
    "PLANNER_KINDS",
    "base_url_checked",
    "browser_config",
    "chromium_sandbox_setting",
    "demo_rules",
    "make_planner",
    "planner_choice",
    "planner_for_run",
    "url_policy",
]


def url_policy() -> UrlPolicy:
    """The URL policy the operator configured: the settings (TABWRIGHT_*_DOMAINS) and the
    enabled URL rules of the admin.  Reads the database."""
    conf = settings.TABWRIGHT
    allowed, blocked = selectors.url_rule_domains()
    return UrlPolicy(
        allowed_domains=(*conf["ALLOWED_DOMAINS"], *allowed),
        blocked_domains=(*conf["BLOCKED_DOMAINS"], *blocked),
        block_private=bool(conf["BLOCK_PRIVATE_ADDRESSES"]),
        extra_allowed=demo_rules(),
    )


def base_url_checked(url: str) -> str:
    """A base URL a person gave a replay, a batch or a schedule: one plain absolute http(s)
    URL (no control character or whitespace in it: UrlInvalid saying where) that the URL
    policy lets runs open (UrlBlocked)."""
    return url_policy().check(plain_url(url))


def demo_rules() -> tuple[str, ...]:
    """With DEBUG, the dashboard's own /demo/ pages: an allow rule for each demo origin's
    host, port and /demo/ path, so the demo works while private addresses stay blocked
    and the dashboard's other pages (the admin) stay out of the agent's reach."""
    if not settings.DEBUG:
        return ()
    rules = []
    for origin in settings.TABWRIGHT.get("DEMO_ORIGINS", ()):
        scheme, sep, host_port = origin.strip().rstrip("/").partition("://")
        if not sep:
            host_port, scheme = scheme, "http"
        if scheme.lower() != "http":
            raise ImproperlyConfigured(
                f"TABWRIGHT_DEMO_ORIGIN {origin!r}: the demo pages are served over http://"
            )
        rules.append(f"{host_port}/demo/")
    return tuple(rules)


def chromium_sandbox_setting() -> bool | None:
    """TABWRIGHT_CHROMIUM_SANDBOX: None for auto (the engine decides), else forced."""
    value = settings.TABWRIGHT.get("CHROMIUM_SANDBOX", "auto")
    choices: dict[str, bool | None] = {"auto": None, "1": True, "0": False}
    if value not in choices:
        raise ImproperlyConfigured(f"TABWRIGHT_CHROMIUM_SANDBOX={value!r}: give auto, 1 or 0")
    return choices[value]


def cdp_urls() -> tuple[str, ...]:
    """TABWRIGHT_CDP_URL: the running Chromes to reach instead of launching one, separated
    by spaces or commas (a worker spreads its runs over them); () when unset."""
    urls = tuple(part for part in re.split(r"[\s,]+", settings.TABWRIGHT["CDP_URL"]) if part)
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https", "ws", "wss") or not parts.hostname:
            raise ImproperlyConfigured(
                f"TABWRIGHT_CDP_URL {url!r}: give http://host:port (a Chrome started with "
                "--remote-debugging-port) or its ws:// address; several separated by spaces"
            )
    return urls


def browser_config(*, cdp_url: str | None = None) -> BrowserConfig:
    """The engine's browser settings; ``cdp_url``: which of :func:`cdp_urls` (the first
    unless given)."""
    conf = settings.TABWRIGHT
    if cdp_url is None:
        cdp_url = next(iter(cdp_urls()), "")
    return BrowserConfig(
        executable_path=conf["CHROMIUM_PATH"],
        cdp_url=cdp_url,
        headless=conf["HEADLESS"],
        action_timeout_ms=conf["ACTION_TIMEOUT_MS"],
        url_policy=url_policy(),
        chromium_sandbox=chromium_sandbox_setting(),
        upload_dir=conf["UPLOAD_DIR"],
        evaluate_enabled=bool(conf["ALLOW_EVALUATE"]),
        shell_commands=tuple(conf["SHELL_COMMANDS"]),
        max_tabs=conf["MAX_TABS"],
        max_download_bytes=max(1, int(conf["MAX_DOWNLOAD_MB"])) * 1024 * 1024,
        contexts_per_browser=max(0, int(conf["CONTEXTS_PER_BROWSER"])),
    )


PLANNER_KINDS = ("rules", "openai", "anthropic")


def planner_choice(
    *, kind: str = "", profile: LLMProfile | None = None
) -> tuple[str, LLMProfile | None]:
    """What a run uses: its profile; else the planner it chose (``rules`` from the form is
    a choice); else the default profile; else the settings' PLANNER.  Reads the database."""
    if profile is not None:
        return profile.provider, profile
    if kind:
        return kind, None
    default = selectors.llm_profile_default()
    if default is not None:
        return default.provider, default
    return settings.TABWRIGHT["PLANNER"], None


def make_planner(kind: str = "", *, profile: LLMProfile | None = None) -> Planner:
    """The planner :func:`planner_choice` picks.  LLMError when it can't be made: an
    unknown kind, a provider this version lacks, or a profile's key variable not set."""
    kind, profile = planner_choice(kind=kind, profile=profile)
    if profile is not None:
        return _profile_planner(profile)
    conf = settings.TABWRIGHT
    if kind == "rules":
        from automation.llm.rules import RulePlanner

        return RulePlanner()
    if kind in ("openai", "anthropic"):
        return _llm_planner(
            kind,
            base_url=conf["LLM_BASE_URL"],
            model=conf["LLM_MODEL"],
            api_key=os.environ.get(conf["LLM_API_KEY_ENV"], ""),
        )
    raise LLMError(f"unknown planner {kind!r}", hint="use " + ", ".join(PLANNER_KINDS))


def planner_for_run(run: Run) -> Planner:
    """Record what the run uses (so its page says so, even if it fails to start), then
    make it."""
    kind, profile = planner_choice(kind=run.planner, profile=run.llm_profile)
    if (kind, profile) != (run.planner, run.llm_profile):
        services.run_set_planner(run_id=run.pk, planner=kind, llm_profile=profile)
    return make_planner(kind, profile=profile)


def profile_key_problem(profile: LLMProfile) -> str:
    """Why a run with ``profile`` can't get its API key ("" when it can, or sends none)."""
    name = profile.api_key_env
    if not name:
        return ""
    if key_env_refusal(name, allowed=settings.TABWRIGHT["LLM_KEY_VARIABLES"]):
        return f"key variable {name} may not be used"
    if not profile.key_is_set:
        return f"key variable {name} is not set"
    return ""


def heal_model_problem(profile: LLMProfile | None) -> str:
    """Why a replay can't use ``profile`` for changed pages ("" when it can)."""
    problem = profile_key_problem(profile) if profile is not None else ""
    if not problem:
        return ""
    assert profile is not None
    return f"{profile.name} can't heal replays: its {problem} on this server"


def heal_model_refusal(profile: LLMProfile | None, name: str) -> str:
    """Why the replays of a batch or a schedule can't have the model chosen for them
    (``profile``, chosen under ``name``): deleted since, or its key can't be read now; ""
    when they can, or when none was chosen."""
    if profile is not None:
        return heal_model_problem(profile)
    if name:
        return (f"the model for changed pages {name!r} was deleted: choose another one, or "
                "none")  # fmt: skip
    return ""


def heal_planner_for_run(run: Run) -> Planner:
    """The planner of a replay's model for changed pages (its LLM profile); LLMError when
    the profile was deleted since the replay was queued, or its key can't be read."""
    if run.llm_profile is None:
        raise LLMError(heal_model_refusal(None, run.llm_profile_name))
    return _profile_planner(run.llm_profile)


def _profile_planner(profile: LLMProfile) -> Planner:
    api_key = ""
    if profile.api_key_env:
        # Checked again here, not only when the profile was saved: a row from before the
        # rule must not send TABWRIGHT_SECRET_* (or any non-key variable) anywhere.
        api_key = api_key_from_env(
            profile.api_key_env,
            allowed=settings.TABWRIGHT["LLM_KEY_VARIABLES"],
            what=f"the LLM profile {profile.name!r}",
        )
        if not api_key:
            raise LLMError(
                f"the LLM profile {profile.name!r} reads its API key from the environment "
                f"variable {profile.api_key_env}, which is not set on the server",
                hint=f"set {profile.api_key_env} where the dashboard runs, or choose "
                "another profile",
            )
    options: dict[str, Any] = {"temperature": profile.temperature}
    if profile.max_tokens is not None:
        options["max_tokens"] = profile.max_tokens
    return _llm_planner(
        profile.provider,
        base_url=profile.endpoint,
        model=profile.model,
        api_key=api_key,
        native_tools=profile.native_tools_option,
        **options,
    )


def _llm_planner(
    provider: str,
    *,
    base_url: str,
    model: str,
    api_key: str,
    native_tools: bool | None = None,
    **options: Any,
) -> Planner:
    cls: type[Any]
    if provider == "openai":
        from automation.llm.openai import OpenAICompatPlanner

        cls = OpenAICompatPlanner
    elif provider == "anthropic":
        from automation.llm.anthropic import AnthropicPlanner

        cls = AnthropicPlanner
    else:
        raise LLMError(f"unknown LLM provider {provider!r}", hint="use openai or anthropic")
    retries = settings.TABWRIGHT["LLM_RETRIES"]
    return cls(
        base_url=base_url, model=model, api_key=api_key, native_tools=native_tools,
        retries=retries, **options,
    )  # fmt: skip


# What a profile's test sends: small enough to cost nothing, plain enough for any model.
PROFILE_TEST_PROMPT = "Reply with the single word OK."
PROFILE_TEST_MS = 20_000


async def llm_profile_test(profile: LLMProfile, *, budget_ms: int = PROFILE_TEST_MS) -> str:
    """Send the profile's model one tiny request (no retries, within ``budget_ms``) and
    say what came back: the reply's start, how long it took and the tokens it used.
    LLMError (why it failed: no key, refused, unreachable, out of time) otherwise."""
    planner = make_planner(profile=profile)
    if getattr(planner, "retries", None) is not None:
        planner.retries = 0  # type: ignore[attr-defined]  # one try: the answer is the test
    request = PlannerRequest(
        task=PROFILE_TEST_PROMPT, start_url="", round=0,
        messages=[ChatMessage("user", PROFILE_TEST_PROMPT)],
    )  # fmt: skip
    started = time.monotonic()
    try:
        reply = await planner.plan(request, budget=Budget(budget_ms, label="the profile's test"))
    finally:
        close = getattr(planner, "aclose", None)
        if close is not None:
            await close()
    took = round((time.monotonic() - started) * 1000)
    text = " ".join(reply.text.split())
    shown = text[:80] + ("…" if len(text) > 80 else "")
    tokens = sum(v for k, v in reply.usage.items() if k in ("prompt_tokens", "completion_tokens"))
    used = f", {tokens} tokens" if tokens else ""
    return f"{profile.model} answered in {took} ms{used}: {shown!r}"
