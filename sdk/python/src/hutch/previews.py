"""Previews: the server serves ``http://<port>-<sandbox id>.<preview domain>/``
from a port inside the sandbox. A port is private (an API key or a signed
URL lets one in) until made public."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

__all__ = ["Port", "PreviewURL"]


@dataclass
class Port:
    """A port's preview setting; ``listening`` and ``addresses`` say whether
    something listens on it in the sandbox, where the server could tell."""

    port: int = 0
    public: bool = False
    url: str = ""
    configured: bool = False
    updated_at: datetime | None = None
    listening: bool | None = None
    addresses: list[str] = field(default_factory=list)


@dataclass
class PreviewURL:
    """A signed URL that lets its holder into a private preview until ``expires_at``."""

    url: str = ""
    expires_at: datetime | None = None
