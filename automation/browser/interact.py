"""Actions on one element of a tab, addressed by ref.

Every action resolves its ref first (fail closed: see :meth:`Tab.resolve`), refuses at
once what can't work (hidden, disabled, not editable) instead of waiting out its budget,
and names the action and the ref in every error.  Each takes a parent ``budget``; without
one it gets the tab's default action timeout.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from automation.budget import Budget
from automation.errors import ActionFailed, ActionInvalid

if TYPE_CHECKING:
    from automation.browser.tab import Tab

__all__ = ["Interactions"]

MOUSE_BUTTONS = ("left", "right", "middle")
MODIFIERS = ("Alt", "Control", "ControlOrMeta", "Meta", "Shift")
MAX_TEXT_CHARS = 100_000  # a fill larger than this is a mistake, not a form value
MAX_FORM_FIELDS = 50

# A short outline around the element, for a person watching the live view.
_HIGHLIGHT_JS = """(el, ms) => {
  const box = el.getBoundingClientRect();
  const mark = document.createElement("div");
  mark.setAttribute("aria-hidden", "true");
  mark.style.cssText = `position:fixed;left:${box.left - 3}px;top:${box.top - 3}px;` +
    `width:${box.width + 6}px;height:${box.height + 6}px;border:3px solid #e8590c;` +
    "border-radius:4px;pointer-events:none;z-index:2147483647";
  document.documentElement.appendChild(mark);
  setTimeout(() => mark.remove(), ms);
}"""


class Interactions:
    async def click(
        self: Tab,
        ref: str,
        *,
        button: str = "left",
        modifiers: Sequence[str] = (),
        double: bool = False,
        budget: Budget | None = None,
    ) -> str:
        if button not in MOUSE_BUTTONS:
            raise ActionInvalid(f"click: button must be one of {', '.join(MOUSE_BUTTONS)}")
        keys = _modifiers(modifiers, "click")
        budget = self._budget(budget, "click")
        name = "double-click" if double else "click"
        locator, entry = await self.resolve(ref, budget=budget, action="click")
        timeout = budget.playwright_timeout()
        work = (
            locator.dblclick(button=button, modifiers=keys, timeout=timeout)  # type: ignore[arg-type]
            if double
            else locator.click(button=button, modifiers=keys, timeout=timeout)  # type: ignore[arg-type]
        )
        await self._call(f"{name} {entry.describe()}", budget, work)
        self.dialogs_raise(f"{name} {entry.describe()}")
        extra = f" with {'+'.join(keys)}" if keys else ""
        how = f" ({button} button)" if button != "left" else ""
        return f"{name}ed {entry.role} {entry.name!r}{how}{extra}"

    async def double_click(self: Tab, ref: str, *, budget: Budget | None = None) -> str:
        return await self.click(ref, double=True, budget=budget)

    async def hover(self: Tab, ref: str, *, budget: Budget | None = None) -> str:
        budget = self._budget(budget, "hover")
        locator, entry = await self.resolve(ref, budget=budget, action="hover")
        await self._call(
            f"hover {entry.describe()}", budget, locator.hover(timeout=budget.playwright_timeout())
        )
        return f"hovering over {entry.role} {entry.name!r}"

    async def fill(
        self: Tab, ref: str, value: str, *, submit: bool = False, budget: Budget | None = None
    ) -> str:
        """Replace the field's value at once (``input`` and ``change`` events fire)."""
        _check_text(value, "fill")
        budget = self._budget(budget, "fill")
        locator, entry = await self.resolve(ref, budget=budget, action="fill")
        what = f"fill {entry.describe()}"
        await self._call(what, budget, locator.fill(value, timeout=budget.playwright_timeout()))
        if submit:
            await self._call(
                what, budget, locator.press("Enter", timeout=budget.playwright_timeout())
            )
            self.dialogs_raise(what)
        return f"filled {entry.role} {entry.name!r} with {len(value)} characters" + (
            " and pressed Enter" if submit else ""
        )

    async def type(
        self: Tab,
        ref: str,
        text: str,
        *,
        submit: bool = False,
        delay_ms: int = 0,
        clear: bool = True,
        budget: Budget | None = None,
    ) -> str:
        """Type key by key, as a person would (for fields that react to each key); the
        field is cleared first unless ``clear`` is false."""
        _check_text(text, "type")
        if not isinstance(delay_ms, int) or not 0 <= delay_ms <= 1_000:
            raise ActionInvalid("type: delay_ms must be between 0 and 1000")
        budget = self._budget(budget, "type")
        locator, entry = await self.resolve(ref, budget=budget, action="type")
        what = f"type into {entry.describe()}"
        timeout = budget.playwright_timeout()
        if clear:
            await self._call(what, budget, locator.fill("", timeout=timeout))
        if delay_ms:
            await self._call(
                what, budget, locator.press_sequentially(text, delay=delay_ms, timeout=timeout)
            )
        elif clear:
            await self._call(what, budget, locator.fill(text, timeout=timeout))
        else:
            await self._call(what, budget, locator.press_sequentially(text, timeout=timeout))
        if submit:
            await self._call(what, budget, locator.press("Enter", timeout=timeout))
            self.dialogs_raise(what)
        return f"typed {len(text)} characters into {entry.role} {entry.name!r}" + (
            " and pressed Enter" if submit else ""
        )

    async def set_checked(
        self: Tab, ref: str, checked: bool = True, *, budget: Budget | None = None
    ) -> str:
        budget = self._budget(budget, "check")
        locator, entry = await self.resolve(ref, budget=budget, action="check")
        await self._call(
            f"{'check' if checked else 'uncheck'} {entry.describe()}",
            budget,
            locator.set_checked(checked, timeout=budget.playwright_timeout()),
        )
        return f"{'checked' if checked else 'unchecked'} {entry.role} {entry.name!r}"

    async def select_option(
        self: Tab, ref: str, values: str | Sequence[str], *, budget: Budget | None = None
    ) -> str:
        """Choose options of a <select> by their label (or, failing that, their value)."""
        wanted = [values] if isinstance(values, str) else list(values)
        if not wanted or not all(isinstance(v, str) for v in wanted):
            raise ActionInvalid("select_option needs one option label or a list of labels")
        budget = self._budget(budget, "select_option")
        locator, entry = await self.resolve(ref, budget=budget, action="select_option")
        what = f"select {wanted} in {entry.describe()}"
        options = await self._call(
            what,
            budget,
            locator.evaluate(
                "(el) => el.tagName === 'SELECT' ? Array.from(el.options, "
                "(o) => [o.label.trim(), o.value]) : null"
            ),
        )
        if options is None:
            raise ActionFailed(f"{what}: the element is not a <select>", hint="click it instead")
        picked = []
        for value in wanted:
            match = next((v for label, v in options if label == value.strip()), None)
            if match is None:
                match = next((v for _, v in options if v == value), None)
            if match is None:
                labels = ", ".join(repr(label) for label, _ in options[:20])
                raise ActionFailed(f"{what}: no option {value!r}", hint=f"options: {labels}")
            picked.append(match)
        await self._call(
            what, budget, locator.select_option(picked, timeout=budget.playwright_timeout())
        )
        return f"selected {', '.join(repr(v) for v in wanted)} in {entry.role} {entry.name!r}"

    async def fill_form(
        self: Tab, fields: Sequence[dict[str, Any]], *, budget: Budget | None = None
    ) -> str:
        """Several fields in one call: text is filled, a bool checks or unchecks, a
        <select> takes a label or a list of labels.  Stops at the first field that fails,
        saying which one."""
        if not isinstance(fields, list | tuple) or not fields:
            raise ActionInvalid('fill_form needs "fields": [{"ref": "e5", "value": "..."}]')
        if len(fields) > MAX_FORM_FIELDS:
            raise ActionInvalid(f"fill_form takes at most {MAX_FORM_FIELDS} fields")
        for i, field in enumerate(fields):
            if not isinstance(field, dict) or "ref" not in field or "value" not in field:
                raise ActionInvalid(f"fill_form: field {i} needs a ref and a value")
            if not isinstance(field["value"], str | bool | list):
                raise ActionInvalid(
                    f"fill_form: field {i} value must be text, true/false or a list"
                )
        budget = self._budget(budget, "fill_form")
        done: list[str] = []
        for i, field in enumerate(fields):
            ref, value = field["ref"], field["value"]
            try:
                if isinstance(value, bool):
                    await self.set_checked(ref, value, budget=budget)
                elif isinstance(value, list):
                    await self.select_option(ref, value, budget=budget)
                else:
                    _, entry = await self.resolve(ref, budget=budget)
                    if entry.role in {"combobox", "listbox"} and await self._is_select(ref, budget):
                        await self.select_option(ref, value, budget=budget)
                    else:
                        await self.fill(ref, value, budget=budget)
            except ActionFailed as exc:
                raise type(exc)(
                    f"fill_form stopped at field {i} ({ref}) after {len(done)} done: {exc.message}",
                    hint=exc.hint,
                ) from None
            done.append(str(ref))
        return f"filled {len(done)} fields: {', '.join(done)}"

    async def _is_select(self: Tab, ref: str, budget: Budget) -> bool:
        locator, _ = self.locator(ref)
        return bool(
            await self._call("inspect", budget, locator.evaluate("el => el.tagName === 'SELECT'"))
        )

    async def press_key(self: Tab, key: str, *, ref: str = "", budget: Budget | None = None) -> str:
        """Press a key (``Enter``, ``Control+A``) on the ref's element, or on whatever has
        the focus when no ref is given."""
        if not isinstance(key, str) or not key.strip() or len(key) > 60:
            raise ActionInvalid("press needs a key, like Enter or Control+A")
        key = key.strip()
        budget = self._budget(budget, "press")
        if ref:
            locator, entry = await self.resolve(ref, budget=budget, action="press")
            what = f"press {key} on {entry.describe()}"
            await self._call(what, budget, locator.press(key, timeout=budget.playwright_timeout()))
        else:
            what = f"press {key}"
            await self._call(what, budget, self.page.keyboard.press(key))
        self.dialogs_raise(what)
        return f"pressed {key}"

    async def press(self: Tab, key: str, *, budget: Budget | None = None) -> str:
        return await self.press_key(key, budget=budget)

    async def drag(self: Tab, source: str, target: str, *, budget: Budget | None = None) -> str:
        budget = self._budget(budget, "drag")
        src, src_entry = await self.resolve(source, budget=budget, action="drag")
        dst, dst_entry = await self.resolve(target, budget=budget, action="drag")
        await self._call(
            f"drag {src_entry.describe()} to {dst_entry.describe()}",
            budget,
            src.drag_to(dst, timeout=budget.playwright_timeout()),
        )
        return (
            f"dragged {src_entry.role} {src_entry.name!r} onto {dst_entry.role} {dst_entry.name!r}"
        )

    async def scroll(
        self: Tab,
        *,
        ref: str = "",
        dx: int = 0,
        dy: int = 0,
        budget: Budget | None = None,
    ) -> str:
        """Scroll the ref's element into view, or the page by ``dx``/``dy`` pixels."""
        budget = self._budget(budget, "scroll")
        if ref:
            locator, entry = await self.resolve(ref, budget=budget, action="scroll")
            await self._call(
                f"scroll to {entry.describe()}",
                budget,
                locator.scroll_into_view_if_needed(timeout=budget.playwright_timeout()),
            )
            return f"scrolled {entry.role} {entry.name!r} into view"
        if not isinstance(dx, int) or not isinstance(dy, int) or (dx == 0 and dy == 0):
            raise ActionInvalid("scroll needs a ref, or dx/dy in pixels (like dy=600)")
        await self._call(
            "scroll the page",
            budget,
            self.page.evaluate("([x, y]) => window.scrollBy(x, y)", [dx, dy]),
        )
        position = await self._call(
            "scroll the page", budget, self.page.evaluate("() => [scrollX, scrollY]")
        )
        return f"scrolled the page to x={position[0]:.0f}, y={position[1]:.0f}"

    async def highlight(
        self: Tab, ref: str, *, duration_ms: int = 1_500, budget: Budget | None = None
    ) -> str:
        budget = self._budget(budget, "highlight")
        locator, entry = await self.resolve(ref, budget=budget, action="highlight")
        await self._call(
            f"highlight {entry.describe()}",
            budget,
            locator.evaluate(_HIGHLIGHT_JS, max(100, min(int(duration_ms), 10_000))),
        )
        return f"highlighted {entry.role} {entry.name!r}"

    async def set_input_files(
        self: Tab, ref: str, files: Sequence[str], *, budget: Budget | None = None
    ) -> str:
        """Attach files to a file input; only files inside the configured upload folder."""
        paths = _upload_paths(self.config.upload_dir, files)
        budget = self._budget(budget, "set_input_files")
        locator, entry = await self.resolve(ref, budget=budget, action="set_input_files")
        await self._call(
            f"attach files to {entry.describe()}",
            budget,
            locator.set_input_files(paths, timeout=budget.playwright_timeout()),
        )
        names = ", ".join(p.name for p in paths) or "nothing (cleared)"
        return f"attached {names} to {entry.role} {entry.name!r}"


def _modifiers(modifiers: Sequence[str], action: str) -> list[str]:
    if isinstance(modifiers, str):
        modifiers = [m for m in modifiers.split("+") if m]
    keys = list(modifiers)
    for key in keys:
        if key not in MODIFIERS:
            raise ActionInvalid(f"{action}: unknown modifier {key!r}", hint=", ".join(MODIFIERS))
    return keys


def _check_text(text: object, action: str) -> None:
    if not isinstance(text, str):
        raise ActionInvalid(f"{action} needs text as a string")
    if len(text) > MAX_TEXT_CHARS:
        raise ActionInvalid(f"{action}: {len(text)} characters is more than {MAX_TEXT_CHARS}")


def _upload_paths(folder: str, files: Sequence[str]) -> list[Path]:
    if not folder:
        raise ActionInvalid(
            "uploads are off: no upload folder is configured",
            hint="set BrowserConfig.upload_dir (TABWRIGHT_UPLOAD_DIR in the dashboard)",
        )
    if isinstance(files, str):
        files = [files]
    if not isinstance(files, list | tuple) or not all(isinstance(f, str) for f in files):
        raise ActionInvalid("set_input_files needs a list of file names")
    root = Path(folder).resolve()
    paths = []
    for name in files:
        path = (root / name).resolve()  # resolves "..", absolute paths and links
        if not path.is_relative_to(root):
            raise ActionInvalid(
                f"refused upload {name!r}: it is outside the upload folder",
                hint="name files relative to the upload folder",
            )
        if not path.is_file():
            raise ActionInvalid(f"no file {name!r} in the upload folder")
        paths.append(path)
    return paths
