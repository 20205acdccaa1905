"""Running commands in a sandbox: to completion, or streamed as they run.

``POST /v1/sandboxes/{id}/exec`` answers once the command has ended;
``POST /v1/sandboxes/{id}/exec/stream`` answers NDJSON, one event a line:
``{"type":"stdout"|"stderr","data":"<base64>"}`` chunks in the order the
server saw them, then ``{"type":"exit","exit":{…}}``.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from dataclasses import dataclass, field
from typing import Iterator, Mapping, Sequence

from ._http import Response, Transport, clean, quote

__all__ = ["ExecResult", "ExecEvent", "ExecStream", "run", "stream"]

# Bounds one line of an exec stream, as the Go client does.
MAX_EVENT_SIZE = 16 << 20


@dataclass
class ExecResult:
    """A command's end: its exit code and output.

    ``stdout`` and ``stderr`` are exactly the bytes the command wrote (as
    far as the server kept them: see the ``*_truncated`` flags), whichever
    encoding carried them. A program that could not start is exit code 127
    (not found) or 126 (not executable) with ``error`` set, not an exception.
    """

    exit_code: int = 0
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    duration_ms: float = 0.0
    timed_out: bool = False
    signal: str = ""
    oom_killed: bool = False
    error: str = ""

    @property
    def stdout_text(self) -> str:
        """stdout as text (UTF-8, undecodable bytes replaced)."""
        return self.stdout.decode("utf-8", "replace")

    @property
    def stderr_text(self) -> str:
        """stderr as text (UTF-8, undecodable bytes replaced)."""
        return self.stderr.decode("utf-8", "replace")

    @property
    def ok(self) -> bool:
        """The command exited with status 0."""
        return self.exit_code == 0 and not self.error

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> "ExecResult":
        """Decodes a result as the server sends it: ``stdout`` is the text
        itself, or base64 when ``stdout_encoding`` is ``"base64"`` (and the
        same for stderr)."""
        return cls(
            exit_code=int(d.get("exit_code") or 0),  # type: ignore[call-overload]
            stdout=_output("stdout", d.get("stdout"), d.get("stdout_encoding")),
            stderr=_output("stderr", d.get("stderr"), d.get("stderr_encoding")),
            stdout_truncated=bool(d.get("stdout_truncated")),
            stderr_truncated=bool(d.get("stderr_truncated")),
            duration_ms=float(d.get("duration_ms") or 0),  # type: ignore[arg-type]
            timed_out=bool(d.get("timed_out")),
            signal=str(d.get("signal") or ""),
            oom_killed=bool(d.get("oom_killed")),
            error=str(d.get("error") or ""),
        )


def _output(name: str, s: object, encoding: object) -> bytes:
    s = str(s or "")
    if encoding in (None, "", "utf8"):
        return s.encode("utf-8")
    if encoding == "base64":
        try:
            return base64.b64decode(s, validate=True)
        except binascii.Error as e:
            raise ValueError(f"{name}: bad base64: {e}") from None
    raise ValueError(f"{name}: unknown encoding {encoding!r}")


@dataclass
class ExecEvent:
    """One event of an exec stream: ``type`` is ``"stdout"`` or ``"stderr"``
    with ``data`` the bytes, or ``"exit"`` with ``exit`` the result (whose
    stdout and stderr are empty: the output came in the chunks)."""

    type: str
    data: bytes = b""
    exit: ExecResult | None = field(default=None)


def _request(
    cmd: Sequence[str],
    env: Mapping[str, str] | None,
    cwd: str | None,
    stdin: str | bytes | None,
    timeout_ms: int | None,
    output_encoding: str | None = None,
    root: bool = False,
) -> dict[str, object]:
    if isinstance(cmd, str):
        raise TypeError("cmd is a list of arguments, such as ['sh', '-c', 'echo hi']")
    if isinstance(stdin, bytes):
        stdin = stdin.decode("utf-8")
    return clean(
        {
            "cmd": list(cmd),
            "env": dict(env) if env else None,
            "cwd": cwd or None,
            "stdin": stdin or None,
            "timeout_ms": timeout_ms or None,
            "output_encoding": output_encoding or None,
            "root": root or None,
        }
    )


def run(
    t: Transport,
    sandbox_id: str,
    cmd: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stdin: str | bytes | None = None,
    timeout_ms: int | None = None,
    output_encoding: str | None = None,
    root: bool = False,
) -> ExecResult:
    """Runs ``cmd`` in a sandbox to completion (``POST …/exec``).

    ``output_encoding="base64"`` asks the server for base64 always; either
    way the result holds the bytes. ``root=True`` runs it as root inside the
    sandbox. The call waits as long as the command runs.
    """
    body = _request(cmd, env, cwd, stdin, timeout_ms, output_encoding, root)
    d = t.call("POST", f"/v1/sandboxes/{quote(sandbox_id)}/exec", json_body=body, read_timeout=None)
    return ExecResult.from_json(d)


class ExecStream:
    """A running command's output, as an iterator of :class:`ExecEvent`:
    stdout and stderr chunks in order, then the exit event, after which
    :attr:`result` is set. Close it (or use ``with``) to stop reading; the
    server then sees the client go.

    A stream that ends before the exit event raises ``ConnectionError``.
    """

    def __init__(self, resp: Response) -> None:
        self._resp = resp
        self.result: ExecResult | None = None

    def __iter__(self) -> Iterator[ExecEvent]:
        return self

    def __next__(self) -> ExecEvent:
        if self.result is not None:
            raise StopIteration
        while True:
            line = self._resp.readline(MAX_EVENT_SIZE + 1)
            if not line:
                self.close()
                raise ConnectionError("exec stream ended before the exit event")
            if len(line) > MAX_EVENT_SIZE:
                self.close()
                raise ValueError(f"exec stream: event longer than {MAX_EVENT_SIZE} bytes")
            line = line.strip()
            if line:
                break
        d = json.loads(line)
        typ = str(d.get("type", ""))
        if typ == "exit":
            if not isinstance(d.get("exit"), dict):
                raise ValueError("exec stream: exit event without a result")
            self.result = ExecResult.from_json(d["exit"])
            self.close()
            return ExecEvent(type=typ, exit=self.result)
        data = base64.b64decode(d["data"]) if d.get("data") else b""
        return ExecEvent(type=typ, data=data)

    def collect(self) -> ExecResult:
        """Reads the rest of the stream and returns the result with the
        output it carried in ``stdout`` and ``stderr``."""
        out, err = bytearray(), bytearray()
        for ev in self:
            if ev.type == "stdout":
                out += ev.data
            elif ev.type == "stderr":
                err += ev.data
        assert self.result is not None
        return dataclasses.replace(self.result, stdout=bytes(out), stderr=bytes(err))

    def close(self) -> None:
        self._resp.close()

    def __enter__(self) -> "ExecStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stream(
    t: Transport,
    sandbox_id: str,
    cmd: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stdin: str | bytes | None = None,
    timeout_ms: int | None = None,
    root: bool = False,
) -> ExecStream:
    """Runs ``cmd`` in a sandbox and streams its output as it comes
    (``POST …/exec/stream``, NDJSON); ``root=True`` runs it as root."""
    body = _request(cmd, env, cwd, stdin, timeout_ms, root=root)
    resp = t.open(
        "POST",
        f"/v1/sandboxes/{quote(sandbox_id)}/exec/stream",
        body=json.dumps(body).encode(),
        content_type="application/json",
        accept="application/x-ndjson",
        read_timeout=None,
    )
    return ExecStream(resp)
