"""Every operation of the JSON API, as its served OpenAPI schema lists them, given hostile
input by a script with a valid token: a body that is no JSON, or JSON of the wrong shape;
each declared field of another type, a number past 64 bits or past a float, empty,
100,000 characters long, holding a NUL or half of a UTF-16 pair, nested 10,000 deep; an
unknown field; path ids that are 0, negative, past 64 bits, no number, or another
person's object; a method the path does not take, a path that is no call; query
parameters of the wrong type; another person's token.

An input that the operation's served schema does not take is refused: a 4xx in the one
error shape (a ``code`` of the API's or of an engine error, a message), never a 500 or a
traceback, and no record changed.  One that the schema takes may be taken or refused for
what it means (a text holding a NUL is refused, as the pages' forms refuse it), in the
same shape and changing nothing; a wrong Content-Type with a JSON body too (the body is
read as JSON whatever it says)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jsonschema
import pytest
from django.db import connection
from django.test import Client, override_settings

from automation.errors import TabwrightError
from dashboard.api.common import API_CODES
from dashboard.models import (
    ApiToken,
    Batch,
    BatchRow,
    Delivery,
    IdentityHeal,
    Run,
    RunEvent,
    Scenario,
    ScenarioCall,
    ScenarioStep,
    Schedule,
    ScheduleFiring,
    SigninProfile,
    Step,
)
from tests.dashboard.api.test_api import token_of
from tests.dashboard.test_isolation import World

pytestmark = pytest.mark.django_db

# The schema as served, read when the tests are collected (before pytest-django lets the
# test client's host in).
with override_settings(ALLOWED_HOSTS=["testserver"]):
    SCHEMA: dict[str, Any] = Client().get("/api/openapi.json").json()
METHODS = ("get", "post", "put", "patch", "delete")
OPERATIONS = [
    f"{method.upper()} {path}"
    for path, ops in SCHEMA["paths"].items()
    for method in METHODS
    if method in ops
]

# A body each operation takes for the owner's objects (World's): the base that each case
# spoils one field of, so that a refusal is about that field.
VALID: dict[str, dict[str, Any]] = {
    "POST /api/runs": {"task": "click OK", "planner": "rules"},
    "POST /api/runs/{run_id}/signin": {"name": "shop"},
    "POST /api/runs/{run_id}/messages": {"text": "go on"},
    "POST /api/runs/{run_id}/reply": {"text": "retry"},
    "POST /api/runs/{run_id}/extend": {"rounds": 5},
    "POST /api/runs/{run_id}/scenario": {"name": "saved", "keep": [], "checks": []},
    "POST /api/runs/{run_id}/handlers": {"seq": 1, "name": "cookies"},
    "POST /api/scenarios": {
        "format": "tabwright.scenario",
        "version": 1,
        "name": "Imported",
        "base_url": "http://shop.test",
        "steps": [{"action": "navigate", "args": {"url": "http://shop.test/"}}],
    },
    "POST /api/scenarios/{scenario_id}/replays": {"params": {"email": "a@example.org"}},
    "PUT /api/scenarios/{scenario_id}/login": {"login_scenario": ""},
    "PUT /api/scenarios/{scenario_id}/handlers": {"handlers": []},
    "POST /api/scenarios/{scenario_id}/batches": {"rows": [{"email": "a@example.org"}]},
    "POST /api/scenarios/{scenario_id}/schedules": {
        "cron": "0 7 * * 1-5",
        "params": {"email": "a@example.org"},
    },
    "PATCH /api/schedules/{schedule_id}": {"timezone": "Europe/Paris"},
}

LONG = "x" * 100_000
DEEP = "[" * 10_000 + "]" * 10_000
# A field's value in each case: JSON text, spliced into the body as it is.
FIELD_VALUES = {
    "an object": '{"a": 1}',
    "a list": "[1, 2]",
    "a number": "12345",
    "a bool": "true",
    "a number past 64 bits": str(2**64),
    "a negative number": "-1",
    "a fraction": "1.5",
    "a number past a float": "1e400",
    "null": "null",
    "an empty string": '""',
    "100k characters": json.dumps(LONG),
    "a NUL": '"a\\u0000b"',
    "half a UTF-16 pair": '"a\\ud800b"',
    "10k levels of arrays": DEEP,
}
BODIES = {
    "no JSON": "{not json",
    "a list": "[]",
    "a string": '"task"',
    "a number": "1",
    "null": "null",
    "empty": "",
}
IDS = ["0", "-1", str(2**63), str(2**64), "abc", "1.5", "1e3", "%20", "%00"]
QUERY_VALUES = ["abc", "1.5", "-1", "0", str(2**64), "", "%00", LONG[:10_000]]
OTHER_TYPES = ["text/plain", "application/x-www-form-urlencoded", "application/xml"]

# What a refusal's code may be: the API's own, or an error code of the engine's and the
# dashboard's services (docs/api.md: "or an engine error's code").


def _codes(cls: type[TabwrightError]) -> Iterator[str]:
    yield cls.code
    for sub in cls.__subclasses__():
        yield from _codes(sub)


ERROR_CODES = set(API_CODES) | set(_codes(TabwrightError))
SNAPSHOT = [Run, Step, RunEvent, Scenario, ScenarioStep, ScenarioCall, IdentityHeal,
            SigninProfile, Batch, BatchRow, Schedule, ScheduleFiring, Delivery]  # fmt: skip


def snapshot() -> dict[str, Any]:
    """Every record a call could change (tokens but their last use): each table read
    whole in plain SQL (the ORM built each query anew, half of this test's time)."""
    rows: dict[str, Any] = {}
    with connection.cursor() as cursor:
        for model in SNAPSHOT:
            cursor.execute(
                f'SELECT * FROM "{model._meta.db_table}" ORDER BY "{model._meta.pk.column}"'
            )
            rows[model.__name__] = cursor.fetchall()
        table = ApiToken._meta.db_table
        cursor.execute(f'SELECT "id", "owner_id", "digest" FROM "{table}" ORDER BY "id"')
        rows["ApiToken"] = cursor.fetchall()
    return rows


def body_schema(operation: dict[str, Any]) -> dict[str, Any] | None:
    content = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if content is None:
        return None
    return {**content["schema"], "components": SCHEMA["components"]}


def schema_allows(schema: dict[str, Any] | None, body: str) -> bool:
    """Whether the operation's declared schema takes ``body`` (then the call may succeed)."""
    if schema is None:
        return False
    try:
        value = json.loads(body)
        json.dumps(value, allow_nan=False).encode("utf-8")  # no half of a UTF-16 pair
    except (ValueError, RecursionError, UnicodeEncodeError):
        return False
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def _target(schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref", "")
    return SCHEMA["components"]["schemas"][ref.rsplit("/", 1)[-1]] if ref else schema


def declared(schema: dict[str, Any], valid: dict[str, Any]) -> list[str]:
    """The body's fields: those the schema declares, else those of the valid body (a
    scenario file's, which the schema leaves open)."""
    return list(_target(schema).get("properties", {})) or list(valid)


def open_to_more(schema: dict[str, Any]) -> bool:
    """Whether the body may carry fields the schema does not name: only where it says so
    (a scenario file keeps what it does not know); else a misspelt field is refused."""
    return _target(schema).get("additionalProperties") is True


class Caller:
    """One operation, called with a token; each answer judged, the problems collected."""

    def __init__(self, operation: str, world: Owned, theirs: Owned) -> None:
        self.method, self.path = operation.split(" ", 1)
        self.spec = SCHEMA["paths"][self.path][self.method.lower()]
        self.ids, self.their_ids = world.ids(), theirs.ids()
        self.token = world.secret
        self.problems: list[str] = []
        self.records = snapshot()  # as they are before the next call

    def url(self, ids: dict[str, Any], query: str = "") -> str:
        path = self.path
        for name, value in ids.items():
            path = path.replace("{" + name + "}", str(value))
        return path + (f"?{query}" if query else "")

    def call(
        self, case: str, url: str, body: str | None = None, *, allowed: bool = False,
        content_type: str = "application/json", token: str | None = None, method: str = "",
    ) -> None:  # fmt: skip
        """Send it; a refusal must be typed and change nothing; a success only where
        ``allowed`` (the schema takes the input)."""
        client = Client(raise_request_exception=False,
                        headers={"Authorization": f"Bearer {token or self.token}"})  # fmt: skip
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs = {"data": body.encode("utf-8", "surrogatepass"), "content_type": content_type}
        answer = client.generic(method or self.method, url, **kwargs)
        where = f"{case}: {method or self.method} {url[:120]} -> {answer.status_code}"
        status, before, self.records = answer.status_code, self.records, snapshot()
        if status < 400:
            if not allowed:
                self.problems.append(f"{where}: taken, not refused")
            return
        if status >= 500:
            self.problems.append(f"{where}: {answer.content[:300]!r}")
        elif problem := _untyped(answer):
            self.problems.append(f"{where}: {problem}")
        if self.records != before:
            self.problems.append(f"{where}: refused, yet records changed")


def _untyped(answer: Any) -> str:
    """What is wrong with a refusal's body ("" if it is the one error shape)."""
    if b"Traceback" in answer.content:
        return "a traceback in the answer"
    try:
        error = json.loads(answer.content)["error"]
    except (ValueError, KeyError, TypeError):
        return f"not the API's error JSON: {answer.content[:200]!r}"
    if not isinstance(error, dict) or set(error) != {"code", "message", "hint", "fields"}:
        return f"not the error shape: {error!r:.200}"
    if error["code"] not in ERROR_CODES:
        return f"unknown code {error['code']!r}"
    if not isinstance(error["message"], str) or not error["message"].strip():
        return "no message"
    return ""


@pytest.fixture
def web_only(settings: Any) -> None:
    """A web process without a worker: a run a call starts (or a message restores) is
    queued for a worker, none is driven here."""
    settings.TABWRIGHT = {**settings.TABWRIGHT, "EMBEDDED_WORKER": False}


class Owned(World):
    """A person's run, scenario, batch and schedule (tests/dashboard/test_isolation.py), and
    a token of theirs."""

    def __init__(self, owner: Any, media_root: Path) -> None:
        super().__init__(owner, media_root)
        self.secret = token_of(owner)

    def ids(self) -> dict[str, int]:
        return {"run_id": self.run.pk, "scenario_id": self.scenario.pk,
                "batch_id": self.batch.pk, "schedule_id": self.schedule.pk}  # fmt: skip


@pytest.fixture
def world(owner: Any, media_root: Path) -> Owned:
    return Owned(owner, media_root)


@pytest.fixture
def theirs(stranger: Any, media_root: Path) -> Owned:
    return Owned(stranger, media_root)


def test_every_operation_served_is_tried() -> None:
    """A new operation is tried here from the day it is served; a body it takes is given
    here (VALID) for the cases to spoil."""
    with_body = {op for op in OPERATIONS if body_schema(_spec(op)) is not None}
    assert with_body == set(VALID), with_body ^ set(VALID)
    assert len(OPERATIONS) >= 30


def _spec(operation: str) -> dict[str, Any]:
    method, path = operation.split(" ", 1)
    return SCHEMA["paths"][path][method.lower()]


@pytest.mark.parametrize("operation", OPERATIONS)
def test_hostile_input_is_refused_in_the_error_shape_and_changes_nothing(
    operation: str, world: Owned, theirs: Owned, web_only: None
) -> None:
    caller = Caller(operation, world, theirs)
    schema = body_schema(caller.spec)
    valid = VALID.get(operation)
    base = json.dumps(valid) if valid is not None else None
    owned = caller.url(caller.ids)

    # Path ids: none of the owner's objects, or another person's.
    for name in [p["name"] for p in caller.spec.get("parameters", []) if p["in"] == "path"]:
        for bad in IDS:
            caller.call(f"{name}={bad}", caller.url({**caller.ids, name: bad}), base)
        caller.call(f"{name}=theirs", caller.url({**caller.ids, name: caller.their_ids[name]}),
                    base)  # fmt: skip
    # Another person's token, on the owner's objects.
    if "{" in caller.path:
        caller.call("their token", owned, base, token=theirs.secret)
    # A method the path does not take; a path that is no call.
    for method in [m.upper() for m in METHODS if m not in SCHEMA["paths"][caller.path]]:
        caller.call(f"method {method}", owned, base, method=method)
    for tail in ("/", "/nope"):
        caller.call(f"path {tail}", owned + tail, base)

    # Query parameters of the wrong type (a number where a text is asked may be taken).
    for param in [p for p in caller.spec.get("parameters", []) if p["in"] == "query"]:
        integer = param["schema"].get("type") == "integer"
        for bad in QUERY_VALUES:
            takes = not integer or bad.lstrip("-").isdigit()
            caller.call(f"?{param['name']}={bad[:20]}",
                        caller.url(caller.ids, f"{param['name']}={quote(bad, safe='%')}"),
                        allowed=takes)  # fmt: skip

    if schema is not None and valid is not None:
        for case, body in BODIES.items():
            caller.call(f"body {case}", owned, body)
        for content_type in OTHER_TYPES:
            caller.call(f"Content-Type {content_type}", owned, base, content_type=content_type,
                        allowed=True)  # fmt: skip
        for field in declared(schema, valid):
            for case, value in FIELD_VALUES.items():
                rest = {k: v for k, v in valid.items() if k != field}
                body = json.dumps(rest)[:-1] + (", " if rest else "") + f'"{field}": {value}}}'
                caller.call(f"{field} = {case}", owned, body,
                            allowed=schema_allows(schema, body))  # fmt: skip
        extra = json.dumps({**valid, "no_such_field": 1})
        caller.call("an unknown field", owned, extra, allowed=open_to_more(schema))

    assert not caller.problems, "\n".join(caller.problems)
