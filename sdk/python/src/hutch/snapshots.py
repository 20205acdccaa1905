"""Snapshots (a sandbox's files, kept) and templates (what sandboxes start from).

A snapshot is taken, restored and forked through the sandbox
(``Sandbox.snapshot``, ``Sandbox.restore``, ``Sandbox.fork``); this module
lists, gets and deletes them, and lists templates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from . import _model
from ._http import Transport, quote

__all__ = ["Snapshot", "Snapshots", "Template", "Templates"]


@dataclass
class Snapshot:
    """A copy of a sandbox's files; ``pause_ms`` is how long its processes
    were frozen while it was taken."""

    id: str = ""
    name: str = ""
    sandbox_id: str = ""
    template: str = ""
    driver: str = ""
    bytes: int = 0
    files: int = 0
    pause_ms: int = 0
    created_at: datetime | None = None


class Snapshots:
    """The caller's snapshots (``client.snapshots``)."""

    def __init__(self, t: Transport) -> None:
        self._t = t

    def list(self, sandbox: str | None = None) -> list[Snapshot]:
        """Lists snapshots, newest first; ``sandbox`` keeps one sandbox's."""
        d = self._t.call("GET", "/v1/snapshots", query={"sandbox": sandbox or None})
        return [_model.decode(Snapshot, s) for s in d.get("snapshots") or []]

    def get(self, snapshot_id: str) -> Snapshot:
        """Returns one snapshot."""
        return _model.decode(Snapshot, self._t.call("GET", f"/v1/snapshots/{quote(snapshot_id)}"))

    def delete(self, snapshot_id: str) -> None:
        """Deletes a snapshot and its files."""
        self._t.call("DELETE", f"/v1/snapshots/{quote(snapshot_id)}")


@dataclass
class Template:
    """An image sandboxes can start from; ``source`` says where it came from."""

    name: str = ""
    source: str = ""
    digest: str = ""
    config: dict[str, object] = field(default_factory=dict)
    layers: int = 0
    bytes: int = 0
    created_at: datetime | None = None


class Templates:
    """The caller's templates (``client.templates``). The host template,
    ``host``, is always there and not listed."""

    def __init__(self, t: Transport) -> None:
        self._t = t

    def list(self) -> list[Template]:
        """Lists the tenant's templates by name."""
        d = self._t.call("GET", "/v1/templates")
        return [_model.decode(Template, x) for x in d.get("templates") or []]

    def get(self, name: str) -> Template:
        """Returns one template."""
        return _model.decode(Template, self._t.call("GET", f"/v1/templates/{quote(name)}"))

    def delete(self, name: str) -> None:
        """Deletes a template; one a sandbox starts from is ``template_in_use``."""
        self._t.call("DELETE", f"/v1/templates/{quote(name)}")
