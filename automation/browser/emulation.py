"""What the page is told about its screen and what is dropped on it: CSS media emulation
(``emulate_media``) and files dropped on an element (``drop_files``), for drop zones that
have no file input to ``upload`` to.  A drop settles as a click does (its tab's
:meth:`~automation.browser.tab.Tab.drop_files`): what the zone set off (an upload, the list
it draws) is waited for, and a dialog it opened nobody armed is said.
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any

from automation.actionspec import REF_DESCRIPTION, ActionSpec, Param, optional
from automation.browser.fieldops import files_given
from automation.browser.uploads import upload_paths
from automation.budget import Budget
from automation.errors import ActionFailed, ActionInvalid
from automation.wording import named

if TYPE_CHECKING:
    from automation.browser.tab import Tab

__all__ = ["EMULATION_ACTIONS", "MAX_DROP_BYTES", "drop_files"]

MAX_DROP_BYTES = 10 * 1024 * 1024  # the files travel into the page as data
_MEDIA: dict[str, tuple[str, ...]] = {
    "media": ("screen", "print"),
    "color_scheme": ("light", "dark", "no-preference"),
    "reduced_motion": ("reduce", "no-preference"),
    "forced_colors": ("active", "none"),
}
# The drag events a drop zone listens to, with the files; a zone takes a drop by calling
# preventDefault on it (otherwise a browser would open the file instead).
_DROP_JS = """(el, files) => {
  const data = new DataTransfer();
  for (const f of files) {
    const bytes = Uint8Array.from(atob(f.data), (c) => c.charCodeAt(0));
    data.items.add(new File([bytes], f.name, { type: f.type }));
  }
  const box = el.getBoundingClientRect();
  const at = { clientX: box.x + box.width / 2, clientY: box.y + box.height / 2 };
  const fire = (type) => el.dispatchEvent(
    new DragEvent(type, {
      bubbles: true, cancelable: true, composed: true, dataTransfer: data, ...at }));
  fire("dragenter");
  fire("dragover");
  return !fire("drop");  // dispatchEvent is false when a handler prevented the default
}"""


def _check_media(args: dict[str, Any]) -> None:
    given = {k: v for k, v in args.items() if k in _MEDIA}
    if not given:
        raise ActionInvalid("emulate_media needs one of: " + ", ".join(_MEDIA))
    for name, value in given.items():
        if value not in (*_MEDIA[name], "reset"):
            raise ActionInvalid(
                f"emulate_media: {name} must be one of {', '.join(_MEDIA[name])} or reset"
            )


async def _emulate_media(tab: Tab, args: dict[str, Any], budget: Budget) -> str:
    _check_media(args)
    given = {k: v for k, v in args.items() if k in _MEDIA}
    # "reset" is Playwright's "null": the browser's own value again.
    await tab.core.call(
        "emulate_media",
        budget,
        tab.page.emulate_media(**{k: ("null" if v == "reset" else v) for k, v in given.items()}),  # type: ignore[arg-type]
    )
    return "the page now sees " + ", ".join(f"{k}={v}" for k, v in given.items())


async def drop_files(tab: Tab, ref: str, files: Sequence[str], *, budget: Budget | None) -> str:
    """Drop files of the upload folder on the ref's element (one that takes the drop)."""
    budget = tab.core.budget(budget, "drop_files")
    paths = upload_paths(tab.config.upload_dir, files)
    if not paths:
        raise ActionInvalid("drop_files needs at least one file")
    if sum(p.stat().st_size for p in paths) > MAX_DROP_BYTES:
        raise ActionInvalid(f"drop_files: the files are over {MAX_DROP_BYTES // 2**20} MB together")
    files = [
        {
            "name": p.name,
            "type": mimetypes.guess_type(p.name)[0] or "application/octet-stream",
            "data": base64.b64encode(p.read_bytes()).decode("ascii"),
        }
        for p in paths
    ]
    locator, entry = await tab.resolve(ref, budget=budget, action="drop files on")
    what = f"drop files on {entry.describe()}"

    def drop() -> Awaitable[bool]:
        return tab.core.call(what, budget, locator.evaluate(_DROP_JS, files))

    taken = await files_given(tab, what, paths, drop, field=None, budget=budget)
    tab.dialogs_raise(what)
    names = ", ".join(p.name for p in paths)
    if not taken:
        raise ActionFailed(
            f"dropped {names} on {entry.describe()}, but nothing there took the drop",
            hint="drop on the drop zone itself, or use upload on its file input",
        )
    return f"dropped {names} on {named(entry.role, entry.name)}"


EMULATION_ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec(
        "emulate_media",
        "CSS media the page sees: media, color_scheme, reduced_motion, forced_colors "
        '(a value, or "reset")',
        (
            optional("media", str, "screen or print"),
            optional("color_scheme", str, "light, dark or no-preference"),
            optional("reduced_motion", str, "reduce or no-preference"),
            optional("forced_colors", str, "active or none"),
        ),
        _emulate_media,
        check=_check_media,
        for_agent=False,  # a test of how a page looks, not a step of a task: MCP clients'
    ),
    ActionSpec(
        "drop_files",
        "drop files of the upload folder on an element (a drop zone)",
        (
            Param("ref", str, REF_DESCRIPTION),
            Param("files", list, "file names in the upload folder"),
        ),
        lambda tab, a, b: tab.drop_files(a["ref"], a["files"], budget=b),
        targets_ref=True,
    ),
)
