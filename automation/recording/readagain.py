"""Which steps a replay, and the pytest export alike, read again, and where: the value the
last write left, read again at the end (an edit committed by a key, Enter or an editor's
Ctrl+S, read before the key);
the checks since the last step that acts, read again before a step that leaves the page
or acts after them (:mod:`automation.recording.replay`, :mod:`automation.recording.export`);
and where they let what a step that typed left for later run first.
"""

from __future__ import annotations

from collections.abc import Sequence

from automation.browser.identity import ElementIdentity
from automation.recording.scenario import TYPED_ARG, VALUE_ACTIONS, ScenarioStep

__all__ = ["TYPING", "acted_before", "holds_before", "last_acting", "last_write", "typed_before"]

# What types in a field: what it sets off may come a moment after it (a debounce).
TYPING = VALUE_ACTIONS | {"press"}


def last_acting(steps: Sequence[ScenarioStep]) -> int:
    """The index of the last step that acts on the page (not a check, nor a wait for what
    the page shows), whose kept state is read again at the end; -1 for none."""
    return max((i for i, s in enumerate(steps) if not s.is_check and s.action != "wait_for"),
               default=-1)  # fmt: skip


def last_write(steps: Sequence[ScenarioStep]) -> tuple[int, bool]:
    """The step whose written value replay (and the export) read again at the end, -1 for
    none, and whether a key committed it: the last step that acts, when it writes one
    (committed when it pressed Enter itself); the fill before it when it is Enter or Tab
    pressed on that same field (an edit in place, saved as it is committed or left).  A
    committed edit's value is read before the key (the app's answer to it may already be
    the old value back)."""
    acting = last_acting(steps)
    if acting < 0:
        return -1, False
    step = steps[acting]
    if step.writes_a_value():
        return acting, step.action in TYPED_ARG and step.args.get("submit") is True
    before = steps[acting - 1] if acting > 0 else None
    if (
        step.action == "press"
        and _commits(step.args.get("key"))
        and before is not None
        and before.action in TYPED_ARG
        and before.writes_a_value()
        and not before.args.get("submit")
        and _same_field(before.identity, step.identity)
    ):
        return acting - 1, True
    return acting, False


# Pressed on a field just written, its edit committed: Enter, Tab, and the keys editors
# save with (Ctrl+S, Ctrl+Enter; Meta on a Mac), however a recording spells them.
_COMMIT_KEYS = frozenset({"enter", "tab", "control+s", "meta+s", "control+enter", "meta+enter"})


def _commits(key: object) -> bool:
    """Whether ``key`` (a press step's) commits the edit of the field it is pressed on."""
    return isinstance(key, str) and key.replace(" ", "").casefold() in _COMMIT_KEYS


def _same_field(a: ElementIdentity | None, b: ElementIdentity | None) -> bool:
    """Whether two steps' identities are of one field (as recorded, its value aside)."""
    if a is None or b is None:
        return False
    keys = ("role", "name", "tag", "id", "name_attr", "label", "placeholder", "frame_url")
    return all(getattr(a, k) == getattr(b, k) for k in keys) and a.row == b.row


def acted_before(steps: Sequence[ScenarioStep], before: int) -> int:
    """The index of the last step before ``before`` that is no check (-1: none): the steps
    after it, up to ``before``, are the checks replay (and the export) read again there
    (at the end, ``before`` is ``len(steps)``)."""
    return max((i for i in range(before) if not steps[i].is_check), default=-1)


def typed_before(steps: Sequence[ScenarioStep], index: int) -> bool:
    """Whether replay (and the export) let what the step before ``index`` left for later
    run before it: it types (a fill, a key, a choice) on a page it stays on, and ``index``
    acts.  A search box filters its list a moment after the last key (a debounce); a
    person waits to see the list filtered before ticking "Select all" in it.  (An Enter
    that sent a form to another page left nothing on it.)"""
    if index == 0 or steps[index].is_check:
        return False
    typed = steps[index - 1]
    return typed.action in TYPING and not typed.leaves_the_page


def holds_before(steps: Sequence[ScenarioStep], index: int) -> bool:
    """Whether replay (and the export) hold the page before step ``index`` and read the
    checks since the last step that acts again: before a step that leaves the page (a
    debounced save sent first), or that acts after checks (the next request of a saved
    conversation: a save its checks read before the app took it back)."""
    step = steps[index]
    return index > 0 and not step.is_check and (step.leaves_the_page or steps[index - 1].is_check)
