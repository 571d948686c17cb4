"""Every error the engine raises, in one hierarchy.

    TabwrightError
    ├── BudgetExceeded          the call's deadline passed (carries the budget's timeout)
    │   ├── EvaluateTimeout     a script outlived its budget (it was terminated in the page)
    │   └── PageHung            the page's own script hung the call (it was stopped in the page)
    ├── Cancelled               the caller cancelled the budget (stop button, dropped socket)
    │   └── EvaluateCancelled   a script was cancelled mid-run (it was terminated in the page)
    ├── BrowserError            the browser could not be launched, reached or used
    │   └── BrowserClosed       the session or tab was closed (or Chromium died)
    ├── UrlBlocked              a navigation target refused by the URL policy
    ├── RefError                a ref could not be turned into an element
    │   ├── RefNotFound         never issued for this tab (typo, invented, malformed)
    │   └── StaleRef            issued, but its element is gone, renamed or in another row
    ├── ActionFailed            the browser refused the action (hidden, disabled, timed out...)
    │   ├── HttpStatus          a navigation answered with HTTP 4xx/5xx (its status)
    │   ├── UnexpectedDialog    a dialog nobody armed appeared (it was dismissed)
    │   ├── StepFailed          a step of a ``steps`` call failed (its index and error)
    │   ├── NeedsPerson         replay can't tell which element a step means (it abstained)
    │   ├── CheckFailed         a scenario's expect check does not hold on the page
    │   ├── LedElsewhere        a replayed step's write ended on another page than recorded
    │   ├── FormNotSent         the browser refused to send a form: a field not valid (which, why)
    │   ├── NothingSent         a replayed step sent no write where it sent one when recorded
    │   └── EvaluateError       a script threw, or its result can't be returned
    ├── ActionInvalid           an action request with a bad shape (unknown tool, missing args)
    │   ├── SecretNotGranted    a ${SECRET:NAME} the run's owner was not granted (names it only)
    │   ├── TabNotFound         a tab id that is none of the run's open tabs (closed since, say)
    │   ├── ScenarioInvalid     a scenario that can't be read (bad shape, future version,
    │   │   │                   unknown step type); nothing of it is used
    │   │   ├── ParamMissing    a ${param} or ${SECRET:NAME} with no value at replay
    │   │   ├── CallMissing     a call step names a scenario that is not there
    │   │   ├── CallCycle       scenarios that call each other (A calls B calls A)
    │   │   └── HandlerInvalid  an interruption handler that can't be used (names which)
    │   └── OutputInvalid       a run's output schema that is no JSON Schema, or an output
    │                           that does not match it (each problem listed)
    └── LLMError                the language model could not give a usable reply
        ├── LLMUnavailable      connection refused, DNS, TLS, HTTP 5xx/429 ...
        └── LLMResponseError    an answer that is not a valid chat completion

Each error has a short, stable ``code`` (shown in the UI and sent to the LLM) and a
message written for the person or model that has to react to it.
"""

from __future__ import annotations

__all__ = [
    "ActionFailed",
    "ActionInvalid",
    "BrowserClosed",
    "BrowserError",
    "BudgetExceeded",
    "CallCycle",
    "CallMissing",
    "Cancelled",
    "CheckFailed",
    "EvaluateCancelled",
    "EvaluateError",
    "EvaluateTimeout",
    "FormNotSent",
    "HandlerInvalid",
    "HttpStatus",
    "LLMError",
    "LLMResponseError",
    "LLMUnavailable",
    "LedElsewhere",
    "NeedsPerson",
    "NothingSent",
    "OutputInvalid",
    "PageHung",
    "ParamMissing",
    "RefError",
    "RefNotFound",
    "ScenarioInvalid",
    "SecretNotGranted",
    "StaleRef",
    "StepFailed",
    "TabNotFound",
    "TabwrightError",
    "UnexpectedDialog",
    "UrlBlocked",
]


class TabwrightError(Exception):
    code = "error"

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "hint": self.hint}


class BudgetExceeded(TabwrightError):
    code = "budget_exceeded"


class Cancelled(TabwrightError):
    code = "cancelled"


class EvaluateTimeout(BudgetExceeded):
    code = "evaluate_timeout"


class PageHung(BudgetExceeded):
    """A call ran out of time because a script of the page's own never yielded (its
    page did not answer a probe); the script was stopped, and the tab works again."""

    code = "page_hung"


class EvaluateCancelled(Cancelled):
    code = "evaluate_cancelled"


class BrowserError(TabwrightError):
    code = "browser_error"


class BrowserClosed(BrowserError):
    code = "browser_closed"


class UrlBlocked(TabwrightError):
    """``rule`` says which rule refused, for a caller that points to where it is set:
    ``blocked`` (a block rule), ``not_allowed`` (allow rules exist, none matches),
    ``private`` (a private or local address), or "" (a URL that can't be opened at all)."""

    code = "url_blocked"

    def __init__(self, message: str, *, hint: str = "", rule: str = "") -> None:
        super().__init__(message, hint=hint)
        self.rule = rule


class RefError(TabwrightError):
    code = "ref_error"


class RefNotFound(RefError):
    code = "ref_not_found"


class StaleRef(RefError):
    code = "stale_ref"


class ActionFailed(TabwrightError):
    code = "action_failed"


class HttpStatus(ActionFailed):
    code = "http_status"

    def __init__(self, message: str, *, status: int, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.status = status


class CheckFailed(ActionFailed):
    code = "check_failed"


class LedElsewhere(ActionFailed):
    """``now``: the page's address the step's write ended on; ``recorded``: where it led
    when recorded (moved to the replay's base URL)."""

    code = "led_elsewhere"

    def __init__(self, message: str, *, now: str, recorded: str, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.now = now
        self.recorded = recorded


class FormNotSent(ActionFailed):
    """``fields``: the fields the browser refused to send the form for, as (name, what it
    said of each) pairs (a required field left empty, a number past its maximum): the
    page's own validation stopped the click or the Enter before anything was sent."""

    code = "form_not_sent"

    def __init__(
        self, message: str, *, fields: tuple[tuple[str, str], ...], hint: str = ""
    ) -> None:
        super().__init__(message, hint=hint)
        self.fields = fields


class RefusedInPlace(ActionFailed):
    """``said``: the error the page showed, on the same page, once the step's write was
    answered (a form sent back with why it was refused, HTTP 200)."""

    code = "refused_in_place"

    def __init__(self, message: str, *, said: str, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.said = said


class NothingSent(ActionFailed):
    """``recorded``: the write the step sent when recorded ("POST /api/profile"), which
    it did not send at replay (the page's script stopped before it, or threw)."""

    code = "nothing_sent"

    def __init__(self, message: str, *, recorded: str, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.recorded = recorded


class RefusedWhereItLed(ActionFailed):
    """``said``: the error the page the step's write led to showed, where it led when
    recorded, that the same page did not show when the replay was there before (a list a
    save was redirected to with a message saying why it refused it); ``now``: its address."""

    code = "refused_where_it_led"

    def __init__(self, message: str, *, said: str, now: str, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.said = said
        self.now = now


class UnexpectedDialog(ActionFailed):
    code = "unexpected_dialog"


class StepFailed(ActionFailed):
    code = "step_failed"

    def __init__(self, message: str, *, index: int, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.index = index


class NeedsPerson(ActionFailed):
    """Replay found no element it could be sure of: ``reason`` and the best ``candidates``
    say why, for the person who decides."""

    code = "needs_person"

    def __init__(
        self, message: str, *, index: int, candidates: list[dict] | None = None, hint: str = ""
    ) -> None:
        super().__init__(message, hint=hint)
        self.index = index
        self.candidates = list(candidates or [])


class EvaluateError(ActionFailed):
    code = "evaluate_error"


class ActionInvalid(TabwrightError):
    code = "action_invalid"


class SecretNotGranted(ActionInvalid):
    code = "secret_not_granted"


class TabNotFound(ActionInvalid):
    code = "tab_not_found"


class ScenarioInvalid(ActionInvalid):
    code = "scenario_invalid"

    def __init__(self, message: str, *, index: int | None = None, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.index = index


class ParamMissing(ScenarioInvalid):
    code = "param_missing"


class CallMissing(ScenarioInvalid):
    code = "call_missing"


class CallCycle(ScenarioInvalid):
    code = "call_cycle"


class HandlerInvalid(ScenarioInvalid):
    """An interruption handler (automation.recording.handlers) with a bad shape: ``index``
    is the handler's place in the scenario's list."""

    code = "handler_invalid"


class OutputInvalid(ActionInvalid):
    """``problems``: one line each, "$.total: 'abc' is not of type 'number'"."""

    code = "output_invalid"

    def __init__(self, message: str, *, problems: list[str] | None = None, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.problems = problems or []


class LLMError(TabwrightError):
    code = "llm_error"


class LLMUnavailable(LLMError):
    """``reason`` says in a few words what went wrong ("HTTP 503", "connection refused",
    "connection dropped mid-reply"), for the notice of a retry."""

    code = "llm_unavailable"

    def __init__(self, message: str, *, reason: str = "", hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.reason = reason


class LLMResponseError(LLMError):
    code = "llm_response_error"
