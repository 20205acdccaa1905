"""Apps: a static app created and waited for, a task that edits
public/index.html with its log read to the end, undo, promote, rollback,
config, processes and events."""

from __future__ import annotations

import pytest

import hutch

MARK = "<p>edited by the python suite</p>"


def test_static_app(client: hutch.Client) -> None:
    assert "static" in [p.name for p in client.apps.presets()]
    app = client.apps.create("pysuite", "static", wait=True, timeout=120)
    try:
        assert app.state == "ready" and app.dev and app.live
        assert app.id in [a.id for a in client.apps.list()]
        with pytest.raises(hutch.Conflict) as e:
            client.apps.create("pysuite", "static")
        assert e.value.code == "app_exists"

        dev = client.files(app.dev)
        before = dev.read_text("public/index.html")
        task = client.apps.create_task(
            app.id, ["sh", "-c", f"echo '{MARK}' >> public/index.html && echo edited && echo warn >&2"], message="edit"
        )
        log = client.apps.task_log(app.id, task.id)
        entries = list(log)
        text = "".join(e.text for e in entries if e.stream == "stdout")
        assert "edited\n" in text
        assert any(e.stream == "stderr" and "warn" in e.text for e in entries)
        assert [e.seq for e in entries] == sorted(e.seq for e in entries)
        assert log.task is not None and log.task.status == "succeeded" and log.task.done
        assert {"path": "public/index.html", "change": "modified"} in [vars(c) for c in log.task.files_changed]
        assert client.apps.wait_task(app.id, task.id).status == "succeeded"
        assert dev.read_text("public/index.html") == before + MARK + "\n"
        # A log resumed after a chunk carries on after it.
        rest = list(client.apps.task_log(app.id, task.id, after=entries[0].seq))
        assert [e.seq for e in rest] == [e.seq for e in entries[1:]]

        undone = client.apps.undo(app.id)
        assert {"path": "public/index.html", "change": "modified"} in [vars(c) for c in undone.changes]
        assert dev.read_text("public/index.html") == before
        assert len(client.apps.checkpoints(app.id)) >= 2

        # Edit again and make it live.
        client.apps.task_log(app.id, client.apps.create_task(app.id, ["sh", "-c", f"echo '{MARK}' >> public/index.html"]).id).wait()
        old_live = app.live
        promoted = client.apps.promote(app.id)
        assert promoted.checks and all(c.ok for c in promoted.checks)
        assert promoted.app.live != old_live and promoted.app.previous_live == old_live
        assert MARK in client.files(promoted.app.live).read_text("public/index.html")
        assert client.apps.rollback(app.id).live == old_live

        entry = client.apps.set_config(app.id, "API_TOKEN", "tok-123", sensitive=True, access="runtime")
        assert entry.sensitive and entry.value == ""
        client.apps.set_config(app.id, "MODE", "a")
        assert client.apps.set_config(app.id, "MODE", "b").value == "b"
        assert {c.key: c.value for c in client.apps.config(app.id)} == {"API_TOKEN": "", "MODE": "b"}
        client.apps.delete_config(app.id, "MODE")
        assert [c.key for c in client.apps.config(app.id)] == ["API_TOKEN"]

        procs = client.apps.processes(app.id)
        assert procs.role == "dev" and procs.sandbox == app.dev
        assert any(p.web for p in procs.processes)

        types = [e.type for e in client.apps.events(app.id)]
        for t in ("app.created", "task.started", "app.undone", "app.promoted", "app.rolled_back"):
            assert t in types, types
        with client.apps.follow_events(app.id) as st:
            assert next(st).type == "app.created"
    finally:
        client.apps.delete(app.id)
    with pytest.raises(hutch.NotFound):
        client.apps.get(app.id)
