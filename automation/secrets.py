"""Secrets in a run: ``${SECRET:NAME}`` placeholders, filled only when an action runs, and
redacted at the one exit every event passes.

The task and the person's replies may name a secret as ``${SECRET:NAME}``; its value is the
environment variable ``TABWRIGHT_SECRET_NAME`` (a placeholder can't reach any other
variable).  ``${TOTP:NAME}`` types the current one-time code (RFC 6238, :func:`totp_code`)
of the secret NAME, whose value is then the app's TOTP seed (base32, or the ``otpauth://``
address its QR code holds); it is granted, filled and redacted as the secret is, and shown
as ``${TOTP:NAME}``.  One :class:`Secrets` lives per run:

- ``allowed`` is the set of names the run's owner was granted (None: every name, for the
  operator's own command-line runs); naming any other fails with :class:`SecretNotGranted`,
  which names the secret, never its value.
- :meth:`Secrets.fill_action` puts values in just before the browser gets an action's args,
  and only where a value is typed (:func:`misplaced_secret`): a secret in a URL, a key, a
  selector or a check would leave the page's own records (history, logs, server) holding it.
- :class:`RedactingSink` wraps the run's event sink: every event (steps, actions, problems,
  screenshots' URLs, pauses, the end) has each value used so far, and each password typed
  literally, replaced, also where a URL or a form body carries it percent-encoded, or an
  answer's HTML or JSON carries it escaped.
- :meth:`Secrets.is_secret` tells the browser layer which typed values to hide from
  screenshots and the live view (:mod:`automation.browser.masking`).
"""

from __future__ import annotations

import binascii
import dataclasses
import logging
import os
import re
import threading
import weakref
from collections.abc import Collection, Iterator, Mapping
from typing import Any

import pyotp

from automation.errors import ActionInvalid, SecretNotGranted
from automation.events import Event, EventSink

__all__ = [
    "MASK",
    "SECRET_ENV_PREFIX",
    "SECRET_NAME_RE",
    "SECRET_RE",
    "SHORT_CHARS",
    "TYPED_ARGS",
    "RedactingSink",
    "SecretNotGranted",
    "Secrets",
    "SecretsLogFilter",
    "misplaced_secret",
    "redacting",
    "secret_names",
    "totp_code",
]

SECRET_ENV_PREFIX = "TABWRIGHT_SECRET_"
SECRET_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # NAME of ${SECRET:NAME}
# ${SECRET:NAME} or ${TOTP:NAME}: group 1 is the name either way.
SECRET_RE = re.compile(r"\$\{(?:SECRET|TOTP):(" + SECRET_NAME_RE.pattern + r")\}")
MASK = "••••••••"

# Where a secret may stand: the arg an action types (fill_form's field values and a steps
# macro's fill values too).  A select's option, a URL, a key, a ref or a script is not typed
# into a field, and would carry the value into the page's history, the server's logs or the
# DOM as text.
TYPED_ARGS = {"fill": "value", "type": "text"}


def totp_code(seed: str, name: str, *, at: float | None = None) -> str:
    """The RFC 6238 code of ``seed`` (base32, or an ``otpauth://totp/…`` address) now, or
    at the Unix time ``at``.  ActionInvalid names the secret, never its value, when the
    seed is not one."""
    try:
        otp = pyotp.parse_uri(seed) if seed.startswith("otpauth://") else pyotp.TOTP(seed)
        if not isinstance(otp, pyotp.TOTP):
            raise ValueError("not a TOTP address")
        return otp.now() if at is None else otp.at(at)
    except (ValueError, TypeError, binascii.Error) as exc:
        why = str(exc) if str(exc) and str(exc) not in seed and seed not in str(exc) else ""
        raise ActionInvalid(
            f"the secret {name} is not a TOTP seed (base32 of at least 112 bits, or an "
            f"otpauth://totp/ address)" + (f": {why}" if why else ""),
            hint=f"set {SECRET_ENV_PREFIX}{name} to the seed the app showed when the code "
            "was set up",
        ) from None


def secret_names(value: Any) -> set[str]:
    """The secret names a value (text, or args: dicts and lists of text) mentions."""
    return {match.group(1) for text in _texts(value) for match in SECRET_RE.finditer(text)}


def misplaced_secret(action: str, args: Mapping[str, Any]) -> str | None:
    """The path (``url``, ``fields[1].ref``, ``steps[0].url``) of the first arg of
    ``action`` that holds a ``${SECRET:…}`` anywhere but in a typed value; None if none."""
    for path, text in _paths(args):
        if SECRET_RE.search(text) and not _is_typed(action, args, path):
            return _path_text(path)
    return None


def _is_typed(action: str, args: Mapping[str, Any], path: tuple[str | int, ...]) -> bool:
    if action in TYPED_ARGS:
        return path == (TYPED_ARGS[action],)
    if action == "fill_form":
        return len(path) == 3 and path[0] == "fields" and path[2] == "value"
    if action == "steps" and len(path) == 3 and path[0] == "steps" and path[2] == "value":
        steps = args.get("steps")
        step = steps[path[1]] if isinstance(steps, list) else None  # type: ignore[index]
        return isinstance(step, dict) and step.get("type") == "fill"
    return False


def _paths(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[Any, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _paths(item, (*path, i))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _paths(item, (*path, str(key)))


def _path_text(path: tuple[str | int, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "the value"


def _texts(value: Any) -> Iterator[str]:
    return (text for _path, text in _paths(value))


# A value shorter than this (a three-letter password) is masked only where it stands by
# itself, not inside a longer word or number: masked inside every "about", a password "ab"
# would leave a run's events unreadable, and tell what it is besides.
SHORT_CHARS = 4
_ALONE_BEFORE, _ALONE_AFTER = r"(?<![0-9A-Za-z])", r"(?![0-9A-Za-z])"


# How a page's HTML writes a character it must escape, besides its numeric references.
_HTML_NAMED = {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos"}
# How JSON (and a script's string) writes one, besides \\uXXXX.
_JSON_ESCAPED = {'"': '\\"', "\\": "\\\\", "/": "\\/", "'": "\\'"}


def _hex(text: str) -> str:
    """``text`` (hex digits) in either case."""
    return "".join(f"[{h.upper()}{h.lower()}]" if h.isalpha() else h for h in text)


def _encoded_pattern(value: str) -> re.Pattern[str]:
    """``value`` as it appears in text, a URL, a form body, a page's HTML or JSON: each
    character as itself, percent-encoded (either case of hex, ``%25``-encoded once more),
    a space also as ``+``; as an HTML character reference (``&amp;``, ``&#38;``,
    ``&#x26;``) and a JSON or script escape (``\\"``, ``\\u00e9``), as an app's answer echoes
    what was typed.  A GET form submit puts ``pw=s%40cret`` in the page's address.  A
    value shorter than ``SHORT_CHARS``: only where it stands by itself."""
    parts = []
    for char in value:
        hexes = [f"{byte:02X}" for byte in char.encode("utf-8")]
        options = [re.escape(char)]
        for prefix in ("%", "%25"):
            options.append(
                "".join(prefix + "".join(f"[{h}{h.lower()}]" for h in hx) for hx in hexes)
            )
        if char == " ":
            options.append(r"\+")
        code = ord(char)
        options.append(f"&#0*{code};|&#[xX]0*{_hex(f'{code:x}')};")
        if char in _HTML_NAMED:
            options.append(f"&{_HTML_NAMED[char]};")
        if char in _JSON_ESCAPED:
            options.append(re.escape(_JSON_ESCAPED[char]))
        units = char.encode("utf-16-be")
        options.append(
            "".join(r"\\u" + _hex(units[i : i + 2].hex()) for i in (0, 2)[: len(units) // 2])
        )
        parts.append("(?:" + "|".join(options) + ")")
    if len(value) < SHORT_CHARS:
        return re.compile(_ALONE_BEFORE + "".join(parts) + _ALONE_AFTER)
    return re.compile("".join(parts))


# Every Secrets alive in this process, for the log filter (which may run in any thread).
_live: weakref.WeakSet[Secrets] = weakref.WeakSet()
_live_lock = threading.Lock()


class Secrets:
    """The secrets of one run: what may be filled, what was, and taking it back out."""

    def __init__(
        self, env: Mapping[str, str] | None = None, *, allowed: Collection[str] | None = None
    ) -> None:
        self._env = os.environ if env is None else env
        self.allowed = None if allowed is None else frozenset(allowed)
        self._shown: dict[str, str] = {}  # value -> what stands in for it in text
        self._patterns: list[tuple[re.Pattern[str], str]] = []  # longest value first
        with _live_lock:
            _live.add(self)

    def __repr__(self) -> str:
        return f"<Secrets {len(self._shown)} in use>"

    # -- filling -----------------------------------------------------------------------

    def granted(self, name: str) -> bool:
        """Whether the run may use the secret ``name``."""
        return self.allowed is None or name in self.allowed

    def require(self, names: Collection[str]) -> None:
        """SecretNotGranted for the first of ``names`` the run may not use (sorted)."""
        refused = sorted(name for name in set(names) if not self.granted(name))
        if refused:
            raise SecretNotGranted(
                f"the secret {refused[0]} is not granted to this run's owner"
                + (f" (nor {', '.join(refused[1:])})" if refused[1:] else ""),
                hint="an admin grants secrets to users and groups (Secret grants)",
            )

    def fill_action(self, action: str, args: dict[str, Any]) -> dict[str, Any]:
        """``args`` of ``action`` with each placeholder replaced by its secret: refused
        (ActionInvalid naming the arg) outside a typed value, SecretNotGranted for a name
        not granted, ActionInvalid for a variable that is not set."""
        where = misplaced_secret(action, args)
        if where is not None:
            raise ActionInvalid(
                f"{action}: ${{SECRET:…}} is allowed only in a typed value, not in {where}",
                hint="type the secret into a field with fill or type",
            )
        return self.fill(args)

    def fill(self, value: Any) -> Any:
        """``value`` (args: a dict, list or string) with each placeholder replaced by its
        secret; ActionInvalid names a placeholder whose variable is not set."""
        self.require(secret_names(value))
        return self._fill(value)

    def _fill(self, value: Any) -> Any:
        if isinstance(value, str):
            return SECRET_RE.sub(self._one, value)
        if isinstance(value, list):
            return [self._fill(v) for v in value]
        if isinstance(value, dict):
            return {k: self._fill(v) for k, v in value.items()}
        return value

    def _one(self, match: re.Match[str]) -> str:
        name = match.group(1)
        secret = self._env.get(SECRET_ENV_PREFIX + name)
        if secret is None:
            raise ActionInvalid(
                f"no secret {name}: the environment variable {SECRET_ENV_PREFIX}{name} is not set",
                hint="ask the person to set it, or write NEED_HELP",
            )
        if match.group(0).startswith("${TOTP:"):
            code = totp_code(secret, name)
            self.remember_code(name, secret, code)
            return code
        self.remember(name, secret)
        return secret

    def remember(self, name: str, value: str) -> None:
        """``value`` is the secret ``name`` (filled elsewhere, e.g. by a replay): shown as
        its placeholder from now on."""
        self._add(value, f"${{SECRET:{name}}}")

    def remember_code(self, name: str, seed: str, code: str) -> None:
        """``code`` was typed as ``${TOTP:name}`` (from ``seed``): both shown as that
        placeholder from now on, wherever they appear."""
        self._add(seed, f"${{TOTP:{name}}}")
        self._add(code, f"${{TOTP:{name}}}")

    def hide(self, value: str) -> None:
        """Mask ``value`` (a password the model typed literally) wherever it shows later."""
        if value not in self._shown:
            self._add(value, MASK)

    def _add(self, value: str, shown: str) -> None:
        if not value or self._shown.get(value) == shown:
            return
        self._shown[value] = shown
        ordered = sorted(self._shown, key=len, reverse=True)
        self._patterns = [(_encoded_pattern(v), self._shown[v]) for v in ordered]

    # -- what the browser hides --------------------------------------------------------

    def values(self) -> list[str]:
        return list(self._shown)

    def hidden(self) -> list[str]:
        """The passwords typed literally (those :meth:`hide` masks), oldest first."""
        return [value for value, shown in self._shown.items() if shown == MASK]

    def is_secret(self, text: str) -> bool:
        """Whether ``text`` (a value about to be typed) holds a secret or hidden password."""
        return any(pattern.search(text) for pattern, _shown in self._patterns)

    # -- redacting ---------------------------------------------------------------------

    def redact(self, text: str) -> str:
        """``text`` with every secret value used so far replaced by its placeholder (and
        every hidden password by a mask), plain or percent-encoded."""
        for pattern, shown in self._patterns:
            text = pattern.sub(lambda _match, shown=shown: shown, text)
        return text

    def redact_any(self, value: Any) -> Any:
        """:meth:`redact` through dicts, lists, tuples and strings (keys included)."""
        if not self._patterns:
            return value
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, list | tuple):
            return type(value)(self.redact_any(v) for v in value)
        if isinstance(value, dict):
            return {self.redact_any(k): self.redact_any(v) for k, v in value.items()}
        return value

    def redact_event(self, event: Event) -> Event:
        """``event`` with every text field redacted (bytes, e.g. a screenshot's pixels, are
        masked in the page itself)."""
        if not self._patterns:
            return event
        changes = {}
        for f in dataclasses.fields(event):
            value = getattr(event, f.name)
            if isinstance(value, str | list | tuple | dict):
                redacted = self.redact_any(value)
                if redacted != value:
                    changes[f.name] = redacted
        return dataclasses.replace(event, **changes) if changes else event


class RedactingSink:
    """The one exit of a run's events: each is redacted by the run's Secrets, then passed
    on.  The agent loop and replay wrap their sink in one (unless given one already), and
    the dashboard hands the same one to whatever else emits for the run (page problems,
    the person's messages)."""

    def __init__(self, sink: EventSink, secrets: Secrets) -> None:
        self.sink = sink
        self.secrets = secrets

    async def emit(self, event: Event) -> None:
        await self.sink.emit(self.secrets.redact_event(event))


def redacting(sink: EventSink, secrets: Secrets) -> RedactingSink:
    """``sink`` behind ``secrets``' redaction, without wrapping a redacting sink twice."""
    if isinstance(sink, RedactingSink) and sink.secrets is secrets:
        return sink
    return RedactingSink(sink, secrets)


class SecretsLogFilter(logging.Filter):
    """Redacts every log record with the secrets of every live run: a record may carry a
    page's address (a GET form submit) or its console text.  Installed on the handlers in
    the dashboard's LOGGING (a filter on a logger would miss its children's records)."""

    def filter(self, record: logging.LogRecord) -> bool:
        with _live_lock:
            live = [s for s in _live if s._patterns]
        if not live:
            return True
        message = record.getMessage()
        redacted = _redact_with(live, message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and record.exc_info[1] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            redacted = _redact_with(live, text)
            if redacted != text:
                record.exc_text, record.exc_info = redacted, None
        return True


def _redact_with(all_secrets: list[Secrets], text: str) -> str:
    for secrets in all_secrets:
        text = secrets.redact(text)
    return text
