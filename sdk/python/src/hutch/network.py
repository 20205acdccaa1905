"""A sandbox's egress policy and what it uses (metrics)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

__all__ = ["NetworkPolicy", "Network", "SandboxMetrics", "CPUStats", "MemStats", "PidStats", "DiskStats", "NetStats", "Sample"]


@dataclass
class NetworkPolicy:
    """Where a sandbox may connect: ``egress`` is ``none``, ``public`` (the
    default) or ``allowlist``, with ``allow`` the hosts, ``*.suffix``
    patterns or CIDRs it may reach."""

    egress: str = "public"
    allow: list[str] | None = None


@dataclass
class Network:
    """A sandbox's egress policy and the counts of what went through it."""

    policy: NetworkPolicy = field(default_factory=NetworkPolicy)
    allowed: int = 0
    denied: int = 0
    bytes_out: int = 0
    bytes_in: int = 0


@dataclass
class CPUStats:
    usage_ns: int = 0
    percent: float = 0.0
    limit_cpus: float = 0.0


@dataclass
class MemStats:
    usage_bytes: int = 0
    peak_bytes: int = 0
    limit_bytes: int = 0
    oom_kills: int = 0


@dataclass
class PidStats:
    current: int = 0
    limit: int = 0


@dataclass
class DiskStats:
    usage_bytes: int = 0
    limit_bytes: int = 0


@dataclass
class NetStats:
    rx_bytes: int = 0
    tx_bytes: int = 0
    rx_packets: int = 0
    tx_packets: int = 0


@dataclass
class Sample:
    at: datetime | None = None
    cpu_percent: float = 0.0
    memory_bytes: int = 0
    pids: int = 0
    rx_bytes: int = 0
    tx_bytes: int = 0


@dataclass
class SandboxMetrics:
    """What a running or paused sandbox uses now, and a sample every
    ``sample_every_s`` seconds of its last minutes (``history``).
    ``unsupported`` names what its driver cannot measure."""

    sandbox_id: str = ""
    at: datetime | None = None
    cpu: CPUStats = field(default_factory=CPUStats)
    memory: MemStats = field(default_factory=MemStats)
    pids: PidStats = field(default_factory=PidStats)
    disk: DiskStats = field(default_factory=DiskStats)
    network: NetStats = field(default_factory=NetStats)
    sample_every_s: int = 0
    history: list[Sample] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
