"""The transport: one HTTP request per call over http.client, and the errors.

Every call sends ``Authorization: Bearer <key>``; a non-2xx answer is read
into a :class:`HutchError` (the API's error shape
``{"error": {"code": ..., "message": ...}}``) of the class its status maps to.
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.parse
from typing import Any, BinaryIO, Mapping, Sequence

__all__ = [
    "HutchError",
    "Invalid",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "Conflict",
    "Unavailable",
    "Transport",
]

USER_AGENT = "hutch-python-client"

# How much of an error answer is read.
_MAX_ERROR_BODY = 64 << 10

Query = Mapping[str, Any] | Sequence[tuple[str, Any]] | None


class HutchError(Exception):
    """An error answer of the server: its HTTP status and the API's stable
    error code (such as ``sandbox_not_found``) and message.

    An answer whose body is not the API's error shape (a proxy's HTML page)
    has an empty ``code`` and a message made from the status and the start
    of the body. Subclasses group the statuses: :class:`NotFound` (404),
    :class:`Conflict` (409), :class:`Invalid` (400, 422),
    :class:`Unauthorized` (401), :class:`Forbidden` (403) and
    :class:`Unavailable` (502, 503, 504); any other status is a plain
    :class:`HutchError`.
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        self.status = status
        self.code = code
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        if not self.code:
            return self.message
        if not self.message:
            return self.code
        return f"{self.message} ({self.code})"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status}, code={self.code!r}, message={self.message!r})"


class Invalid(HutchError):
    """400 or 422: the request itself is wrong; retrying it unchanged fails again."""


class Unauthorized(HutchError):
    """401: the API key is missing or wrong."""


class Forbidden(HutchError):
    """403: the key may not do this."""


class NotFound(HutchError):
    """404: an unknown sandbox, process, file, secret, app…"""


class Conflict(HutchError):
    """409: the resource is not in a state that allows the call."""


class Unavailable(HutchError):
    """502, 503 or 504: the server or a part of it cannot answer now."""


_CLASSES: dict[int, type[HutchError]] = {
    400: Invalid,
    422: Invalid,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    502: Unavailable,
    503: Unavailable,
    504: Unavailable,
}


def error_from(status: int, reason: str, body: bytes) -> HutchError:
    """Builds the error of a non-2xx answer from its status and body."""
    cls = _CLASSES.get(status, HutchError)
    try:
        doc = json.loads(body)
        err = doc.get("error") if isinstance(doc, dict) else None
        if isinstance(err, dict) and err.get("code"):
            return cls(status, str(err["code"]), str(err.get("message", "")))
    except ValueError:
        pass
    msg = f"server answered {status} {reason}".rstrip()
    try:
        snippet = " ".join(body.decode("utf-8").split())
    except UnicodeDecodeError:
        snippet = ""
    if snippet:
        msg += ": " + (snippet[:200] + "…" if len(snippet) > 200 else snippet)
    return cls(status, "", msg)


class Response:
    """A 2xx answer whose body the caller reads (a stream or a download).

    Iterate lines with :meth:`readline`, read with :meth:`read`; close it (or
    use it as a context manager) to release the connection.
    """

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse, sock: socket.socket | None) -> None:
        self._conn = conn
        self._resp = resp
        self._sock = sock
        self.status = resp.status
        self.headers = resp.headers

    def read(self, n: int = -1) -> bytes:
        return self._resp.read(n) if n >= 0 else self._resp.read()

    def readline(self, limit: int = -1) -> bytes:
        return self._resp.readline(limit)

    @property
    def raw(self) -> BinaryIO:
        """The body as a binary file object."""
        return self._resp

    def abort(self) -> None:
        """Breaks the connection under a reader blocked in read, as a network
        failure would; the reader then sees the stream end early."""
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        try:
            self._resp.close()
        finally:
            self._conn.close()

    def __enter__(self) -> "Response":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Transport:
    """Sends requests to one hutch server with one API key.

    ``timeout`` bounds connecting and each wait for the server's bytes; calls
    that may take long (commands, streams, transfers) pass ``timeout=None``
    to wait for their answer as long as it takes.
    """

    def __init__(self, base_url: str, api_key: str, timeout: float | None) -> None:
        base_url = base_url.rstrip("/")
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname or u.query or u.fragment:
            raise ValueError(f"bad base URL {base_url!r}: want http(s)://host[:port][/prefix]")
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = timeout
        self._scheme = u.scheme
        self._netloc = u.netloc
        self._prefix = u.path

    def _connect(self, timeout: float | None) -> http.client.HTTPConnection:
        if self._scheme == "https":
            return http.client.HTTPSConnection(self._netloc, timeout=timeout)
        return http.client.HTTPConnection(self._netloc, timeout=timeout)

    def open(
        self,
        method: str,
        path: str,
        *,
        query: Query = None,
        body: bytes | BinaryIO | None = None,
        content_type: str = "",
        accept: str = "application/json",
        headers: Mapping[str, str] | None = None,
        read_timeout: float | None | str = "default",
    ) -> Response:
        """Performs a request and returns its 2xx answer unread; raises a
        :class:`HutchError` for any other status.

        ``path`` is escaped and starts with ``/``. ``read_timeout`` bounds each
        wait for the answer's bytes once the status line came: the client's
        timeout by default, ``None`` for no bound (a stream).
        """
        target = self._prefix + path
        if query:
            target += "?" + urllib.parse.urlencode(_query_items(query))
        h = {"User-Agent": USER_AGENT, "Accept": accept}
        if self.api_key:
            h["Authorization"] = "Bearer " + self.api_key
        if content_type:
            h["Content-Type"] = content_type
        if headers:
            h.update(headers)
        if body is None and method in ("POST", "PUT", "PATCH"):
            body = b""
        conn = self._connect(self.timeout)
        try:
            # http.client sends a file body without a known length chunked.
            conn.request(method, target, body=body, headers=h)
            sock = conn.sock
            resp = conn.getresponse()
        except BaseException:
            conn.close()
            raise
        if not 200 <= resp.status <= 299:
            try:
                data = resp.read(_MAX_ERROR_BODY)
            except (OSError, http.client.HTTPException):
                data = b""
            finally:
                conn.close()
            raise error_from(resp.status, resp.reason, data)
        if read_timeout != "default" and sock is not None:
            sock.settimeout(read_timeout)  # type: ignore[arg-type]
        return Response(conn, resp, sock)

    def call(
        self,
        method: str,
        path: str,
        *,
        query: Query = None,
        json_body: Any = None,
        read_timeout: float | None | str = "default",
    ) -> Any:
        """Performs a JSON call and returns the decoded answer (``None`` for
        an empty body)."""
        body = None
        ct = ""
        if json_body is not None:
            body = json.dumps(json_body).encode()
            ct = "application/json"
        with self.open(method, path, query=query, body=body, content_type=ct, read_timeout=read_timeout) as r:
            data = r.read()
        if not data.strip():
            return None
        return json.loads(data)


def _query_items(q: Query) -> list[tuple[str, str]]:
    items = q.items() if isinstance(q, Mapping) else (q or ())
    out: list[tuple[str, str]] = []
    for k, v in items:
        if v is None:
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        out.append((k, str(v)))
    return out


def quote(segment: str | int) -> str:
    """Escapes one path segment."""
    return urllib.parse.quote(str(segment), safe="")


def clean(d: Mapping[str, Any]) -> dict[str, Any]:
    """Drops the entries whose value is ``None``: fields left to the server."""
    return {k: v for k, v in d.items() if v is not None}
