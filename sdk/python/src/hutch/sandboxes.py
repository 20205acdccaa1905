"""Sandboxes: create, get, list, delete, and the life in between (stop,
start, pause, resume, timeout, keepalive), plus the calls on one sandbox
(network, metrics, previews, snapshots, fork).

:class:`Sandboxes` takes sandbox ids; :class:`Sandbox` is a handle on one
sandbox with the same calls and its files, processes and exec.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterator, Mapping, Sequence

from . import _model, exec as _exec
from ._http import NotFound, Transport, clean, quote
from .events import Event, EventStream, Events
from .files import Files
from .network import Network, NetworkPolicy, SandboxMetrics
from .previews import Port, PreviewURL
from .processes import Processes
from .snapshots import Snapshot

__all__ = ["Limits", "VolumeMount", "DiskUsage", "SandboxInfo", "SandboxPage", "ForkResult", "Sandbox", "Sandboxes"]


@dataclass
class Limits:
    """Resource limits; a field left ``None`` (or 0) takes the server's default."""

    memory_mb: int | None = None
    cpu: float | None = None
    pids: int | None = None
    disk_mb: int | None = None


@dataclass
class VolumeMount:
    """A volume of the caller's, mounted at ``path`` in the sandbox."""

    name: str = ""
    path: str = ""
    read_only: bool | None = None


@dataclass
class DiskUsage:
    used_bytes: int = 0
    limit_bytes: int = 0
    method: str = ""


@dataclass
class SandboxInfo:
    """A sandbox as the API shows it (env values are never echoed)."""

    id: str = ""
    state: str = ""
    template: str = ""
    driver: str = ""
    isolation: str = ""
    degraded: list[str] = field(default_factory=list)
    cwd: str = ""
    limits: Limits = field(default_factory=Limits)
    unenforced_limits: list[str] = field(default_factory=list)
    timeout_s: int = 0
    labels: dict[str, str] = field(default_factory=dict)
    root: bool = False
    network: NetworkPolicy = field(default_factory=NetworkPolicy)
    error: str = ""
    volumes: list[VolumeMount] = field(default_factory=list)
    on_expiry: str = ""
    idle_timeout_s: int = 0
    keepalive_until: datetime | None = None
    paused_at: datetime | None = None
    disk: DiskUsage | None = None
    node: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None
    expires_at: datetime | None = None


@dataclass
class SandboxPage:
    """One page of a listing; ``next_cursor`` is empty on the last."""

    sandboxes: list[SandboxInfo] = field(default_factory=list)
    next_cursor: str = ""


@dataclass
class ForkResult:
    """The sandboxes a fork started, and how long the source was frozen."""

    sandboxes: list[SandboxInfo] = field(default_factory=list)
    pause_ms: int = 0


def _path(sandbox_id: str, *parts: str | int) -> str:
    if not sandbox_id:
        raise ValueError("empty sandbox id")
    return "/".join([f"/v1/sandboxes/{quote(sandbox_id)}", *(str(p) for p in parts)])


class Sandboxes:
    """The tenant's sandboxes (``client.sandboxes``)."""

    def __init__(self, t: Transport) -> None:
        self._t = t

    # -- create, find, list --------------------------------------------------

    def create(
        self,
        *,
        template: str | None = None,
        snapshot: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        limits: Limits | Mapping[str, object] | None = None,
        limits_best_effort: bool | None = None,
        timeout_s: int | None = None,
        on_expiry: str | None = None,
        idle_timeout_s: int | None = None,
        labels: Mapping[str, str] | None = None,
        root: bool | None = None,
        network: NetworkPolicy | Mapping[str, object] | None = None,
        volumes: Sequence[VolumeMount | Mapping[str, object]] | None = None,
        driver: str | None = None,
    ) -> "Sandbox":
        """Creates a sandbox (every field optional) and returns a handle on
        it, running. Use it as a context manager to destroy it on exit."""
        body = clean(
            {
                "template": template,
                "snapshot": snapshot,
                "env": dict(env) if env else None,
                "cwd": cwd,
                "limits": _model.encode(limits),
                "limits_best_effort": limits_best_effort or None,
                "timeout_s": timeout_s,
                "on_expiry": on_expiry,
                "idle_timeout_s": idle_timeout_s,
                "labels": dict(labels) if labels else None,
                "root": root or None,
                "network": _model.encode(network),
                "volumes": _model.encode(list(volumes)) if volumes else None,
                "driver": driver,
            }
        )
        return self._handle(self._t.call("POST", "/v1/sandboxes", json_body=body, read_timeout=None))

    def get(self, sandbox_id: str) -> "Sandbox":
        """Returns a handle on one sandbox, as it is now. An unknown id is
        :class:`~hutch.NotFound` with code ``sandbox_not_found``."""
        return self._handle(self._t.call("GET", _path(sandbox_id)))

    def handle(self, sandbox_id: str) -> "Sandbox":
        """Returns a handle on a sandbox without asking the server about it."""
        return Sandbox(self, SandboxInfo(id=sandbox_id))

    def list_page(
        self,
        *,
        state: str | None = None,
        labels: Mapping[str, str] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> SandboxPage:
        """Returns one page of sandboxes: those in ``state`` carrying every
        one of ``labels``, ``limit`` at most, from ``cursor`` (a previous
        page's ``next_cursor``)."""
        q: list[tuple[str, object]] = []
        if state:
            q.append(("state", state))
        for k in sorted(labels or {}):
            q.append(("label", f"{k}={labels[k]}"))  # type: ignore[index]
        if limit:
            q.append(("limit", limit))
        if cursor:
            q.append(("cursor", cursor))
        return _model.decode(SandboxPage, self._t.call("GET", "/v1/sandboxes", query=q))

    def list(
        self,
        *,
        state: str | None = None,
        labels: Mapping[str, str] | None = None,
        page_size: int | None = None,
    ) -> Iterator["Sandbox"]:
        """Iterates over every sandbox matching the filters, fetching page
        after page as it goes."""
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page = self.list_page(state=state, labels=labels, limit=page_size, cursor=cursor)
            for info in page.sandboxes:
                yield Sandbox(self, info)
            if not page.next_cursor:
                return
            if page.next_cursor in seen:
                raise RuntimeError(f"sandbox listing repeats cursor {page.next_cursor!r}")
            seen.add(page.next_cursor)
            cursor = page.next_cursor

    # -- life ------------------------------------------------------------------

    def delete(self, sandbox_id: str) -> None:
        """Destroys a sandbox and everything in it."""
        self._t.call("DELETE", _path(sandbox_id), read_timeout=None)

    def stop(self, sandbox_id: str) -> SandboxInfo:
        """Stops a running sandbox, keeping its files."""
        return self._info("POST", _path(sandbox_id, "stop"))

    def start(self, sandbox_id: str) -> SandboxInfo:
        """Starts a stopped sandbox again."""
        return self._info("POST", _path(sandbox_id, "start"))

    def pause(self, sandbox_id: str) -> SandboxInfo:
        """Freezes every process of a running sandbox, its memory kept."""
        return self._info("POST", _path(sandbox_id, "pause"))

    def resume(self, sandbox_id: str) -> SandboxInfo:
        """Thaws a paused sandbox."""
        return self._info("POST", _path(sandbox_id, "resume"))

    def set_timeout(self, sandbox_id: str, timeout_s: int) -> SandboxInfo:
        """Gives the sandbox a lifetime of ``timeout_s`` seconds from now (from
        its next start when it is stopped)."""
        return self._info("POST", _path(sandbox_id, "timeout"), {"timeout_s": timeout_s})

    def keepalive(self, sandbox_id: str, for_s: int) -> SandboxInfo:
        """Keeps idle actions off the sandbox for ``for_s`` seconds (0 ends a keepalive)."""
        return self._info("POST", _path(sandbox_id, "keepalive"), {"for_s": for_s})

    # -- network, metrics, previews ---------------------------------------------

    def network(self, sandbox_id: str) -> Network:
        """Returns the sandbox's egress policy and what went through it."""
        return _model.decode(Network, self._t.call("GET", _path(sandbox_id, "network")))

    def set_network(self, sandbox_id: str, egress: str, allow: Sequence[str] | None = None) -> Network:
        """Changes the egress policy (``none``, ``public`` or ``allowlist``
        with ``allow``); the next connection sees it."""
        body = clean({"egress": egress, "allow": list(allow) if allow else None})
        return _model.decode(Network, self._t.call("PUT", _path(sandbox_id, "network"), json_body=body))

    def metrics(self, sandbox_id: str) -> SandboxMetrics:
        """Returns what the sandbox uses now and its recent samples."""
        return _model.decode(SandboxMetrics, self._t.call("GET", _path(sandbox_id, "metrics")))

    def ports(self, sandbox_id: str) -> builtins.list[Port]:
        """Lists the preview settings and the ports listening in the sandbox."""
        d = self._t.call("GET", _path(sandbox_id, "ports"))
        return [_model.decode(Port, p) for p in d.get("ports") or []]

    def set_port_public(self, sandbox_id: str, port: int, public: bool = True) -> Port:
        """Makes a port's preview public (no credentials needed) or private again."""
        return _model.decode(Port, self._t.call("PUT", _path(sandbox_id, "ports", port), json_body={"public": public}))

    def preview_url(self, sandbox_id: str, port: int, expires_in_s: int | None = None) -> PreviewURL:
        """Signs a URL of a port's preview that lets its holder in without a
        key for ``expires_in_s`` seconds (an hour when left out, at most a day)."""
        body = clean({"expires_in_s": expires_in_s})
        return _model.decode(PreviewURL, self._t.call("POST", _path(sandbox_id, "ports", port, "url"), json_body=body))

    # -- snapshots -------------------------------------------------------------

    def snapshot(self, sandbox_id: str, name: str | None = None) -> Snapshot:
        """Copies the sandbox's files into a new snapshot (its processes
        frozen while it is taken)."""
        d = self._t.call("POST", _path(sandbox_id, "snapshots"), json_body=clean({"name": name}), read_timeout=None)
        return _model.decode(Snapshot, d)

    def restore(self, sandbox_id: str, snapshot: str) -> SandboxInfo:
        """Gives the sandbox exactly the snapshot's files; its processes end
        and it runs again."""
        return self._info("POST", _path(sandbox_id, "restore"), {"snapshot": snapshot}, read_timeout=None)

    def fork(self, sandbox_id: str, count: int = 1, labels: Mapping[str, str] | None = None) -> builtins.list["Sandbox"]:
        """Starts ``count`` sandboxes from the sandbox's files as they are now."""
        body = clean({"count": count, "labels": dict(labels) if labels else None})
        res = _model.decode(ForkResult, self._t.call("POST", _path(sandbox_id, "fork"), json_body=body, read_timeout=None))
        return [Sandbox(self, info) for info in res.sandboxes]

    # -- helpers -----------------------------------------------------------------

    def _info(self, method: str, path: str, body: object = None, read_timeout: float | None | str = "default") -> SandboxInfo:
        return _model.decode(SandboxInfo, self._t.call(method, path, json_body=body, read_timeout=read_timeout))

    def _handle(self, d: object) -> "Sandbox":
        return Sandbox(self, _model.decode(SandboxInfo, d))


class Sandbox:
    """A handle on one sandbox: ``info`` is what the server last said of it
    (:meth:`refresh` asks again). As a context manager it destroys the
    sandbox on exit::

        with client.sandboxes.create() as sb:
            print(sb.exec(["uname", "-a"]).stdout_text)
    """

    def __init__(self, sandboxes: Sandboxes, info: SandboxInfo) -> None:
        self._sb = sandboxes
        self._t = sandboxes._t
        self.info = info
        self.files = Files(self._t, info.id)
        self.processes = Processes(self._t, info.id)

    def __repr__(self) -> str:
        return f"Sandbox(id={self.id!r}, state={self.state!r})"

    @property
    def id(self) -> str:
        return self.info.id

    @property
    def state(self) -> str:
        """The state when the server last said (``running``, ``stopped``, …)."""
        return self.info.state

    def refresh(self) -> "Sandbox":
        """Asks the server for the sandbox as it is now."""
        self.info = self._sb.get(self.id).info
        return self

    def exec(
        self,
        cmd: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: str | bytes | None = None,
        timeout_ms: int | None = None,
        output_encoding: str | None = None,
        root: bool = False,
    ) -> _exec.ExecResult:
        """Runs ``cmd`` to completion; see :func:`hutch.exec.run`."""
        return _exec.run(
            self._t, self.id, cmd, env=env, cwd=cwd, stdin=stdin, timeout_ms=timeout_ms, output_encoding=output_encoding, root=root
        )

    def exec_stream(
        self,
        cmd: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: str | bytes | None = None,
        timeout_ms: int | None = None,
        root: bool = False,
    ) -> _exec.ExecStream:
        """Runs ``cmd`` and streams its output; see :func:`hutch.exec.stream`."""
        return _exec.stream(self._t, self.id, cmd, env=env, cwd=cwd, stdin=stdin, timeout_ms=timeout_ms, root=root)

    def kill(self) -> None:
        """Destroys the sandbox; one already gone is not an error."""
        try:
            self._sb.delete(self.id)
        except NotFound:
            pass
        self.info.state = "destroyed"

    def stop(self) -> "Sandbox":
        """Stops the sandbox, keeping its files."""
        self.info = self._sb.stop(self.id)
        return self

    def start(self) -> "Sandbox":
        """Starts the stopped sandbox again."""
        self.info = self._sb.start(self.id)
        return self

    def pause(self) -> "Sandbox":
        """Freezes the sandbox's processes."""
        self.info = self._sb.pause(self.id)
        return self

    def resume(self) -> "Sandbox":
        """Thaws the paused sandbox."""
        self.info = self._sb.resume(self.id)
        return self

    def set_timeout(self, timeout_s: int) -> "Sandbox":
        """Gives the sandbox a lifetime of ``timeout_s`` seconds from now."""
        self.info = self._sb.set_timeout(self.id, timeout_s)
        return self

    def keepalive(self, for_s: int) -> "Sandbox":
        """Keeps idle actions off the sandbox for ``for_s`` seconds."""
        self.info = self._sb.keepalive(self.id, for_s)
        return self

    def network(self) -> Network:
        return self._sb.network(self.id)

    def set_network(self, egress: str, allow: Sequence[str] | None = None) -> Network:
        return self._sb.set_network(self.id, egress, allow)

    def metrics(self) -> SandboxMetrics:
        return self._sb.metrics(self.id)

    def ports(self) -> list[Port]:
        return self._sb.ports(self.id)

    def set_port_public(self, port: int, public: bool = True) -> Port:
        return self._sb.set_port_public(self.id, port, public)

    def preview_url(self, port: int, expires_in_s: int | None = None) -> PreviewURL:
        return self._sb.preview_url(self.id, port, expires_in_s)

    def snapshot(self, name: str | None = None) -> Snapshot:
        return self._sb.snapshot(self.id, name)

    def restore(self, snapshot: str) -> "Sandbox":
        self.info = self._sb.restore(self.id, snapshot)
        return self

    def fork(self, count: int = 1, labels: Mapping[str, str] | None = None) -> list["Sandbox"]:
        return self._sb.fork(self.id, count, labels)

    def events(self, *, types: Sequence[str] | None = None, after: str | None = None) -> Iterator[Event]:
        """Iterates over the sandbox's events recorded so far, oldest first."""
        return Events(self._t).iter(sandbox=self.id, types=types, after=after)

    def follow_events(self, *, types: Sequence[str] | None = None, after: str | None = None) -> EventStream:
        """Follows the sandbox's events live; see :meth:`hutch.events.Events.follow`."""
        return Events(self._t).follow(sandbox=self.id, types=types, after=after)

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()
