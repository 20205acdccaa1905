"""Files: text and binary round trips, modes, list, stat, mkdir, move,
remove, and directories as tar archives."""

from __future__ import annotations

import io
import tarfile

import pytest

import hutch


def test_round_trip_text_and_binary(sandbox: hutch.Sandbox) -> None:
    info = sandbox.files.write("notes/hello.txt", "héllo\n")
    assert info.type == "file" and info.size == len("héllo\n".encode())
    assert sandbox.files.read_text("notes/hello.txt") == "héllo\n"
    blob = bytes(range(256)) * 1000
    sandbox.files.write("blob.bin", io.BytesIO(blob), mode=0o600)
    assert sandbox.files.read("blob.bin") == blob
    assert sandbox.files.stat("blob.bin").mode == "0600"
    out = io.BytesIO()
    assert sandbox.files.read_to("blob.bin", out) == len(blob) and out.getvalue() == blob
    # What the file API wrote is what the sandbox sees.
    assert sandbox.exec(["sha256sum", "blob.bin"]).stdout.split()[0].decode() == __import__("hashlib").sha256(blob).hexdigest()


def test_list_stat_mkdir_move_remove(sandbox: hutch.Sandbox) -> None:
    d = sandbox.files.mkdir("a/b/c", mode="0750")
    assert d.type == "dir" and d.mode == "0750"
    sandbox.files.write("a/one.txt", b"1")
    sandbox.files.write("a/two.txt", b"2")
    names = sorted(e.name for e in sandbox.files.list("a"))
    assert names == ["b", "one.txt", "two.txt"]
    with pytest.raises(hutch.Conflict) as e:
        sandbox.files.move("a/one.txt", "a/two.txt")
    assert e.value.code == "file_exists"
    moved = sandbox.files.move("a/one.txt", "a/two.txt", overwrite=True)
    assert moved.name == "two.txt"
    assert sandbox.files.read("a/two.txt") == b"1"
    assert not sandbox.files.exists("a/one.txt")
    with pytest.raises(hutch.HutchError):
        sandbox.files.remove("a")  # not empty
    sandbox.files.remove("a", recursive=True)
    assert not sandbox.files.exists("a")
    with pytest.raises(hutch.NotFound) as nf:
        sandbox.files.read("a/two.txt")
    assert nf.value.code == "file_not_found"


def test_tar_upload_download(sandbox: hutch.Sandbox) -> None:
    buf = io.BytesIO()
    files = {"src/main.py": b"print('hi')\n", "src/data.bin": b"\x00\x01\xfe\xff", "README": b"readme"}
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, body in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(body)
            ti.mode = 0o644
            tf.addfile(ti, io.BytesIO(body))
    res = sandbox.files.upload_tar("project", buf.getvalue())
    assert res.files == 3 and res.bytes == sum(len(b) for b in files.values())
    assert sandbox.files.read("project/src/data.bin") == b"\x00\x01\xfe\xff"

    # Stream an upload from a file object, then download both ways.
    buf.seek(0)
    sandbox.files.upload_tar("copy", buf)
    for archive in (sandbox.files.download_tar("copy"), _to_bytes(sandbox, "copy")):
        with tarfile.open(fileobj=io.BytesIO(archive)) as tf:
            got = {m.name.removeprefix("./"): tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}  # type: ignore[union-attr]
        assert got == files


def _to_bytes(sandbox: hutch.Sandbox, path: str) -> bytes:
    out = io.BytesIO()
    n = sandbox.files.download_tar_to(path, out)
    assert n == len(out.getvalue())
    return out.getvalue()
