"""Secrets (``/v1/secrets``): write-only values of the tenant's. These calls
send values and get metadata back; no call returns a value."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from . import _model
from ._http import Transport, clean, quote

__all__ = ["Secret", "Secrets"]


@dataclass
class Secret:
    """A secret's metadata; ``value_bytes`` is its value's length. ``kind`` is
    ``"env"`` (a value the server uses toward a destination the operator
    configured, such as a provider key) or ``"registry"`` (a registry password,
    sent only to the host in ``registry``)."""

    id: str = ""
    tenant_id: str = ""
    name: str = ""
    description: str = ""
    kind: str = ""
    registry: str = ""
    value_bytes: int = 0
    created_at: datetime | None = None
    updated_at: datetime | None = None


class Secrets:
    """The tenant's secrets (``client.secrets``)."""

    def __init__(self, t: Transport) -> None:
        self._t = t

    def create(
        self,
        name: str,
        value: str,
        description: str | None = None,
        *,
        kind: str | None = None,
        registry: str | None = None,
    ) -> Secret:
        """Creates a secret. A name in use is :class:`~hutch.Conflict`
        ``secret_exists``; a value over the server's limit ``secret_too_large`` (413).

        ``kind="registry"`` with ``registry="HOST"`` (``ghcr.io``,
        ``registry.example.com:5000``) makes a registry password: the only kind a
        template pull's ``password_secret`` takes, sent to that host alone. The
        kind and host are set here and never change."""
        body = clean({"name": name, "value": value, "description": description, "kind": kind, "registry": registry})
        return _model.decode(Secret, self._t.call("POST", "/v1/secrets", json_body=body))

    def list(self) -> list[Secret]:
        """Lists the secrets by name, without values."""
        d = self._t.call("GET", "/v1/secrets")
        return [_model.decode(Secret, s) for s in d.get("secrets") or []]

    def get(self, name: str) -> Secret:
        """Returns a secret's metadata."""
        return _model.decode(Secret, self._t.call("GET", _path(name)))

    def replace(self, name: str, value: str, description: str | None = None) -> Secret:
        """Replaces an existing secret's value (and description, when given);
        a missing one is :class:`~hutch.NotFound`, never created."""
        body = clean({"value": value, "description": description})
        return _model.decode(Secret, self._t.call("PUT", _path(name), json_body=body))

    def delete(self, name: str) -> None:
        """Deletes a secret."""
        self._t.call("DELETE", _path(name))


def _path(name: str) -> str:
    if not name:
        raise ValueError("empty secret name")
    return f"/v1/secrets/{quote(name)}"
