"""Background processes of a sandbox: start, list, get, wait, signal,
stdin, and their output from any byte cursor.

A process's output (stdout and stderr together) is numbered by byte offset
from 0. ``GET …/processes/{pid}/output?cursor=N&follow=true`` streams it as
Server-Sent Events from cursor N: ``stdout``/``stderr`` events carrying
``{"type","offset","data":"<base64>"}``, ``dropped`` when bytes were pushed
out of the server's buffer before they were read, and ``exit`` at the end.
Each event's id is the cursor after it: where a new stream resumes.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import BinaryIO, Iterator, Mapping, Sequence

from . import _model
from ._http import Response, Transport, clean, quote
from ._sse import read_events

__all__ = ["Process", "OutputEvent", "OutputStream", "Processes"]


@dataclass
class Process:
    """A background process. ``pid`` is its pid inside the sandbox, the id
    of its paths. ``exit_code`` and ``signal`` are set once it has exited;
    ``output_bytes`` is the cursor after its last byte of output."""

    pid: int = 0
    tag: str = ""
    cmd: list[str] = field(default_factory=list)
    pty: bool = False
    running: bool = False
    exit_code: int | None = None
    signal: str = ""
    started_at: datetime | None = None
    ended_at: datetime | None = None
    output_bytes: int = 0
    stdin_open: bool = False


@dataclass
class OutputEvent:
    """One event of a process's output: ``type`` is ``stdout`` or ``stderr``
    (``data`` at ``offset``), ``dropped`` (``dropped`` bytes lost; ``offset``
    is where the stream goes on) or ``exit`` (``process``, the last event)."""

    type: str = ""
    offset: int = 0
    data: bytes = b""
    dropped: int = 0
    process: Process | None = None


class OutputStream:
    """A process's output from a cursor on, as an iterator of
    :class:`OutputEvent`. :attr:`cursor` is where a new stream would resume
    after the events read so far: after a broken connection, open another
    with ``Processes.output(pid, cursor=stream.cursor)``."""

    def __init__(self, resp: Response, cursor: int) -> None:
        self._resp = resp
        self._events = read_events(resp)
        self.cursor = cursor

    def __iter__(self) -> Iterator[OutputEvent]:
        return self

    def __next__(self) -> OutputEvent:
        ev = next(self._events)
        d = json.loads(ev.data)
        out = OutputEvent(
            type=str(d.get("type", "")),
            offset=int(d.get("offset", 0)),
            data=base64.b64decode(d["data"]) if d.get("data") else b"",
            dropped=int(d.get("dropped", 0)),
            process=_model.decode(Process, d["process"]) if d.get("process") else None,
        )
        if ev.id.isdigit():
            self.cursor = int(ev.id)
        elif out.type in ("stdout", "stderr"):
            self.cursor = out.offset + len(out.data)
        return out

    def close(self) -> None:
        """Ends the stream; the process goes on."""
        self._resp.close()

    def __enter__(self) -> "OutputStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Processes:
    """The background processes of one sandbox (``sandbox.processes``)."""

    def __init__(self, t: Transport, sandbox_id: str) -> None:
        self._t = t
        self.sandbox_id = sandbox_id
        self._path = f"/v1/sandboxes/{quote(sandbox_id)}/processes"

    def start(
        self,
        cmd: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        tag: str | None = None,
        pty: tuple[int, int] | None = None,
        root: bool = False,
    ) -> Process:
        """Starts ``cmd`` in the background. It runs until it exits or is
        signalled, whoever is connected. ``pty=(rows, cols)`` runs it on a
        terminal of that size (its output is then one stream, stdout);
        ``root=True`` runs it as root inside the sandbox."""
        if isinstance(cmd, str):
            raise TypeError("cmd is a list of arguments, such as ['sh', '-c', 'sleep 1']")
        body = clean(
            {
                "cmd": list(cmd),
                "env": dict(env) if env else None,
                "cwd": cwd or None,
                "tag": tag or None,
                "pty": {"rows": pty[0], "cols": pty[1]} if pty else None,
                "root": root or None,
            }
        )
        return _model.decode(Process, self._t.call("POST", self._path, json_body=body))

    def list(self) -> list[Process]:
        """Lists the running and recently exited processes, oldest first."""
        d = self._t.call("GET", self._path)
        return [_model.decode(Process, p) for p in d.get("processes") or []]

    def get(self, pid: int) -> Process:
        """Returns one process."""
        return _model.decode(Process, self._t.call("GET", f"{self._path}/{pid}"))

    def wait(self, pid: int, timeout: float = 60.0) -> Process:
        """Waits up to ``timeout`` seconds (at most 600) for the process to
        exit and returns it as it then is: check ``running``."""
        ms = int(timeout * 1000)
        d = self._t.call("GET", f"{self._path}/{pid}/wait", query={"timeout_ms": ms}, read_timeout=None)
        return _model.decode(Process, d)

    def signal(self, pid: int, signal: str = "TERM", group: bool = False) -> Process:
        """Sends ``signal`` (TERM, KILL, INT, HUP…) to the process, or to its
        whole process group."""
        body = {"signal": signal, "group": True} if group else {"signal": signal}
        return _model.decode(Process, self._t.call("POST", f"{self._path}/{pid}/signal", json_body=body))

    def kill(self, pid: int) -> Process:
        """Sends KILL to the process."""
        return self.signal(pid, "KILL")

    def write_stdin(self, pid: int, data: bytes | str | BinaryIO, close: bool = False) -> Process:
        """Sends ``data`` to the process's stdin, closing it afterwards when
        ``close``."""
        body = data.encode("utf-8") if isinstance(data, str) else data
        q = {"close": True} if close else None
        with self._t.open("POST", f"{self._path}/{pid}/stdin", query=q, body=body, content_type="application/octet-stream", read_timeout=None) as r:
            return _model.decode(Process, json.loads(r.read()))

    def output(self, pid: int, cursor: int = 0, follow: bool = True) -> OutputStream:
        """Streams the process's output from ``cursor`` on. With ``follow``
        it goes on until the process's output ends, with an ``exit`` event;
        without, it ends with what is there now."""
        resp = self._t.open(
            "GET",
            f"{self._path}/{pid}/output",
            query={"cursor": cursor, "follow": follow},
            accept="text/event-stream",
            read_timeout=None,
        )
        return OutputStream(resp, cursor)
