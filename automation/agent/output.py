"""A run's output: the data a task ends in ("the order total", "the overdue invoices"),
checked against the JSON Schema the run was given.

The model is told the schema with the task, and its ``done`` carries ``output``.  An output
that does not match goes back to the model once with what is wrong; a second miss pauses
the run for the person.  Validation is the ``jsonschema`` library's (Draft 2020-12 unless
the schema names its own ``$schema``), the reference implementation of the standard, so
what a schema means is what it means everywhere else, but for two things that make it safe
to apply a schema anyone wrote (automation.agent.schema): ``$ref`` reaches only the schema
itself, and patterns are matched with RE2.  The loop checks an output in a child process
with a deadline (automation.agent.outputcheck), never on its event loop.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema.exceptions import SchemaError
from referencing.exceptions import Unresolvable

from automation.agent.schema import check_safe, validator, validator_class
from automation.errors import OutputInvalid

__all__ = [
    "MAX_OUTPUT_CHARS",
    "MAX_PROBLEMS",
    "MAX_SCHEMA_CHARS",
    "check_output",
    "check_schema",
    "schema_note",
]

MAX_SCHEMA_CHARS = 20_000  # a schema is told to the model every round: it must stay small
MAX_PROBLEMS = 10  # told to the model at once; the rest are counted
MAX_OUTPUT_CHARS = 200_000  # as JSON: stored with the run and shown on its page


def check_schema(schema: object) -> dict[str, Any]:
    """``schema`` if it is a JSON Schema object a run can use, else OutputInvalid."""
    if not isinstance(schema, dict):
        raise OutputInvalid(
            f"an output schema must be a JSON object, not {type(schema).__name__}",
            hint='like {"type": "object", "properties": {"total": {"type": "number"}}}',
        )
    text = json.dumps(schema, ensure_ascii=False)
    if len(text) > MAX_SCHEMA_CHARS:
        raise OutputInvalid(
            f"the output schema has {len(text)} characters; at most {MAX_SCHEMA_CHARS}",
            hint="the model reads it every round: describe only the data the task ends in",
        )
    try:
        validator_class(schema).check_schema(schema)
    except SchemaError as exc:
        where = _path(exc.absolute_path)
        raise OutputInvalid(
            f"the output schema is not a valid JSON Schema: {where}{exc.message}"
        ) from None
    except RecursionError:  # a pattern of thousands of nested groups, compiled by ``re``
        raise OutputInvalid(
            "the output schema is nested too deeply to be read (a pattern's groups?)",
            hint="a pattern of a few groups says as much",
        ) from None
    check_safe(schema)
    return schema


def check_output(schema: dict[str, Any], output: object) -> None:
    """Nothing if ``output`` matches ``schema``; else OutputInvalid with each problem.
    Synchronous, and as slow as the schema makes it: callers on an event loop use
    automation.agent.outputcheck.check_output_isolated."""
    check_schema(schema)
    size = len(json.dumps(output, ensure_ascii=False, default=str))
    if size > MAX_OUTPUT_CHARS:
        raise OutputInvalid(
            f"the output has {size} characters as JSON; at most {MAX_OUTPUT_CHARS}",
            problems=[f"$: {size} characters, at most {MAX_OUTPUT_CHARS}"],
            hint="write big data to a file of the workspace and give its path",
        )
    try:
        errors = sorted(validator(schema).iter_errors(output), key=lambda e: list(e.absolute_path))
    except Unresolvable as exc:  # check_schema refuses these; the lookup is still closed
        raise OutputInvalid(f"the output schema's $ref {exc.ref!r} can't be followed") from None
    if not errors:
        return
    problems = [f"{_path(e.absolute_path) or '$: '}{e.message}" for e in errors[:MAX_PROBLEMS]]
    if len(errors) > MAX_PROBLEMS:
        problems.append(f"… and {len(errors) - MAX_PROBLEMS} more")
    raise OutputInvalid(
        f"the output does not match the schema ({len(errors)} problem"
        f"{'' if len(errors) == 1 else 's'})",
        problems=problems,
    )


def schema_note(schema: dict[str, Any]) -> str:
    """What the model is told with the task."""
    return (
        'The task ends in data: send done with an "output" (beside the summary) that '
        "matches this JSON Schema:\n" + json.dumps(schema, ensure_ascii=False, sort_keys=True)
    )


def _path(path: Any) -> str:
    parts = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    return f"${parts}: " if parts else ""
