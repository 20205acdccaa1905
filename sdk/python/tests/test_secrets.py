"""Secrets: create, list, get, replace, delete; values are never echoed."""

from __future__ import annotations

import json

import pytest

import hutch

VALUE = "s3cr3t-value-that-must-not-come-back"


def test_secrets_round_trip(client: hutch.Client) -> None:
    s = client.secrets.create("PY_TOKEN", VALUE, description="for the suite")
    assert s.name == "PY_TOKEN" and s.value_bytes == len(VALUE) and s.description == "for the suite"
    with pytest.raises(hutch.Conflict) as e:
        client.secrets.create("PY_TOKEN", "again")
    assert e.value.code == "secret_exists"
    assert "PY_TOKEN" in [x.name for x in client.secrets.list()]
    assert client.secrets.get("PY_TOKEN").value_bytes == len(VALUE)
    r = client.secrets.replace("PY_TOKEN", "short")
    assert r.value_bytes == 5 and r.description == "for the suite"
    # No answer carries a value, whatever the SDK's types show.
    for path in ("/v1/secrets", "/v1/secrets/PY_TOKEN"):
        raw = json.dumps(client._t.call("GET", path))
        assert VALUE not in raw and "short" not in raw and '"value"' not in raw
    client.secrets.delete("PY_TOKEN")
    with pytest.raises(hutch.NotFound) as nf:
        client.secrets.get("PY_TOKEN")
    assert nf.value.code == "secret_not_found"
    with pytest.raises(hutch.NotFound):
        client.secrets.replace("PY_TOKEN", "never created")


def test_registry_secret(client: hutch.Client) -> None:
    s = client.secrets.create("PY_REGISTRY", VALUE, kind="registry", registry="docker.io")
    assert s.kind == "registry" and s.registry == "index.docker.io"
    assert client.secrets.get("PY_REGISTRY").registry == "index.docker.io"
    assert client.secrets.create("PY_PLAIN", VALUE).kind == "env"
    with pytest.raises(hutch.Invalid) as e:
        client.secrets.create("PY_BAD", VALUE, kind="registry")
    assert e.value.code == "invalid_secret_kind"
    for name in ("PY_REGISTRY", "PY_PLAIN"):
        client.secrets.delete(name)
