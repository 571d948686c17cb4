"""An output checked against its schema away from the event loop, with a deadline.

Even with patterns in RE2 and no reference leaving the schema, what jsonschema does is
as slow as the schema and the output make it: ``uniqueItems`` over thousands of objects
compares each pair, nested ``anyOf`` over ``$ref`` branches multiplies.  A thread would
free the loop but could not be stopped at the deadline (it would go on taking CPU and the
GIL), so the check runs in a child Python process that is killed at the deadline.  The
child reads ``{"schema", "output"}`` as JSON on stdin and writes one JSON line: ``{}``
when the output matches, else the OutputInvalid's message and problems.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

from automation.agent.output import check_output
from automation.errors import OutputInvalid

__all__ = ["CHECK_TIMEOUT_MS", "check_output_isolated"]

CHECK_TIMEOUT_MS = 10_000  # seconds of work for one output is already far past a fair schema


async def check_output_isolated(
    schema: dict[str, Any], output: object, *, timeout_ms: float = CHECK_TIMEOUT_MS
) -> None:
    """As check_output (OutputInvalid when the output does not match), in a child process
    that is killed after ``timeout_ms``: then OutputInvalid says the check took too long."""
    data = json.dumps({"schema": schema, "output": output}, default=str).encode()
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", __name__,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        async with asyncio.timeout(timeout_ms / 1000):
            answer, _ = await child.communicate(data)
    except TimeoutError:
        raise OutputInvalid(
            f"checking the output against the schema took more than {timeout_ms:.0f} ms",
            problems=[f"$: not checked within {timeout_ms:.0f} ms"],
            hint="the schema or the output asks for too much work: keep arrays with "
            "uniqueItems short, and anyOf/oneOf shallow",
        ) from None
    finally:
        if child.returncode is None:  # the deadline, or our caller cancelled
            with contextlib.suppress(ProcessLookupError):
                child.kill()
            await asyncio.shield(child.wait())
    _raise_from(answer, child.returncode)


def _raise_from(answer: bytes, returncode: int | None) -> None:
    try:
        got = json.loads(answer)
    except ValueError:
        raise OutputInvalid(
            f"the output could not be checked (the check ended with status {returncode})"
        ) from None
    if got:
        raise OutputInvalid(got["message"], problems=got["problems"], hint=got["hint"])


def main() -> None:
    request = json.load(sys.stdin)
    try:
        check_output(request["schema"], request["output"])
    except OutputInvalid as exc:
        answer = {"message": exc.message, "problems": exc.problems, "hint": exc.hint}
    else:
        answer = {}
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    main()
