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
from pathlib import Path

from automation.browser.uploads import in_folder

__all__ = ["uploaded"]


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
