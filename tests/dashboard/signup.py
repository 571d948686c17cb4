"""A scenario of the demo sign-up form that the API and batch tests replay."""

from __future__ import annotations

from typing import Any

__all__ = ["sign_up"]


def sign_up(base: str) -> dict[str, Any]:
    """The demo form's sign-up: the page (a parameter with a default), the name typed and
    the greeting waited for (no defaults)."""
    return {
        "format": "tabwright.scenario", "version": 1, "name": "Sign up people",
        "base_url": base, "params": {"page": {"default": "form.html"}},
        "steps": [
            {"action": "navigate", "args": {"url": f"{base}/demo/${{page}}"}},
            {"action": "fill", "args": {"value": "${name}"},
             "identity": {"role": "textbox", "name": "Name", "tag": "input"}},
            {"action": "fill", "args": {"value": "ada@example.org"},
             "identity": {"role": "textbox", "name": "Email", "tag": "input"}},
            {"action": "click", "args": {},
             "identity": {"role": "button", "name": "Sign up", "tag": "button"}},
            {"action": "wait_for", "args": {"text": "Welcome, ${greet}!"}},
        ],
    }  # fmt: skip
