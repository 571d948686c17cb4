"""Interruptions a scenario knows how to clear: its handlers.

A new release of an app puts things over the page that were not there when a scenario was
recorded: a "What's new" dialog, a cookie banner, a "your session will expire" prompt.  A
scenario keeps a :class:`Handler` for each: what the interruption looks like (``when``, an
element identity found the way a step's element is, by
:func:`~automation.browser.identity.locate`) and the steps that clear it (clicks, key
presses, ticks, choices: element steps that take no parameter or secret).

At replay (:mod:`automation.recording.replay`), before a step acts on its element,
:meth:`Interruptions.uncover` asks the page what lies over the point the step would act
on (:data:`COVERS_JS`): a layer (a dialog, a fixed or sticky box) that does not hold the
element covers it.  Then every handler whose interruption shows is run, the interruption
must be gone after it, and the run says so ("handled 'What's new' dialog").  A step that
fails or needs a person is also tried once more when a handler ran after it.  A handler
that fails, or a cover no handler knows, leaves the step as it was: a pointer step under a
cover needs a person (never a click on a guess), who clears the cover on the live view and
resumes; what they did there, on the layer that went away, is proposed as a new handler
(:meth:`Interruptions.learn`, a ``replay.handler_proposed`` event) for them to keep.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from playwright.async_api import ElementHandle
from playwright.async_api import Error as PlaywrightError

from automation.browser.identity import (
    CONTROL_CHARS,
    IDENTITY_JS,
    ElementIdentity,
    Located,
    locate,
)
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import (
    ActionFailed,
    ActionInvalid,
    BrowserClosed,
    BudgetExceeded,
    Cancelled,
    HandlerInvalid,
    NeedsPerson,
    ScenarioInvalid,
    TabwrightError,
)
from automation.events import EventSink, HandlerProposed, Observation
from automation.wording import double_quoted

if TYPE_CHECKING:
    from automation.recording.scenario import ScenarioStep

__all__ = [
    "COVERS_JS",
    "HANDLER_ACTIONS",
    "MAX_HANDLERS",
    "MAX_HANDLER_STEPS",
    "Handler",
    "Interruptions",
    "read_handlers",
]

MAX_HANDLERS = 20
MAX_HANDLER_STEPS = 5
MAX_NAME_CHARS = 100
# What a handler's steps may do: act on an element of the interruption.
HANDLER_ACTIONS = frozenset({"click", "double_click", "hover", "press", "check", "select_option",
                             "fill"})  # fmt: skip
# Steps a cover stops: the pointer must reach their element.  Others (fill, select) work
# under a cover; a known interruption over them is still cleared first.
POINTER_ACTIONS = frozenset({"click", "double_click", "hover", "check"})
_MAX_RUNS = 100  # handlers run in one replay, at most (one that comes back at every step)
_GONE_MS = 3_000  # how long an interruption may take to go after its handler
_COVER_WAIT_MS = 2_000  # how long a cover no handler knows may take to leave by itself
_SURE_SIMILARITY = 0.7  # an interruption found by similarity counts from this score
_ROLE_WORDS = {"dialog": "dialog", "alertdialog": "dialog", "region": "banner",
               "banner": "banner", "contentinfo": "banner", "complementary": "banner",
               "alert": "message", "status": "message"}  # fmt: skip

StepReader = Callable[[object, int], "ScenarioStep"]
RunSteps = Callable[["Handler", Budget], Awaitable[str]]  # "" when they passed, else why not
FindAgain = Callable[[Budget], Awaitable[Located]]


@dataclass(frozen=True)
class Handler:
    """An interruption (``when``) and the steps that clear it."""

    name: str
    when: ElementIdentity
    steps: tuple[ScenarioStep, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "when": self.when.to_dict(),
                "steps": [s.to_dict() for s in self.steps]}  # fmt: skip

    def describe(self) -> str:
        """``'What's new' dialog``: its name, and what kind of thing it is when known."""
        kind = _ROLE_WORDS.get(self.when.role, "")
        return f"{_quoted(self.name)} {kind}".rstrip()


def read_handlers(data: object, read_step: StepReader) -> tuple[Handler, ...]:
    """A scenario's ``handlers`` list, read whole or refused: HandlerInvalid names the
    handler (its place and name) and what is wrong.  ``read_step`` reads one step as the
    scenario's own steps are read."""
    if data is None:
        return ()
    if not isinstance(data, list):
        raise HandlerInvalid("handlers must be a list")
    if len(data) > MAX_HANDLERS:
        raise HandlerInvalid(f"too many handlers ({len(data)}; at most {MAX_HANDLERS})")
    out: list[Handler] = []
    for index, item in enumerate(data):
        handler = _handler(item, index, read_step)
        if any(h.name.casefold() == handler.name.casefold() for h in out):
            raise HandlerInvalid(f"handler {index}: a handler named {handler.name!r} comes "
                                 "before it", index=index)  # fmt: skip
        out.append(handler)
    return tuple(out)


def _handler(item: object, index: int, read_step: StepReader) -> Handler:
    where = f"handler {index}"
    if not isinstance(item, dict):
        raise HandlerInvalid(f"{where}: a handler is a JSON object with name, when and steps",
                             index=index)  # fmt: skip
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        raise HandlerInvalid(f"{where}: a handler needs a name", index=index)
    name = name.strip()
    if len(name) > MAX_NAME_CHARS or CONTROL_CHARS.search(name):
        raise HandlerInvalid(f"{where}: its name must be one line of at most "
                             f"{MAX_NAME_CHARS} characters", index=index)  # fmt: skip
    where = f"{where} ({name!r})"
    try:
        when = ElementIdentity.from_dict(item.get("when"))
    except ActionInvalid as exc:
        raise HandlerInvalid(f"{where}: when: {exc.message}", index=index) from None
    if not (when.role and (when.name or when.aria_label)) and not (
        when.aria_label or when.test_ids or when.id or when.selectors or when.text
    ):
        raise HandlerInvalid(
            f"{where}: when says nothing to find the interruption by",
            index=index,
            hint="give its role and name, an aria-label, an id, a test id, a selector or its text",
        )
    steps = item.get("steps")
    if not isinstance(steps, list) or not 1 <= len(steps) <= MAX_HANDLER_STEPS:
        raise HandlerInvalid(f"{where}: steps must be a list of 1 to {MAX_HANDLER_STEPS} steps",
                             index=index)  # fmt: skip
    read: list[ScenarioStep] = []
    for number, data in enumerate(steps):
        try:
            step = read_step(data, number)
        except ScenarioInvalid as exc:
            raise HandlerInvalid(f"{where}: {exc.message}", index=index, hint=exc.hint) from None
        if step.action not in HANDLER_ACTIONS or step.target() is None:
            raise HandlerInvalid(
                f"{where}: step {number} ({step.action}) can't clear an interruption",
                index=index,
                hint="a handler's steps act on an element: " + ", ".join(sorted(HANDLER_ACTIONS)),
            )
        if "${" in json.dumps(step.args) + json.dumps(step.to_dict().get("identity")):
            raise HandlerInvalid(
                f"{where}: step {number} takes a ${{…}}: a handler's steps take no parameter "
                "or secret",
                index=index,
            )
        read.append(step)
    return Handler(name, when, tuple(read))


# Run on the step's element: the layers over the point a pointer would act on, top first,
# each as its "face" (the dialog or labelled box inside it, else the layer itself).  A
# layer is a dialog, an aria-modal box, or a fixed or sticky box, that does not hold the
# element.  Nothing (an empty list) when the element has no size, or can't be brought
# into view.
COVERS_JS = """(el) => {
  const root = el.getRootNode();
  const isLayer = (n) => {
    if (n.tagName === "DIALOG" && n.open) return true;
    const role = n.getAttribute("role");
    if (role === "dialog" || role === "alertdialog" || n.getAttribute("aria-modal") === "true") {
      return true;
    }
    const position = getComputedStyle(n).position;
    return position === "fixed" || position === "sticky";
  };
  const layerOf = (n) => {
    for (let e = n; e && e.nodeType === 1; e = e.parentElement) if (isLayer(e)) return e;
    return null;
  };
  const FACE = "dialog, [role=dialog], [role=alertdialog], [aria-modal=true], " +
    "[aria-label], [aria-labelledby]";
  const faceOf = (layer) => (layer.matches(FACE) ? layer : layer.querySelector(FACE)) || layer;
  const point = () => {
    const box = el.getBoundingClientRect();
    const x = box.left + box.width / 2, y = box.top + box.height / 2;
    const inside = box.width > 0 && box.height > 0 && x >= 0 && y >= 0 &&
      x < innerWidth && y < innerHeight;
    return inside ? [x, y] : null;
  };
  let at = point();
  if (!at) {
    el.scrollIntoView({ block: "center", inline: "center" });
    at = point();
  }
  if (!at) return [];
  const layers = [];
  for (const hit of root.elementsFromPoint(at[0], at[1])) {
    if (hit === el || el.contains(hit) || hit.contains(el)) break;
    const label = hit.closest("label");
    if (label && label.control === el) break;
    const layer = layerOf(hit);
    if (layer && !layer.contains(el) && !layers.includes(layer)) layers.push(layer);
  }
  return layers.map(faceOf);
}"""
# Each face as identity.js describes it (what a step's element identity holds).
_COVERS_CAPTURED_JS = (
    f"(el) => ({COVERS_JS})(el).map((face) => ({IDENTITY_JS})(face, {{ op: 'capture' }}))"
)


@dataclass(frozen=True)
class Cover:
    """What lies over a step's element: each layer's face as an identity, top first."""

    looks: list[ElementIdentity]

    def words(self) -> str:
        first = self.looks[0] if self.looks else ElementIdentity()
        name = first.name or first.aria_label or " ".join(first.text.split())[:60]
        what = f"{first.role or first.tag or 'element'} {_quoted(name)}" if name else "a layer"
        more = f" (and {len(self.looks) - 1} more)" if len(self.looks) > 1 else ""
        return what + more


@dataclass
class Interruptions:
    """The replay's handlers at work (see the module's docstring).  ``run_steps`` runs a
    handler's steps in the tab (the replay's own step code) and says why they failed, or
    ""."""

    tab: Tab
    handlers: tuple[Handler, ...]
    out: EventSink
    run_steps: RunSteps
    # How long one question of the page ("does this interruption show?", "what covers the
    # element?") may take: the replay's step time, not a fixed guess: running out, it
    # would read as "no" on a page that is only slow to answer.
    ask_ms: float = 15_000
    handled: list[str] = field(default_factory=list)  # each handler run that cleared one
    blocked: Cover | None = None  # the latest cover a step needed a person for

    async def uncover(
        self, located: Located, action: str, find_again: FindAgain, budget: Budget, *,
        index: int,
    ) -> Located:  # fmt: skip
        """Step ``index``'s element once nothing covers it: a cover a handler knows is
        cleared (said as coming before the step's action) and the element found again; one
        none clears makes a pointer step need a person (NeedsPerson naming it), and leaves
        any other step to act as it would."""
        self.blocked = None
        for _ in range(MAX_HANDLERS + 1):
            assert located.element is not None
            cover = await self._cover_of(located.element, budget)
            if cover is None:
                return located
            if not await self.handle(budget, before=index):
                if action not in POINTER_ACTIONS or await self._goes_away(located.element, budget):
                    return located
                self.blocked = cover
                raise NeedsPerson(
                    f"its element is covered by {cover.words()}",
                    index=-1,
                    hint="something the scenario did not meet when it was recorded is over "
                    "the page: clear it on the live view and resume, then keep what you did "
                    "as a handler",
                )
            located = await find_again(budget)
        return located

    async def handle(self, budget: Budget, *, before: int | None = None) -> bool:
        """Run each handler whose interruption shows with nothing over it (again after one
        ran: clearing one may bring out the one beneath); whether any ran and cleared its
        interruption.  A handler that fails says so and is not run again by this call.
        ``before``: the step under way whose action waits for them (their notes say so)."""
        ran, tried = False, set()
        while len(self.handled) < _MAX_RUNS:
            handler = None
            for candidate in self.handlers:
                found = None if candidate.name in tried else await self._find(candidate.when,
                                                                             budget)  # fmt: skip
                if found is not None and await self._cover_of(found, budget) is None:
                    handler = candidate  # showing, with nothing over it: the one on top
                    break
            if handler is None:
                return ran  # nothing known shows (or only beneath something unknown)
            tried.add(handler.name)
            ran = await self._run(handler, budget, before) or ran
        return ran

    async def learn(self, index: int, step: ScenarioStep, acts: list[ScenarioStep],
                    budget: Budget) -> None:  # fmt: skip
        """After a person's pause at step ``index``: when the step was covered and what
        they did there took the cover away, propose what they did as a handler, one for
        each layer that went (paired with their acts in order when there are as many), or
        one for the top layer with all their acts."""
        cover, self.blocked = self.blocked, None
        if cover is None or not cover.looks:
            return
        target = step.target()
        deeds = [a for a in acts if _may_clear(a) and not _same_element(a.identity, target)]
        if not deeds:
            return
        gone = [look for look in cover.looks if not await self._shows(look, budget)]
        if cover.looks[0] not in gone:
            return  # the top layer is still there: they did not clear it
        pairs = (
            [(look, [act]) for look, act in zip(gone, deeds, strict=True)]
            if len(gone) == len(deeds) > 1
            else [(cover.looks[0], deeds[:MAX_HANDLER_STEPS])]
        )
        known: set[str] = set()  # one of a handler's name, kept, takes its place
        for look, steps in pairs:
            name = _name_of(look, known)
            known.add(name.casefold())
            said = [s.words(double_quoted).full for s in steps]
            await self.out.emit(HandlerProposed(index, name, _kept(look).to_dict(),
                                                [s.to_dict() for s in steps], said))  # fmt: skip

    async def _goes_away(self, element: ElementHandle, budget: Budget) -> bool:
        """Whether a cover no handler knows leaves by itself in a moment (a toast, a
        layer the app is taking down), as a click would wait for it."""
        within = budget.child(_COVER_WAIT_MS, label="the cover gone")
        try:
            while await self._cover_of(element, within) is not None:
                await within.run(asyncio.sleep(0.1))
        except BudgetExceeded:
            budget.check()
            return False
        return True

    async def _cover_of(self, element: ElementHandle, budget: Budget) -> Cover | None:
        within = budget.child(self.ask_ms, label="what covers the element")
        try:
            found = await within.run(element.evaluate(_COVERS_CAPTURED_JS))
            frame = await within.run(element.owner_frame())
        except PlaywrightError:
            return None  # it left the page: the step's own code says so
        except BudgetExceeded:
            budget.check()
            return None
        if not isinstance(found, list) or not found:
            return None
        frame_url = frame.url if frame is not None and frame.parent_frame is not None else ""
        looks: list[ElementIdentity] = []
        for face in found:
            try:
                if not isinstance(face, dict) or "error" in face:
                    raise ActionFailed("the page did not describe it")
                looks.append(ElementIdentity.from_page(face, frame_url=frame_url))
            except ActionFailed:
                looks.append(ElementIdentity())  # covered all the same, by something unnamed
        return Cover(looks)

    async def _shows(self, look: ElementIdentity, budget: Budget) -> bool:
        """Whether the interruption is on the page now (at once, no waiting)."""
        return await self._find(look, budget) is not None

    async def _find(self, look: ElementIdentity, budget: Budget) -> ElementHandle | None:
        """The interruption's element, when it shows: by its identity, or (one written
        by hand, with a role and a name but no tag: a dialog is no control, so its
        identity is looked for among elements of its tag) by its role and name."""
        if look == ElementIdentity():
            return None
        within = budget.child(self.ask_ms, label="an interruption")
        try:
            located = await locate(self.tab.page, look, budget=within)
            sure = located.strategy not in ("similarity", "coordinates") or (
                located.strategy == "similarity" and located.score >= _SURE_SIMILARITY
            )
            found = located.element if sure else None
            if found is not None or look.tag or not look.role or not look.name:
                return found
            named = self.tab.page.get_by_role(look.role, name=look.name, exact=True)  # type: ignore[arg-type]
            for element in await within.run(named.element_handles()):
                if await within.run(element.is_visible()):
                    return element
            return None
        except PlaywrightError:
            return None
        except BudgetExceeded:
            budget.check()
            return None

    async def _run(self, handler: Handler, budget: Budget, before: int | None) -> bool:
        """Run ``handler``; whether its interruption is gone after it (said either way)."""
        try:
            why = await self.run_steps(handler, budget)
        except (Cancelled, BrowserClosed):
            raise
        except TabwrightError as exc:
            why = exc.message
        if not why and await self._still_there(handler.when, budget):
            why = "it is still there after its steps"
        if why:
            await self.out.emit(Observation(0, f"the handler {handler.describe()} did not "
                                               f"clear it: {why}", before=before))  # fmt: skip
            return False
        self.handled.append(handler.name)
        await self.out.emit(Observation(0, f"handled {handler.describe()}", before=before))
        return True

    async def _still_there(self, look: ElementIdentity, budget: Budget) -> bool:
        """Whether the interruption stays after its handler (an app may take a moment to
        take it away: looked for until it is gone, for a short while)."""
        within = budget.child(_GONE_MS, label="the interruption gone")
        try:
            while await self._shows(look, within):
                await within.run(asyncio.sleep(0.1))
        except BudgetExceeded:
            budget.check()
            return True
        return False


def _number(key: str) -> int:
    return int(key) if key.isdigit() else -1


def _may_clear(act: ScenarioStep) -> bool:
    return (
        act.action in HANDLER_ACTIONS
        and act.identity is not None
        and "${" not in json.dumps(act.args)
    )


def _same_element(one: ElementIdentity | None, other: ElementIdentity | None) -> bool:
    if one is None or other is None:
        return False
    if one.role and one.name:
        return (one.role, one.name) == (other.role, other.name)
    return bool(one.selectors and one.selectors[:1] == other.selectors[:1])


def _kept(look: ElementIdentity) -> ElementIdentity:
    """What to keep of a layer's identity: not where it stood nor its node."""
    return replace(look, box=None, backend_node_id=None, variants=())


def _name_of(look: ElementIdentity, taken: set[str]) -> str:
    base = look.name or look.aria_label or " ".join(look.text.split())[:60] or "Interruption"
    base = CONTROL_CHARS.sub(" ", base)[:MAX_NAME_CHARS].strip() or "Interruption"
    name, number = base, 2
    while name.casefold() in taken:
        name = f"{base[: MAX_NAME_CHARS - 4]} {number}"
        number += 1
    return name


def _quoted(text: str) -> str:
    """``'What's new'``: in the quotes a person reads, whatever the text holds."""
    return f"'{text}'"
