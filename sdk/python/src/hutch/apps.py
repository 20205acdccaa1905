"""Apps (``/v1/apps``): a named app with a ``dev`` and a ``live`` sandbox,
tasks that run commands in dev, file checkpoints and undo, promotion of dev
to live and rollback, config, supervised processes and events.
"""

from __future__ import annotations

import http.client
import json
import time
import builtins
import functools
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, Iterator, Mapping, Sequence, TypeVar

from . import _model
from ._http import Conflict, HutchError, Transport, clean, quote
from ._sse import StreamBroken, read_events
from .events import Event, EventStream, Events
from .sandboxes import Limits

__all__ = [
    "App",
    "Preset",
    "Task",
    "FileChange",
    "TaskLogEntry",
    "TaskLog",
    "Checkpoint",
    "UndoResult",
    "Check",
    "PromoteResult",
    "ConfigEntry",
    "AppProcess",
    "AppProcesses",
    "Apps",
]

T = TypeVar("T")

TASK_DONE = ("succeeded", "failed", "cancelled")


@dataclass
class App:
    """An app. ``state`` is ``creating``, ``ready`` or ``failed`` (see
    ``error``); ``live`` and ``dev`` are its sandboxes' ids; ``url`` and
    ``dev_url`` where it answers."""

    id: str = ""
    name: str = ""
    preset: str = ""
    template: str = ""
    state: str = ""
    error: str = ""
    public: bool = False
    url: str = ""
    dev_url: str = ""
    live: str = ""
    dev: str = ""
    previous_live: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass
class Preset:
    name: str = ""
    description: str = ""
    template: str = ""


@dataclass
class FileChange:
    """A file a task or an undo changed: ``change`` is added, modified or deleted."""

    path: str = ""
    change: str = ""


@dataclass
class Task:
    """A command run in the app's dev sandbox. ``status`` is queued, running,
    succeeded, failed or cancelled; once it has ended, ``files_changed``,
    ``build_status`` (passed, failed, skipped) and ``app_healthy`` say what it did."""

    id: str = ""
    app_id: str = ""
    status: str = ""
    command: list[str] = field(default_factory=list)
    message: str = ""
    timeout_s: int = 0
    checkpoint: str = ""
    exit_code: int | None = None
    build_status: str = ""
    preview_ok: bool = False
    app_healthy: bool = False
    files_changed: list[FileChange] = field(default_factory=list)
    duration_ms: int = 0
    error: str = ""
    created_at: datetime | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None

    @property
    def done(self) -> bool:
        """The task has ended."""
        return self.status in TASK_DONE


@dataclass
class TaskLogEntry:
    """One chunk of a task's log: ``stream`` is stdout, stderr or system (the
    task runner's notes); ``seq`` its number, where a log resumes after it."""

    seq: int = 0
    stream: str = ""
    text: str = ""


@dataclass
class Checkpoint:
    id: str = ""
    message: str = ""
    kind: str = ""
    files: int = 0
    bytes: int = 0
    created_at: datetime | None = None


@dataclass
class UndoResult:
    """What an undo brought back (``restored``), what it saved first
    (``pre_undo``, to undo the undo) and the files it changed."""

    restored: Checkpoint = field(default_factory=Checkpoint)
    pre_undo: Checkpoint = field(default_factory=Checkpoint)
    changes: list[FileChange] = field(default_factory=list)


@dataclass
class Check:
    name: str = ""
    ok: bool = False
    message: str = ""


@dataclass
class PromoteResult:
    app: App = field(default_factory=App)
    checks: list[Check] = field(default_factory=list)
    snapshot: str = ""


@dataclass
class ConfigEntry:
    """A config entry; a sensitive one's ``value`` is never shown.
    ``access`` is control_plane_only, runtime, agent or both."""

    key: str = ""
    value: str = ""
    sensitive: bool = False
    access: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass
class AppProcess:
    name: str = ""
    command: str = ""
    web: bool = False
    state: str = ""
    pid: int = 0
    restarts: int = 0
    last_exit_code: int | None = None
    message: str = ""
    started_at: datetime | None = None


@dataclass
class AppProcesses:
    """What the supervisor of one of the app's sandboxes runs;
    ``manifest_error`` says what is wrong with sandbox.yaml, if anything."""

    role: str = ""
    sandbox: str = ""
    processes: list[AppProcess] = field(default_factory=list)
    manifest_error: str = ""


class TaskLog:
    """A task's log as an iterator of :class:`TaskLogEntry`, followed until
    the task ends; :attr:`task` is then the task as it ended. A stream that
    breaks is reopened after the last chunk delivered, up to ``retries``
    times in a row without a new chunk."""

    def __init__(self, t: Transport, app_id: str, task_id: str, after: int = 0, retries: int = 5) -> None:
        self._t = t
        self._path = f"/v1/apps/{quote(app_id)}/tasks/{quote(task_id)}/log"
        self.after = after
        self.task: Task | None = None
        self._retries = retries

    def __iter__(self) -> Iterator[TaskLogEntry]:
        failures, delay = 0, 0.25
        while self.task is None:
            start = self.after
            try:
                yield from self._read()
                if self.task is not None:
                    return
                err: Exception = ConnectionError("the log stream ended before the task did")
            except (OSError, http.client.HTTPException, StreamBroken) as e:
                err = e
            except HutchError as e:
                if e.status != 429 and e.status < 500:
                    raise
                err = e
            if self.after != start:
                failures, delay = 0, 0.25
            failures += 1
            if failures > self._retries:
                raise ConnectionError(f"task log {self._path}: {err}") from err
            time.sleep(delay)
            delay = min(2 * delay, 5.0)

    def _read(self) -> Iterator[TaskLogEntry]:
        q = {"after": self.after} if self.after > 0 else None
        with self._t.open("GET", self._path, query=q, accept="text/event-stream", read_timeout=None) as r:
            for ev in read_events(r):
                if ev.event == "log":
                    d = json.loads(ev.data)
                    entry = TaskLogEntry(seq=int(ev.id), stream=d.get("stream", ""), text=d.get("text", ""))
                    self.after = entry.seq
                    yield entry
                elif ev.event == "end":
                    self.task = _model.decode(Task, json.loads(ev.data))
                    return

    def wait(self) -> Task:
        """Reads the rest of the log and returns the task as it ended."""
        for _ in self:
            pass
        assert self.task is not None
        return self.task


class Apps:
    """The tenant's apps (``client.apps``). Calls take the app's id."""

    def __init__(self, t: Transport) -> None:
        self._t = t

    def _path(self, app_id: str, *parts: str) -> str:
        if not app_id:
            raise ValueError("empty app id")
        return "/".join([f"/v1/apps/{quote(app_id)}", *parts])

    # -- apps ------------------------------------------------------------------

    def presets(self) -> list[Preset]:
        """Lists the server's presets (react-vite, static, …)."""
        d = self._t.call("GET", "/v1/presets")
        return [_model.decode(Preset, p) for p in d.get("presets") or []]

    def create(
        self,
        name: str,
        preset: str,
        *,
        template: str | None = None,
        public: bool | None = None,
        limits: Limits | Mapping[str, object] | None = None,
        wait: bool = False,
        timeout: float = 300.0,
    ) -> App:
        """Creates an app. It comes back ``creating`` while its sandboxes are
        made; with ``wait`` the call returns once it is ready, and raises
        :class:`~hutch.HutchError` with code ``app_failed`` if it failed. A
        name in use is :class:`~hutch.Conflict` ``app_exists``."""
        body = clean({"name": name, "preset": preset, "template": template, "public": public or None, "limits": _model.encode(limits)})
        app = _model.decode(App, self._t.call("POST", "/v1/apps", json_body=body, read_timeout=None))
        if not wait:
            return app
        app = self.wait(app.id, timeout)
        if app.state == "failed":
            raise HutchError(0, "app_failed", f"app {name} failed: {app.error}")
        return app

    def get(self, app_id: str) -> App:
        """Returns one app."""
        return _model.decode(App, self._t.call("GET", self._path(app_id)))

    def list(self) -> list[App]:
        """Lists the tenant's apps by name."""
        d = self._t.call("GET", "/v1/apps")
        return [_model.decode(App, a) for a in d.get("apps") or []]

    def set_public(self, app_id: str, public: bool) -> App:
        """Makes the app public (no key needed to use it) or private."""
        return _model.decode(App, self._t.call("PATCH", self._path(app_id), json_body={"public": public}))

    def delete(self, app_id: str) -> None:
        """Deletes an app, its sandboxes, config and history."""
        self._t.call("DELETE", self._path(app_id), read_timeout=None)

    def wait(self, app_id: str, timeout: float = 300.0) -> App:
        """Polls the app until it is no longer creating and returns it: check
        ``state`` (ready or failed). Raises ``TimeoutError`` after ``timeout`` seconds."""
        return _poll(functools.partial(self.get, app_id), _app_settled, timeout, f"app {app_id}")

    # -- tasks -----------------------------------------------------------------

    def create_task(self, app_id: str, command: Sequence[str], *, timeout_s: int | None = None, message: str | None = None) -> Task:
        """Starts ``command`` in the app's dev sandbox and returns the task at
        once; follow it with :meth:`task_log` or :meth:`wait_task`. An app
        running a task already is :class:`~hutch.Conflict` ``task_running``."""
        if isinstance(command, str):
            raise TypeError("command is a list of arguments, such as ['sh', '-c', 'make']")
        body = clean({"command": list(command), "timeout_s": timeout_s, "message": message})
        return _model.decode(Task, self._t.call("POST", self._path(app_id, "tasks"), json_body=body))

    def task(self, app_id: str, task_id: str) -> Task:
        """Returns one task."""
        return _model.decode(Task, self._t.call("GET", self._path(app_id, "tasks", quote(task_id))))

    def tasks(self, app_id: str, limit: int | None = None) -> builtins.list[Task]:
        """Lists the app's tasks, newest first."""
        d = self._t.call("GET", self._path(app_id, "tasks"), query={"limit": limit or None})
        return [_model.decode(Task, x) for x in d.get("tasks") or []]

    def cancel_task(self, app_id: str, task_id: str) -> Task:
        """Kills a queued or running task's command; it ends as cancelled."""
        return _model.decode(Task, self._t.call("POST", self._path(app_id, "tasks", quote(task_id), "cancel")))

    def wait_task(self, app_id: str, task_id: str, timeout: float = 900.0) -> Task:
        """Polls a task until it has ended and returns it."""
        return _poll(functools.partial(self.task, app_id, task_id), _task_done, timeout, f"task {task_id}")

    def task_log(self, app_id: str, task_id: str, after: int = 0) -> TaskLog:
        """Returns the task's log after chunk ``after`` (0: from the start) as
        an iterator that follows it until the task ends::

            log = client.apps.task_log(app.id, task.id)
            for entry in log:
                print(entry.stream, entry.text, end="")
            print(log.task.status)
        """
        return TaskLog(self._t, app_id, task_id, after)

    # -- history ---------------------------------------------------------------

    def undo(self, app_id: str, steps: int | None = None, checkpoint: str | None = None) -> UndoResult:
        """Brings back the dev sandbox's files of a checkpoint: ``steps`` back,
        or ``checkpoint``; neither undoes the last task."""
        body = clean({"steps": steps, "checkpoint": checkpoint})
        return _model.decode(UndoResult, self._t.call("POST", self._path(app_id, "undo"), json_body=body, read_timeout=None))

    def checkpoint(self, app_id: str, message: str | None = None) -> Checkpoint:
        """Saves the dev sandbox's files as they are now."""
        d = self._t.call("POST", self._path(app_id, "checkpoints"), json_body=clean({"message": message}), read_timeout=None)
        return _model.decode(Checkpoint, d)

    def checkpoints(self, app_id: str) -> builtins.list[Checkpoint]:
        """Lists the app's checkpoints."""
        d = self._t.call("GET", self._path(app_id, "checkpoints"))
        return [_model.decode(Checkpoint, c) for c in d.get("checkpoints") or []]

    def promote(self, app_id: str) -> PromoteResult:
        """Makes what dev runs live, once its checks pass. A failed check
        leaves live as it was and is :class:`~hutch.Conflict`
        ``promotion_check_failed``."""
        return _model.decode(PromoteResult, self._t.call("POST", self._path(app_id, "promote"), json_body={}, read_timeout=None))

    def rollback(self, app_id: str) -> App:
        """Points live back at what it was before the last promotion."""
        return _model.decode(App, self._t.call("POST", self._path(app_id, "rollback"), json_body={}))

    # -- config ------------------------------------------------------------------

    def config(self, app_id: str) -> builtins.list[ConfigEntry]:
        """Lists the app's config; sensitive values are left out."""
        d = self._t.call("GET", self._path(app_id, "config"))
        return [_model.decode(ConfigEntry, c) for c in d.get("config") or []]

    def set_config(
        self, app_id: str, key: str, value: str | None = None, *, sensitive: bool | None = None, access: str | None = None
    ) -> ConfigEntry:
        """Creates the config entry ``key`` or, when it exists, changes what
        is given of it. ``access`` is control_plane_only (the default),
        runtime, agent or both; a sensitive value is encrypted and never shown again."""
        body = clean({"key": key, "value": value, "sensitive": sensitive, "access": access})
        try:
            return _model.decode(ConfigEntry, self._t.call("POST", self._path(app_id, "config"), json_body=body))
        except Conflict as e:
            if e.code != "config_exists":
                raise
        del body["key"]
        d = self._t.call("PATCH", self._path(app_id, "config", quote(key)), json_body=body)
        return _model.decode(ConfigEntry, d)

    def delete_config(self, app_id: str, key: str) -> None:
        """Deletes the config entry ``key``."""
        self._t.call("DELETE", self._path(app_id, "config", quote(key)))

    # -- processes, events ---------------------------------------------------------

    def processes(self, app_id: str, role: str | None = None) -> AppProcesses:
        """What the supervisor of the ``dev`` (default) or ``live`` sandbox runs."""
        d = self._t.call("GET", self._path(app_id, "processes"), query={"role": role or None})
        return _model.decode(AppProcesses, d)

    def events(self, app_id: str, *, types: Sequence[str] | None = None, after: str | None = None) -> Iterator[Event]:
        """Iterates over the app's events recorded so far, oldest first."""
        return Events(self._t).iter(app=app_id, types=types, after=after)

    def follow_events(self, app_id: str, *, types: Sequence[str] | None = None, after: str | None = None) -> EventStream:
        """Follows the app's events live."""
        return Events(self._t).follow(app=app_id, types=types, after=after)


def _app_settled(a: App) -> bool:
    return a.state != "creating"


def _task_done(t: Task) -> bool:
    return t.done


def _poll(get: Callable[[], T], done: Callable[[T], bool], timeout: float, what: str) -> T:
    deadline = time.monotonic() + timeout
    delay = 0.2
    while True:
        x = get()
        if done(x):
            return x
        if time.monotonic() + delay > deadline:
            raise TimeoutError(f"{what}: not done after {timeout:g} s")
        time.sleep(delay)
        delay = min(2 * delay, 2.0)
