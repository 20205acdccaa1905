"""hutch: the Python SDK for hutch's /v1 API (self-hosted sandboxes for AI agents).

Standard library only, synchronous, streams as iterators::

    import hutch

    client = hutch.Client()  # $HUTCH_URL, $HUTCH_API_KEY
    with client.sandboxes.create(env={"GREETING": "hi"}) as sb:
        print(sb.exec(["sh", "-c", "echo $GREETING"]).stdout_text)
        sb.files.write("hello.txt", "hello")
        for ev in sb.exec_stream(["sh", "-c", "for i in 1 2 3; do echo $i; done"]):
            print(ev.type, ev.data)

Errors the server answers raise :class:`HutchError` subclasses carrying the
HTTP status and the API's stable error ``code``.
"""

from ._http import Conflict, Forbidden, HutchError, Invalid, NotFound, Unauthorized, Unavailable
from .apps import App, Apps, Checkpoint, ConfigEntry, PromoteResult, Task, TaskLog, TaskLogEntry, UndoResult
from .client import Client
from .events import Event, EventPage, Events, EventStream
from .exec import ExecEvent, ExecResult, ExecStream
from .files import FileInfo, Files, TarResult
from .network import Network, NetworkPolicy, SandboxMetrics
from .previews import Port, PreviewURL
from .processes import OutputEvent, OutputStream, Process, Processes
from .sandboxes import Limits, Sandbox, SandboxInfo, Sandboxes, VolumeMount
from .secrets import Secret, Secrets
from .snapshots import Snapshot, Snapshots, Template, Templates

__version__ = "0.1.0"

__all__ = [
    "Client",
    "HutchError",
    "Invalid",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "Conflict",
    "Unavailable",
    "Sandbox",
    "SandboxInfo",
    "Sandboxes",
    "Limits",
    "VolumeMount",
    "NetworkPolicy",
    "Network",
    "SandboxMetrics",
    "Port",
    "PreviewURL",
    "ExecResult",
    "ExecEvent",
    "ExecStream",
    "Files",
    "FileInfo",
    "TarResult",
    "Processes",
    "Process",
    "OutputEvent",
    "OutputStream",
    "Events",
    "Event",
    "EventPage",
    "EventStream",
    "Secrets",
    "Secret",
    "Snapshots",
    "Snapshot",
    "Templates",
    "Template",
    "Apps",
    "App",
    "Task",
    "TaskLog",
    "TaskLogEntry",
    "Checkpoint",
    "UndoResult",
    "PromoteResult",
    "ConfigEntry",
]
