"""The tier of a test is found from what it reaches, through its helpers and imports."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from automation import BrowserSession
from tests import tiers
from tests.conftest import browser_config
from tests.fakellm import ScriptedLLMServer


def _helper_opening_a_browser() -> None:
    BrowserSession(browser_config())


def _pure(text: str) -> str:
    return text.upper()


def opens_a_browser_two_calls_down() -> None:
    _pure("a")
    _helper_opening_a_browser()


def starts_daphne_by_a_local_import() -> None:
    from tests.daphne import daphne

    daphne  # noqa: B018


def starts_a_process() -> None:
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def talks_to_the_fake_llm() -> None:
    ScriptedLLMServer().start().stop()


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        (opens_a_browser_two_calls_down, {"browser"}),
        (starts_daphne_by_a_local_import, {"servers"}),
        (starts_a_process, {"servers"}),
        (talks_to_the_fake_llm, set()),
        (_pure, set()),
    ],
)
def test_a_function_s_tiers_are_what_it_reaches(function: object, expected: set[str]) -> None:
    assert tiers.reaches(function) == expected


def test_a_test_using_the_tab_fixture_is_a_browser_test(request: pytest.FixtureRequest) -> None:
    items = [i for i in request.session.items if i.nodeid.endswith("test_history_and_screenshots")]
    for item in items:  # only when that test was collected too
        assert item.get_closest_marker("browser") is not None
    assert request.node.get_closest_marker("browser") is None
    assert request.node.get_closest_marker("servers") is None


@pytest.mark.servers  # it starts a process and listens, inside the guard and after it
def test_the_fast_tier_s_guard_refuses_a_process_and_a_listening_socket() -> None:
    with tiers.guard_fast_tier("tests/x.py::test_y"):
        with pytest.raises(
            pytest.fail.Exception, match=r"test_y is in the fast tier .* starts a process"
        ):
            subprocess.Popen(["true"])
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            with pytest.raises(pytest.fail.Exception, match="listens on a socket"):
                sock.listen()
        ScriptedLLMServer().start().stop()  # the fake LLM may listen
    with socket.socket() as sock:  # after it, both work again
        sock.bind(("127.0.0.1", 0))
        sock.listen()
    subprocess.run(["true"], check=True)
