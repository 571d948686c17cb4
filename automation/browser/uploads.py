"""The upload folder: the only files an action may attach to a file input or drop on a
page.

Uploads are off until an operator names a folder (``BrowserConfig.upload_dir``,
TABWRIGHT_UPLOAD_DIR in the dashboard).  A file is named relative to it; one that resolves
outside it (``..``, an absolute path, a link leading out) is refused, as is a name that is
not a file there.  The pytest export reads its files by the same rule (:func:`in_folder`,
copied into it), from the folder its TABWRIGHT_UPLOAD_DIR names.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from automation.errors import ActionInvalid

__all__ = ["FILES_JS", "in_folder", "refused_files", "upload_paths"]

OUTSIDE_HINT = "name files relative to the upload folder"


def upload_paths(folder: str, files: Sequence[str]) -> list[Path]:
    """The paths of ``files`` in ``folder``; ActionInvalid for any that is not a file in it,
    or when there is no folder (uploads are off)."""
    if not folder:
        raise ActionInvalid(
            "uploads are off: no upload folder is configured",
            hint="set BrowserConfig.upload_dir (TABWRIGHT_UPLOAD_DIR in the dashboard)",
        )
    if isinstance(files, str):
        files = [files]
    if not isinstance(files, list | tuple) or not all(isinstance(f, str) for f in files):
        raise ActionInvalid("set_input_files needs a list of file names")
    paths = []
    for name in files:
        path, refused = in_folder(folder, name)
        if refused:
            outside = refused.endswith("outside the upload folder")
            raise ActionInvalid(refused, hint=OUTSIDE_HINT if outside else "")
        paths.append(path)
    return paths


# -- written into an exported pytest file as it is ----------------------------------
def in_folder(folder: str, name: str) -> tuple[Path, str]:
    """The path of the file ``name`` in the upload folder ``folder``, and why it is
    refused ("" when it is not): outside the folder (``..``, an absolute path, a link
    leading out), not a file there, or a name no file has."""
    root = Path(folder).resolve()
    if "\x00" in name:  # no file's name holds one (resolve() would raise ValueError)
        return root, f"refused upload {name!r}: a file name holds no NUL character"
    path = (root / name).resolve()  # resolves "..", absolute paths and links
    if not path.is_relative_to(root):
        return path, f"refused upload {name!r}: it is outside the upload folder"
    if not path.is_file():
        return path, f"no file {name!r} in the upload folder"
    return path, ""


# What a file input holds and says: the names of its files, why it is invalid ("" when
# it is valid: an app's setCustomValidity, a required input left empty) and whether it
# is marked invalid (aria-invalid); null for a node the page took out.
FILES_JS = """(e) => e.isConnected ? {
  names: e.files ? [...e.files].map((f) => f.name) : [],
  invalid: e.willValidate && !e.validity.valid ? (e.validationMessage || "invalid") : "",
  marked: e.getAttribute("aria-invalid") === "true",
} : null"""


def refused_files(names: list, before: dict | None, after: dict | None, said: list) -> str:
    """Why the page refused the files ``names`` just attached to a file input, "" when
    nothing says it did.  ``before`` and ``after`` are the input as FILES_JS read it
    before the files were attached and once the page was done with them; ``said``, the
    errors the page shows now that it did not show before.  Refused: the input says why
    it is invalid (anew, or now that the app emptied it), or is newly marked invalid, or
    no longer holds the files (emptied, or taken out) while the page shows a new error.
    An input emptied with no error said is not read as a refusal: many widgets keep the
    file themselves and empty their input."""
    if not names:
        return ""  # a clearing
    # What the page says first; its words rather than a field's mark (errors_shown's
    # words for a field marked invalid, the input itself among them).
    said = [t for t in said if t != "a field marked invalid"] or said
    before = before or {}
    kept = after is not None and all(name in after["names"] for name in names)
    if after is not None and after["invalid"]:
        if not kept or after["invalid"] != before.get("invalid"):
            return str(after["invalid"])
    if after is not None and after["marked"] and not before.get("marked"):
        return str(said[0]) if said else "a field marked invalid"
    if not kept and said:
        return str(said[0])
    return ""
