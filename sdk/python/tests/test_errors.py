"""Errors: the class of an answer's status and the API's stable code."""

from __future__ import annotations

import pytest

import hutch


def test_not_found(client: hutch.Client) -> None:
    with pytest.raises(hutch.NotFound) as e:
        client.sandboxes.get("no-such-sandbox")
    assert e.value.status == 404 and e.value.code == "sandbox_not_found"
    assert isinstance(e.value, hutch.HutchError)
    assert "sandbox_not_found" in str(e.value)


def test_invalid(client: hutch.Client, sandbox: hutch.Sandbox) -> None:
    with pytest.raises(hutch.Invalid) as e:
        client.sandboxes.create(on_expiry="explode")
    assert e.value.status == 400 and e.value.code
    with pytest.raises(hutch.Invalid) as e:
        sandbox.files.read("../../etc/passwd")
    assert e.value.code == "invalid_path"  # a ".." component
    with pytest.raises(hutch.Invalid) as e:
        sandbox.set_network("bogus")
    assert e.value.status == 400


def test_unauthorized(server) -> None:  # type: ignore[no-untyped-def]
    bad = hutch.Client(server.url, "not-a-key")
    with pytest.raises(hutch.Unauthorized) as e:
        list(bad.sandboxes.list())
    assert e.value.status == 401 and e.value.code


def test_conflict(sandbox: hutch.Sandbox) -> None:
    sandbox.stop()
    with pytest.raises(hutch.Conflict) as e:
        sandbox.pause()
    assert e.value.status == 409 and e.value.code


def test_env_defaults(monkeypatch: pytest.MonkeyPatch, server) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HUTCH_URL", server.url)
    monkeypatch.setenv("HUTCH_API_KEY", server.key)
    c = hutch.Client()
    assert c.base_url == server.url
    assert isinstance(c.secrets.list(), list)
    assert "version" in c.info() and c.info()["drivers"]
    monkeypatch.delenv("HUTCH_URL")
    assert hutch.Client().base_url == "http://127.0.0.1:7070"
    with pytest.raises(ValueError):
        hutch.Client("ftp://example.com")
