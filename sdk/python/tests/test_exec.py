"""exec: run to completion (text, bytes that are not UTF-8, base64 asked
for) and streamed, in order."""

from __future__ import annotations

import hutch


def test_exec_text(sandbox: hutch.Sandbox) -> None:
    res = sandbox.exec(["sh", "-c", "echo out; echo err >&2; exit 3"], env={"X": "1"})
    assert res.exit_code == 3 and not res.ok
    assert res.stdout == b"out\n" and res.stderr == b"err\n"
    assert res.stdout_text == "out\n"
    assert not res.stdout_truncated


def test_exec_bytes_not_utf8(sandbox: hutch.Sandbox) -> None:
    # The server sends these as base64 with stdout_encoding; the SDK decodes.
    res = sandbox.exec(["printf", "\\377\\376ok"])
    assert res.stdout == b"\xff\xfeok"
    res = sandbox.exec(["printf", "plain"], output_encoding="base64")
    assert res.stdout == b"plain"


def test_exec_stdin_and_missing_program(sandbox: hutch.Sandbox) -> None:
    assert sandbox.exec(["cat"], stdin="fed in").stdout == b"fed in"
    res = sandbox.exec(["no-such-program-here"])
    assert res.exit_code == 127 and res.error


def test_exec_as_root(sandbox: hutch.Sandbox) -> None:
    assert sandbox.exec(["id", "-u"], root=True).stdout == b"0\n"
    assert sandbox.exec(["id", "-u"]).stdout != b"0\n"


def test_exec_timeout(sandbox: hutch.Sandbox) -> None:
    res = sandbox.exec(["sleep", "10"], timeout_ms=300)
    assert res.timed_out


def test_exec_stream_in_order(sandbox: hutch.Sandbox) -> None:
    script = "for i in 1 2 3; do echo $i; sleep 0.1; done; printf '\\377' >&2; exit 4"
    events = list(sandbox.exec_stream(["sh", "-c", script]))
    assert [e.type for e in events][-1] == "exit"
    out = b"".join(e.data for e in events if e.type == "stdout")
    err = b"".join(e.data for e in events if e.type == "stderr")
    assert out == b"1\n2\n3\n" and err == b"\xff"
    # Three chunks a tenth of a second apart arrive as separate events, in order.
    chunks = [e.data for e in events if e.type == "stdout"]
    assert chunks == [b"1\n", b"2\n", b"3\n"]
    assert events[-1].exit is not None and events[-1].exit.exit_code == 4


def test_exec_stream_collect(client: hutch.Client, sandbox: hutch.Sandbox) -> None:
    with client.exec_stream(sandbox.id, ["sh", "-c", "echo a; echo b >&2"]) as st:
        res = st.collect()
    assert res.stdout == b"a\n" and res.stderr == b"b\n" and res.exit_code == 0
    assert st.result is not None
