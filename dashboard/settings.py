"""Django settings for the Tabwright dashboard.

Everything an operator sets comes from the environment (see docs/configuration.md).
"""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

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


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, not {value!r}") from None


def _env_seconds_list(name: str, default: tuple[float, ...]) -> tuple[float, ...]:
    values = _env_list(name)
    if not values:
        return default
    try:
        seconds = tuple(float(v) for v in values)
    except ValueError:
        raise ImproperlyConfigured(f"{name} is seconds separated by commas, not "
                                   f"{os.environ.get(name)!r}") from None  # fmt: skip
    if any(s < 0 for s in seconds):
        raise ImproperlyConfigured(f"{name}: no negative waits")
    return seconds


def _env_seconds(name: str, default: float) -> float:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise ImproperlyConfigured(f"{name} is a number of seconds above 0, not {value!r}")
    return seconds


def _proxy_ssl_header() -> tuple[str, str] | None:
    """TABWRIGHT_SECURE_PROXY_SSL_HEADER, "HTTP_X_FORWARDED_PROTO,https" (or the header's own
    name, "X-Forwarded-Proto,https"): the header and value by which the TLS proxy in front
    says a request came over HTTPS.  Set it only behind a proxy that always sets it."""
    raw = os.environ.get("TABWRIGHT_SECURE_PROXY_SSL_HEADER", "").strip()
    if not raw:
        return None
    header, _, value = (part.strip() for part in raw.partition(","))
    if not header or not value or "," in value:
        raise ImproperlyConfigured(
            "TABWRIGHT_SECURE_PROXY_SSL_HEADER is a header and its value, "
            f'e.g. "HTTP_X_FORWARDED_PROTO,https", not {raw!r}'
        )
    header = header.upper().replace("-", "_")
    return (header if header.startswith("HTTP_") else f"HTTP_{header}", value)


def _private_var() -> None:
    """var/ (the database, the secret key, screenshots) is created readable by the server's
    user only, and so is the SQLite file (sessions, password hashes), before SQLite makes
    it with the umask's mode.  An existing folder keeps its mode: it may be the operator's;
    the deploy check (dashboard/checks.py) says when it is open to others."""
    if not VAR_DIR.exists():
        VAR_DIR.mkdir(mode=0o700, parents=True)
        VAR_DIR.chmod(0o700)  # mkdir's mode is cut by the umask
    db = os.environ.get("TABWRIGHT_DB_PATH", str(VAR_DIR / "db.sqlite3"))
    if db == ":memory:" or db.startswith("file:"):
        return
    path = Path(db)
    if not path.parent.exists():
        path.parent.mkdir(mode=0o700, parents=True)
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600))
    if path.stat().st_uid == os.geteuid():
        path.chmod(0o600)


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
_private_var()
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
    "dashboard",  # before channels: its runworker command is Channels' with the queue poll
    "channels",
    "axes",
    "csp",
    "ninja",  # the API docs page's scripts, served from here (not a CDN)
]

MIDDLEWARE = [
    # First: a call of the JSON API past its body limit is answered before anything reads
    # the body, and a path under /api/ that is no call in the API's error shape
    # (dashboard/api/bodylimit.py).
    "dashboard.api.bodylimit.ApiBodyLimit",
    # Django's and django-csp's, their hooks run on the event loop instead of a thread hop
    # per hook and request; what may block still goes to the thread
    # (dashboard/lib/middleware.py).
    "dashboard.lib.middleware.SecurityMiddleware",
    "dashboard.lib.middleware.SessionMiddleware",
    "dashboard.lib.middleware.CommonMiddleware",
    "dashboard.lib.middleware.CsrfViewMiddleware",
    "dashboard.lib.middleware.AuthenticationMiddleware",
    "dashboard.lib.middleware.MessageMiddleware",
    "dashboard.lib.middleware.XFrameOptionsMiddleware",
    "dashboard.lib.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
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

# SQLite in var/ unless DATABASE_URL names another database (postgres://user@host/name,
# through psycopg 3).  A PostgreSQL connection is not kept between requests (each holds a
# slot of the server's).  A SQLite one is: the threads that reach the database (each
# request's, from a pool: dashboard.lib.requestthreads; the one of the runs' worker) are
# kept, and a new connection would read the schema and prepare every query again (a
# request reading its session, user and run: 2.6 ms instead of 1.1).  SQLite writes ahead
# to a log beside the file (db.sqlite3-wal, folded into the file as it grows) and syncs
# the disk there, not at each commit: a run's event, a step, a lease renewal each commit
# on their own, and with SQLite's rollback journal each cost two syncs and a journal file
# made and deleted (measured: 0.3 ms of CPU and 0.7 ms a commit, against 0.03 and 0.03).
# A commit survives the server's crash; one of the last before a power cut may not.
# (dashboard.apps sets the log and the syncing as each connection to a file opens.)
SQLITE_OPTIONS = {"timeout": 20, "transaction_mode": "IMMEDIATE"}
DATABASE_URL = os.environ.get("DATABASE_URL", "").strip()
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("TABWRIGHT_DB_PATH", str(VAR_DIR / "db.sqlite3")),
            "OPTIONS": SQLITE_OPTIONS,
            "CONN_MAX_AGE": None,
        }
    }

# The in-memory layer within one process; Redis (channels_redis) when TABWRIGHT_REDIS_URL
# is set, so that pages on any web process get the events and frames of every run.
REDIS_URL = os.environ.get("TABWRIGHT_REDIS_URL", "").strip()
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL], "prefix": "tabwright:"},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "run_list"
LOGOUT_REDIRECT_URL = "login"

# --- Deployment: HTTPS behind a TLS proxy, login throttling, a Content-Security-Policy ---
# All off by default: `make run` serves plain HTTP on loopback.  docs/deploying.md lists
# the values with which `manage.py check --deploy` is clean.
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = _env_bool("TABWRIGHT_SECURE_COOKIES", False)
SECURE_HSTS_SECONDS = _env_int("TABWRIGHT_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _env_bool("TABWRIGHT_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = _env_bool("TABWRIGHT_HSTS_PRELOAD", False)
SECURE_SSL_REDIRECT = _env_bool("TABWRIGHT_SSL_REDIRECT", False)
SECURE_PROXY_SSL_HEADER = _proxy_ssl_header()

# django-axes: after LOGIN_FAILURE_LIMIT failed logins for one username from one address,
# that pair is refused (even with the right password) until LOGIN_LOCKOUT_MINUTES pass
# since the last failure; a successful login clears the count.  Behind a proxy every client
# has the proxy's address, so the lock is then, in effect, per username.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = _env_int("TABWRIGHT_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=_env_int("TABWRIGHT_LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "dashboard.accounts.views.login_locked_out"

# django-csp: the pages load scripts, styles and images from this origin only (no inline
# script: the run page's data is in data- attributes and json_script blocks), the live view
# draws its JPEG frames from data: URLs, and the run socket is same-origin ('self' covers
# ws:/wss: to this host).  The /demo/ fixture pages are exempt (views.demo).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "font-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
# Mail (the alerts of scheduled replays): an SMTP server, when one is set.
EMAIL_HOST = os.environ.get("TABWRIGHT_EMAIL_HOST", "localhost")
EMAIL_PORT = _env_int("TABWRIGHT_EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("TABWRIGHT_EMAIL_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("TABWRIGHT_EMAIL_PASSWORD", "")
EMAIL_USE_TLS = _env_bool("TABWRIGHT_EMAIL_TLS", False)
EMAIL_TIMEOUT = 10
DEFAULT_FROM_EMAIL = os.environ.get("TABWRIGHT_EMAIL_FROM", "tabwright@localhost")

MEDIA_ROOT = Path(os.environ.get("TABWRIGHT_MEDIA_DIR", VAR_DIR / "media"))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
FIXTURES_DIR = BASE_DIR / "fixtures"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Every record is redacted with the secrets of the runs live in this process (a page's
    # address after a GET form submit, console text): automation.secrets.SecretsLogFilter.
    # And any credential in an address (an API token in a query string): the access log
    # too (dashboard.lib.logredact).
    "filters": {
        "secrets": {"()": "automation.secrets.SecretsLogFilter"},
        "tokens": {"()": "dashboard.lib.logredact.TokenLogFilter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["secrets", "tokens"]}},
    "loggers": {
        # Django's records (a refused request's path) go up to the root logger's handler,
        # which the server's logs redact (dashboard.lib.logredact), and not to a console
        # handler of Django's own that would write them as they are (with DEBUG).
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        "tabwright": {"handlers": ["console"], "level": os.environ.get("TABWRIGHT_LOG", "INFO")},
        "automation": {"handlers": ["console"], "level": os.environ.get("TABWRIGHT_LOG", "INFO")},
    },
}

# --- Tabwright: browser, LLM, runs -------------------------------------------------------
_PLANNER = os.environ.get("TABWRIGHT_PLANNER", "rules")
TABWRIGHT = {
    # Chromium launched by Playwright, unless a CDP URL of a running Chrome is given; empty:
    # Debian's headless shell when headless and installed, else /usr/bin/chromium.
    "CHROMIUM_PATH": os.environ.get("TABWRIGHT_CHROMIUM_PATH", ""),
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
    # The variables LLM profiles may name for their key; empty: any *_API_KEY, and
    # TABWRIGHT_LLM_API_KEY (never another TABWRIGHT_*: automation/llm/keys.py).
    "LLM_KEY_VARIABLES": _env_list("TABWRIGHT_LLM_KEY_VARIABLES"),
    "LLM_TIMEOUT_MS": int(os.environ.get("TABWRIGHT_LLM_TIMEOUT_MS", "120000")),
    # Retries of a failed LLM call (cannot connect, HTTP 429, 5xx).
    "LLM_RETRIES": int(os.environ.get("TABWRIGHT_LLM_RETRIES", "3")),
    "ROUND_CAP": int(os.environ.get("TABWRIGHT_ROUND_CAP", "50")),
    "RUN_TIMEOUT_MS": int(os.environ.get("TABWRIGHT_RUN_TIMEOUT_MS", str(30 * 60 * 1000))),
    "ACTION_TIMEOUT_MS": int(os.environ.get("TABWRIGHT_ACTION_TIMEOUT_MS", "15000")),
    # Each run's own folder (downloads land there); never served by the dashboard.
    "WORKSPACE_DIR": Path(os.environ.get("TABWRIGHT_WORKSPACE_DIR", VAR_DIR / "workspaces")),
    # Sign-in profiles are encrypted at rest with these Fernet keys (comma-separated; the
    # first encrypts, each decrypts: a new key goes first, the old one stays until every
    # profile was saved again); none: a key derived from SECRET_KEY.
    "PROFILE_KEYS": _env_list("TABWRIGHT_PROFILE_KEYS"),
    # Record a Playwright trace of every run into its workspace (trace.zip).
    "TRACE_RUNS": _env_bool("TABWRIGHT_TRACE_RUNS", False),
    # Files the agent may attach to file inputs; empty: uploads are off.
    "UPLOAD_DIR": os.environ.get("TABWRIGHT_UPLOAD_DIR", ""),
    # Where the agent may go (automation/browser/url_policy.py), held for every request
    # of a launched Chromium by its egress proxy.  A rule is host or host:port (allow
    # rules may add a path: host:port/path/); a domain covers its subdomains; an allowed
    # host may be private.  Private and local addresses are refused, in DEBUG too.
    "ALLOWED_DOMAINS": _env_list("TABWRIGHT_ALLOWED_DOMAINS"),
    "BLOCKED_DOMAINS": _env_list("TABWRIGHT_BLOCKED_DOMAINS"),
    "BLOCK_PRIVATE_ADDRESSES": _env_bool("TABWRIGHT_BLOCK_PRIVATE_ADDRESSES", True),
    # With DEBUG, the origin(s) this dashboard serves its /demo/ pages on (make run sets
    # http://HOST:PORT): runs may open those pages, and nothing else of that origin.
    "DEMO_ORIGINS": _env_list("TABWRIGHT_DEMO_ORIGIN"),
    # Chromium's sandbox: "auto" (on unless the server runs as root), "1" or "0".
    "CHROMIUM_SANDBOX": os.environ.get("TABWRIGHT_CHROMIUM_SANDBOX", "auto").strip().lower(),
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
    # Tabs one run may hold; pages a site opens past it (popup floods) are closed at once.
    "MAX_TABS": _env_int("TABWRIGHT_MAX_TABS", 20),
    "MAX_DOWNLOAD_MB": _env_int("TABWRIGHT_MAX_DOWNLOAD_MB", 1024),
    # A worker's browser is replaced after this many runs' contexts (0: never).
    "CONTEXTS_PER_BROWSER": _env_int("TABWRIGHT_CONTEXTS_PER_BROWSER", 200),
    # A conversation's tab stays open this many seconds after the agent's answer, for the
    # next message (0: closed at once); a later message restores the page by replay.
    "SESSION_IDLE_S": _env_int("TABWRIGHT_SESSION_IDLE_S", 900),
    # Conversations one person may hold open at once; past it, the longest idle is closed.
    "SESSIONS_PER_USER": _env_int("TABWRIGHT_SESSIONS_PER_USER", 3),
    # A batch's row whose replay needs a person waits this many seconds (at least 1) for
    # one, then ends failed, saying so: nobody watches a batch, and it must end.
    "BATCH_PERSON_WAIT_S": _env_int("TABWRIGHT_BATCH_PERSON_WAIT_S", 900),
    # A process vouches for the runs it drives this many seconds at a time (renewed every
    # third of it); a run whose process stopped renewing is marked lost by another.
    "LEASE_S": _env_int("TABWRIGHT_LEASE_S", 30),
    # Runs one worker drives at once (a browser context each; an idle conversation's open
    # tab counts); the rest wait queued.
    "WORKER_RUNS": _env_int("TABWRIGHT_WORKER_RUNS", 4),
    # The web process is a worker too (one process, one code path); 0 when separate
    # workers (manage.py runworker tabwright.runs) drive the runs.
    "EMBEDDED_WORKER": _env_bool("TABWRIGHT_EMBEDDED_WORKER", True),
    # A worker told to stop (SIGTERM) lets its runs go on this many seconds, then ends
    # those still live as interrupted.
    "WORKER_GRACE_S": _env_int("TABWRIGHT_WORKER_GRACE_S", 30),
    # Alerts of schedules' firings (webhooks, e-mail) wait in an outbox: seconds before each
    # try after the first (then the delivery is given up), and the most one try may take,
    # the whole exchange (connecting, sending, the full answer).
    "ALERT_RETRY_S": _env_seconds_list(
        "TABWRIGHT_ALERT_RETRY_S",
        _env_seconds_list("TABWRIGHT_WEBHOOK_RETRY_S", (10, 60, 300, 1800, 7200)),
    ),
    "ALERT_TIMEOUT_S": _env_seconds("TABWRIGHT_ALERT_TIMEOUT_S", 15.0),
    # Where webhooks may be sent, apart from where the agent may go (the rules above): the
    # same rule syntax; private addresses refused unless a rule names the host, checked
    # again against every address the name resolves to when a delivery connects.
    "WEBHOOK_ALLOWED_DOMAINS": _env_list("TABWRIGHT_WEBHOOK_ALLOWED_DOMAINS"),
    "WEBHOOK_BLOCKED_DOMAINS": _env_list("TABWRIGHT_WEBHOOK_BLOCKED_DOMAINS"),
    "WEBHOOK_BLOCK_PRIVATE_ADDRESSES": _env_bool("TABWRIGHT_WEBHOOK_BLOCK_PRIVATE_ADDRESSES", True),
    # This dashboard's address as people reach it (https://tabwright.example.com), for the
    # links in alerts; empty: the origin of the request that made or changed the schedule.
    "PUBLIC_URL": os.environ.get("TABWRIGHT_PUBLIC_URL", "").strip(),
}
