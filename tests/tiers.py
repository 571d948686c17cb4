"""Which tier a test is in, decided from what it reaches, not from a mark someone remembers.

- ``browser``: it reaches a Chromium (the ``browser`` fixture, a ``BrowserSession``, the
  dashboard's runner, Playwright, a CDP Chromium started by hand);
- ``servers``: it starts a process or a server other than the fake LLM (daphne, a worker,
  Redis, PostgreSQL, a loopback HTTP or SMTP server, any subprocess);
- neither: the fast tier (``make test-fast``), pure logic on an in-memory database, the
  fake LLM server included (a thread on loopback that costs milliseconds).

"Reaches" is followed through the code: the test function, the fixtures it uses (all of
them, transitively, as pytest resolved them) and every function or class of the tests'
own modules that these name, down to the roots registered here (``BROWSER`` and
``SERVERS``: objects, compared by identity).  A module or class that is neither root nor
test code stops the walk, so the roots are the engine's and the tests' own entry points.

What the walk cannot see (the engine starting Chromium deep inside a call that is not a
root) is caught when the fast tier runs: there ``guard_fast_tier`` makes starting a
process or listening on a socket fail the test with a message that says to add a root or
a mark (``pytestmark = pytest.mark.browser``).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import socket
import socketserver
import subprocess
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

__all__ = ["BROWSER", "FAST", "SERVERS", "TIERS", "guard_fast_tier", "tiers_of"]

TIERS = ("browser", "servers")

# Objects whose use puts a test in a tier; conftests add their own entry points.  A
# module's attribute counts as used when the code names the module and the attribute.
BROWSER: list[object] = []
SERVERS: list[object] = [
    subprocess.Popen,
    subprocess.run,
    asyncio.create_subprocess_exec,
    asyncio.create_subprocess_shell,
    asyncio.start_server,
    socket.socket,
    socketserver.BaseServer,
]
# Fixtures of plugins (not walked: only the tests' own code is) that start a server.
SERVER_FIXTURES = frozenset({"live_server"})
# Test code that the walk does not enter: servers cheap enough for the fast tier.
FAST: list[object] = []


def _is_root(obj: object, roots: list[object]) -> bool:
    if isinstance(obj, type):  # a class of the tests made on a root (a server of their own)
        return any(base is root for base in obj.__mro__ for root in roots)
    return any(obj is root for root in roots)


def _tier(obj: object) -> str | None:
    if _is_root(obj, FAST):
        return "fast"
    if _is_root(obj, BROWSER):
        return "browser"
    if _is_root(obj, SERVERS):
        return "servers"
    return None


def _test_code(obj: object) -> bool:
    """Code of the tests' own modules (followed), not of the engine or a library."""
    module = getattr(obj, "__module__", None) or ""
    return module == "tests" or module.startswith("tests.") or module.startswith("conftest")


def _codes(obj: object) -> Iterator[tuple[types.CodeType, dict[str, Any]]]:
    """The code objects of a function (or of each method of a class) with its globals."""
    obj = inspect.unwrap(obj) if callable(obj) else obj
    if isinstance(obj, types.FunctionType):
        yield obj.__code__, obj.__globals__
    elif isinstance(obj, type):
        for value in vars(obj).values():
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if isinstance(value, property):
                value = value.fget
            if isinstance(value, types.FunctionType):
                yield value.__code__, value.__globals__


def _module(name: str) -> types.ModuleType | None:
    """The module a dotted name in the code imports: the tests' own are imported to be
    walked (the test imports them only when it runs); another only if loaded already."""
    if name.startswith("tests.") and name not in sys.modules:
        try:
            importlib.import_module(name)
        except ImportError:
            return None
    return sys.modules.get(name)


def _names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


def reaches(start: object, seen: set[int] | None = None) -> set[str]:
    """The tiers that ``start`` (a function or class) reaches."""
    seen = set() if seen is None else seen
    found: set[str] = set()
    for code, globals_ in _codes(start):
        if id(code) in seen:
            continue
        seen.add(id(code))
        names = set(_names(code))
        values = [globals_[name] for name in names if name in globals_]
        # What a module names (``tests.daphne.daphne``, ``asyncio.start_server``), also
        # when imported inside the function (``from tests.daphne import daphne``).
        modules = [v for v in values if isinstance(v, types.ModuleType)]
        modules += [_module(name) for name in names if "." in name]
        for module in filter(None, modules):
            for attribute in names:
                value = getattr(module, attribute, None)
                if isinstance(value, (type, types.FunctionType)):
                    values.append(value)
        for value in values:
            tier = _tier(value)
            if tier == "fast":
                continue
            if tier is not None:
                found.add(tier)
            elif _test_code(value) and isinstance(value, (type, types.FunctionType)):
                found |= reaches(value, seen)
            elif _test_code(getattr(value, "func", None)):  # functools.partial
                found |= reaches(value.func, seen)
    return found


# What each start (a test function, a fixture's) reaches, walked once per process: many
# tests share a fixture, whose walk took most of a collection's time when done per test.
_reached: dict[object, frozenset[str]] = {}


def _reached_from(start: object) -> frozenset[str]:
    try:
        return _reached[start]
    except KeyError:
        found = _reached[start] = frozenset(reaches(start))
        return found
    except TypeError:  # (not hashable)
        return frozenset(reaches(start))


def tiers_of(item: pytest.Item) -> set[str]:
    """The tiers of a collected test: its own marks, its function's and its fixtures'."""
    found = {tier for tier in TIERS if item.get_closest_marker(tier) is not None}
    starts: list[object] = [getattr(item, "obj", None)]
    info = getattr(item, "_fixtureinfo", None)
    if info is not None:
        for name, defs in info.name2fixturedefs.items():
            if name in SERVER_FIXTURES:
                found.add("servers")
            starts.extend(fixturedef.func for fixturedef in defs)
    for start in starts:
        if _test_code(start):
            found |= _reached_from(start)
    return found


def _from_fake_llm() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.endswith("fakellm.py"):
            return True
        frame = frame.f_back
    return False


@contextmanager
def guard_fast_tier(nodeid: str) -> Iterator[None]:
    """While a fast-tier test runs: no process is started and nothing listens on a socket
    but the fake LLM; a test that does is told where it belongs."""
    where = (
        f"{nodeid} is in the fast tier (make test-fast) but {{}}: put it in its tier "
        "(pytestmark = pytest.mark.browser or pytest.mark.servers), or register what it "
        "calls as a root in tests/tiers.py"
    )
    popen_init = subprocess.Popen.__init__
    listen = socket.socket.listen

    def refuse_popen(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        pytest.fail(where.format("starts a process"), pytrace=True)

    def refuse_listen(self: socket.socket, *args: Any) -> None:
        if not _from_fake_llm():
            pytest.fail(where.format("listens on a socket"), pytrace=True)
        listen(self, *args)

    subprocess.Popen.__init__ = refuse_popen  # type: ignore[method-assign]
    socket.socket.listen = refuse_listen  # type: ignore[method-assign]
    try:
        yield
    finally:
        subprocess.Popen.__init__ = popen_init  # type: ignore[method-assign]
        socket.socket.listen = listen  # type: ignore[method-assign]
