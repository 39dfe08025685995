"""The record dataclasses' common base: ``from_dict``/``to_dict`` by type hint (nested dataclasses,
metric values typed as ``MetricValue``), unknown keys kept in ``other``, and read access by the
JSON's keys; ``RecordError`` names the file and field of what cannot be read."""
from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Union

from evalkit.records.values import MetricValue, metric_values


class RecordError(ValueError):
    """A run record that cannot be read: names the file and what is wrong."""


class _Typed:
    """from_dict/to_dict for the record dataclasses: nested dataclasses by type hint, unknown keys
    kept in ``other``, optional fields left out of the JSON while they are None."""

    OMIT_IF_NONE: typing.ClassVar[tuple] = ()

    @classmethod
    def from_dict(cls, d: dict, where: str = "run.json"):
        if not isinstance(d, dict):
            raise RecordError(f"{where}: expected a JSON object, got {type(d).__name__}")
        hints = _hints(cls)
        known, other = {}, {}
        for k, v in d.items():
            if k in hints and k != "other":
                known[k] = _decode(hints[k], v, f"{where}: {k}")
            else:
                other[k] = v
        try:
            return cls(**known, other=other)
        except TypeError as e:
            raise RecordError(f"{where}: {e}") from None

    def to_dict(self) -> dict:
        out = {}
        for f in dataclasses.fields(self):
            if f.name == "other":
                continue
            v = getattr(self, f.name)
            if v is None and f.name in self.OMIT_IF_NONE:
                continue
            out[f.name] = _encode(v)
        out.update(self.other)
        return out

    # Read access by the JSON's keys (``entry["extra"]``, ``model.get("args")``), so readers written
    # against the raw dict keep working on the typed record; a None optional field is absent, as in the JSON.
    def __getitem__(self, key: str):
        if key != "other" and key in self.__dataclass_fields__:
            v = getattr(self, key)
            if v is None and key in self.OMIT_IF_NONE:
                raise KeyError(key)
            return v
        return self.other[key]

    def get(self, key: str, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: str) -> bool:
        return self.get(key, _MISSING) is not _MISSING

    def keys(self) -> list:
        return [k for k in self.__dataclass_fields__ if k != "other" and k in self] + list(self.other)


_MISSING = object()


@functools.lru_cache(maxsize=None)
def _hints(cls) -> dict:
    """A record class's resolved type hints, once per class (resolving them costs ~0.4 ms a call:
    10,000 records' worth was most of the leaderboard's load)."""
    return typing.get_type_hints(cls)


@functools.lru_cache(maxsize=None)
def _plan(hint) -> tuple:
    """How a field of type ``hint`` is decoded, worked out once per hint: ``(optional, kind, cls)``."""
    optional = typing.get_origin(hint) is Union
    if optional:  # Optional[X]
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, type) and issubclass(hint, _Typed):
        return optional, "typed", hint
    if hint == dict[str, MetricValue]:
        return optional, "metrics", None
    if hint == dict[str, dict[str, MetricValue]]:
        return optional, "metric_groups", None
    if origin is dict and len(args) == 2 and isinstance(args[1], type) and issubclass(args[1], _Typed):
        return optional, "typed_dict", args[1]
    return optional, "raw", None


def _decode(hint, value, where: str):
    optional, kind, cls = _plan(hint)
    if kind == "raw" or (optional and value is None):
        return value
    if kind == "typed":
        return cls.from_dict(value, where)
    try:
        if kind == "metrics":
            return metric_values(value, where)
        if kind == "metric_groups":
            if not isinstance(value, dict):
                raise ValueError(f"{where}: expected an object of groups")
            return {g: metric_values(v, f"{where}.{g}") for g, v in value.items()}
    except ValueError as e:
        raise RecordError(str(e)) from None
    if not isinstance(value, dict):
        raise RecordError(f"{where}: expected an object")
    return {k: cls.from_dict(v, f"{where}.{k}") for k, v in value.items()}


def _encode(v):
    if isinstance(v, _Typed):
        return v.to_dict()
    if isinstance(v, dict):
        return {k: _encode(x) for k, x in v.items()}
    return v
