"""A reader of Server-Sent Events (text/event-stream)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Protocol

# Bounds one line of a stream, as the Go client does.
MAX_LINE = 16 << 20


class _Lines(Protocol):
    def readline(self, limit: int = -1) -> bytes: ...


@dataclass
class SSEEvent:
    """One event as the server sent it: ``id``, ``event`` (its name) and ``data``."""

    id: str = ""
    event: str = ""
    data: str = ""


class StreamBroken(Exception):
    """The connection ended in the middle of an event."""


def read_events(body: _Lines) -> Iterator[SSEEvent]:
    """Yields the events of ``body`` until it ends, skipping comments
    (the server's keepalives). A stream that ends inside an event raises
    :class:`StreamBroken`; one that ends between events simply ends."""
    ev_id, name, seen = "", "", False
    data: list[str] = []
    while True:
        raw = body.readline(MAX_LINE + 1)
        if not raw:
            if seen:
                raise StreamBroken("event stream ended inside an event")
            return
        if len(raw) > MAX_LINE:
            raise ValueError(f"event stream line longer than {MAX_LINE} bytes")
        if not raw.endswith(b"\n"):
            raise StreamBroken("event stream ended inside a line")
        line = raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8")
        if not line:
            if seen:
                yield SSEEvent(ev_id, name, "\n".join(data))
            ev_id, name, data, seen = "", "", [], False
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        seen = True
        if field == "id":
            ev_id = value
        elif field == "event":
            name = value
        elif field == "data":
            data.append(value)
