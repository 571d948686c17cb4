"""make test's first process rewrites the test modules' asserts for the others to read."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc

from tests import rewritten


def test_a_test_module_is_rewritten_once_and_kept_for_the_next_process(
    pytestconfig: pytest.Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    module = tmp_path / "test_sample.py"
    module.write_text("def test_it():\n    x = 1\n    assert x == 2\n")
    (tmp_path / "helper.py").write_text("VALUE = 1\n")  # not a test module: left alone

    assert rewritten.rewrite_once(pytestconfig, tmp_path) == 1
    code = _read_pyc(module, tmp_path / "__pycache__" / ("test_sample" + PYC_TAIL))
    assert code is not None  # what pytest's import hook reads instead of rewriting
    namespace: dict[str, object] = {}
    exec(code, namespace)
    with pytest.raises(AssertionError, match=r"assert 1 == 2"):  # the asserts rewritten
        namespace["test_it"]()  # type: ignore[operator]
    assert sorted(p.name for p in (tmp_path / "__pycache__").iterdir()) == [
        "test_sample" + PYC_TAIL
    ]
    assert rewritten.rewrite_once(pytestconfig, tmp_path) == 0  # kept: not again

    module.write_text("def test_it():\n    assert True\n")  # changed: rewritten again
    assert rewritten.rewrite_once(pytestconfig, tmp_path) == 1
