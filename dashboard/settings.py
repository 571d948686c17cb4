"""Django settings for the Tabwright dashboard.

Everything an operator sets comes from the environment (see README "Configuration").
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("TABWRIGHT_VAR_DIR", BASE_DIR / "var"))


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _env_list(name: str) -> tuple[str, ...]:
    """A comma-separated variable as a tuple, blanks dropped."""
    return tuple(v.strip() for v in os.environ.get(name, "").split(",") if v.strip())


def _secret_key() -> str:
    """From the environment, else generated once and kept in var/ (never in the repo)."""
    if key := os.environ.get("TABWRIGHT_SECRET_KEY"):
        return key
    path = VAR_DIR / "secret_key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        key = secrets.token_urlsafe(50)
        path.write_text(key)
        path.chmod(0o600)
        return key


DEBUG = _env_bool("TABWRIGHT_DEBUG", False)
SECRET_KEY = _secret_key()
ALLOWED_HOSTS = [
    h.strip() for h in os.environ.get("TABWRIGHT_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")
]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("TABWRIGHT_CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "dashboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "dashboard.urls"
ASGI_APPLICATION = "dashboard.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("TABWRIGHT_DB_PATH", str(VAR_DIR / "db.sqlite3")),
        "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
    }
}

# One daphne process owns the live runs, so the in-memory layer is enough.
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "run_list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
MEDIA_ROOT = Path(os.environ.get("TABWRIGHT_MEDIA_DIR", VAR_DIR / "media"))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
FIXTURES_DIR = BASE_DIR / "fixtures"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {
        "tabwright": {"handlers": ["console"], "level": os.environ.get("TABWRIGHT_LOG", "INFO")},
        "automation": {"handlers": ["console"], "level": os.environ.get("TABWRIGHT_LOG", "INFO")},
    },
}

# --- Tabwright: browser, LLM, runs -------------------------------------------------------
_PLANNER = os.environ.get("TABWRIGHT_PLANNER", "rules")
TABWRIGHT = {
    # Chromium launched by Playwright, unless a CDP URL of a running Chrome is given.
    "CHROMIUM_PATH": os.environ.get("TABWRIGHT_CHROMIUM_PATH", "/usr/bin/chromium"),
    "CDP_URL": os.environ.get("TABWRIGHT_CDP_URL", ""),
    "HEADLESS": _env_bool("TABWRIGHT_HEADLESS", True),
    # When no LLM profile (dashboard admin) is the default: "rules" (offline, no LLM),
    # "openai" (any OpenAI-compatible endpoint) or "anthropic".
    "PLANNER": _PLANNER,
    "LLM_BASE_URL": os.environ.get(
        "TABWRIGHT_LLM_BASE_URL",
        "https://api.anthropic.com" if _PLANNER == "anthropic" else "http://127.0.0.1:11434/v1",
    ),
    "LLM_MODEL": os.environ.get("TABWRIGHT_LLM_MODEL", "llama3.1"),
    # The key itself is read from this environment variable and never stored.
    "LLM_API_KEY_ENV": os.environ.get("TABWRIGHT_LLM_API_KEY_ENV", "TABWRIGHT_LLM_API_KEY"),
    "LLM_TIMEOUT_MS": int(os.environ.get("TABWRIGHT_LLM_TIMEOUT_MS", "120000")),
    # Retries of a failed LLM call (cannot connect, HTTP 429, 5xx).
    "LLM_RETRIES": int(os.environ.get("TABWRIGHT_LLM_RETRIES", "3")),
    "ROUND_CAP": int(os.environ.get("TABWRIGHT_ROUND_CAP", "50")),
    "RUN_TIMEOUT_MS": int(os.environ.get("TABWRIGHT_RUN_TIMEOUT_MS", str(30 * 60 * 1000))),
    "ACTION_TIMEOUT_MS": int(os.environ.get("TABWRIGHT_ACTION_TIMEOUT_MS", "15000")),
    # Each run's own folder (downloads land there); never served by the dashboard.
    "WORKSPACE_DIR": Path(os.environ.get("TABWRIGHT_WORKSPACE_DIR", VAR_DIR / "workspaces")),
    # Record a Playwright trace of every run into its workspace (trace.zip).
    "TRACE_RUNS": _env_bool("TABWRIGHT_TRACE_RUNS", False),
    # Files the agent may attach to file inputs; empty: uploads are off.
    "UPLOAD_DIR": os.environ.get("TABWRIGHT_UPLOAD_DIR", ""),
    # Where the agent may go (automation/browser/url_policy.py).  A domain covers its
    # subdomains; an allowed host may be private.  Private and local addresses are refused
    # unless DEBUG, where the demo pages are served from this machine.
    "ALLOWED_DOMAINS": _env_list("TABWRIGHT_ALLOWED_DOMAINS"),
    "BLOCKED_DOMAINS": _env_list("TABWRIGHT_BLOCKED_DOMAINS"),
    "BLOCK_PRIVATE_ADDRESSES": _env_bool("TABWRIGHT_BLOCK_PRIVATE_ADDRESSES", not DEBUG),
    # Evaluate is off unless the operator turns it on: it runs arbitrary JavaScript in the
    # pages, and turning it on also opens Chromium's debugging port (on loopback).
    "ALLOW_EVALUATE": _env_bool("TABWRIGHT_ALLOW_EVALUATE", False),
    # Programs (bare names) the agent's shell tool may run; empty: the shell tool is off.
    "SHELL_COMMANDS": _env_list("TABWRIGHT_SHELL_COMMANDS"),
    # The live view: screencast frames a second at most, and their JPEG quality (1-100).
    "LIVE_VIEW_FPS": float(os.environ.get("TABWRIGHT_LIVE_VIEW_FPS", "4")),
    "LIVE_VIEW_QUALITY": int(os.environ.get("TABWRIGHT_LIVE_VIEW_QUALITY", "60")),
    # A bearer token for scrapers of /metrics, which can't log in; empty: only logged-in
    # users can read it.
    "METRICS_TOKEN": os.environ.get("TABWRIGHT_METRICS_TOKEN", ""),
}
