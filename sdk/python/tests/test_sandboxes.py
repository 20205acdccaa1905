"""Sandboxes: create with every kind of field, get, list with filters and
pages, the life calls, network, metrics, previews, snapshots and fork."""

from __future__ import annotations

import pytest

import hutch


def test_create_get_and_context_manager(client: hutch.Client) -> None:
    with client.sandboxes.create(
        env={"GREETING": "hi"},
        limits=hutch.Limits(memory_mb=256, pids=128),
        timeout_s=300,
        on_expiry="destroy",
        labels={"suite": "python", "case": "create"},
        network=hutch.NetworkPolicy(egress="none"),
        cwd="/home/user",
    ) as sb:
        assert sb.state == "running"
        info = client.sandboxes.get(sb.id).info
        assert info.id == sb.id
        assert info.labels["case"] == "create"
        assert info.limits.memory_mb == 256 and info.limits.pids == 128
        assert info.network.egress == "none"
        assert info.cwd == "/home/user"
        assert info.created_at is not None
        res = sb.exec(["sh", "-c", "echo $GREETING; pwd"])
        assert res.stdout_text == "hi\n/home/user\n"
    # The context manager destroyed it.
    assert client.sandboxes.get(sb.id).state == "destroyed"


def test_list_filters_and_pages(client: hutch.Client) -> None:
    made = [client.sandboxes.create(labels={"suite": "python", "case": "list"}) for _ in range(3)]
    try:
        ids = {sb.id for sb in made}
        found = [sb.id for sb in client.sandboxes.list(labels={"case": "list"}, page_size=1)]
        assert set(found) == ids and len(found) == 3
        page = client.sandboxes.list_page(labels={"case": "list"}, limit=2)
        assert len(page.sandboxes) == 2 and page.next_cursor
        made[0].stop()
        stopped = {sb.id for sb in client.sandboxes.list(labels={"case": "list"}, state="stopped")}
        assert stopped == {made[0].id}
    finally:
        for sb in made:
            sb.kill()


def test_lifecycle(sandbox: hutch.Sandbox) -> None:
    sandbox.files.write("keep.txt", "kept")
    assert sandbox.stop().state == "stopped"
    assert sandbox.start().state == "running"
    assert sandbox.files.read("keep.txt") == b"kept"
    assert sandbox.pause().state == "paused"
    assert sandbox.info.paused_at is not None
    assert sandbox.resume().state == "running"
    assert sandbox.set_timeout(120).info.timeout_s == 120
    assert sandbox.info.expires_at is not None
    assert sandbox.keepalive(60).info.keepalive_until is not None
    assert sandbox.refresh().state == "running"


def test_network_and_metrics(sandbox: hutch.Sandbox) -> None:
    net = sandbox.network()
    assert net.policy.egress == "public"
    net = sandbox.set_network("allowlist", ["example.com"])
    assert net.policy.egress == "allowlist" and net.policy.allow == ["example.com"]
    assert sandbox.network().policy.allow == ["example.com"]
    m = sandbox.metrics()
    assert m.sandbox_id == sandbox.id
    assert m.memory.usage_bytes > 0
    assert m.at is not None


def test_previews(sandbox: hutch.Sandbox) -> None:
    port = sandbox.set_port_public(8080, True)
    assert port.port == 8080 and port.public
    assert sandbox.id in port.url
    assert any(p.port == 8080 and p.public for p in sandbox.ports())
    assert not sandbox.set_port_public(8080, False).public
    signed = sandbox.preview_url(8080, expires_in_s=60)
    assert signed.url.startswith("http") and signed.expires_at is not None


def test_snapshot_fork_restore(client: hutch.Client, sandbox: hutch.Sandbox) -> None:
    sandbox.files.write("state.txt", "one")
    snap = sandbox.snapshot("py-snap")
    assert snap.sandbox_id == sandbox.id and snap.name == "py-snap"
    assert client.snapshots.get(snap.id).id == snap.id
    assert snap.id in [s.id for s in client.snapshots.list(sandbox=sandbox.id)]

    forks = sandbox.fork(2, labels={"suite": "python"})
    try:
        assert len(forks) == 2
        assert all(f.files.read("state.txt") == b"one" for f in forks)
    finally:
        for f in forks:
            f.kill()

    sandbox.files.write("state.txt", "two")
    assert sandbox.restore(snap.id).state == "running"
    assert sandbox.files.read("state.txt") == b"one"

    with client.sandboxes.create(snapshot=snap.id) as copy:
        assert copy.files.read("state.txt") == b"one"
    client.snapshots.delete(snap.id)
    with pytest.raises(hutch.NotFound):
        client.snapshots.get(snap.id)


def test_templates_list(client: hutch.Client) -> None:
    assert isinstance(client.templates.list(), list)
