"""The files of an upload step in a pytest export (automation.recording.export), read as
replay reads them (:func:`automation.browser.uploads.upload_paths`): named relative to an
upload folder, TABWRIGHT_UPLOAD_DIR here as in the dashboard, a name outside it (``..``,
an absolute path, a link leading out) or of no file there refused, a step's
``${parameter}`` in a name filled in (a batch row's own file).  Without the variable the
step fails saying so (replay's uploads are off without a folder).

The export writes :func:`automation.browser.uploads.in_folder` and the code below the
marker into the file as they are.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from automation.browser.uploads import FILES_JS, in_folder, refused_files
from automation.recording.exportseen import errors_shown

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from playwright.sync_api import Locator, Page

__all__ = ["attach", "uploaded"]


# -- written into an exported pytest file as it is ----------------------------------
def uploaded(names: list) -> list:
    """The paths of an upload step's files in the folder TABWRIGHT_UPLOAD_DIR names."""
    folder = os.environ.get("TABWRIGHT_UPLOAD_DIR", "")
    if not folder:
        raise AssertionError(
            "the step uploads files: TABWRIGHT_UPLOAD_DIR names no upload "
            "folder (set it to the folder of the scenario's files)"
        )
    paths: list[Path] = []
    for name in names:
        path, refused = in_folder(folder, name)
        if refused:
            raise AssertionError(f"{refused} (TABWRIGHT_UPLOAD_DIR={folder})")
        paths.append(path)
    return paths


def attach(
    field: Locator, files: list, settled: Callable[[Page], AbstractContextManager[None]],
    answered: Callable[[Page], None],
) -> None:  # fmt: skip
    """As Tabwright's replay attaches files to a file input: once the page is done with
    them (``settled``: the header's checks_answered, what its scripts asked of the server
    since; ``answered``: its writes_answered, none of its writes refused), the step fails
    where the page refused them (it emptied the input and said why, or marked it invalid:
    :func:`refused_files`)."""
    page = field.page
    handle = field.element_handle()
    before, said_before = handle.evaluate(FILES_JS), errors_shown(page)
    with settled(page):
        handle.set_input_files(files)
    answered(page)
    said = [e for e in errors_shown(page) if e not in said_before]
    names = [Path(f).name for f in files]
    refused = refused_files(names, before, handle.evaluate(FILES_JS), said)
    assert not refused, f"the page refused {', '.join(names)}: {refused[:300]!r}"
