"""The test modules' asserts rewritten once, before pytest-xdist's processes start.

pytest rewrites a test module's asserts as it imports it (a pure-Python pass over the
tree: about 5 s of CPU for this suite) and keeps the result beside it, in the same
``__pycache__`` files a later process reads.  In a fresh clone none is there yet, so each
of ``make test``'s processes, started together, rewrote every module again.  The process
that deals the tests out rewrites them first (nothing is imported or run), and its
processes read them.  pytest's own functions write the files exactly as its import hook
does; should a pytest to come lack them, each process rewrites for itself, as before.
"""

from __future__ import annotations

import sys
from fnmatch import fnmatch
from pathlib import Path

import pytest

__all__ = ["rewrite_once"]


def _test_modules(config: pytest.Config, root: Path) -> list[Path]:
    patterns = [*config.getini("python_files"), "conftest.py"]
    return sorted(
        path
        for path in root.rglob("*.py")
        if "__pycache__" not in path.parts and any(fnmatch(path.name, p) for p in patterns)
    )


def rewrite_once(config: pytest.Config, root: Path) -> int:
    """Rewrite the test modules under ``root`` whose rewritten code is not kept yet (or
    is stale); the number rewritten."""
    try:
        from _pytest.assertion.rewrite import (
            PYC_TAIL,
            _read_pyc,
            _rewrite_test,
            _write_pyc,
            assertstate_key,
            get_cache_dir,
        )
    except ImportError:
        return 0
    state = config.stash.get(assertstate_key, None)
    if state is None or sys.dont_write_bytecode:  # (asserts not rewritten, or not kept)
        return 0
    done = 0
    for path in _test_modules(config, root):
        cache = get_cache_dir(path)
        pyc = cache / (path.name[:-3] + PYC_TAIL)
        if _read_pyc(path, pyc) is not None:
            continue
        try:
            cache.mkdir(exist_ok=True)
            source_hash, code = _rewrite_test(path, config)
        except (OSError, SyntaxError):  # (its process says so when it imports it)
            continue
        done += _write_pyc(state, code, source_hash, pyc)
    return done
