"""A competent model that reads only its prompt, served over the OpenAI protocol.

:class:`ScriptedModel` is an OpenAI-compatible ``/v1/chat/completions`` server on
127.0.0.1 (standard library).  Every reply is computed from the request alone: the task
is the user message that starts with ``Task:``, the page is rebuilt from the snapshots in
the messages (:mod:`bench.pageview`), and the actions it may use are the request's
``tools`` (an action a shared tool names in its ``action`` parameter is called through that
tool) or, without them, the ``- name(...)`` list of the system prompt.  Nothing of
the page is kept between requests.  A :class:`Skill` recognises its task by its wording
and picks the next actions by role and name, so it works on any implementation of a page
that shows the same roles and names.

Replies stream the way OpenAI streams: a role chunk, content pieces, then (with tools)
native tool calls whose arguments come in fragments, a chunk with ``finish_reason`` and
``data: [DONE]``.  Without tools, actions are ``<action>{json}</action>`` tags in the text.

Every request is recorded (:class:`RequestRecord`): its prompt characters are the sum of
the message contents plus the ``tools`` array when one is sent, as compact JSON (the way
the planner's HTTP client sends it).
"""

from __future__ import annotations

import json
import re
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench.pageview import PageView, content_text, page_from_messages

__all__ = ["Decision", "RequestRecord", "ScriptedModel", "Situation", "Skill", "serve_model"]

PATH = "/v1/chat/completions"
MODEL = "bench-model"
CHUNK_CHARS = 16  # characters of text (or tool arguments) per streamed chunk
# A text-mode action line: "- click(ref, button?, ...): what it does".
_TEXT_ACTION_RE = re.compile(r"^- (\w+)\(", re.MULTILINE)
_TASK_PREFIX = "Task: "


@dataclass(frozen=True)
class Decision:
    """What the model answers: actions to run, or done, or a request for help."""

    actions: tuple[dict[str, Any], ...] = ()  # each {"action": name, ...args}
    done: str | None = None  # the summary
    need_help: str | None = None
    say: str = ""  # a sentence before the actions, as models write one

    @property
    def names(self) -> list[str]:
        return [a["action"] for a in self.actions] + (["done"] if self.done is not None else [])


@dataclass
class Situation:
    task: str  # the task as the prompt gives it
    page: PageView
    offered: frozenset[str]  # the actions the prompt offers
    native: bool  # the request carries tools
    errors: list[str] = field(default_factory=list)  # ERROR lines of the newest observation
    # With tools: an action offered through a shared tool -> that tool's name (the tool
    # takes the action's name in its "action" parameter).
    via: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Skill:
    """A task the model knows: ``pattern`` recognises it in the task text."""

    pattern: re.Pattern[str]
    policy: Callable[[re.Match[str], Situation], Decision]


@dataclass(frozen=True)
class RequestRecord:
    chars: int  # message contents + the tools array's compact JSON
    tools_chars: int  # the tools array's share of chars (0 in text mode)
    system_chars: int
    native: bool
    messages: int
    task: str
    reply: str  # the reply as text: prose, and each action as a tag


class ScriptedModel:
    """The skills, and every request answered (in order)."""

    def __init__(self, skills: list[Skill]) -> None:
        self.skills = skills
        self.requests: list[RequestRecord] = []
        self.base_url = ""  # ends in /v1, set once served
        self._lock = threading.Lock()

    def answer(self, body: dict[str, Any]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
        """The reply to one request: (content, tool calls); tool calls only with tools."""
        messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
        tools = body.get("tools") or []
        situation = _situation(messages, tools)
        decision = self._decide(situation)
        content, calls = _render(decision, native=situation.native, via=situation.via)
        tools_chars = len(_compact(tools)) if tools else 0
        contents = [content_text(m.get("content")) for m in messages]
        roles = [m.get("role") for m in messages]
        system = sum(len(c) for r, c in zip(roles, contents, strict=True) if r == "system")
        shown = content + "".join(_tag(name, args) for name, args in calls)
        record = RequestRecord(
            sum(len(c) for c in contents) + tools_chars,
            tools_chars,
            system,
            situation.native,
            len(messages),
            situation.task,
            shown,
        )
        with self._lock:
            self.requests.append(record)
        return content, calls

    def _decide(self, situation: Situation) -> Decision:
        for skill in self.skills:
            match = skill.pattern.search(situation.task)
            if match is None:
                continue
            try:
                decision = skill.policy(match, situation)
            except Exception as exc:  # a bench bug: shown as the run's pause reason
                detail = traceback.format_exception_only(exc)[-1].strip()
                return Decision(need_help=f"the scripted model failed: {detail}")
            missing = [n for n in decision.names if n not in situation.offered]
            if missing:
                return Decision(need_help=f"the prompt offers no {', '.join(missing)} action")
            return decision
        return Decision(need_help=f"I don't know how to do this task: {situation.task[:80]}")


def _situation(messages: list[dict[str, Any]], tools: list[Any]) -> Situation:
    task = ""
    for m in messages:
        text = content_text(m.get("content"))
        if m.get("role") == "user" and text.startswith(_TASK_PREFIX):
            task = text[len(_TASK_PREFIX) :].split("\nStart page:", 1)[0].strip()
            break
    via: dict[str, str] = {}
    if tools:
        functions = [t.get("function") for t in tools if isinstance(t, dict)]
        offered = {f.get("name", "") for f in functions if isinstance(f, dict)} - {""}
        for f in functions:  # a tool whose "action" parameter names one of several actions
            props = ((f or {}).get("parameters") or {}).get("properties") or {}
            for name in (props.get("action") or {}).get("enum") or ():
                via[name] = f["name"]
                offered.add(name)
    else:
        systems = [m for m in messages if m.get("role") == "system"]
        system = " ".join(content_text(m.get("content")) for m in systems)
        offered = set(_TEXT_ACTION_RE.findall(system))
    newest = content_text(messages[-1].get("content")) if messages else ""
    errors = [line for line in newest.splitlines() if line.startswith("ERROR")]
    return Situation(
        task, page_from_messages(messages), frozenset(offered), bool(tools), errors, via
    )


def _render(
    decision: Decision, *, native: bool, via: dict[str, str]
) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    if decision.need_help is not None:
        return f"NEED_HELP: {decision.need_help}", []
    calls = [(a["action"], {k: v for k, v in a.items() if k != "action"}) for a in decision.actions]
    if decision.done is not None:
        calls.append(("done", {"summary": decision.done}))
    if native:  # an action of a shared tool is called through it, named in "action"
        shared = [(via[n], {"action": n, **a}) if n in via else (n, a) for n, a in calls]
        return decision.say, shared
    tags = "\n".join(_tag(name, args) for name, args in calls)
    return f"{decision.say}\n{tags}" if decision.say else tags, []


def _tag(name: str, args: dict[str, Any]) -> str:
    return "<action>" + json.dumps({"action": name, **args}, ensure_ascii=False) + "</action>"


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# -- the HTTP side ------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    model: ScriptedModel  # set on the per-server subclass

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") != PATH:
            self._error(404, f"no route for POST {self.path}")
            return
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            self._error(400, "the body is not JSON")
            return
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._error(400, "expected an object with messages")
            return
        content, calls = self.model.answer(body)
        try:
            self._stream(content, calls)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up

    def _stream(self, content: str, calls: list[tuple[str, dict[str, Any]]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        ident = f"chatcmpl-bench-{id(self)}"
        self._event(_chunk(ident, {"role": "assistant", "content": ""}))
        for piece in _pieces(content):
            self._event(_chunk(ident, {"content": piece}))
        for index, (name, args) in enumerate(calls):
            opening = {
                "index": index,
                "id": f"call_{index}",
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            self._event(_chunk(ident, {"tool_calls": [opening]}))
            for fragment in _pieces(json.dumps(args, ensure_ascii=False)):
                part = {"index": index, "function": {"arguments": fragment}}
                self._event(_chunk(ident, {"tool_calls": [part]}))
        self._event(_chunk(ident, {}, "tool_calls" if calls else "stop"))
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _event(self, data: dict[str, Any]) -> None:
        self.wfile.write(f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode())

    def _error(self, status: int, message: str) -> None:
        body = json.dumps({"error": {"message": message}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)


def _chunk(ident: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": ident,
        "object": "chat.completion.chunk",
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _pieces(text: str) -> list[str]:
    return [text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)]


@contextmanager
def serve_model(model: ScriptedModel) -> Iterator[ScriptedModel]:
    """``model`` answering on 127.0.0.1 (its ``base_url`` is set) while the block runs."""
    handler = type("Handler", (_Handler,), {"model": model})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    model.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield model
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
