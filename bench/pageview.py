"""The page as a model sees it: rebuilt from the snapshots in a prompt, nothing else.

A prompt holds the last full snapshot of the page and the deltas sent after it, each in
a user message after a ``Page: 'title' url`` line.  :func:`page_from_messages` replays
them in order into a :class:`PageView`: a tree of the elements the snapshots showed,
each with its role, name, states, value and text.  The line grammar is the one
``automation/browser/snapshot.js`` writes::

    - button "Add" [e5]                          an element, its name as a JSON string
    - checkbox "Done" [e8] [checked]             states in brackets after the ref
    - textbox "Name" [e3]: "Ada"                 a field's value as a JSON string
    - paragraph [e4]: Some text                  an element whose only content is text
    - list [e6]:                                 children follow, two spaces deeper
    - text: Some text                            text of the element above
    # changes since the last snapshot ...        a delta: only what changed, and
    - … 3 unchanged (e1 e2 e5 +1)                the children that did not change
    # removed: listitem [e7], button [e9]        elements gone since the last snapshot

Refs written as Playwright writes them (``[ref=e5]``) are read too.  What a delta leaves
unsaid (more than 20 removed refs, more than 3 unchanged children in a run) is filled in
from the view as it was, the way a careful reader would.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

__all__ = ["Node", "PageView", "content_text", "page_from_messages"]

_REF = r"(?:ref=)?(?P<ref>(?:f\d+)?e\d+)"
_LINE_RE = re.compile(
    r"^(?P<pad> *)- (?P<role>[a-z]+)(?: (?P<name>\"(?:[^\"\\]|\\.)*\"))? \[" + _REF + r"\]"
    r"(?P<states>(?: \[[^\]]+\])*)(?P<rest>.*)$"
)
_TEXT_RE = re.compile(r"^(?P<pad> *)- text: (?P<text>.*)$")
_RUN_RE = re.compile(r"^(?P<pad> *)- … (?P<count>\d+) unchanged \((?P<refs>[^)]*)\)$")
_REF_IN_TEXT_RE = re.compile(r"\[(?:ref=)?((?:f\d+)?e\d+)\]")
_PAGE_RE = re.compile(r"^Page: (?P<title>'.*'|\".*\") (?P<url>\S*)$", re.MULTILINE)
_VALUE_RE = re.compile(r"^: (?P<value>\"(?:[^\"\\]|\\.)*\")(?P<open>:?)$")
_DELTA_HEAD = "# changes since the last snapshot"
_NO_CHANGE_HEAD = "# no changes since the last snapshot"
ROW_ROLES = frozenset({"listitem", "row", "article", "treeitem"})


@dataclass
class Node:
    ref: str
    role: str
    name: str = ""
    states: tuple[str, ...] = ()
    value: str | None = None
    texts: list[str] = field(default_factory=list)
    parent: str = ""  # "" is the page itself
    children: list[str] = field(default_factory=list)

    @property
    def checked(self) -> bool:
        return "checked" in self.states or "pressed" in self.states


@dataclass
class _Line:
    depth: int
    kind: str  # node | text | run
    node: Node | None = None
    text: str = ""
    run_refs: list[str] = field(default_factory=list)
    run_count: int = 0
    has_kids: bool = False


class PageView:
    """The elements of one page; ``nodes[""]`` is the page itself (it holds top texts)."""

    def __init__(self) -> None:
        self.title = ""
        self.url = ""
        self.nodes: dict[str, Node] = {"": Node("", "page")}

    # -- reading --------------------------------------------------------------------------

    def find(self, role: str | tuple[str, ...], name: str = "", *, within: str = "") -> list[Node]:
        """Elements of ``role`` whose name matches ``name`` (a regex, case-insensitive),
        in page order, inside ``within`` when given."""
        roles = (role,) if isinstance(role, str) else role
        pattern = re.compile(name, re.IGNORECASE) if name else None
        return [
            n
            for n in self.walk(within)
            if n.role in roles and (pattern is None or pattern.search(n.name))
        ]

    def walk(self, start: str = "") -> list[Node]:
        """The elements under ``start`` in page order (``start`` itself not included)."""
        out: list[Node] = []
        stack = list(reversed(self.nodes[start].children)) if start in self.nodes else []
        while stack:
            node = self.nodes.get(stack.pop())
            if node is None:
                continue
            out.append(node)
            stack.extend(reversed(node.children))
        return out

    def text(self, start: str = "") -> str:
        """Everything a person reads under ``start``: names, values and text."""
        parts: list[str] = []
        root = self.nodes.get(start)
        if root is not None and start:
            parts += [root.name, *root.texts]
        elif root is not None:
            parts += root.texts
        for node in self.walk(start):
            parts += [node.name, node.value or "", *node.texts]
        return " ".join(p for p in parts if p)

    def row_of(self, label: str) -> Node | None:
        """The innermost row (list item, table row) that shows ``label``: as a whole text
        or name of something in it first, else anywhere in its text."""
        rows = [n for n in self.walk() if n.role in ROW_ROLES]
        wanted = label.casefold()
        for exact in (True, False):
            hits = [r for r in rows if self._shows(r, wanted, exact=exact)]
            inner = [r for r in hits if not any(self.inside(o.ref, r.ref) for o in hits)]
            if inner:
                return inner[0]
        return None

    def _shows(self, row: Node, wanted: str, *, exact: bool) -> bool:
        pieces = [row.name, *row.texts]
        for node in self.walk(row.ref):
            pieces += [node.name, *node.texts]
        if exact:
            return any(p.strip().casefold() == wanted for p in pieces)
        return any(wanted in p.casefold() for p in pieces)

    def inside(self, ref: str, ancestor: str) -> bool:
        node = self.nodes.get(ref)
        while node is not None and node.ref:
            if node.parent == ancestor:
                return True
            node = self.nodes.get(node.parent)
        return False

    def cells_by_header(self, row: Node) -> dict[str, str]:
        """A table row's cells keyed by their column headers (read from the header row)."""
        headers = [h.name for h in self.find("columnheader")]
        cells = [c for c in self.walk(row.ref) if c.role in ("cell", "gridcell")]
        cells = [c for c in cells if self.nodes[c.parent].role in ROW_ROLES]
        # A cell whose line leaves out its name (its children say it) reads as its text.
        return {h: (c.name or self.text(c.ref)) for h, c in zip(headers, cells, strict=False)}

    # -- building -------------------------------------------------------------------------

    def load_full(self, text: str) -> None:
        self.nodes = {"": Node("", "page")}
        stack: list[str] = [""]  # stack[d] holds the parent of depth d
        for line in _parse(text):
            del stack[line.depth + 1 :]
            parent = stack[min(line.depth, len(stack) - 1)]
            self._attach(line, parent)
            if line.node is not None:
                stack.append(line.node.ref)

    def apply_delta(self, text: str) -> None:
        head, _, _ = text.partition("\n")
        if head.startswith(_NO_CHANGE_HEAD):
            return
        removed = []
        for row in text.splitlines():
            if row.startswith("# removed:"):
                removed = _REF_IN_TEXT_RE.findall(row)
        lines = _parse(text)
        printed = {ln.node.ref for ln in lines if ln.node is not None}
        for ref in removed:
            if ref not in printed:
                self._drop(ref)
        # Group the printed lines by parent, each parent's children in order.
        by_parent: dict[str, list[_Line]] = {}
        stack: list[str] = [""]
        for line in lines:
            del stack[line.depth + 1 :]
            parent = stack[min(line.depth, len(stack) - 1)]
            by_parent.setdefault(parent, []).append(line)
            if line.node is not None:
                stack.append(line.node.ref)
        for parent, kids in by_parent.items():
            self._merge(parent, kids, printed)

    def _merge(self, parent: str, kids: list[_Line], printed: set[str]) -> None:
        node = self.nodes.get(parent)
        if node is None:
            return
        # A delta lists the unchanged children and the text of an element only when the
        # element itself changed (its text, or which children it has: a new one shows).
        old = list(node.children)
        own_changed = any(k.kind in ("text", "run") for k in kids) or any(
            k.node is not None and k.node.ref not in old for k in kids
        )
        for line in kids:
            if line.node is not None:
                self._upsert(line, parent)
        if not own_changed:
            return  # only some children changed: the list of children is as it was
        children: list[str] = []
        for line in kids:
            if line.node is not None:
                children.append(line.node.ref)
            elif line.kind == "run":
                children += [r for r in line.run_refs if r in self.nodes]
                # "+N": N more unchanged children, not named; they follow the last named
                # one among the children the element had.
                more = line.run_count - len(line.run_refs)
                last = line.run_refs[-1] if line.run_refs else ""
                after = old.index(last) + 1 if last in old else len(old) if last else 0
                for ref in old[after:]:
                    if more <= 0:
                        break
                    if ref not in printed and ref in self.nodes and ref not in children:
                        children.append(ref)
                        more -= 1
        for ref in old:
            gone = self.nodes.get(ref)
            moved = ref in printed  # shown under another element in this delta
            if ref not in children and not moved and gone is not None and gone.parent == parent:
                self._drop(ref)
        node.children = children
        node.texts = [k.text for k in kids if k.kind == "text"]

    def _upsert(self, line: _Line, parent: str) -> None:
        new = line.node
        assert new is not None
        old = self.nodes.get(new.ref)
        if old is None:
            self._attach(line, parent)
            return
        old.role, old.name, old.states, old.value = new.role, new.name, new.states, new.value
        if new.texts:  # text written on the element's own line
            old.texts = list(new.texts)
        if old.parent != parent:  # moved
            former = self.nodes.get(old.parent)
            if former is not None and new.ref in former.children:
                former.children.remove(new.ref)
            old.parent = parent
            self.nodes[parent].children.append(new.ref)

    def _attach(self, line: _Line, parent: str) -> None:
        holder = self.nodes.get(parent)
        if holder is None:
            return
        if line.kind == "text":
            holder.texts.append(line.text)
            return
        if line.node is None:
            return
        line.node.parent = parent
        self._drop(line.node.ref)
        self.nodes[line.node.ref] = line.node
        holder.children.append(line.node.ref)

    def _drop(self, ref: str) -> None:
        node = self.nodes.pop(ref, None)
        if node is None:
            return
        holder = self.nodes.get(node.parent)
        if holder is not None and ref in holder.children:
            holder.children.remove(ref)
        for child in list(node.children):
            self._drop(child)


def _parse(text: str) -> list[_Line]:
    """The snapshot lines a view is built from; other lines (heads, cut markers) are skipped."""
    out: list[_Line] = []
    for raw in text.splitlines():
        match = _LINE_RE.match(raw)
        if match:
            out.append(_node_line(match))
            continue
        match = _TEXT_RE.match(raw)
        if match:
            out.append(_Line(len(match["pad"]) // 2, "text", text=match["text"].strip()))
            continue
        match = _RUN_RE.match(raw)
        if match:
            refs = [r for r in match["refs"].split() if not r.startswith("+")]
            depth, count = len(match["pad"]) // 2, int(match["count"])
            out.append(_Line(depth, "run", run_refs=refs, run_count=count))
    return out


def _node_line(match: re.Match[str]) -> _Line:
    name = json.loads(match["name"]) if match["name"] else ""
    states = tuple(s.strip("[] ") for s in re.findall(r"\[[^\]]+\]", match["states"]))
    rest = match["rest"]
    node = Node(match["ref"], match["role"], name, states)
    has_kids = rest.endswith(":")
    value = _VALUE_RE.match(rest)
    if value:
        node.value = json.loads(value["value"])
        has_kids = bool(value["open"])
    elif rest.startswith(": "):  # the element's only content, on its own line
        node.texts = [rest[2:].strip()]
        has_kids = False
    return _Line(len(match["pad"]) // 2, "node", node=node, has_kids=has_kids)


def page_from_messages(messages: list[dict[str, object]]) -> PageView:
    """The page as the user messages of a prompt show it: the last full snapshot, then
    each delta after it, in order."""
    view = PageView()
    for message in messages:
        if message.get("role") != "user":
            continue
        content = content_text(message.get("content"))
        heads = list(_PAGE_RE.finditer(content))
        if not heads:
            continue
        head = heads[-1]
        view.title, view.url = _title(head["title"]), head["url"]
        snapshot = content[head.end() :].lstrip("\n")
        if snapshot.startswith(_DELTA_HEAD) or snapshot.startswith(_NO_CHANGE_HEAD):
            view.apply_delta(snapshot)
        else:
            view.load_full(snapshot)
    return view


def content_text(content: object) -> str:
    """A message's text: its content, or the text of its content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "".join(str(p.get("text", "")) for p in parts)
    return ""


def _title(quoted: str) -> str:
    body = quoted[1:-1]
    return body.replace("\\'", "'").replace('\\"', '"')
