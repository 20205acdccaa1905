"""Decoding JSON answers into the SDK's dataclasses.

Fields are named as the API's JSON keys; unknown keys are ignored (a newer
server may send more) and missing ones keep their defaults.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from datetime import datetime
from typing import Any, TypeVar

T = TypeVar("T")

_hints: dict[type, dict[str, Any]] = {}


def decode(cls: type[T], data: Any) -> T:
    """Builds a ``cls`` (a dataclass) from a decoded JSON object."""
    out: T = _value(cls, data)
    return out


def _fields(cls: type) -> dict[str, Any]:
    h = _hints.get(cls)
    if h is None:
        hints = typing.get_type_hints(cls)
        h = {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}
        _hints[cls] = h
    return h


def _value(tp: Any, v: Any) -> Any:
    if v is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _value(args[0], v) if len(args) == 1 else v
    if origin is list:
        (arg,) = typing.get_args(tp)
        return [_value(arg, x) for x in v]
    if origin is dict:
        _, arg = typing.get_args(tp)
        return {k: _value(arg, x) for k, x in v.items()}
    if tp is datetime:
        return datetime.fromisoformat(v) if v else None
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        fields = _fields(tp)
        return tp(**{k: _value(fields[k], x) for k, x in v.items() if k in fields})
    if tp is float and isinstance(v, int):
        return float(v)
    return v


def encode(obj: Any) -> Any:
    """Turns a dataclass (or a dict, list of them) into JSON values, leaving
    out fields that are ``None``: those are the server's to choose."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: encode(getattr(obj, f.name)) for f in dataclasses.fields(obj) if getattr(obj, f.name) is not None}
    if isinstance(obj, dict):
        return {k: encode(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, (list, tuple)):
        return [encode(v) for v in obj]
    if isinstance(obj, datetime):
        return obj.isoformat()
    return obj
