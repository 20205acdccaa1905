"""Events: pages, and live streams followed until a sandbox.destroyed
arrives, resumed with Last-Event-ID after a broken connection."""

from __future__ import annotations

import threading

import hutch


def _watchdog(stream: hutch.EventStream, seconds: float = 30.0) -> threading.Timer:
    # Ends a stream that waits too long, so a missing event fails the test
    # instead of hanging it.
    t = threading.Timer(seconds, stream.close)
    t.daemon = True
    t.start()
    return t


def test_follow_until_destroyed_with_resume(client: hutch.Client) -> None:
    sb = client.sandboxes.create(labels={"suite": "python"})
    sb.exec(["true"])
    stream = sb.follow_events()
    dog = _watchdog(stream)
    try:
        first = next(stream)
        assert first.type == "sandbox.created" and first.sandbox_id == sb.id
        assert stream.last_id == first.id
        # Break the connection: the stream reopens after the last event.
        stream.interrupt()
        seen = [first]
        threading.Thread(target=sb.kill, daemon=True).start()
        for ev in stream:
            seen.append(ev)
            if ev.type == "sandbox.destroyed":
                break
        assert seen[-1].type == "sandbox.destroyed", [e.type for e in seen]
        assert stream.reconnects >= 1
        ids = [e.id for e in seen]
        assert len(ids) == len(set(ids)), "an event came twice across the reconnect"
        assert ids == sorted(ids)
    finally:
        dog.cancel()
        stream.close()

    # The same events, paged, for the sandbox and in the tenant's log.
    listed = [e.id for e in client.events.iter(sandbox=sb.id, page_size=1)]
    assert listed[: len(ids)] == ids
    tenant = client.events.list(types=["sandbox.destroyed"], limit=1000)
    assert any(e.sandbox_id == sb.id for e in tenant.events)
    # Following from an event on replays what came after it.
    with client.events.follow(sandbox=sb.id, after=ids[0]) as again:
        dog = _watchdog(again)
        assert next(again).id == ids[1]
        dog.cancel()


def test_close_ends_a_blocked_stream(client: hutch.Client, sandbox: hutch.Sandbox) -> None:
    stream = client.events.follow(types=["no.such.type"])
    threading.Timer(0.3, stream.close).start()
    assert list(stream) == []
