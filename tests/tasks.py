"""Rule-planner tasks the tests share, on the demo pages (fixtures/demo/)."""

from __future__ import annotations

__all__ = ["AMBIGUOUS_TASK", "FORM_TASK"]

# form.html: signs Ada up; succeeds only when every line did its part.
FORM_TASK = """type Ada Lovelace into Name
type ada@example.org into Email
click Sign up
wait for Welcome, Ada Lovelace!"""

# list.html: five "Delete" buttons, so the rule planner refuses to guess and asks the
# person (the run pauses); "click Delete #3" goes on.
AMBIGUOUS_TASK = """click Delete
wait for Order #1003 deleted"""
