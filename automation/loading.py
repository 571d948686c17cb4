"""A process's start: its modules load with the garbage collector paused.

Nearly every object an import makes (classes, functions, a pydantic model's schema) lives
as long as the process does, yet Python's collector walks them again and again while they
are made: a collection every 700 new objects, a full one every hundred of those.  While a
server or a command loads (the MCP SDK, Django, Playwright) that is 10-20 % of its CPU for
nothing.  So a process's entry point pauses the collector before its imports and resumes
it once they are done; what was loaded by then is moved out of the collector's reach
(:func:`gc.freeze`: it stays anyway), which also makes every later full collection
cheaper.
"""

from __future__ import annotations

import gc

__all__ = ["pause_gc", "resume_gc"]

_paused = False


def pause_gc() -> None:
    """The collector off until :func:`resume_gc` (unless it is off already)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_gc() -> None:
    """The collector on again, unless :func:`pause_gc` did not turn it off; what exists now
    is left out of its collections from now on."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
