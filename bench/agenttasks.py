"""The tasks of bench/agent.py: for each, what the model is asked, how a competent model
goes about it (a :class:`~bench.model.Skill` that reads only the prompt and picks refs by
role and name), and how the bench checks the page at the end without trusting the run's
verdict or the model's summary.

A policy looks at the page as it is now and returns the next step; it keeps nothing
between rounds, so a step that did not take effect is simply chosen again (and the
loop's stuck detection sees the repeat).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from playwright.async_api import Page

from bench.model import Decision, Situation, Skill
from bench.pageview import Node, PageView

__all__ = ["LIST_TASK", "SKILLS", "TASKS", "AgentTask"]

Check = Callable[[Page, str], Awaitable[tuple[bool, str]]]
_FIELD_ROLES = ("textbox", "searchbox", "combobox")


@dataclass(frozen=True)
class AgentTask:
    id: str
    instruction: str  # the task as the person writes it
    start_path: str  # under fixtures/
    check: Check  # (page at the end, the run's summary) -> (task done, what was seen)


def _act(name: str, **args: Any) -> dict[str, Any]:
    return {"action": name, **args}


def _quoted(text: str) -> list[str]:
    return re.findall(r'"([^"]+)"', text)


def _outside_rows(page: PageView, nodes: list[Node]) -> list[Node]:
    rows = [n.ref for n in page.walk() if n.role in ("listitem", "row")]
    return [n for n in nodes if not any(page.inside(n.ref, r) for r in rows)]


def _status_text(page: PageView) -> str:
    return " ".join(page.text(n.ref) for n in page.find(("status", "alert"))).strip()


# -- the todo list (five rounds: three adds, one toggle, done) ------------------------------

TODO_RE = re.compile(r'Add the todos (?P<items>.+?), then mark "(?P<mark>[^"]+)" as done')


def todo_policy(match: re.Match[str], s: Situation) -> Decision:
    items, mark, page = _quoted(match["items"]), match["mark"], s.page
    for item in items:
        if page.row_of(item) is None:
            boxes = _outside_rows(page, page.find(_FIELD_ROLES))
            if not boxes:
                return Decision(need_help="I can't find the field to add a todo")
            fill = _act("fill", ref=boxes[0].ref, value=item, submit=True)
            return Decision((fill,), say=f'Adding "{item}".')
    row = page.row_of(mark)
    assert row is not None
    toggles = page.find(("checkbox", "switch"), within=row.ref)
    if not toggles:
        return Decision(need_help=f'I see no checkbox in the row of "{mark}"')
    if not toggles[0].checked:
        return Decision((_act("click", ref=toggles[0].ref),), say=f'Marking "{mark}" as done.')
    return Decision(done=f"Added {', '.join(items)}; {mark} is marked as done.")


def _todo_check(items: list[str], mark: str) -> Check:
    async def check(page: Page, summary: str) -> tuple[bool, str]:
        state = await page.evaluate("() => window.__crossimplState && __crossimplState()")
        goal = [{"title": t, "done": t == mark} for t in items]
        got = state.get("items") if isinstance(state, dict) else state
        return got == goal, f"items={got}"

    return check


# -- a form -------------------------------------------------------------------------------

FORM_RE = re.compile(
    r'Sign up as "(?P<name>[^"]+)" with the email "(?P<email>[^"]+)", choose the '
    r'"(?P<plan>[^"]+)" plan, accept the terms'
)


def form_policy(match: re.Match[str], s: Situation) -> Decision:
    page = s.page
    status = _status_text(page)
    if re.search(r"welcome", status, re.IGNORECASE):
        return Decision(done=f"Signed up; the page says: {status}")
    wanted = [
        (page.find("textbox", r"\bname\b"), match["name"]),
        (page.find("textbox", r"e-?mail"), match["email"]),
        (page.find("combobox", r"plan"), match["plan"]),
        (page.find("checkbox", r"terms"), True),
    ]
    fields = []
    for found, value in wanted:
        if not found:
            return Decision(need_help="the form lacks a field the task needs")
        node = found[0]
        now = node.checked if value is True else node.value
        if now != value:
            fields.append({"ref": node.ref, "value": value})
    submit = page.find("button", r"sign up|submit|register")
    if not submit:
        return Decision(need_help="I can't find the form's submit button")
    actions = [_act("fill_form", fields=fields)] if fields else []
    actions.append(_act("click", ref=submit[0].ref))
    return Decision(tuple(actions), say="Filling in the form and sending it.")


async def _form_check(page: Page, summary: str) -> tuple[bool, str]:
    state = await page.evaluate(
        """() => ({
          name: document.querySelector("#name").value,
          email: document.querySelector("#email").value,
          plan: document.querySelector("#plan").value,
          terms: document.querySelector("#terms").checked,
          result: document.querySelector("#result").textContent,
        })"""
    )
    goal = {
        "name": "Ada Lovelace",
        "email": "ada@example.org",
        "plan": "pro",
        "terms": True,
        "result": "Welcome, Ada Lovelace!",
    }
    return state == goal, f"form={state}"


# -- delete a row -------------------------------------------------------------------------

DELETE_RE = re.compile(r'Delete the order of "(?P<who>[^"]+)"')


def delete_policy(match: re.Match[str], s: Situation) -> Decision:
    who, page = match["who"], s.page
    row = page.row_of(who)
    if row is not None:
        buttons = page.find("button", r"^(delete|remove)\b", within=row.ref)
        if not buttons:
            return Decision(need_help=f"the row of {who} has no delete button")
        return Decision((_act("click", ref=buttons[0].ref),), say=f"Deleting {who}'s order.")
    status = _status_text(page)
    if re.search(r"deleted|removed", status, re.IGNORECASE):
        return Decision(done=f"The order of {who} is deleted; the page says: {status}")
    return Decision(need_help=f"I see no order of {who} on this page")


async def _delete_check(page: Page, summary: str) -> tuple[bool, str]:
    names = await page.evaluate(
        "() => Array.from(document.querySelectorAll('tbody tr'), (r) => r.cells[1].textContent)"
    )
    goal = ["Ada Lovelace", "Grace Hopper", "Katherine Johnson", "Edsger Dijkstra"]
    return names == goal, f"rows={names}"


# -- search a list and report a value ------------------------------------------------------

SEARCH_RE = re.compile(
    r'search for "(?P<term>[^"]+)" and report the phone extension of "(?P<who>[^"]+)"'
)


def search_policy(match: re.Match[str], s: Situation) -> Decision:
    term, who, page = match["term"], match["who"], s.page
    boxes = page.find(("searchbox", "textbox"), r"search") or page.find("searchbox")
    if not boxes:
        return Decision(need_help="I can't find the search field")
    if (boxes[0].value or "") != term:
        return Decision((_act("fill", ref=boxes[0].ref, value=term),), say=f'Searching "{term}".')
    row = page.row_of(who)
    if row is None:
        return Decision(need_help=f"{who} is not in the results for {term!r}")
    cells = page.cells_by_header(row)
    extension = next((v for h, v in cells.items() if re.search(r"ext", h, re.I)), "")
    if not extension:
        return Decision(need_help=f"I can't tell {who}'s extension from the table")
    return Decision(done=f"{who}'s phone extension is {extension}.")


async def _search_check(page: Page, summary: str) -> tuple[bool, str]:
    state = await page.evaluate("() => window.__directoryState()")
    people = {p["name"]: p["extension"] for p in state["people"]}
    filtered = state["query"] == "Hopper" and state["shown"] == ["Edward Hopper", "Grace Hopper"]
    told = people["Grace Hopper"] in summary and people["Edward Hopper"] not in summary
    return filtered and told, f"query={state['query']!r} shown={state['shown']} said={summary!r}"


# -- go to another page and read a value there -----------------------------------------------

NAVIGATE_RE = re.compile(
    r'Open the orders table and report the amount of the order of "(?P<who>[^"]+)"'
)


def navigate_policy(match: re.Match[str], s: Situation) -> Decision:
    who, page = match["who"], s.page
    row = page.row_of(who)
    if row is not None:
        cells = page.cells_by_header(row)
        amount = next((v for h, v in cells.items() if re.search(r"amount|total", h, re.I)), "")
        if amount:
            return Decision(done=f"The order of {who} amounts to {amount}.")
    links = page.find("link", r"orders")
    if not links:
        return Decision(need_help="I can't find the way to the orders table")
    return Decision((_act("click", ref=links[0].ref),), say="Opening the orders table.")


async def _navigate_check(page: Page, summary: str) -> tuple[bool, str]:
    amount = await page.evaluate(
        """() => {
          const row = Array.from(document.querySelectorAll("tbody tr"))
            .find((r) => r.cells[1] && r.cells[1].textContent === "Katherine Johnson");
          return row ? row.cells[2].textContent : null;
        }"""
    )
    on_list = page.url.split("?")[0].endswith("/demo/list.html")
    return on_list and amount is not None and amount in summary, f"url={page.url} said={summary!r}"


# -- a flow over two pages ------------------------------------------------------------------

FLOW_RE = re.compile(r'Place an order for the company "(?P<company>[^"]+)"')


def flow_policy(match: re.Match[str], s: Situation) -> Decision:
    company, page = match["company"], s.page
    status = _status_text(page)
    if status:
        return Decision(done=f"Ordered for {company}; the page says: {status}")
    confirm = page.find("button", r"confirm")
    if confirm:
        return Decision((_act("click", ref=confirm[0].ref),), say="Confirming the order.")
    boxes = page.find("textbox", r"company")
    forward = page.find("button", r"continue|next")
    if not boxes or not forward:
        return Decision(need_help="I can't find where to enter the company")
    actions = (_act("fill", ref=boxes[0].ref, value=company), _act("click", ref=forward[0].ref))
    return Decision(actions, say=f"Entering {company} and going on.")


async def _flow_check(page: Page, summary: str) -> tuple[bool, str]:
    confirmation = await page.evaluate(
        "() => document.querySelector('#confirmation')?.textContent ?? null"
    )
    company = await page.evaluate("() => new URLSearchParams(location.search).get('company')")
    ok = company == "Acme Corp" and confirmation == "Order confirmed" and "confirmed" in summary
    return ok, f"company={company!r} confirmation={confirmation!r}"


# -- the set ------------------------------------------------------------------------------

_TODOS = ["Buy milk", "Walk the dog", "Pay rent"]
_TODO_TASK = (
    'Add the todos "Buy milk", "Walk the dog" and "Pay rent", then mark "Walk the dog" as done.'
)
_TODO_CHECK = _todo_check(_TODOS, _TODOS[1])

LIST_TASK = "todo-list"  # the five-round list task: three adds, one toggle, done
TASKS: list[AgentTask] = [
    AgentTask(LIST_TASK, _TODO_TASK, "crossimpl/classic/index.html", _TODO_CHECK),
    # The same task on an app that renders its whole list again on every change.
    AgentTask("todo-rerender", _TODO_TASK, "crossimpl/rerender/index.html", _TODO_CHECK),
    AgentTask(
        "form",
        'Sign up as "Ada Lovelace" with the email "ada@example.org", choose the "Pro" plan, '
        "accept the terms and submit the form.",
        "demo/form.html",
        _form_check,
    ),
    AgentTask("delete", 'Delete the order of "Alan Turing".', "demo/list.html", _delete_check),
    AgentTask(
        "search",
        'In the staff directory, search for "Hopper" and report the phone extension of '
        '"Grace Hopper".',
        "agentbench/directory.html",
        _search_check,
    ),
    AgentTask(
        "navigate",
        'Open the orders table and report the amount of the order of "Katherine Johnson".',
        "demo/index.html",
        _navigate_check,
    ),
    AgentTask(
        "flow",
        'Place an order for the company "Acme Corp": enter the company, continue, confirm '
        "the order, and report the confirmation.",
        "demo/flow/step1.html",
        _flow_check,
    ),
]

SKILLS: list[Skill] = [
    Skill(TODO_RE, todo_policy),
    Skill(FORM_RE, form_policy),
    Skill(DELETE_RE, delete_policy),
    Skill(SEARCH_RE, search_policy),
    Skill(NAVIGATE_RE, navigate_policy),
    Skill(FLOW_RE, flow_policy),
]
