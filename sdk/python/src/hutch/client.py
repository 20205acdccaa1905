"""The client: one server, one API key, and a view of each resource."""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from . import exec as _exec
from ._http import Transport
from .apps import Apps
from .events import Events
from .files import Files
from .processes import Processes
from .sandboxes import Sandbox, Sandboxes
from .secrets import Secrets
from .snapshots import Snapshots, Templates

__all__ = ["Client", "DEFAULT_URL"]

DEFAULT_URL = "http://127.0.0.1:7070"


class Client:
    """A client of one hutch server.

    ``base_url`` defaults to ``$HUTCH_URL``, else ``http://127.0.0.1:7070``
    (a path prefix is kept); ``api_key`` to ``$HUTCH_API_KEY`` (none: no
    Authorization header). ``timeout`` bounds connecting and each wait for
    an answer of an ordinary call, in seconds; commands, streams and
    transfers wait as long as they take. Each call opens its own
    connection, so a client may be shared between threads.

    Resources: :attr:`sandboxes`, :attr:`events`, :attr:`secrets`,
    :attr:`snapshots`, :attr:`templates`, :attr:`apps`; per sandbox,
    :meth:`files`, :meth:`processes`, :meth:`exec`, :meth:`exec_stream`.
    """

    def __init__(self, base_url: str | None = None, api_key: str | None = None, timeout: float | None = 30.0) -> None:
        if base_url is None:
            base_url = os.environ.get("HUTCH_URL") or DEFAULT_URL
        if api_key is None:
            api_key = os.environ.get("HUTCH_API_KEY", "")
        self._t = Transport(base_url, api_key, timeout)
        self.sandboxes = Sandboxes(self._t)
        self.events = Events(self._t)
        self.secrets = Secrets(self._t)
        self.snapshots = Snapshots(self._t)
        self.templates = Templates(self._t)
        self.apps = Apps(self._t)

    @property
    def base_url(self) -> str:
        return self._t.base_url

    def __repr__(self) -> str:
        return f"Client({self.base_url!r})"

    def sandbox(self, sandbox_id: str) -> Sandbox:
        """A handle on a sandbox, without a call; ``sandboxes.get`` fetches it."""
        return self.sandboxes.handle(sandbox_id)

    def files(self, sandbox_id: str) -> Files:
        """The files of a sandbox."""
        return Files(self._t, sandbox_id)

    def processes(self, sandbox_id: str) -> Processes:
        """The background processes of a sandbox."""
        return Processes(self._t, sandbox_id)

    def exec(self, sandbox_id: str, cmd: Sequence[str], **kw: Any) -> _exec.ExecResult:
        """Runs ``cmd`` in a sandbox to completion; see :func:`hutch.exec.run`."""
        return _exec.run(self._t, sandbox_id, cmd, **kw)

    def exec_stream(self, sandbox_id: str, cmd: Sequence[str], **kw: Any) -> _exec.ExecStream:
        """Runs ``cmd`` in a sandbox, streaming its output; see :func:`hutch.exec.stream`."""
        return _exec.stream(self._t, sandbox_id, cmd, **kw)

    def info(self) -> Mapping[str, Any]:
        """The server's ``GET /v1/info``, as JSON: its version, drivers and storage."""
        out: Mapping[str, Any] = self._t.call("GET", "/v1/info")
        return out
