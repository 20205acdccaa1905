"""A sandbox's files: read, write, list, stat, remove, mkdir, move, and
directories as tar archives.

Paths are as the sandbox sees them: absolute, or relative to its working
directory. The server refuses a path with a ``..`` component
(``invalid_path``) and one that resolves outside the sandbox
(``path_outside_sandbox``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import BinaryIO

from . import _model
from ._http import NotFound, Transport, quote

__all__ = ["FileInfo", "TarResult", "Files"]


@dataclass
class FileInfo:
    """One path in a sandbox. ``type`` is ``file``, ``dir``, ``symlink`` or
    ``other``; ``mode`` is octal permission bits such as ``"0644"``."""

    name: str = ""
    path: str = ""
    type: str = ""
    size: int = 0
    mode: str = ""
    mod_time: datetime | None = None
    link_target: str = ""


@dataclass
class TarResult:
    """What an upload of a tar archive wrote."""

    path: str = ""
    files: int = 0
    bytes: int = 0


_COPY = 1 << 20


class Files:
    """The files of one sandbox (``sandbox.files``)."""

    def __init__(self, t: Transport, sandbox_id: str) -> None:
        self._t = t
        self.sandbox_id = sandbox_id
        self._path = f"/v1/sandboxes/{quote(sandbox_id)}/files"

    def read(self, path: str) -> bytes:
        """Returns a file's bytes. A missing file is :class:`~hutch.NotFound`
        with code ``file_not_found``."""
        with self._t.open("GET", self._path, query={"path": path}, accept="application/octet-stream", read_timeout=None) as r:
            return r.read()

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        """Returns a file as text."""
        return self.read(path).decode(encoding)

    def read_to(self, path: str, out: BinaryIO) -> int:
        """Streams a file into ``out`` and returns how many bytes it copied."""
        with self._t.open("GET", self._path, query={"path": path}, accept="application/octet-stream", read_timeout=None) as r:
            return _copy(r.raw, out)

    def write(self, path: str, data: bytes | str | BinaryIO, mode: int | str | None = None, parents: bool = True) -> FileInfo:
        """Creates or replaces a file atomically and returns it.

        ``data`` is bytes, text (sent as UTF-8) or a binary file object
        (streamed). ``mode`` is the permission bits, as an int (``0o755``) or
        octal text (``"0755"``); the server's default (0644) when left out.
        Missing directories above the file are made unless ``parents=False``.
        """
        q: dict[str, object] = {"path": path}
        if mode is not None:
            q["mode"] = mode if isinstance(mode, str) else f"{mode:04o}"
        if not parents:
            q["parents"] = False
        body = data.encode("utf-8") if isinstance(data, str) else data
        with self._t.open("PUT", self._path, query=q, body=body, content_type="application/octet-stream", read_timeout=None) as r:
            return _model.decode(FileInfo, _json(r.read()))

    def list(self, path: str = ".") -> list[FileInfo]:
        """Lists a directory."""
        d = self._t.call("GET", self._path + "/list", query={"path": path})
        return [_model.decode(FileInfo, e) for e in d.get("entries") or []]

    def stat(self, path: str) -> FileInfo:
        """Describes one path, without following a final symlink."""
        return _model.decode(FileInfo, self._t.call("GET", self._path + "/stat", query={"path": path}))

    def exists(self, path: str) -> bool:
        """Reports whether a path exists."""
        try:
            self.stat(path)
        except NotFound:
            return False
        return True

    def remove(self, path: str, recursive: bool = False) -> None:
        """Removes a file or an empty directory; with ``recursive``, a
        directory and everything below it."""
        self._t.call("DELETE", self._path, query={"path": path, "recursive": True if recursive else None})

    def mkdir(self, path: str, mode: int | str | None = None) -> FileInfo:
        """Creates a directory and any missing parents (mkdir -p)."""
        body: dict[str, object] = {"path": path}
        if mode is not None:
            body["mode"] = mode if isinstance(mode, str) else f"{mode:04o}"
        return _model.decode(FileInfo, self._t.call("POST", self._path + "/mkdir", json_body=body))

    def move(self, src: str, dst: str, overwrite: bool = False) -> FileInfo:
        """Renames a file or directory and returns it at its new path; an
        existing destination is :class:`~hutch.Conflict` ``file_exists``
        unless ``overwrite``."""
        body: dict[str, object] = {"from": src, "to": dst}
        if overwrite:
            body["overwrite"] = True
        return _model.decode(FileInfo, self._t.call("POST", self._path + "/move", json_body=body))

    def upload_tar(self, path: str, archive: bytes | BinaryIO) -> TarResult:
        """Extracts a tar archive (bytes or a binary file object, streamed)
        under the directory ``path``, made if missing."""
        with self._t.open("PUT", self._path + "/tar", query={"path": path}, body=archive, content_type="application/x-tar", read_timeout=None) as r:
            return _model.decode(TarResult, _json(r.read()))

    def download_tar(self, path: str) -> bytes:
        """Returns a directory as a tar archive whose entries are relative to
        ``path``."""
        with self._t.open("GET", self._path + "/tar", query={"path": path}, accept="application/x-tar", read_timeout=None) as r:
            return r.read()

    def download_tar_to(self, path: str, out: BinaryIO) -> int:
        """Streams a directory as a tar archive into ``out`` and returns its size."""
        with self._t.open("GET", self._path + "/tar", query={"path": path}, accept="application/x-tar", read_timeout=None) as r:
            return _copy(r.raw, out)


def _copy(src: BinaryIO, dst: BinaryIO) -> int:
    n = 0
    while chunk := src.read(_COPY):
        dst.write(chunk)
        n += len(chunk)
    return n


def _json(b: bytes) -> object:
    return json.loads(b) if b.strip() else {}
