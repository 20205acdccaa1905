"""Background processes: start, list, get, wait, signal, stdin, and the
output stream resumed from a cursor."""

from __future__ import annotations

import hutch


def test_output_resumes_from_cursor(sandbox: hutch.Sandbox) -> None:
    p = sandbox.processes.start(["sh", "-c", "for i in 1 2 3 4; do echo line$i; sleep 0.2; done"], tag="lines")
    assert p.pid > 0 and p.tag == "lines"
    # Read the first chunk, then drop the stream as a broken connection would.
    with sandbox.processes.output(p.pid, cursor=0, follow=True) as st:
        first = next(st)
        assert first.type == "stdout" and first.offset == 0
        cursor = st.cursor
    assert cursor == len(first.data) > 0
    # A new stream from the cursor carries on exactly where the first stopped.
    rest = bytearray()
    with sandbox.processes.output(p.pid, cursor=cursor) as st:
        for ev in st:
            if ev.type == "stdout":
                assert ev.offset == cursor + len(rest)
                rest += ev.data
            elif ev.type == "exit":
                assert ev.process is not None and ev.process.exit_code == 0
        assert st.cursor == len(b"line1\nline2\nline3\nline4\n")
    assert first.data + rest == b"line1\nline2\nline3\nline4\n"
    # From the start again, without follow: everything kept.
    all_out = b"".join(e.data for e in sandbox.processes.output(p.pid, 0, follow=False) if e.type == "stdout")
    assert all_out == b"line1\nline2\nline3\nline4\n"


def test_stdin_wait_list_get(sandbox: hutch.Sandbox) -> None:
    p = sandbox.processes.start(["sh", "-c", "read a; echo got:$a; cat >&2"])
    assert p.stdin_open
    sandbox.processes.write_stdin(p.pid, "first\n")
    sandbox.processes.write_stdin(p.pid, b"\x00rest", close=True)
    done = sandbox.processes.wait(p.pid, timeout=10)
    assert not done.running and done.exit_code == 0
    assert any(x.pid == p.pid for x in sandbox.processes.list())
    assert sandbox.processes.get(p.pid).output_bytes == len("got:first\n") + 5
    out = {"stdout": b"", "stderr": b""}
    for ev in sandbox.processes.output(p.pid, 0, follow=False):
        if ev.type in out:
            out[ev.type] += ev.data
    assert out == {"stdout": b"got:first\n", "stderr": b"\x00rest"}


def test_signal(sandbox: hutch.Sandbox) -> None:
    p = sandbox.processes.start(["sleep", "60"])
    assert sandbox.processes.get(p.pid).running
    sandbox.processes.signal(p.pid, "TERM")
    done = sandbox.processes.wait(p.pid, timeout=10)
    assert not done.running and done.signal in ("TERM", "SIGTERM")
    assert done.exit_code == 128 + 15
