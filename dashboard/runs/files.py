"""A run's files for people: what its tabs downloaded, and its trace (TRACE_RUNS).

The engine writes them into the run's workspace on the worker's disk
(``WORKSPACE_DIR/<run id>/downloads/``, ``.../trace.zip``).  When a stretch of work ends
and when the session closes, :func:`keep` copies what is new or changed into Django's
storage (``STORAGES["default"]``: MEDIA_ROOT unless configured) as
``runs/<id>/downloads/<name>`` and ``runs/<id>/trace.zip``, so a web process on another
machine than the worker lists and serves them (:func:`files_of`, :func:`open_file`).

A download's name was chosen by the page and made safe by the engine
(automation.browser.downloads.safe_file_name); it is served as an attachment of an opaque
type, never as a page of the dashboard's origin.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import quote

from django.core.exceptions import SuspiciousFileOperation
from django.core.files import File
from django.core.files.storage import storages

from automation.browser.downloads import safe_file_name

__all__ = ["KINDS", "RunFile", "files_of", "keep", "open_file"]

DOWNLOADS, TRACE = "downloads", "trace"
KINDS = (DOWNLOADS, TRACE)
TRACE_NAME = "trace.zip"


@dataclass(frozen=True)
class RunFile:
    kind: str  # DOWNLOADS or TRACE
    name: str
    size_bytes: int

    def to_dict(self, run_id: int) -> dict[str, object]:
        path = f"downloads/{quote(self.name, safe='')}" if self.kind == DOWNLOADS else TRACE_NAME
        return {"kind": self.kind, "name": self.name, "size_bytes": self.size_bytes,
                "url": f"/runs/{run_id}/{path}"}  # fmt: skip


def _stored_name(run_id: int, kind: str, name: str) -> str:
    return f"runs/{run_id}/{TRACE_NAME}" if kind == TRACE else f"runs/{run_id}/downloads/{name}"


def keep(run_id: int, workspace: Path) -> bool:
    """Copy the run's downloads and trace that storage does not have yet (or has at
    another size: a download still being written, a trace saved again) from
    ``workspace``; True when anything was copied.  Blocking: call it in a thread."""
    storage = storages["default"]
    found = [(TRACE, workspace / TRACE_NAME)]
    downloads = workspace / "downloads"
    if downloads.is_dir():
        found += [(DOWNLOADS, path) for path in sorted(downloads.iterdir())]
    copied = False
    for kind, path in found:
        if not path.is_file() or path.is_symlink():
            continue
        name = _stored_name(run_id, kind, path.name)
        size = path.stat().st_size
        if storage.exists(name):
            if storage.size(name) == size:
                continue
            storage.delete(name)  # saved again under the same name, not "name_x7Yz"
        with path.open("rb") as handle:
            storage.save(name, File(handle))
        copied = True
    return copied


def files_of(run_id: int) -> list[RunFile]:
    """The run's kept files: its downloads by name, then its trace."""
    storage = storages["default"]
    files: list[RunFile] = []
    try:
        _, names = storage.listdir(f"runs/{run_id}/downloads")
    except (FileNotFoundError, NotADirectoryError):
        names = []
    for name in sorted(names):
        files.append(RunFile(DOWNLOADS, name, storage.size(_stored_name(run_id, DOWNLOADS, name))))
    trace = _stored_name(run_id, TRACE, TRACE_NAME)
    if storage.exists(trace):
        files.append(RunFile(TRACE, TRACE_NAME, storage.size(trace)))
    return files


def open_file(run_id: int, kind: str, name: str) -> IO[bytes]:
    """One kept file of the run, opened; FileNotFoundError when there is no such file (or
    the name is not one a download could have)."""
    if kind not in KINDS or (kind == DOWNLOADS and safe_file_name(name) != name):
        raise FileNotFoundError(name)
    try:
        return storages["default"].open(_stored_name(run_id, kind, name), "rb")
    except SuspiciousFileOperation:
        raise FileNotFoundError(name) from None
