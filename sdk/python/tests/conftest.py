"""Runs the suite against a real ``hutch serve``.

The session builds ``hutch`` and ``hutch-agent`` from this repository,
starts ``hutch serve`` on a free port over a temporary data directory
(the namespace driver, as root), and at the end destroys every app and
sandbox it can list and stops the server with SIGTERM.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import Iterator

import pytest

import hutch

REPO = Path(__file__).resolve().parents[3]


class Server:
    def __init__(self, proc: subprocess.Popen[bytes], url: str, key: str) -> None:
        self.proc = proc
        self.url = url
        self.key = key


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if not (REPO / "go.mod").exists() or not (REPO / "cmd" / "hutch").is_dir():
        pytest.skip(f"no hutch repository at {REPO}")
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else None)
    if go is None:
        pytest.skip("the tests build hutch and need Go on PATH")
    bin_dir = tmp_path_factory.mktemp("bin")
    data = tmp_path_factory.mktemp("data")
    build = subprocess.run(
        [go, "build", "-o", str(bin_dir) + "/", "./cmd/hutch", "./cmd/hutch-agent"],
        cwd=REPO,
        env={**os.environ, "CGO_ENABLED": "0"},
        capture_output=True,
        text=True,
    )
    if build.returncode != 0:
        pytest.fail(f"go build failed:\n{build.stderr}")

    env = {**os.environ, "HUTCH_API_KEY": "", "HUTCH_URL": ""}
    proc = subprocess.Popen(
        [str(bin_dir / "hutch"), "serve", "--listen", "127.0.0.1:0", "--data", str(data)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    log: deque[str] = deque(maxlen=200)
    addr: list[str] = []
    ready = threading.Event()

    def drain() -> None:
        # Keeps reading so the server never blocks on a full pipe.
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            log.append(line)
            if not addr:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("msg") == "hutch serving":
                    addr.append(rec["addr"])
                    ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    if not ready.wait(60) or not addr:
        proc.kill()
        proc.wait()
        pytest.fail("hutch serve did not start:\n" + "\n".join(log))
    key = (data / "admin.key").read_text().strip()
    srv = Server(proc, "http://" + addr[0], key)
    try:
        yield srv
    finally:
        _clean(srv)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail("hutch serve did not stop on SIGTERM:\n" + "\n".join(log))


def _clean(srv: Server) -> None:
    c = hutch.Client(srv.url, srv.key)
    try:
        for app in c.apps.list():
            c.apps.delete(app.id)
    except hutch.HutchError:
        pass
    for sb in list(c.sandboxes.list()):
        if sb.state != "destroyed":
            try:
                c.sandboxes.delete(sb.id)
            except hutch.HutchError:
                pass


@pytest.fixture(scope="session")
def client(server: Server) -> hutch.Client:
    return hutch.Client(server.url, server.key, timeout=30)


@pytest.fixture
def sandbox(client: hutch.Client) -> Iterator[hutch.Sandbox]:
    with client.sandboxes.create(labels={"suite": "python"}, timeout_s=600) as sb:
        yield sb


def wait_until(cond, timeout: float = 10.0, every: float = 0.05) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(every)
