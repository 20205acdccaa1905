"""Events: the tenant's append-only log, read a page at a time or followed
live, for the tenant, one sandbox or one app.

Event ids are ULIDs that grow in the order events were recorded, so the
last id seen is where a reader resumes. A live stream is the same route
asked with ``Accept: text/event-stream``: every event after the
``Last-Event-ID`` header, then each new one as it is recorded.
"""

from __future__ import annotations

import http.client
import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterator, Sequence

from . import _model
from ._http import HutchError, Response, Transport, quote
from ._sse import StreamBroken, read_events

__all__ = ["Event", "EventPage", "Events", "EventStream"]


@dataclass
class Event:
    """One event: ``type`` such as ``sandbox.created``; ``message`` is safe to
    show a person; ``data`` holds small details (an exit status, a count).
    ``sandbox_id`` is empty for an event about the tenant."""

    id: str = ""
    type: str = ""
    message: str = ""
    sandbox_id: str = ""
    app_id: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None


@dataclass
class EventPage:
    """A page of events, oldest first. ``next_cursor``, when set, is the
    ``after`` of the next page; when empty the page held everything recorded
    so far."""

    events: list[Event] = field(default_factory=list)
    next_cursor: str = ""


def _route(sandbox: str | None, app: str | None) -> str:
    if sandbox and app:
        raise ValueError("events of a sandbox or of an app, not both")
    if sandbox:
        return f"/v1/sandboxes/{quote(sandbox)}/events"
    if app:
        return f"/v1/apps/{quote(app)}/events"
    return "/v1/events"


def _types(types: Sequence[str] | None) -> list[tuple[str, object]]:
    if isinstance(types, str):
        types = [types]
    return [("type", t) for t in types or []]


class Events:
    """The event log (``client.events``). Every call takes ``sandbox=`` (one
    sandbox's events; an unknown id is :class:`~hutch.NotFound`), ``app=``
    (one app's) or neither (the tenant's)."""

    def __init__(self, t: Transport) -> None:
        self._t = t

    def list(
        self,
        *,
        sandbox: str | None = None,
        app: str | None = None,
        types: Sequence[str] | None = None,
        after: str | None = None,
        limit: int | None = None,
    ) -> EventPage:
        """Returns one page of events after the event id ``after``, oldest first."""
        q = [("after", after), *_types(types), ("limit", limit or None)]
        return _model.decode(EventPage, self._t.call("GET", _route(sandbox, app), query=q))

    def iter(
        self,
        *,
        sandbox: str | None = None,
        app: str | None = None,
        types: Sequence[str] | None = None,
        after: str | None = None,
        page_size: int | None = None,
    ) -> Iterator[Event]:
        """Iterates over every event recorded so far, page after page."""
        while True:
            page = self.list(sandbox=sandbox, app=app, types=types, after=after, limit=page_size)
            yield from page.events
            if not page.next_cursor or page.next_cursor == after:
                return
            after = page.next_cursor

    def follow(
        self,
        *,
        sandbox: str | None = None,
        app: str | None = None,
        types: Sequence[str] | None = None,
        after: str | None = None,
        retries: int = 5,
    ) -> "EventStream":
        """Follows events live: every event after ``after`` (none: from the
        start of the log), then each new one. A broken stream is reopened
        after the last event delivered (``Last-Event-ID``), up to ``retries``
        times in a row without a new event. Close it to stop."""
        return EventStream(self._t, _route(sandbox, app), _types(types), after or "", retries)


class EventStream:
    """A live stream of events, as an iterator of :class:`Event` with no end
    until :meth:`close`. :attr:`last_id` is the id of the last event
    delivered: where a new stream resumes. Too many open streams is a
    :class:`~hutch.HutchError` with code ``quota_exceeded`` (429): the
    tenant's streams quota."""

    def __init__(self, t: Transport, path: str, types: list[tuple[str, object]], after: str, retries: int) -> None:
        self._t = t
        self._path = path
        self._types = types
        self._retries = retries
        self.last_id = after
        self.reconnects = 0
        self._closed = False
        self._reading = False
        self._resp: Response | None = None
        self._events: Iterator[Any] | None = None
        self._open()

    def _open(self) -> None:
        headers = {"Last-Event-ID": self.last_id} if self.last_id else None
        resp = self._t.open("GET", self._path, query=self._types, accept="text/event-stream", headers=headers, read_timeout=None)
        ct = resp.headers.get("Content-Type", "")
        if not ct.startswith("text/event-stream"):
            resp.close()
            raise HutchError(resp.status, "", f"{self._path} answered {ct!r}, not an event stream")
        self._resp = resp
        self._events = read_events(resp)

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        self._reading = True
        try:
            return self._next()
        finally:
            self._reading = False
            if self._closed:
                self._drop()

    def _next(self) -> Event:
        failures, delay = 0, 0.1
        while True:
            if self._closed:
                raise StopIteration
            try:
                if self._events is None:
                    self._open()
                assert self._events is not None
                for ev in self._events:
                    if not ev.data:
                        continue
                    e = _model.decode(Event, json.loads(ev.data))
                    self.last_id = ev.id or e.id or self.last_id
                    return e
                err: Exception = ConnectionError("the event stream ended")
            except (OSError, http.client.HTTPException, StreamBroken) as e:
                err = e
            except HutchError as e:
                if e.status != 429 and e.status < 500:
                    raise
                err = e
            if self._closed:
                raise StopIteration
            self._drop()
            failures += 1
            if failures > self._retries:
                raise ConnectionError(f"event stream of {self._path} broke {failures} times in a row: {err}") from err
            self.reconnects += 1
            time.sleep(delay)
            delay = min(2 * delay, 2.0)

    def interrupt(self) -> None:
        """Breaks the connection as a network failure would; the stream
        resumes after :attr:`last_id` on the next read."""
        if self._resp is not None:
            self._resp.abort()

    def _drop(self) -> None:
        if self._resp is not None:
            self._resp.close()
        self._resp, self._events = None, None

    def close(self) -> None:
        """Ends the stream and releases its connection. It may be called from
        another thread to end a blocked read, which then stops the iteration."""
        self._closed = True
        if self._resp is not None:
            self._resp.abort()
        if not self._reading:
            self._drop()

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
